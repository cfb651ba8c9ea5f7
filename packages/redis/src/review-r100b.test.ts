// Round 100 (b): a command is not on the socket when it is handed to the client — the client writes
// in a `setImmediate` of its own — so a process busy right after the hand-off (a long synchronous
// burst) had spent the "unanswered" bound before the command left. The owed work, the bus's writes
// and every bounded wait (`within`: the factories' handshake and first reads) counted from the
// hand-off: a Redis answering at once was taken for silent, and what waited past `max` or
// `maxPending` was dropped, or a factory failed. Each now counts from the first turn of the event
// loop after the hand-off. Nothing here asserts a duration: each test blocks the loop for longer
// than the bound it is about, and asserts what was kept, stored and told.
import { describe, expect, it } from "vitest";
import { busFixture, until } from "../test/bus-fixture.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { call, connection, open, type RedisConnection, resolveOptions } from "./connection.js";
import {
  createRedisBus,
  createRedisCapabilityStore,
  createRedisStores,
  type RedisEventBus,
} from "./index.js";
import { Owed } from "./owed.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Holds the event loop for `ms`, as a long synchronous burst of work does. */
function busy(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // Busy.
  }
}

/** Lets microtasks run (a flush starts one later and hands its first command over), not a turn of the loop. */
async function microtasks(n = 10): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

