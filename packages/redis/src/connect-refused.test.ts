// A Redis that takes the connection but refuses every command — it wants a password the URL does
// not give — fails the factory the way an unreachable one does, and leaves no connection open.
import { type ChildProcess, spawn } from "node:child_process";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import {
  createRedisBus,
  createRedisCalibration,
  createRedisCapabilityStore,
  createRedisRouteLatches,
  createRedisStores,
  RedisStoreError,
} from "./index.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

describe.skipIf(!HAS_REDIS)("a Redis that wants a password the URL does not give", () => {
  let child: ChildProcess;
  let port: number;
  let admin: ReturnType<typeof createClient>;
  const PASSWORD = "pw-required-2468";

  beforeAll(async () => {
    port = await freePort();
    child = spawn(
      "redis-server",
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--requirepass",
        PASSWORD,
      ],
      { stdio: ["ignore", "pipe", "ignore"] },
    );
    await new Promise<void>((resolve) => {
      let out = "";
      child.stdout?.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("Ready to accept connections")) resolve();
      });
    });
    admin = createClient({ url: `redis://:${PASSWORD}@127.0.0.1:${port}`, RESP: 2 });
    await admin.connect();
  });
  afterAll(async () => {
    admin.destroy();
    child.kill("SIGKILL");
  });

  const connections = async () =>
    ((await admin.sendCommand(["CLIENT", "LIST"])) as string).trim().split("\n").length;

  it("fails every factory with RedisStoreError (connect) naming the server, and closes what it opened", async () => {
    const before = await connections();
    const url = `redis://127.0.0.1:${port}`;
    for (const make of [
      createRedisBus,
      createRedisCapabilityStore,
      createRedisCalibration,
      createRedisRouteLatches,
      createRedisStores,
    ]) {
      const error = await make({ url }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(RedisStoreError.isInstance(error), `${make.name}: ${String(error)}`).toBe(true);
      expect((error as RedisStoreError).code).toBe("connect");
      expect((error as RedisStoreError).message).toContain(`127.0.0.1:${port}`);
      expect((error as RedisStoreError).message).toMatch(/password/);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await connections()).toBe(before);
  });
});
