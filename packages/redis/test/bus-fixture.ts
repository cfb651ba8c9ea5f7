import { createClient } from "@redis/client";
import { afterAll, beforeAll } from "vitest";
import { createRedisBus, type RedisEventBus } from "../src/bus.js";
import { RedisServer } from "./redis-server.js";

type BusOptions = Parameters<typeof createRedisBus>[0];

/**
 * The set-up a describe of Redis bus tests shares, its `beforeAll`/`afterAll` registered: a real
 * Redis, a raw client on it, and `bus(prefix, more)` making a bus (on that Redis unless `more` is
 * another URL or has `url`; errors ignored unless `more.onError`), closed after the tests with
 * anything handed to `closing`.
 */
export function busFixture() {
  const closing: { close(): Promise<void> }[] = [];
  const fixture = {
    server: undefined as unknown as RedisServer,
    raw: undefined as unknown as ReturnType<typeof createClient>,
    closing,
    bus: async (
      prefix: string,
      more: string | Partial<Omit<BusOptions, "prefix">> = {},
    ): Promise<RedisEventBus> => {
      const options = typeof more === "string" ? { url: more } : more;
      const made = await createRedisBus({ url: fixture.server.url, onError: () => {}, ...options, prefix });
      closing.push(made);
      return made;
    },
    /** Whether a connection of Redis's waits in a blocking `XREAD` now: a watcher that has subscribed. */
    watcherWaits: async (): Promise<boolean> =>
      String(await fixture.raw.sendCommand(["CLIENT", "LIST"]))
        .split("\n")
        .some((line) => /\bflags=\w*b/.test(line) && /\bcmd=xread\b/.test(line)),
  };
  beforeAll(async () => {
    fixture.server = await RedisServer.start();
    fixture.raw = createClient({ url: fixture.server.url, RESP: 2 });
    fixture.raw.on("error", () => {});
    await fixture.raw.connect();
  });
  afterAll(async () => {
    await Promise.all(closing.map((c) => c.close()));
    fixture.raw?.destroy();
    await fixture.server?.kill();
  });
  return fixture;
}
