// Review round 81 (redis): what the tenant stores and the ended-runs queue tell onError when Redis
// refuses their writes for now or the connection goes under them, and how often a failure that
// repeats is told. Each describe starts its own redis-server.
import { modelCapabilitiesFor } from "@loopwright/negotiate";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CutProxy } from "../test/cut-proxy.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import {
  createRedisBus,
  createRedisCalibration,
  createRedisCapabilityStore,
  createRedisRouteLatches,
  RedisStoreError,
} from "./index.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const PASSWORD = "r81-s3cret-pw-4c1e";
const body = (chars: number) => ({ messages: [{ role: "user", content: "x".repeat(chars) }] });

describe.skipIf(!HAS_REDIS)(
  "R81-1: every store tells a refused write as RedisStoreError, once while it lasts",
  () => {
    let server: RedisServer;
    beforeAll(async () => {
      server = await RedisServer.start();
    });
    afterAll(async () => {
      await server.kill();
    });

    it("Redis out of memory: capability store, calibration, route latches and the bus each tell one refused naming the URL (password hidden)", async () => {
      const raw = createClient({ url: server.url, RESP: 2 });
      await raw.connect();
      await raw.sendCommand(["CONFIG", "SET", "requirepass", PASSWORD]);
      const url = `redis://:${PASSWORD}@127.0.0.1:${server.port}`;
      const told: Record<string, unknown[]> = { caps: [], cal: [], routes: [], bus: [] };
      const on = (store: string) => (error: unknown) => told[store]?.push(error);
      const caps = await createRedisCapabilityStore({ url, prefix: "oom:", onError: on("caps"), syncMs: 50 });
      const cal = await createRedisCalibration({
        url,
        prefix: "oom:",
        onError: on("cal"),
        endpointIdOf: caps.endpointIdOf,
      });
      const routes = await createRedisRouteLatches({ url, prefix: "oom:", onError: on("routes") });
      const bus = await createRedisBus({ url, prefix: "oom:", onError: on("bus") });
      try {
        await raw.sendCommand(["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
        await raw.sendCommand(["CONFIG", "SET", "maxmemory", "1"]);
        const record = caps.capabilitiesFor("http://llm.test/v1", "sk-1");
        record.usageInStream = false;
        modelCapabilitiesFor(record, "m").toolChoice = false;
        await caps.sync().catch(() => {});
        expect(cal.calibrate("http://llm.test/v1", "m", body(5000), 1000)).toBeDefined();
        routes.set("http://llm.test", { neither: true, lmstudioGone: false, lmstudioMissUntil: 0 });
        bus.emit("full", { kind: "output", text: "a" });
        bus.endRun("ended");
        // Two seconds of retries: the route latch and the bus retry up to once a second, the
        // capability store compares every 50 ms.
        await pause(2500);
        for (const [store, errors] of Object.entries(told)) {
          // Before: the Redis client's bare ErrorReply, no URL, once per retry (routes: 8, caps: 13, bus: 8).
          expect(errors.length, store).toBe(1);
          const error = errors[0];
          expect(RedisStoreError.isInstance(error), `${store}: ${String(error)}`).toBe(true);
          expect((error as RedisStoreError).code, store).toBe("refused");
          expect((error as RedisStoreError).message, store).toMatch(
            /Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+/,
          );
          expect((error as RedisStoreError).message, store).toMatch(/OOM/);
          expect((error as RedisStoreError).message, store).not.toContain(PASSWORD);
          expect((error as RedisStoreError).cause, store).toBeInstanceOf(Error);
        }
        expect(String(told.caps && (told.caps[0] as Error).message)).toMatch(
          /^The capability store could not write a tenant's latches for now/,
        );
        expect(String(told.routes && (told.routes[0] as Error).message)).toMatch(
          /^The route latch store could not send the learned route latches/,
        );
        expect(String(told.cal && (told.cal[0] as Error).message)).toMatch(
          /^The calibration store could not write a calibration reading/,
        );

        // Redis takes writes again: everything owed lands; a second spell of OOM is told afresh.
        await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
        await bus.flushed();
        expect((await bus.readHistory("full")).map((e) => e.seq)).toEqual([1]);
        await raw.sendCommand(["CONFIG", "SET", "maxmemory", "1"]);
        bus.emit("full", { kind: "output", text: "b" });
        for (let i = 0; i < 40 && (told.bus?.length ?? 0) < 2; i++) await pause(50);
        await pause(1500);
        expect(told.bus).toHaveLength(2);
        await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
        await bus.flushed();
        expect((await bus.readHistory("full")).map((e) => e.seq)).toEqual([1, 2]);
      } finally {
        await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
        await raw.sendCommand(["CONFIG", "SET", "requirepass", ""]);
        raw.destroy();
        await Promise.all([caps.close(), cal.close(), routes.close(), bus.close()]);
      }
    }, 20_000);

    it("the connection cut (Redis stopped) under a route latch write: connect, naming the URL, the latch written after", async () => {
      const proxy = await CutProxy.start(server.port);
      const told: unknown[] = [];
      const routes = await createRedisRouteLatches({
        url: proxy.url,
        prefix: "cut:",
        onError: (e) => told.push(e),
      });
      const reader = await createRedisRouteLatches({ url: server.url, prefix: "cut:" });
      try {
        server.pause();
        routes.set("http://cut.test", { neither: true, lmstudioGone: false, lmstudioMissUntil: 0 });
        await pause(200);
        await proxy.cut();
        server.resume();
        const ours = () =>
          told.filter(
            (error): error is RedisStoreError =>
              RedisStoreError.isInstance(error) && !error.message.startsWith("A connection to Redis"),
          );
        for (let i = 0; i < 40 && ours().length === 0; i++) await pause(50);
        // The client's own "Socket closed unexpectedly" event is told as it raised it (as the README
        // says); the failed write is the store's. Before: a second bare client error.
        expect(ours().map((e) => [e.code, e.message])).toEqual([
          [
            "connect",
            expect.stringMatching(
              /^The route latch store could not send the learned route latches it owes Redis: Redis at redis:\/\/127\.0\.0\.1:\d+ could not be reached/,
            ),
          ],
        ]);
        await proxy.restore();
        for (let i = 0; i < 100 && !reader.get("http://cut.test")?.neither; i++) await pause(20);
        expect(reader.get("http://cut.test")?.neither).toBe(true);
      } finally {
        server.resume();
        await Promise.all([routes.close(), reader.close()]);
        await proxy.cut().catch(() => {});
      }
    }, 20_000);
  },
);

describe.skipIf(!HAS_REDIS)("R81-2: Redis down under a bus with watchers", () => {
  it("is told a few times, each a RedisStoreError naming the URL, not at every reconnect and every watcher's retry", async () => {
    const server = await RedisServer.start();
    const told: unknown[] = [];
    const bus = await createRedisBus({ url: server.url, prefix: "down:", onError: (e) => told.push(e) });
    try {
      const watchers = Array.from({ length: 5 }, (_, i) => bus.watch(`w${i}`));
      const reads = watchers.map((watcher) => watcher.next());
      await pause(300);
      await server.kill();
      await pause(3000);
      // Before: 29 in 4 s (the client's bare "Socket closed unexpectedly" from each watcher and each
      // connection, then ECONNREFUSED from two connections at each reconnect), growing for as long
      // as Redis is down.
      expect(told.length).toBeGreaterThan(0);
      expect(told.length).toBeLessThanOrEqual(6);
      for (const error of told) {
        expect(RedisStoreError.isInstance(error), String(error)).toBe(true);
        expect((error as RedisStoreError).code).toBe("connect");
        expect((error as RedisStoreError).message).toMatch(/Redis at redis:\/\/127\.0\.0\.1:\d+/);
      }
      const during = told.length;
      await pause(1500);
      expect(told.length).toBe(during);
      // Back: the watchers read on.
      await server.start();
      bus.emit("w0", { kind: "output", text: "back" });
      await expect(reads[0]).resolves.toMatchObject({ value: { seq: 1 } });
    } finally {
      await bus.close();
      await server.kill();
    }
  }, 20_000);
});
