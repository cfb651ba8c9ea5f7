// Benchmarks for the Redis stores against the in-memory ones, measured in the same run, on a real
// redis-server started here on a free loopback port (run by `pnpm bench`):
//  1. emit throughput: events a second through `emit` alone, and until they are all in Redis;
//  2. watch latency: from `emit` to a watcher's `next()` resolving, median and p95;
//  3. the hot path of a request: `capabilitiesFor` and the flag reads a body build makes, per call,
//     and how many commands Redis processed meanwhile (the target is none); and the store's id
//     lookup alone as it was (a Map keyed by the key in clear) against as it is (a digest, LRU);
//  4. a burst: N events emitted in one synchronous stretch, time until all are in Redis, per event,
//     at 50 000 and 400 000 (the per-event time should not grow with N).
// Numbers are printed, never asserted.
import { createBus, type SequencedEvent } from "@loopwright/events";
import { createCapabilityStore, modelCapabilitiesFor } from "@loopwright/negotiate";
import { createClient } from "@redis/client";
import { cacheKeyOf } from "../src/capabilities.js";
import { createRedisBus, createRedisCapabilityStore } from "../src/index.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";

if (!HAS_REDIS) {
  console.log(`skipped: ${SKIP_MESSAGE}`);
  process.exit(0);
}

const EVENTS = 20_000;
const LATENCY_SAMPLES = 300;
const READS = 200_000;
const event = { kind: "output" as const, text: "a token or two" };

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};
const fmt = (n: number) => n.toLocaleString("en-US", { maximumFractionDigits: n < 10 ? 2 : 0 });

async function latency(watcher: AsyncIterator<SequencedEvent>, emit: () => void): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < LATENCY_SAMPLES; i++) {
    const started = performance.now();
    const next = watcher.next();
    emit();
    await next;
    samples.push(performance.now() - started);
  }
  return samples;
}

