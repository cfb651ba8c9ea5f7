// Benchmarks for the Redis stores against the in-memory ones, measured in the same run, on a real
// redis-server started here on a free loopback port (run by `pnpm bench`):
//  1. emit throughput: events a second through `emit` alone, and until they are all in Redis;
//  2. watch latency: from `emit` to a watcher's `next()` resolving, median and p95;
//  3. the hot path of a request: `capabilitiesFor` and the flag reads a body build makes, per call,
//     and how many commands Redis processed meanwhile (the target is none); and the store's id
//     lookup alone as it was (a Map keyed by the key in clear) against as it is (a digest, LRU);
//  4. a burst: N events emitted in one synchronous stretch, time until all are in Redis, per event,
//     at 50 000 and 400 000 (the per-event time should not grow with N);
//  5. the frozen copy `emit` keeps and hands back, per event of three shapes: an emit's time, the
//     copy's (`plainFrozen`) and that of reading the written text back (`frozenFrom`, as every emit
//     did before), each alone, and each's share of an emit.
// Numbers are printed, never asserted.
import { createBus, type SequencedEvent } from "@loopwright/events";
import { createCapabilityStore, modelCapabilitiesFor } from "@loopwright/negotiate";
import { createClient } from "@redis/client";
import { frozenFrom, plainFrozen } from "../src/bus.js";
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

  // 5. the frozen copy emit keeps
  const shapes: [string, Record<string, unknown>][] = [
    ["a token", event],
    [
      "a usage",
      {
        kind: "usage",
        usage: {
          prompt_tokens: 1234,
          completion_tokens: 56,
          total_tokens: 1290,
          prompt_tokens_details: { cached_tokens: 1000 },
        },
      },
    ],
    [
      "an 8 KB tool result",
      { kind: "tool_result", id: "call_1", name: "read_file", result: "x".repeat(8000) },
    ],
  ];
  const copyBus = await createRedisBus({ url: server.url, prefix: "copy:", maxStreamLength: 1_000_000 });
  // The least of five rounds, the three measured in turn: on a busy machine one round swings by 2x.
  const each = (n: number, work: () => void) => {
    for (let i = 0; i < 2000; i++) work();
    const t = performance.now();
    for (let i = 0; i < n; i++) work();
    return ((performance.now() - t) * 1000) / n;
  };
  console.log(`the frozen copy emit keeps, per event (${fmt(EVENTS)} each)`);
  for (const [name, shape] of shapes) {
    const stored = { ...shape, seq: 7 };
    const text = JSON.stringify(stored);
    let [emitUs, copyUs, parseUs] = [Infinity, Infinity, Infinity];
    for (let round = 0; round < 5; round++) {
      emitUs = Math.min(
        emitUs,
        each(EVENTS / 5, () => copyBus.emit(`copy-${name}`, shape as never)),
      );
      await copyBus.flushed();
      copyUs = Math.min(
        copyUs,
        each(EVENTS / 5, () => plainFrozen(stored)),
      );
      parseUs = Math.min(
        parseUs,
        each(EVENTS / 5, () => frozenFrom(text)),
      );
    }
    console.log(
      `  ${name.padEnd(20)} emit ${fmt(emitUs)} µs; its copy ${fmt(copyUs)} µs (${fmt((copyUs / emitUs) * 100)}%), ` +
        `read back from the text as before ${fmt(parseUs)} µs (${fmt((parseUs / (emitUs - copyUs + parseUs)) * 100)}% of an emit so)`,
    );
  }
  await copyBus.close();
} finally {
  await server.kill();
}
