import { modelCapabilitiesFor } from "@loopwright/negotiate";
import { describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisCapabilityStore } from "./capabilities.js";
import { RedisStoreError } from "./errors.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Errors told to `onError` that are, or wrap, the client's bare timeout. */
const timeouts = (errors: readonly unknown[]): number =>
  errors.filter((e) =>
    [e, (e as { cause?: unknown } | null)?.cause].some((x) =>
      /Timeout/.test(String((x as object | null)?.constructor?.name)),
    ),
  ).length;

describe.skipIf(!HAS_REDIS)("sync() of many tenants across a slow or stalled Redis (r94j)", () => {
  // Each write here is about 45 KB (a long base URL is in the key, the id and the announcement):
  // the writes on their way at once are far more than the sockets take while Redis is stopped, so
  // most of them wait unsent in the client's queue, as every write did under a starved event loop.
  // The client's 5 s command timeout ran from the moment a write was queued: each failed with a
  // bare TimeoutError, was queued again behind the rest, and `sync()` of 12 000 never settled.
  it("writes every latch of a burst whose writes wait unsent behind a Redis stopped 6 s: no TimeoutError, sync() resolves", async () => {
    const server = await RedisServer.start();
    const errors: unknown[] = [];
    const a = await createRedisCapabilityStore({
      url: server.url,
      prefix: "r94j-a:",
      onError: (error) => errors.push(error),
    });
    try {
      const path = "p".repeat(15_000);
      for (let i = 0; i < 600; i++) {
        modelCapabilitiesFor(a.capabilitiesFor(`http://b${i}.test/${path}/v1`, "k"), "m").refusedEfforts.push(
          "high",
        );
      }
      server.pause();
      const synced = a.sync().then(
        () => undefined,
        (error: unknown) => error,
      );
      await pause(6000);
      server.resume();
      expect(await synced).toBeUndefined();
      await a.close();
      const fresh = await createRedisCapabilityStore({ url: server.url, prefix: "r94j-a:" });
      const held = fresh.size;
      await fresh.close();
      expect(timeouts(errors)).toBe(0);
      expect(held).toBe(600);
    } finally {
      server.resume();
      await server.kill();
    }
  }, 60_000);

  // A write already sent has no timeout in the client: with Redis stopped for good (the connection
  // left open), `sync()` waited for it for ever. It settles once Redis has answered none of its
  // writes for 4 × `connectTimeoutMs`, naming how many are owed; they land when Redis answers.
  it("rejects, naming how many writes are still owed, once Redis has answered none for 4 × connectTimeoutMs; they land when it is back", async () => {
    const server = await RedisServer.start();
    const errors: unknown[] = [];
    const a = await createRedisCapabilityStore({
      url: server.url,
      prefix: "r94j-b:",
      connectTimeoutMs: 300,
      onError: (error) => errors.push(error),
    });
    try {
      for (let i = 0; i < 300; i++) {
        modelCapabilitiesFor(a.capabilitiesFor(`http://c${i}.test/v1`, "k"), "m").refusedEfforts.push("high");
      }
      server.pause();
      const outcome = await a.sync().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(outcome).toBeInstanceOf(RedisStoreError);
      expect((outcome as RedisStoreError).code).toBe("connect");
      expect((outcome as Error).message).toMatch(/\b300 of its 300 latch writes are still owed/);
      expect((outcome as Error).message).toMatch(/connectTimeoutMs/);
      server.resume();
      // Still on their way: they land without another sync() or use of the tenants.
      let held = 0;
      for (let i = 0; i < 100 && held < 300; i++) {
        await pause(50);
        const fresh = await createRedisCapabilityStore({ url: server.url, prefix: "r94j-b:" });
        held = fresh.size;
        await fresh.close();
      }
      expect(held).toBe(300);
      await a.sync();
      expect(timeouts(errors)).toBe(0);
    } finally {
      server.resume();
      await a.close();
      await server.kill();
    }
  }, 60_000);
});