const server = await RedisServer.start();
try {
  // 1. emit throughput
  const memory = createBus();
  // Warm both paths up first, so neither pays the JIT in its measured run.
  for (let i = 0; i < 5000; i++) memory.emit("warm-up", event);
  let started = performance.now();
  for (let i = 0; i < EVENTS; i++) memory.emit("bench", event);
  const memoryRate = EVENTS / ((performance.now() - started) / 1000);

  const redis = await createRedisBus({ url: server.url, prefix: "bench:" });
  for (let i = 0; i < 5000; i++) redis.emit("warm-up", event);
  await redis.flushed();
  started = performance.now();
  for (let i = 0; i < EVENTS; i++) redis.emit("bench", event);
  const emitMs = performance.now() - started;
  await redis.flushed();
  const writtenMs = performance.now() - started;
  console.log(`emit throughput, ${fmt(EVENTS)} events`);
  console.log(`  in-memory bus          ${fmt(memoryRate)} events/s`);
  console.log(
    `  Redis bus, emit alone  ${fmt(EVENTS / (emitMs / 1000))} events/s (${fmt((EVENTS / (emitMs / 1000) / memoryRate) * 100)}% of in-memory)`,
  );
  console.log(
    `  Redis bus, all written ${fmt(EVENTS / (writtenMs / 1000))} events/s (${fmt((EVENTS / (writtenMs / 1000) / memoryRate) * 100)}% of in-memory)`,
  );

  // 2. watch latency
  const memoryWatcher = memory.watch("latency");
  const memorySamples = await latency(memoryWatcher, () => memory.emit("latency", event));
  const redisWatcher = redis.watch("latency");
  redis.emit("latency", event);
  await redisWatcher.next();
  const redisSamples = await latency(redisWatcher, () => redis.emit("latency", event));
  console.log(`watch latency, emit to next(), ${LATENCY_SAMPLES} samples`);
  console.log(
    `  in-memory bus  median ${fmt(quantile(memorySamples, 0.5) * 1000)} µs, p95 ${fmt(quantile(memorySamples, 0.95) * 1000)} µs`,
  );
  console.log(
    `  Redis bus      median ${fmt(quantile(redisSamples, 0.5) * 1000)} µs, p95 ${fmt(quantile(redisSamples, 0.95) * 1000)} µs`,
  );
  await memoryWatcher.return?.();
  await redisWatcher.return?.();
  await redis.close();

  // 3. hot-path latch reads
  const hot = (store: {
    capabilitiesFor(baseUrl: string, apiKey?: string): { strictSchemas: boolean; usageInStream: boolean };
  }) => {
    let open = 0;
    const t = performance.now();
    for (let i = 0; i < READS; i++) {
      const caps = store.capabilitiesFor("http://llm.bench/v1", "sk-bench");
      if (caps.strictSchemas && caps.usageInStream) open++;
      modelCapabilitiesFor(caps, "m");
    }
    return { ns: ((performance.now() - t) * 1e6) / READS, open };
  };
  const raw = createClient({ url: server.url, RESP: 2 });
  await raw.connect();
  const processed = async () =>
    Number(/total_commands_processed:(\d+)/.exec(String(await raw.sendCommand(["INFO", "stats"])))?.[1]);
  const store = await createRedisCapabilityStore({ url: server.url, prefix: "bench:" });
  store.capabilitiesFor("http://llm.bench/v1", "sk-bench");
  await store.sync();
  const inMemory = hot(createCapabilityStore());
  const before = await processed();
  const shared = hot(store);
  await new Promise((resolve) => setTimeout(resolve, 50));
  const commands = (await processed()) - before - 1;
  console.log(`latch reads on a request's hot path, ${fmt(READS)} reads`);
  console.log(`  in-memory store  ${fmt(inMemory.ns)} ns/read`);
  console.log(
    `  Redis store      ${fmt(shared.ns)} ns/read (${fmt(shared.ns / inMemory.ns)}x), Redis commands meanwhile: ${commands}`,
  );
  // The id lookup alone, as it was (a Map keyed by the base URL and the key in clear) and as it is
  // (a SHA-256 of the two, in a bounded LRU), on the same read, same run.
  const baseUrl = "http://llm.bench/v1";
  const apiKey = "sk-bench";
  const clear = new Map([[`${baseUrl}\u0000${apiKey}`, "id"]]);
  const digested = new Map([[cacheKeyOf(baseUrl, apiKey), "id"]]);
  const lookup = (read: () => string | undefined) => {
    let found = 0;
    const t = performance.now();
    for (let i = 0; i < READS; i++) if (read() !== undefined) found++;
    return { ns: ((performance.now() - t) * 1e6) / READS, found };
  };
  const inClear = lookup(() => clear.get(`${baseUrl}\u0000${apiKey}`));
  const asDigest = lookup(() => {
    const key = cacheKeyOf(baseUrl, apiKey);
    const id = digested.get(key);
    if (id !== undefined) {
      digested.delete(key);
      digested.set(key, id);
    }
    return id;
  });
  console.log(
    `  its id lookup    ${fmt(asDigest.ns)} ns/read (digest, bounded LRU) against ${fmt(inClear.ns)} ns/read (key in clear, unbounded): ${fmt(asDigest.ns / inClear.ns)}x`,
  );
  await store.close();
  raw.destroy();

  // 4. a synchronous burst, written whole
  const burstBus = await createRedisBus({ url: server.url, prefix: "burst:", maxStreamLength: 1_000_000 });
  const perEvent: number[] = [];
  for (const n of [50_000, 400_000]) {
    for (let i = 0; i < n; i++) burstBus.emit(`burst-${n}`, event);
    const t = performance.now();
    await burstBus.flushed();
    perEvent.push(((performance.now() - t) * 1000) / n);
  }
  console.log("a synchronous burst of emits, time from the last emit until all are in Redis");
  console.log(
    `  50 000: ${fmt(perEvent[0] as number)} µs/event; 400 000: ${fmt(perEvent[1] as number)} µs/event (${fmt((perEvent[1] as number) / (perEvent[0] as number))}x)`,
  );
  await burstBus.close();
} finally {
  await server.kill();
}
