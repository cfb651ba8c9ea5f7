import { describe, expect, it } from "vitest";
import { serverWithAdmin } from "../test/admin.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { RedisStoreError } from "./errors.js";
import { createRedisStores, type RedisStores } from "./stores.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const BASE = "http://127.0.0.1:9/v1";
const body = (chars: number) => ({ messages: [{ role: "user" as const, content: "x".repeat(chars) }] });

/** What a host reads of BASE: the latches, the divisor and the route latch. */
const heldBy = (stores: RedisStores) => {
  const caps = stores.capabilities.capabilitiesFor(BASE, "k");
  return {
    strictSchemas: caps.strictSchemas,
    usageInStream: caps.usageInStream,
    divisor: stores.calibration.charsPerTokenFor(caps, "m"),
    neither: stores.routeLatches.get(BASE)?.neither === true,
    lmstudioGone: stores.routeLatches.get(BASE)?.lmstudioGone === true,
  };
};

describe.skipIf(!HAS_REDIS)("writtenBack() after Redis restarted empty (r95e)", () => {
  // A host had no way to await "reconnected, and what it holds written back": `sync()` resolves at
  // once while the store is away and right after Redis is back, before the write-back, and the
  // calibration store and route latches had nothing to await at all. The stores' model test looked
  // at a fresh host up to 300 times for it.
  it("rejects (connect) while Redis stays down; once it is back, resolves after the write-back: a host started then reads everything, with no polling", async () => {
    const server = await RedisServer.start();
    const stores = await createRedisStores({ url: server.url, prefix: "r95e:" });
    try {
      const caps = stores.capabilities.capabilitiesFor(BASE, "k");
      caps.strictSchemas = false;
      stores.calibration.calibrate(caps, "m", body(40), 10);
      stores.routeLatches.set(BASE, { neither: true, lmstudioGone: false, lmstudioMissUntil: 0 });
      await stores.writtenBack();

      await server.kill();
      // Learned while Redis is down: held here only, written once it is back.
      caps.usageInStream = false;
      const route = stores.routeLatches.get(BASE);
      if (route) route.lmstudioGone = true;
      const down = await stores.writtenBack(300).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(RedisStoreError.isInstance(down)).toBe(true);
      expect((down as RedisStoreError).code).toBe("connect");
      expect((down as Error).message).toMatch(/^writtenBack\(\): .* was not caught up within 300 ms/);

      await server.start(); // the same port, empty
      await stores.writtenBack();
      const late = await createRedisStores({ url: server.url, prefix: "r95e:" });
      try {
        expect(heldBy(late)).toEqual(heldBy(stores));
        expect(heldBy(late)).toEqual({
          strictSchemas: false,
          usageInStream: false,
          divisor: 4,
          neither: true,
          lmstudioGone: true,
        });
      } finally {
        await late.close();
      }
    } finally {
      await stores.close();
      // Already killed when the test failed while Redis was down (a killed child is not started again).
      await server.kill().catch(() => {});
    }
  }, 60_000);

  it("a Redis that keeps the connections and answers nothing (stopped): rejects within its bound, resolves once it answers again", async () => {
    const server = await RedisServer.start();
    const stores = await createRedisStores({ url: server.url, prefix: "r95e-c:" });
    try {
      stores.capabilities.capabilitiesFor(BASE, "k").strictSchemas = false;
      server.pause();
      const silent = await stores.writtenBack(300).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect((silent as RedisStoreError).code).toBe("connect");
      server.resume();
      await stores.writtenBack();
      const late = await createRedisStores({ url: server.url, prefix: "r95e-c:" });
      try {
        expect(late.capabilities.capabilitiesFor(BASE, "k").strictSchemas).toBe(false);
      } finally {
        await late.close();
      }
    } finally {
      server.resume();
      await stores.close();
      await server.kill();
    }
  }, 60_000);

  it("checks its bound, and rejects (closed) after close()", async () => {
    const server = await RedisServer.start();
    const stores = await createRedisStores({ url: server.url, prefix: "r95e-b:" });
    try {
      const bad = await stores.writtenBack(-1).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect((bad as RedisStoreError).code).toBe("invalid-option");
      expect((bad as Error).message).toMatch(/timeoutMs/);
      await stores.close();
      for (const pending of [
        stores.writtenBack(),
        stores.capabilities.writtenBack(),
        stores.calibration.writtenBack(),
        stores.routeLatches.writtenBack(),
      ]) {
        const after = await pending.then(
          () => undefined,
          (error: unknown) => error,
        );
        expect((after as RedisStoreError).code).toBe("closed");
      }
    } finally {
      await stores.close();
      await server.kill();
    }
  }, 30_000);
});

describe.skipIf(!HAS_REDIS)("a write-back after a reconnect that fails is run again (r95e)", () => {
  const redis = serverWithAdmin();

  // The route latches' reload after a reconnect (and the latches written back with it) was given up
  // when it failed, until the next reconnect: `writtenBack()` never resolved, and a latch this
  // instance held alone was not in Redis meanwhile.
  it("route latches: the reload refused once (the index is another type) is run again once Redis takes it", async () => {
    const prefix = "r95e-d:";
    const stores = await createRedisStores({ url: redis.server.url, prefix });
    try {
      stores.routeLatches.set(BASE, { neither: true, lmstudioGone: false, lmstudioMissUntil: 0 });
      await stores.writtenBack();
      // The shared state lost (as in a restart), and the index made unreadable: the write-back and
      // the reload after the cut are refused (WRONGTYPE).
      await redis.send(["DEL", `${prefix}routes:index`]);
      for (const key of (await redis.send(["KEYS", `${prefix}routes:*`])) as string[])
        await redis.send(["DEL", key]);
      await redis.send(["SET", `${prefix}routes:index`, "not a set"]);
      await redis.cut("pubsub");
      const refused = await stores.routeLatches.writtenBack(1500).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect((refused as RedisStoreError).code).toBe("connect");
      await redis.send(["DEL", `${prefix}routes:index`]);
      await stores.routeLatches.writtenBack(10_000);
      const late = await createRedisStores({ url: redis.server.url, prefix });
      try {
        expect(late.routeLatches.get(BASE)?.neither).toBe(true);
      } finally {
        await late.close();
      }
    } finally {
      await stores.close();
    }
  }, 30_000);
});
