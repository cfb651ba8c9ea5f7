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

/** Starts a throwaway redis-server with `extra` arguments on a free port; answers it and its port. */
async function startRedis(extra: string[]): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", ...extra],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  await new Promise<void>((resolve) => {
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("Ready to accept connections")) resolve();
    });
  });
  return { child, port };
}

describe.skipIf(!HAS_REDIS)("a Redis that wants a password the URL does not give", () => {
  let child: ChildProcess;
  let port: number;
  let admin: ReturnType<typeof createClient>;
  const PASSWORD = "pw-required-2468";

  beforeAll(async () => {
    ({ child, port } = await startRedis(["--requirepass", PASSWORD]));
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

  // r103c: a wrong password was told as "could not reach Redis … Check the URL and that the server
  // is running" — the server was there, and had refused the password (WRONGPASS, the cause).
  it("a wrong password in the URL: refused naming WRONGPASS and the credentials, not as a server that is not running; the password not shown", async () => {
    const before = await connections();
    const wrong = "pw-wrong-9753";
    for (const [url, shown] of [
      [`redis://:${wrong}@127.0.0.1:${port}`, `redis://:***@127.0.0.1:${port}`],
      [`redis://someone:${wrong}@127.0.0.1:${port}`, `redis://someone:***@127.0.0.1:${port}`],
    ] as const) {
      for (const make of [createRedisBus, createRedisStores]) {
        const error = await make({ url }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(RedisStoreError.isInstance(error), `${make.name}: ${String(error)}`).toBe(true);
        const { code, message } = error as RedisStoreError;
        expect(code).toBe("connect");
        expect(message).toContain(`${make.name} reached Redis at ${shown}, which refused`);
        expect(message).toContain("(WRONGPASS)");
        expect(message).toMatch(/user name and password the URL gives/);
        expect(message).not.toMatch(/server is running/);
        expect(message).not.toContain(wrong);
      }
    }
    // A password written where the user name goes (no colon before it) is a user name to Redis:
    // the message says where a password goes, and does not show it.
    const error = await createRedisBus({ url: `redis://${PASSWORD}@127.0.0.1:${port}` }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const { message } = error as RedisStoreError;
    expect(message).toContain(`reached Redis at redis://***@127.0.0.1:${port}, which refused`);
    expect(message).toMatch(/gives a user name and no password: a password goes after a colon/);
    expect(message).not.toContain(PASSWORD);
    // Another refusal of the handshake is quoted: a database the server does not have.
    const db = await createRedisBus({ url: `redis://:${PASSWORD}@127.0.0.1:${port}/99` }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((db as RedisStoreError).message).toContain(
      `reached Redis at redis://:***@127.0.0.1:${port}/99, which refused the handshake of its connection (ERR DB index is out of range)`,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await connections()).toBe(before);
  });
});

describe.skipIf(!HAS_REDIS)("a Redis busy with a long script when a factory starts", () => {
  let child: ChildProcess;
  let port: number;

  beforeAll(async () => {
    ({ child, port } = await startRedis(["--busy-reply-threshold", "20"]));
  });
  afterAll(() => {
    child.kill("SIGKILL");
  });

  it("is waited out (BUSY passes), not refused with a hint to give a password", async () => {
    const url = `redis://127.0.0.1:${port}`;
    const script = createClient({ url, RESP: 2 });
    const killer = createClient({ url, RESP: 2 });
    await Promise.all([script.connect(), killer.connect()]);
    // A script that runs until it is killed: past the threshold, Redis answers BUSY to everyone else.
    const running = script.sendCommand(["EVAL", "while true do end", "0"]).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const starting = createRedisCapabilityStore({ url }).then(
      (store) => store,
      (error: unknown) => error,
    );
    await new Promise((resolve) => setTimeout(resolve, 400));
    await killer.sendCommand(["SCRIPT", "KILL"]);
    await running;
    const store = await starting;
    expect(RedisStoreError.isInstance(store), String(store)).toBe(false);
    const caps = (store as Awaited<ReturnType<typeof createRedisCapabilityStore>>).capabilitiesFor(url);
    expect(caps).toBeTypeOf("object");
    await (store as Awaited<ReturnType<typeof createRedisCapabilityStore>>).close();
    script.destroy();
    killer.destroy();
  });
});
