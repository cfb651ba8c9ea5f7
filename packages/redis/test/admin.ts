import { createClient } from "@redis/client";
import { afterAll, beforeAll } from "vitest";
import { RedisServer } from "./redis-server.js";

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A redis-server for the `describe` block this is called in, and an admin connection to it that
 * cuts the others (`CLIENT KILL`, as Redis's `timeout`, a proxy or a failover would) and lists them,
 * so a test can tell what a store left open.
 */
export function serverWithAdmin() {
  let server: RedisServer | undefined;
  let admin: ReturnType<typeof createClient> | undefined;
  beforeAll(async () => {
    server = await RedisServer.start();
    admin = createClient({ url: server.url, RESP: 2 });
    // Cut too when the server restarts: it reconnects, and what it sends meanwhile waits.
    admin.on("error", () => {});
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.quit().catch(() => {});
    await server?.kill();
  });
  const send = (args: string[]): Promise<unknown> =>
    (admin as ReturnType<typeof createClient>).sendCommand(args);
  /** The connections the server holds besides the admin one (`CLIENT LIST` lines). */
  const others = async (): Promise<string[]> =>
    String(await send(["CLIENT", "LIST"]))
      .split("\n")
      .filter((line) => line.trim() !== "" && !line.includes(" cmd=client|list "));
  return {
    get server(): RedisServer {
      return server as RedisServer;
    },
    /** Cuts every connection of `type` but the admin one. */
    cut: async (type: "normal" | "pubsub"): Promise<void> => {
      await send(["CLIENT", "KILL", "TYPE", type, "SKIPME", "yes"]);
    },
    others,
    /** Sends `args` on the admin connection (a `CONFIG SET`, say) and answers Redis's reply. */
    send,
    /** How many connections hold a subscription (`CLIENT LIST`'s `sub=` above 0). */
    subscribers: async (): Promise<number> =>
      (await others()).filter((line) => /\bsub=[1-9]/.test(line)).length,
    /**
     * Restarts the server on the same port (SIGKILL, then started again): without persistence it
     * comes back empty, every connection cut. Resolves once it accepts connections again.
     */
    restart: async (): Promise<void> => {
      await (server as RedisServer).kill();
      await (server as RedisServer).start();
    },
    /** The connections left once the server has had time to see them go (bounded, never timed). */
    settled: async (): Promise<string[]> => {
      let left = await others();
      for (let look = 0; look < 200 && left.length > 0; look++) {
        await pause(10);
        left = await others();
      }
      return left;
    },
  };
}
