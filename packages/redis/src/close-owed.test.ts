import { startServer, type TestServer } from "@loopwright/testkit";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CutProxy } from "../test/cut-proxy.js";
import { redisHost } from "../test/host.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisCalibration } from "./calibration.js";
import { createRedisCapabilityStore } from "./capabilities.js";
import { RedisStoreError } from "./errors.js";
import { createRedisRouteLatches } from "./route-latches.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

describe.skipIf(!HAS_REDIS)(
  "close() right after a forget or a learned latch (a one-shot admin command)",
  () => {
    let redis: RedisServer;
    let raw: ReturnType<typeof createClient>;
    let llm: TestServer;
    const keys = async (pattern: string) => ((await raw.sendCommand(["KEYS", pattern])) as string[]).sort();

    beforeAll(async () => {
      redis = await RedisServer.start();
      raw = createClient({ url: redis.url, RESP: 2 });
      await raw.connect();
      llm = await startServer({ replies: () => ({ content: "ok", usage: { prompt_tokens: 1000 } }) });
    });
    afterAll(async () => {
      raw.destroy();
      await llm.close();
      await redis.kill();
    });

    it("a tenant's latches forgotten just before close() are gone from Redis", async () => {
      const running = await createRedisCapabilityStore({ url: redis.url, prefix: "oneshot-caps:" });
      running.capabilitiesFor("http://tenant.test/v1", "sk-tenant").usageInStream = false;
      await running.sync();
      await running.close();
      expect(await keys("oneshot-caps:caps:http*")).toHaveLength(1);

      const admin = await createRedisCapabilityStore({ url: redis.url, prefix: "oneshot-caps:" });
      admin.forget("http://tenant.test/v1", "sk-tenant");
      await admin.close();

      expect(await keys("oneshot-caps:caps:http*")).toEqual([]);
      const later = await createRedisCapabilityStore({ url: redis.url, prefix: "oneshot-caps:" });
      expect(later.capabilitiesFor("http://tenant.test/v1", "sk-tenant").usageInStream).toBe(true);
      await later.close();
    });

    it("an endpoint's readings forgotten just before close() are gone from Redis", async () => {
      const running = await createRedisCalibration({ url: redis.url, prefix: "oneshot-cal:" });
      running.calibrate(
        "http://tenant.test/v1",
        "m",
        { messages: [{ role: "user", content: "x".repeat(3000) }] },
        1000,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      await running.close();
      expect(await keys("oneshot-cal:calibration:s*")).toHaveLength(1);

      const admin = await createRedisCalibration({ url: redis.url, prefix: "oneshot-cal:" });
      admin.forget("http://tenant.test/v1");
      await admin.close();

      expect(await keys("oneshot-cal:calibration:s*")).toEqual([]);
    });

    it("runtime.forget then stores.close() leaves nothing of the tenant in Redis", async () => {
      const host = await redisHost({ url: redis.url, prefix: "oneshot-host:" });
      const tenant = { baseUrl: llm.baseUrl, apiKey: "sk-tenant-oneshot" };
      await host.runAgentLoop({
        config: { ...tenant, model: "sim" },
        messages: [{ role: "user", content: "x".repeat(3000) }],
        dispatch: () => "",
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await keys("oneshot-host:calibration:h*")).toHaveLength(1);
      host.runtime.forget(tenant);
      await host.close();
      expect(await keys("oneshot-host:calibration:h*")).toEqual([]);
    });

    it("a forget close() could not send (Redis out of reach) is told to onError, not dropped in silence", async () => {
      const proxy = await CutProxy.start(redis.port);
      const reports: unknown[] = [];
      const admin = await createRedisCapabilityStore({
        url: proxy.url,
        prefix: "oneshot-away:",
        onError: (error) => reports.push(error),
      });
      await proxy.cut();
      admin.forget("http://tenant.test/v1", "sk-tenant");
      await admin.close();
      const closed = reports.filter((error) => RedisStoreError.isInstance(error) && error.code === "closed");
      expect(closed).toHaveLength(1);
      expect(String(closed[0])).toMatch(/1 forgotten tenants were not sent to Redis before close\(\)/);
    });

    it("a route latch learned just before close() reaches Redis", async () => {
      const store = await createRedisRouteLatches({ url: redis.url, prefix: "oneshot-routes:" });
      store.set("http://routes.test", { neither: false, lmstudioGone: false, lmstudioMissUntil: 0 });
      const state = store.get("http://routes.test");
      if (!state) throw new Error("the latch set a moment ago is not held");
      state.neither = true;
      await store.close();
      expect(await keys("oneshot-routes:routes:*")).toHaveLength(2);
    });
  },
);