describe.skipIf(!HAS_REDIS)("a process busy right after handing Redis a command (r100b)", () => {
  const redis = busFixture();

  /** Stops Redis for `ms` (SIGSTOP), as a loaded Redis slow to get the processor is. */
  const slowRedis = async (ms: number) => {
    redis.server.pause();
    try {
      await pause(ms);
    } finally {
      redis.server.resume();
    }
  };

  /** A bus whose writes count as unanswered after 1.5 s, holding 1 000 events then; what it tells is kept. */
  const tightBus = async (prefix: string) => {
    const errors: unknown[] = [];
    const bus = await createRedisBus({
      url: redis.server.url,
      prefix,
      connectTimeoutMs: 1500,
      writeTimeoutMs: 1500,
      maxPending: 1000,
      onError: (error) => errors.push(error),
    });
    return { bus, errors };
  };
  /** Every event of runs 0–299 is stored (`each` a run), and `onError` was told nothing. */
  const expectStored = async (bus: RedisEventBus, errors: unknown[], each: number) => {
    for (const r of [0, 150, 299]) expect((await bus.readHistory(`run-${r}`)).length, `run-${r}`).toBe(each);
    expect(errors.map(String)).toEqual([]);
  };

  it("owed work is not taken for unanswered while it was not yet written: a Redis slow as the burst ends keeps it all", async () => {
    const resolved = resolveOptions(
      { url: redis.server.url, onError: () => {}, connectTimeoutMs: 1500 },
      "test",
    );
    const link: RedisConnection = connection(resolved);
    await open(link, resolved, "test");
    const reports: unknown[] = [];
    const owing = new Owed<string>({
      link,
      send: (key) => call(link, ["RPUSH", "r100b:owed", key]),
      max: 3,
      report: (error) => reports.push(error),
      what: "test entries",
    });
    try {
      for (const key of ["a", "b", "c", "d", "e", "f"]) owing.owe(key, "1");
      // "a" is handed to the client (the flush starts a microtask later), not yet written: the
      // client writes it on the loop's next turn, which this burst holds back past the 1.5 s bound.
      await microtasks(2);
      busy(1800);
      // Then Redis takes 0.3 s to answer, as a loaded one may: it was left the 0.1 s grace, counted
      // from the hand-off, and taken for silent; what waited past `max` (3) was dropped.
      await slowRedis(300);
      await until(() => owing.size === 0);
      expect(await redis.raw.sendCommand(["LRANGE", "r100b:owed", "0", "-1"])).toEqual([
        "a",
        "b",
        "c",
        "d",
        "e",
        "f",
      ]);
      expect(reports.map(String)).toEqual([]);
    } finally {
      owing.close();
      link.destroy();
    }
  }, 30_000);

  it("the bus does not take Redis, answering at once, for silent when the emitter is busy right after a write: no event dropped, onError told nothing", async () => {
    const { bus, errors } = await tightBus("r100b-bus:");
    try {
      // One event of each run first, so the burst's batch goes without a read of Redis's clock
      // before it (a run's first write may wait for one): it is handed over in the microtasks below.
      for (let r = 0; r < 300; r++) bus.emit(`run-${r}`, { kind: "output", text: "first" });
      await bus.flushed();
      for (let r = 0; r < 300; r++) {
        for (let i = 0; i < 10; i++) bus.emit(`run-${r}`, { kind: "output", text: String(i) });
      }
      await microtasks();
      // Past writeTimeoutMs before the batch was written: counted from the hand-off, the write read as
      // unanswered once the loop was free, before Redis could answer it; the 2 488 events waiting
      // past maxPending (1 000) were dropped, and onError told Redis "did not answer a write".
      busy(1800);
      await bus.flushed();
      await expectStored(bus, errors, 11);
    } finally {
      await bus.close();
    }
  }, 30_000);

  it("a long flush of ended runs, each answered at once, is not one write unanswered: no event dropped, onError told nothing", async () => {
    const { bus, errors } = await tightBus("r100b-ends:");
    try {
      // Three round trips each (the script, two announcements): seconds in all, well past the
      // bound, though Redis answers every one at once. Timed as one write, the flush read as
      // unanswered past writeTimeoutMs: onError was told Redis "did not answer a write", and the
      // events queued behind the ended runs past maxPending (1 000) were dropped.
      for (let r = 0; r < 10_000; r++) bus.endRun(`ended-${r}`);
      for (let r = 0; r < 300; r++) {
        for (let i = 0; i < 5; i++) bus.emit(`run-${r}`, { kind: "output", text: String(i) });
      }
      await bus.flushed();
      await expectStored(bus, errors, 5);
    } finally {
      await bus.close();
    }
  }, 60_000);

  it("sync() does not take Redis for silent when the host is busy right after calling it: a Redis slow as the burst ends settles it (r100e)", async () => {
    const errors: unknown[] = [];
    // sync() gives up once none of its writes settled for four times connectTimeoutMs: 1.2 s here.
    const store = await createRedisCapabilityStore({
      url: redis.server.url,
      prefix: "r100e-sync:",
      connectTimeoutMs: 300,
      onError: (e) => errors.push(e),
    });
    try {
      store.capabilitiesFor("http://llm.test/v1", "sk-1").usageInStream = false;
      const synced = store.sync();
      // The latch write is handed to the client, not yet written: the client writes it on the
      // loop's next turn, which this burst holds back past the bound. Then Redis takes 0.3 s to
      // answer: counted from the call, it was left the 0.1 s grace and sync() rejected, "settled
      // none of its latch writes for 1.2 s", with the write landing after.
      busy(1500);
      await slowRedis(300);
      await expect(synced).resolves.toBeUndefined();
      expect(await redis.raw.sendCommand(["KEYS", "r100e-sync:*"])).not.toEqual([]);
      expect(errors.map(String)).toEqual([]);
    } finally {
      await store.close();
    }
  }, 30_000);

  it.each([
    ["createRedisCapabilityStore", createRedisCapabilityStore],
    ["createRedisStores", createRedisStores],
  ] as const)(
    "%s gets its store when the host is busy right after calling it, past connectTimeoutMs",
    async (_name, make) => {
      const errors: unknown[] = [];
      // The factory hands its connect to the client and returns at its first await; the host goes on
      // with synchronous work longer than the bound. Counted from the call, the handshake read as
      // unanswered before the client had even opened its socket: "did not answer the handshake".
      const made = make({
        url: redis.server.url,
        prefix: "r100b-made:",
        connectTimeoutMs: 300,
        onError: (e) => errors.push(e),
      });
      busy(1000);
      const store = await made;
      await store.close();
      expect(errors.map(String)).toEqual([]);
    },
    30_000,
  );
});
