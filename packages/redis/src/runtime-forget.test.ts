import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { redisHost } from "../test/host.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

async function settled(check: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
}

const QUESTION = [{ role: "user" as const, content: "x".repeat(3000) }];

describe.skipIf(!HAS_REDIS)("a loop runtime on the Redis stores forgets a tenant", () => {
  let redis: RedisServer;
  let llm: TestServer | undefined;
  const closers: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterEach(async () => {
    await llm?.close();
    llm = undefined;
  });
  afterAll(async () => {
    await Promise.all(closers.map((c) => c.close()));
    await redis.kill();
  });

  it("runtime.forget drops the calibration readings a run took, on this instance and the others", async () => {
    llm = await startServer({ replies: () => ({ content: "ok", usage: { prompt_tokens: 1000 } }) });
    const here = await redisHost({ url: redis.url, prefix: "forget-cal:" });
    const there = await redisHost({ url: redis.url, prefix: "forget-cal:" });
    closers.push(here, there);
    const config = { baseUrl: llm.baseUrl, model: "sim" };
    await here.runAgentLoop({ config, messages: QUESTION, dispatch: () => "" });
    const divisor = (host: typeof here) =>
      host.calibration.charsPerTokenFor(host.capabilities.capabilitiesFor(llm!.baseUrl), "sim");
    expect(divisor(here)).toBeGreaterThan(2.5);
    expect(divisor(here)).not.toBe(4);
    await settled(() => divisor(there) !== 4);
    expect(divisor(there)).toBe(divisor(here));

    here.runtime.forget({ baseUrl: llm.baseUrl });

    // The endpoint met again starts from the default divisor, as a fresh tenant would.
    expect(divisor(here)).toBe(4);
    await settled(() => divisor(there) === 4);
    expect(divisor(there)).toBe(4);
  });

  it("runtime.forget on an instance that never ran the tenant drops its readings everywhere and makes nothing", async () => {
    llm = await startServer({ replies: () => ({ content: "ok", usage: { prompt_tokens: 1000 } }) });
    const here = await redisHost({ url: redis.url, prefix: "forget-elsewhere:" });
    const there = await redisHost({ url: redis.url, prefix: "forget-elsewhere:" });
    closers.push(here, there);
    const tenant = { baseUrl: llm.baseUrl, headers: { "api-key": "azure-tenant-elsewhere" } };
    await here.runAgentLoop({ config: { ...tenant, model: "sim" }, messages: QUESTION, dispatch: () => "" });
    const divisor = () =>
      here.calibration.charsPerTokenFor(
        here.capabilities.capabilitiesFor(tenant.baseUrl, undefined, tenant.headers),
        "sim",
      );
    expect(divisor()).not.toBe(4);
    expect(there.capabilities.size).toBe(0);

    there.runtime.forget(tenant);

    expect(there.capabilities.size).toBe(0);
    await settled(() => divisor() === 4);
    expect(divisor()).toBe(4);
  });
});
