import { createClientPool } from "@loopwright/client";
import { type RecordedRequest, startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
    for (let i = 0; i < 100 && !b.get(new URL(llm.baseUrl).origin)?.neither; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
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
});
