import { createClientPool } from "@loopwright/client";
import { type RecordedRequest, startServer, type TestServer } from "@loopwright/testkit";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CutProxy } from "../test/cut-proxy.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisRouteLatches, type RedisRouteLatches } from "./route-latches.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const paths = (server: TestServer) => server.requests.map((r: RecordedRequest) => r.path);

describe.skipIf(!HAS_REDIS)("the Redis window-route latches", () => {
  let redis: RedisServer;
  let llm: TestServer;
  const stores: RedisRouteLatches[] = [];

  beforeAll(async () => {
    redis = await RedisServer.start();
    llm = await startServer({ models: [{ id: "m" }] });
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await llm.close();
    await redis.kill();
  });

  it("a server without native window routes, learned by one instance's pool, is not asked them by another's", async () => {
    const a = await createRedisRouteLatches({ url: redis.url, prefix: "routes:" });
    const b = await createRedisRouteLatches({ url: redis.url, prefix: "routes:" });
    stores.push(a, b);
    const poolA = createClientPool({ routeLatches: a });
    const poolB = createClientPool({ routeLatches: b });

    expect(await poolA.servedWindow({ baseUrl: llm.baseUrl, model: "m" })).toBeUndefined();
    expect(paths(llm)).toEqual(["/props", "/api/v0/models"]);
    const base = llm.baseUrl.replace(/\/v1$/, "");
    for (let i = 0; i < 100 && !b.get(base)?.neither; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await poolB.servedWindow({ baseUrl: llm.baseUrl, model: "m" })).toBeUndefined();
    // B asked nothing: A's latch reached it.
    expect(paths(llm)).toEqual(["/props", "/api/v0/models"]);

    const late = await createRedisRouteLatches({ url: redis.url, prefix: "routes:" });
    stores.push(late);
    expect(
      await createClientPool({ routeLatches: late }).servedWindow({ baseUrl: llm.baseUrl }),
    ).toBeUndefined();
    expect(paths(llm)).toHaveLength(2);
  });

  it("a server whose /props answered without a window, learned by one instance's pool, is not asked /props by another's until the miss time has passed", async () => {
    // A llama-server build (or a proxy) answering /props 200 with no n_ctx: the client leaves /props
    // alone for listingMissMs; before r101 only this process knew, and every other asked it again.
    const server = await startServer({
      models: [{ id: "m" }],
      props: { default_generation_settings: { temperature: 0.8 } },
    });
    const a = await createRedisRouteLatches({ url: redis.url, prefix: "props-miss:" });
    const b = await createRedisRouteLatches({ url: redis.url, prefix: "props-miss:" });
    stores.push(a, b);
    let clock = Date.now();
    const poolA = createClientPool({ routeLatches: a, now: () => clock });
    const poolB = createClientPool({ routeLatches: b, now: () => clock });
    const endpoint = { baseUrl: server.baseUrl, model: "m" };
    const base = server.baseUrl.replace(/\/v1$/, "");
    try {
      expect(await poolA.servedWindow(endpoint)).toBeUndefined();
      expect(paths(server)).toEqual(["/props", "/api/v0/models"]);
      const learned = a.get(base)?.propsMissUntil ?? 0;
      expect(learned).toBeGreaterThan(clock);
      for (let i = 0; i < 500 && (b.get(base)?.propsMissUntil ?? 0) !== learned; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(b.get(base)?.propsMissUntil).toBe(learned);
      expect(await poolB.servedWindow(endpoint)).toBeUndefined();
      // B asked nothing: A's two latches (no /api/v0/models, /props without a window) reached it.
      expect(paths(server)).toEqual(["/props", "/api/v0/models"]);

      // An instance started after reads it from Redis.
      const late = await createRedisRouteLatches({ url: redis.url, prefix: "props-miss:" });
      stores.push(late);
      expect(
        await createClientPool({ routeLatches: late, now: () => clock }).servedWindow(endpoint),
      ).toBeUndefined();
      expect(paths(server)).toHaveLength(2);

      // Past the miss time, /props is asked again (once), as a pool on a Map asks it.
      clock = learned + 1;
      expect(await poolB.servedWindow(endpoint)).toBeUndefined();
      expect(paths(server)).toEqual(["/props", "/api/v0/models", "/props"]);
    } finally {
      await server.close();
    }
  });

  it("a server forgotten by the pool (runtime.forget) is asked its native routes again, as a pool on a Map asks", async () => {
    // A server that gains llama.cpp's /props later (upgraded, or replaced behind the same address).
    const served: { models: { id: string }[]; props?: unknown } = { models: [{ id: "m" }] };
    const server = await startServer(served);
    const store = await createRedisRouteLatches({ url: redis.url, prefix: "forget-routes:" });
    stores.push(store);
    const shared = createClientPool({ routeLatches: store });
    const own = createClientPool();
    const endpoint = { baseUrl: server.baseUrl, model: "m" };
    try {
      expect(await own.servedWindow(endpoint)).toBeUndefined();
      expect(await shared.servedWindow(endpoint)).toBeUndefined();
      expect(store.get(server.baseUrl.replace(/\/v1$/, ""))?.neither).toBe(true);
      // Forgotten at once, before this instance's own announcement of the latch has come back.
      shared.forget(endpoint);
      own.forget(endpoint);
      served.props = { default_generation_settings: { n_ctx: 8192 } };
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await own.servedWindow(endpoint)).toBe(8192);
      expect(await shared.servedWindow(endpoint)).toBe(8192);
    } finally {
      await server.close();
    }
  });

  it("shares a latch under a digest of the base URL, so credentials in it never reach Redis", async () => {
    const a = await createRedisRouteLatches({ url: redis.url, prefix: "creds:" });
    const b = await createRedisRouteLatches({ url: redis.url, prefix: "creds:" });
    stores.push(a, b);
    const base = "http://user:hunter2-secret@llm.test";
    a.set(base, { neither: false, lmstudioGone: false, lmstudioMissUntil: 0 });
    const state = a.get(base);
    if (!state) throw new Error("the latch set a moment ago is not held");
    state.lmstudioGone = true;
    for (let i = 0; i < 100 && !b.get(base)?.lmstudioGone; i++) await new Promise((r) => setTimeout(r, 10));
    expect(b.get(base)).toMatchObject({ neither: false, lmstudioGone: true });
    const raw = createClient({ url: redis.url, RESP: 2 });
    await raw.connect();
    try {
      const keys = (await raw.sendCommand(["KEYS", "creds:*"])) as string[];
      const members = (await raw.sendCommand(["SMEMBERS", "creds:routes:index"])) as string[];
      expect(keys).toHaveLength(2);
      expect([...keys, ...members].join("\n")).not.toContain("hunter2");
    } finally {
      raw.destroy();
    }
  });

  it("a latch learned while only the command connection is down (Redis closed it as idle) reaches every instance once it reconnects", async () => {
    const a = await createRedisRouteLatches({ url: redis.url, prefix: "idle:", onError: () => {} });
    const b = await createRedisRouteLatches({ url: redis.url, prefix: "idle:", onError: () => {} });
    stores.push(a, b);
    const base = "http://idle-routes.test";
    a.set(base, { neither: false, lmstudioGone: false, lmstudioMissUntil: 0 });
    const raw = createClient({ url: redis.url, RESP: 2 });
    await raw.connect();
    try {
      // What Redis's `timeout` does to an idle client: command connections go, subscribers stay.
      await raw.sendCommand(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
      const state = a.get(base);
      if (!state) throw new Error("the latch set a moment ago is not held");
      state.neither = true;
      for (let i = 0; i < 100 && !b.get(base)?.neither; i++) await new Promise((r) => setTimeout(r, 20));
      expect(b.get(base)).toMatchObject({ neither: true });
      const keys = (await raw.sendCommand(["KEYS", "idle:routes:*"])) as string[];
      expect(keys.sort()).toHaveLength(2);
      const late = await createRedisRouteLatches({ url: redis.url, prefix: "idle:" });
      stores.push(late);
      expect(late.get(base)).toMatchObject({ neither: true });
    } finally {
      raw.destroy();
    }
  }, 20_000);

  it("a latch learned while the whole link to Redis is down reaches every instance once it is back", async () => {
    const proxy = await CutProxy.start(redis.port);
    const a = await createRedisRouteLatches({ url: proxy.url, prefix: "cut:", onError: () => {} });
    const b = await createRedisRouteLatches({ url: redis.url, prefix: "cut:" });
    stores.push(a, b);
    const base = "http://cut-routes.test";
    a.set(base, { neither: false, lmstudioGone: false, lmstudioMissUntil: 0 });
    try {
      await proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const state = a.get(base);
      if (!state) throw new Error("the latch set a moment ago is not held");
      state.lmstudioGone = true;
      await proxy.restore();
      for (let i = 0; i < 100 && !b.get(base)?.lmstudioGone; i++) await new Promise((r) => setTimeout(r, 20));
      expect(b.get(base)).toMatchObject({ neither: false, lmstudioGone: true });
    } finally {
      await proxy.cut();
    }
  }, 20_000);
});
