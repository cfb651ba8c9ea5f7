// Review round 72: sync() when latch writes fail, a second close(), and bursts written across a
// stalled Redis on the close and publish paths.
import { LedgerError } from "@loopwright/ledger";
import { modelCapabilitiesFor } from "@loopwright/negotiate";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import {
  createRedisBus,
  createRedisCalibration,
  createRedisCapabilityStore,
  createRedisStores,
  RedisStoreError,
} from "./index.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)("sync() when latch writes do not reach Redis", () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server.kill();
  });

  it("rejects with RedisStoreError refused naming how many failed (Redis out of memory), and resolves once they go through", async () => {
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    const told: unknown[] = [];
    const store = await createRedisCapabilityStore({
      url: server.url,
      prefix: "sync-oom:",
      onError: (error) => told.push(error),
    });
    try {
      await raw.sendCommand(["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "1"]);
      for (let i = 0; i < 3; i++)
        modelCapabilitiesFor(store.capabilitiesFor(`http://oom${i}.test/v1`, "k"), "m").refusedEfforts.push(
          "high",
        );
      // Before: resolved, the three OOM refusals told to onError only.
      const error = await store.sync().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(RedisStoreError.isInstance(error), String(error)).toBe(true);
      expect((error as RedisStoreError).code).toBe("refused");
      expect((error as RedisStoreError).message).toMatch(
        /^sync\(\): 3 latch writes did not reach Redis \(OOM/,
      );
      // One refusal told, not one per write: the same failure is told once while it lasts (r81).
      expect(told.filter((e) => /OOM/.test(String(e)))).toHaveLength(1);
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      await store.sync();
      expect(await raw.sendCommand(["SCARD", "sync-oom:caps:index"])).toBe(3);
    } finally {
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      raw.destroy();
      await store.close();
    }
  });

  it("waits for a write a tick started before it, and rejects when that one fails", async () => {
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    const store = await createRedisCapabilityStore({
      url: server.url,
      prefix: "sync-tick:",
      onError: () => {},
    });
    try {
      await raw.sendCommand(["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "1"]);
      const caps = store.capabilitiesFor("http://tick.test/v1", "k");
      modelCapabilitiesFor(caps, "m").refusedEfforts.push("high");
      // Stalled: the write the next tick (or the next turn, the flags read) starts goes unanswered.
      server.pause();
      void caps.strictSchemas;
      await pause(300);
      let settled = false;
      const synced = store.sync().then(
        () => undefined,
        (e: unknown) => e,
      );
      void synced.then(() => {
        settled = true;
      });
      await pause(100);
      // Before: resolved at once (the tick's write held the fields as shared, so nothing was left to write).
      expect(settled).toBe(false);
      server.resume();
      expect(((await synced) as RedisStoreError | undefined)?.code).toBe("refused");
    } finally {
      server.resume();
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      raw.destroy();
      await store.close();
    }
  });
});

describe.skipIf(!HAS_REDIS)("a second close()", () => {
  it("tells onError of what was not sent once, and resolves as the first (during it, and after it)", async () => {
    const server = await RedisServer.start();
    const told: string[] = [];
    const stores = await createRedisStores({
      url: server.url,
      prefix: "twice:",
      // The stores' handshakes are timed by this too: a loaded machine can take 1 s for them (300 ms
      // failed owed.test in CI). close() does not wait on it here (the test takes as long at 1 s).
      connectTimeoutMs: 3000,
      onError: (error) => {
        if (RedisStoreError.isInstance(error) && error.code === "closed") told.push(error.message);
      },
    });
    try {
      // Redis stalled: nothing sent now is answered, so all of it is still owed at close().
      server.pause();
      stores.bus.emit("r1", { kind: "output", text: "unsent" });
      stores.bus.endRun("r0");
      stores.calibration.forget("http://gone.test/v1");
      stores.capabilities.forget("http://gone.test/v1", "k");
      await pause(50);
      const first = stores.close();
      const during = stores.close();
      const calibrationDuring = stores.calibration.close();
      const busDuring = stores.bus.close();
      await first;
      await Promise.all([during, calibrationDuring, busDuring]);
      await stores.close();
      await stores.bus.close();
      await stores.calibration.close();
      await stores.routeLatches.close();
      await stores.capabilities.close();
      // Before: the bus's events and ended runs and the calibration's forget were told twice or more.
      const counts = new Map<string, number>();
      for (const message of told) counts.set(message, (counts.get(message) ?? 0) + 1);
      expect(Object.fromEntries(counts)).toEqual({
        "1 events were not written before close().": 1,
        "1 ended run(s) were not deleted from Redis nor announced before close().": 1,
        "1 forgotten endpoints were not sent to Redis before close().": 1,
        "1 forgotten tenants were not sent to Redis before close().": 1,
      });
    } finally {
      server.resume();
      await server.kill();
    }
  }, 30_000);
});

describe.skipIf(!HAS_REDIS)(
  "close() of a capability store while Redis is stalled with a burst of latches to share",
  () => {
    it("tells onError once how many tenants' latches were not shared, not each write's bare client error", async () => {
      const server = await RedisServer.start();
      const errors: unknown[] = [];
      const store = await createRedisCapabilityStore({
        url: server.url,
        prefix: "close-burst:",
        onError: (error) => errors.push(error),
      });
      try {
        for (let i = 0; i < 2000; i++)
          modelCapabilitiesFor(store.capabilitiesFor(`http://c${i}.test/v1`, "k"), "m").refusedEfforts.push(
            "high",
          );
        server.pause();
        const started = Date.now();
        await store.close();
        // The 256 writes on their way and the rest waiting for a slot: the bound (2 s), then closed;
        // not held until Redis answers (never, while it is stalled). Five times the bound: a
        // loaded machine stretches the rest.
        expect(Date.now() - started).toBeLessThan(10_000);
        // Before: 2 000 errors, each the client's bare DisconnectsClientError or ClientClosedError.
        expect(errors.map(String)).toEqual([
          "RedisStoreError: 2000 tenants' latches were not shared before close(): Redis did not answer their writes within 2 s (a write already sent may still land).",
        ]);
        expect((errors[0] as RedisStoreError).code).toBe("closed");
      } finally {
        server.resume();
        await server.kill();
      }
    }, 30_000);
  },
);

describe.skipIf(!HAS_REDIS)(
  "a publish batch whose writes wait out the client's command timeout (r72d)",
  () => {
    it("tells onError a RedisStoreError (connect) naming the batch's events, kept and sent again, the client's error on cause", async () => {
      const server = await RedisServer.start();
      const errors: unknown[] = [];
      const bus = await createRedisBus({
        url: server.url,
        prefix: "batch-timeout:",
        writeTimeoutMs: 60_000,
        onError: (error) => errors.push(error),
      });
      try {
        server.pause();
        // One batch: run "big" fills the socket Redis no longer reads (about 24 MB), so the writes of
        // the runs behind it wait in the client's queue past its 5 s command timeout.
        const text = "x".repeat(1 << 20);
        for (let i = 0; i < 24; i++) bus.emit("big", { kind: "output", text });
        for (let r = 0; r < 3; r++) bus.emit(`small${r}`, { kind: "output", text: "s" });
        await pause(6500);
        server.resume();
        await bus.flushed();
        const timedOut = errors.filter((e) => /Timeout/.test(String((e as Error)?.cause?.constructor?.name)));
        // Before: the client's bare TimeoutError, no URL, nothing said of the events.
        expect(errors.filter((e) => !RedisStoreError.isInstance(e)).map(String)).toEqual([]);
        expect(timedOut).toHaveLength(1);
        const error = timedOut[0] as RedisStoreError;
        expect(error.code).toBe("connect");
        expect(error.message).toContain(server.url.replace("redis://", ""));
        expect(error.message).toMatch(/3 events .*kept.*sent again/);
        // Kept and sent again: every run's events are in Redis.
        for (let r = 0; r < 3; r++) expect(await bus.readHistory(`small${r}`)).toHaveLength(1);
        expect(await bus.readHistory("big")).toHaveLength(24);
      } finally {
        server.resume();
        await bus.close();
        await server.kill();
      }
    }, 60_000);
  },
);

describe.skipIf(!HAS_REDIS)("a bus used after close() (r72d)", () => {
  it("says what to do, in the words every Redis store uses: emit, claimRun and readHistory", async () => {
    const server = await RedisServer.start();
    try {
      const bus = await createRedisBus({ url: server.url, prefix: "after-close:" });
      await bus.close();
      const thrown = (work: () => unknown): Promise<unknown> =>
        Promise.resolve()
          .then(work)
          .then(
            () => undefined,
            (e: unknown) => e,
          );
      const errors = [
        await thrown(() => bus.emit("r", { kind: "output", text: "late" })),
        await thrown(() => bus.claimRun("r")),
        await thrown(() => bus.readHistory("r")),
      ];
      // Before: "emit was called on a Redis bus after close()." and no word on what to do.
      expect(errors.map((e) => RedisStoreError.isInstance(e) && [e.code, e.message])).toEqual(
        ["emit", "claimRun", "readHistory"].map((call) => [
          "closed",
          `${call} was called on a Redis bus after close(): its connections are closed. Make a new store to reach Redis again.`,
        ]),
      );
    } finally {
      await server.kill();
    }
  });
});

describe.skipIf(!HAS_REDIS)(
  "a calibration model that is not a name, on the Redis calibration store (r72d)",
  () => {
    const body = { messages: [{ role: "user", content: "x".repeat(300) }] };
    const endpoint = "http://127.0.0.1:8080/v1";

    for (const model of [42, { id: "qwen3" }, ["qwen3"], true]) {
      it(`refuses model ${JSON.stringify(model)} as ledger's own store does, and writes nothing to Redis`, async () => {
        const server = await RedisServer.start();
        const raw = createClient({ url: server.url, RESP: 2 });
        await raw.connect();
        const calibration = await createRedisCalibration({ url: server.url, prefix: "cal-model:" });
        try {
          const refusal = (work: () => unknown): unknown => {
            try {
              work();
            } catch (error) {
              return error;
            }
            return undefined;
          };
          for (const error of [
            refusal(() => calibration.calibrate(endpoint, model as never, body, 100)),
            // Before: a bare TypeError ("text.isWellFormed is not a function") from the key it made.
            refusal(() => calibration.charsPerTokenFor(endpoint, model as never)),
          ]) {
            expect(LedgerError.isInstance(error), String(error)).toBe(true);
            expect((error as LedgerError).code).toBe("invalid-option");
            expect((error as LedgerError).message).toContain("model");
          }
          await pause(100);
          expect(await raw.sendCommand(["KEYS", "cal-model:*"])).toEqual([]);
          // A name still reads back what was taken under it.
          expect(calibration.calibrate(endpoint, "qwen3", body, 100)).toBe(3);
          expect(calibration.charsPerTokenFor(endpoint, "qwen3")).toBe(3);
          expect(calibration.charsPerTokenFor(endpoint, null as never)).toBe(4);
        } finally {
          raw.destroy();
          await calibration.close();
          await server.kill();
        }
      });
    }
  },
);
