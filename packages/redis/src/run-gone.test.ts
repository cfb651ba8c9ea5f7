import type { SequencedEvent } from "@loopwright/events";
import { describe, type ExpectStatic, it } from "vitest";
import { busFixture } from "../test/bus-fixture.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, type RedisEventBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const STOPPED = /gone from Redis \(expired\) without its `done`: its emitter stopped without ending the run/;
/** The subscribe-time word: the stream was already missing, so whether the run ended cannot be told. */
const UNTOLD =
  /^The run's stream is gone from Redis \(expired or removed\) and whether it ended cannot be told\./;

/** Reads a watcher (after seq `after`) to its end, or until `ms` pass (then says so in `abortedByTest`). */
async function readAll(
  bus: RedisEventBus,
  runId: string,
  ms: number,
  after = 0,
  more: { started?: boolean; startedGraceMs?: number } = {},
) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  const seen: SequencedEvent[] = [];
  for await (const event of bus.watch(runId, controller.signal, { after, ...more })) seen.push(event);
  clearTimeout(timer);
  return { seen, abortedByTest: controller.signal.aborted };
}

const textOf = (event: SequencedEvent | undefined) => (event as { text?: string } | undefined)?.text ?? "";

// Every test has its own key prefix on the shared Redis (the two restart tests their own Redis), so
// they run side by side: most of their time is waiting out retentions and grace periods.
describe.skipIf(!HAS_REDIS).concurrent("a watcher of a run whose stream is gone", () => {
  const redis = busFixture();
  const bus = (prefix: string, settings?: Parameters<typeof createRedisBus>[0]["settings"]) =>
    redis.bus(prefix, { settings });

  it("ends, after a notice, once the stream of a run whose emitter stopped without done has expired", {
    timeout: 20_000,
  }, async ({ expect }) => {
    // The emitting host: five events, a short retention, then it stops (no done, no endRun).
    const host = await bus("expired:", { retainUnendedMs: 1500 });
    for (let i = 0; i < 5; i++) host.emit("crashed", { kind: "output", text: `e${i}` });
    await host.flushed();
    await host.close();
    const watcherBus = await bus("expired:");
    const { seen, abortedByTest } = await readAll(watcherBus, "crashed", 15_000);
    expect(abortedByTest).toBe(false);
    expect(seen.slice(0, 5).map((e) => `${e.seq}:${e.kind}`)).toEqual([
      "1:output",
      "2:output",
      "3:output",
      "4:output",
      "5:output",
    ]);
    expect(seen).toHaveLength(6);
    expect(seen[5]?.kind).toBe("notice");
    expect(textOf(seen[5])).toMatch(STOPPED);
    // The watcher's own notice: the last seq read and `dropped: 0`, as a gap notice is, so a reader
    // resuming after it never skips a seq the emitter may still write.
    expect(seen[5]?.seq).toBe(5);
    expect((seen[5] as { dropped?: number }).dropped).toBe(0);
    expect(await redis.raw.sendCommand(["EXISTS", "expired:run:crashed"])).toBe(0);
  });

  it("a reader resuming at the run's last event (after = its seq) is told too once the stream expires, at that seq", {
    timeout: 20_000,
  }, async ({ expect }) => {
    // The page's reader had seqs 1-2 and reconnects with Last-Event-ID 2; the emitter has died.
    const host = await bus("resumed:", { retainUnendedMs: 1500 });
    host.emit("crashed", { kind: "output", text: "one" });
    host.emit("crashed", { kind: "output", text: "two" });
    await host.flushed();
    await host.close();
    const watcherBus = await bus("resumed:");
    const started = Date.now();
    const { seen, abortedByTest } = await readAll(watcherBus, "crashed", 12_000, 2);
    // Before, a watcher that read no entry could not tell the stream was gone: it waited for ever.
    expect(abortedByTest).toBe(false);
    expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["2:notice"]);
    expect(textOf(seen[0])).toMatch(STOPPED);
    expect((seen[0] as { dropped?: number }).dropped).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it("a reader resuming at the run's last event reads on when its emitter writes again after a quiet spell", {
    timeout: 20_000,
  }, async ({ expect }) => {
    const host = await bus("resumed-live:", { retainUnendedMs: 8000 });
    host.emit("slow", { kind: "output", text: "one" });
    await host.flushed();
    const watcherBus = await bus("resumed-live:");
    const reading = readAll(watcherBus, "slow", 15_000, 1);
    // Quiet for a few idle wakeups (each reads the stream's top, the same emitter's), then on.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    host.emit("slow", { kind: "output", text: "two" });
    host.emit("slow", { kind: "done" });
    const { seen, abortedByTest } = await reading;
    expect(abortedByTest).toBe(false);
    expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["2:output", "3:done"]);
  });

  it("reads on when the stream is deleted (evicted) while its emitter is alive and writing", {
    timeout: 20_000,
  }, async ({ expect }) => {
    // Evicted under maxmemory, or deleted by hand: gone long before its expiry.
    const host = await bus("deleted:", { retainUnendedMs: 8000 });
    host.emit("gone", { kind: "output", text: "one" });
    host.emit("gone", { kind: "output", text: "two" });
    await host.flushed();
    const watcherBus = await bus("deleted:");
    const reading = readAll(watcherBus, "gone", 15_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await redis.raw.sendCommand(["DEL", "deleted:run:gone"]);
    // Several idle wakeups find it gone (before, the second of them ended the watcher).
    await new Promise((resolve) => setTimeout(resolve, 3000));
    host.emit("gone", { kind: "output", text: "three" });
    host.emit("gone", { kind: "done" });
    const { seen, abortedByTest } = await reading;
    expect(abortedByTest).toBe(false);
    expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["1:output", "2:output", "3:output", "4:done"]);
  });

  it("a stream deleted by hand whose emitter writes no more ends its watcher once its expiry has passed", {
    timeout: 20_000,
  }, async ({ expect }) => {
    const host = await bus("deleted-dead:", { retainUnendedMs: 2500 });
    host.emit("gone", { kind: "output", text: "one" });
    host.emit("gone", { kind: "output", text: "two" });
    await host.flushed();
    await host.close();
    const watcherBus = await bus("deleted-dead:");
    const started = Date.now();
    const reading = readAll(watcherBus, "gone", 15_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await redis.raw.sendCommand(["DEL", "deleted-dead:run:gone"]);
    const { seen, abortedByTest } = await reading;
    expect(abortedByTest).toBe(false);
    expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["1:output", "2:output", "2:notice"]);
    expect(textOf(seen[2])).toMatch(STOPPED);
    // Not before the stream would have expired (its emitter's retention after its last write).
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
  });

  it("an endRun on another instance ends it without that notice", { timeout: 20_000 }, async ({ expect }) => {
    const host = await bus("ended:");
    host.emit("dropped", { kind: "output", text: "one" });
    await host.flushed();
    const watcherBus = await bus("ended:");
    const reading = readAll(watcherBus, "dropped", 15_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    host.endRun("dropped");
    const { seen, abortedByTest } = await reading;
    expect(abortedByTest).toBe(false);
    expect(seen.map((e) => e.kind)).toEqual(["output"]);
  });

  it("a watcher that has read nothing yet waits for the run to start, however long its key is missing", {
    timeout: 20_000,
  }, async ({ expect }) => {
    const host = await bus("late:");
    const watcherBus = await bus("late:");
    const reading = readAll(watcherBus, "later", 15_000);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    host.emit("later", { kind: "output", text: "at last" });
    host.emit("later", { kind: "done" });
    const { seen, abortedByTest } = await reading;
    expect(abortedByTest).toBe(false);
    expect(seen.map((e) => e.kind)).toEqual(["output", "done"]);
  });

  it("a stream lost with a Redis restart (no persistence) while its emitter goes on is waited for, not taken as the emitter gone", {
    timeout: 30_000,
  }, async ({ expect }) => {
    const own = await RedisServer.start();
    const made: RedisEventBus[] = [];
    try {
      const host = await createRedisBus({ url: own.url, prefix: "restart:", onError: () => {} });
      const watcherBus = await createRedisBus({ url: own.url, prefix: "restart:", onError: () => {} });
      made.push(host, watcherBus);
      host.emit("lives", { kind: "output", text: "before" });
      await host.flushed();
      const reading = readAll(watcherBus, "lives", 20_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await own.kill();
      await own.start();
      // The stream is gone with the restart, and the emitter is quiet for a while (a slow model).
      await new Promise((resolve) => setTimeout(resolve, 3000));
      host.emit("lives", { kind: "output", text: "after" });
      host.emit("lives", { kind: "done" });
      const { seen, abortedByTest } = await reading;
      expect(abortedByTest).toBe(false);
      expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["1:output", "2:output", "3:done"]);
    } finally {
      await Promise.all(made.map((b) => b.close()));
      await own.kill();
    }
  });
  describe("whose stream is already gone when it subscribes", () => {
    /** A host that emitted `count` events under `runId` and stopped without `done`; its stream expired. */
    const expiredRun = async (expect: ExpectStatic, prefix: string, runId: string, count: number) => {
      const host = await bus(prefix, { retainUnendedMs: 1500 });
      for (let i = 0; i < count; i++) host.emit(runId, { kind: "output", text: `e${i}` });
      await host.flushed();
      await host.close();
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expect(await redis.raw.sendCommand(["EXISTS", `${prefix}run:${runId}`])).toBe(0);
    };

    it("a reader resuming after seq 1 (it read the run, so the run existed) is told at that seq, and the watcher ends", {
      timeout: 25_000,
    }, async ({ expect }) => {
      await expiredRun(expect, "pre-gone:", "job-1", 1);
      const watcherBus = await bus("pre-gone:");
      const started = Date.now();
      const { seen, abortedByTest } = await readAll(watcherBus, "job-1", 10_000, 1, { startedGraceMs: 0 });
      // Before, it read nothing and waited for ever (here: until the test's abort).
      expect(abortedByTest).toBe(false);
      expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["1:notice"]);
      expect(textOf(seen[0])).toMatch(UNTOLD);
      expect((seen[0] as { dropped?: number }).dropped).toBe(0);
      // Two idle wakeups a second apart, as for a stream seen going.
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    });

    it("after 0 with no word that the run started, it waits (a run not started yet); with `started` it is told at seq 0", {
      timeout: 25_000,
    }, async ({ expect }) => {
      await expiredRun(expect, "pre-gone0:", "job-0", 1);
      const watcherBus = await bus("pre-gone0:");
      const waiting = await readAll(watcherBus, "job-0", 3500);
      expect(waiting.abortedByTest).toBe(true);
      expect(waiting.seen).toEqual([]);
      const { seen, abortedByTest } = await readAll(watcherBus, "job-0", 10_000, 0, {
        started: true,
        startedGraceMs: 0,
      });
      expect(abortedByTest).toBe(false);
      expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["0:notice"]);
      expect(textOf(seen[0])).toMatch(UNTOLD);
      expect((seen[0] as { dropped?: number }).dropped).toBe(0);
    });

    it("`startedGraceMs` holds the word back until the stream has been missing that long", {
      timeout: 25_000,
    }, async ({ expect }) => {
      const watcherBus = await bus("pre-grace:");
      const started = Date.now();
      const { seen, abortedByTest } = await readAll(watcherBus, "never", 15_000, 0, {
        started: true,
        startedGraceMs: 4000,
      });
      expect(abortedByTest).toBe(false);
      expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["0:notice"]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(4000);
    });

    it("a run recorded as started that writes within its grace is read, not told gone", {
      timeout: 25_000,
    }, async ({ expect }) => {
      const host = await bus("pre-slow:");
      const watcherBus = await bus("pre-slow:");
      const reading = readAll(watcherBus, "slow", 15_000, 0, { started: true, startedGraceMs: 6000 });
      await new Promise((resolve) => setTimeout(resolve, 3000));
      host.emit("slow", { kind: "output", text: "at last" });
      host.emit("slow", { kind: "done" });
      const { seen, abortedByTest } = await reading;
      expect(abortedByTest).toBe(false);
      expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["1:output", "2:done"]);
    });

    it("a claim standing on the id keeps it waiting; once the claim is gone it is told", {
      timeout: 25_000,
    }, async ({ expect }) => {
      await expiredRun(expect, "pre-claim:", "job-c", 2);
      await redis.raw.sendCommand(["SET", "pre-claim:claim:job-c", "someone-else", "PX", "4000"]);
      const watcherBus = await bus("pre-claim:");
      const started = Date.now();
      const { seen, abortedByTest } = await readAll(watcherBus, "job-c", 15_000, 2, { startedGraceMs: 0 });
      expect(abortedByTest).toBe(false);
      expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["2:notice"]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(3500);
    });

    it("a stream deleted (evicted) whose emitter writes on soon after is read on, not told gone", {
      timeout: 25_000,
    }, async ({ expect }) => {
      const host = await bus("pre-evicted:", { retainUnendedMs: 8000 });
      host.emit("alive", { kind: "output", text: "one" });
      host.emit("alive", { kind: "output", text: "two" });
      await host.flushed();
      await redis.raw.sendCommand(["DEL", "pre-evicted:run:alive"]);
      const watcherBus = await bus("pre-evicted:");
      const reading = readAll(watcherBus, "alive", 15_000, 2);
      await new Promise((resolve) => setTimeout(resolve, 500));
      host.emit("alive", { kind: "output", text: "three" });
      host.emit("alive", { kind: "done" });
      const { seen, abortedByTest } = await reading;
      expect(abortedByTest).toBe(false);
      expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["3:output", "4:done"]);
    });

    it("a run that ended with `done` and expired is not said to have stopped without ending: the notice says it cannot be told", {
      timeout: 25_000,
    }, async ({ expect }) => {
      // The reader had seqs 1-2 and missed only the `done`; the ended stream was kept 1 s.
      const host = await bus("pre-ended:", { retainEndedMs: 1000 });
      host.emit("fine", { kind: "output", text: "one" });
      host.emit("fine", { kind: "output", text: "two" });
      host.emit("fine", { kind: "done" });
      await host.flushed();
      await host.close();
      await new Promise((resolve) => setTimeout(resolve, 2000));
      expect(await redis.raw.sendCommand(["EXISTS", "pre-ended:run:fine"])).toBe(0);
      const watcherBus = await bus("pre-ended:");
      const { seen, abortedByTest } = await readAll(watcherBus, "fine", 12_000, 2, { startedGraceMs: 500 });
      expect(abortedByTest).toBe(false);
      expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["2:notice"]);
      // Before, it said the emitter "stopped without ending the run", which was false here.
      expect(textOf(seen[0])).toMatch(UNTOLD);
      expect(textOf(seen[0])).not.toMatch(/without ending the run|without its `done`/);
      expect((seen[0] as { dropped?: number }).dropped).toBe(0);
    });

    it("a live run whose stream was lost to a Redis restart: a reader joining after > 0 waits (default grace) and reads its next event", {
      timeout: 30_000,
    }, async ({ expect }) => {
      const own = await RedisServer.start();
      const made: RedisEventBus[] = [];
      try {
        const host = await createRedisBus({ url: own.url, prefix: "pre-restart:", onError: () => {} });
        made.push(host);
        for (let i = 1; i <= 3; i++) host.emit("live", { kind: "output", text: `e${i}` });
        await host.flushed();
        // Redis restarts without persistence: the live run's stream (and any claim) are gone until
        // its next write; its model is thinking meanwhile.
        await own.kill();
        await own.start();
        const watcherBus = await createRedisBus({ url: own.url, prefix: "pre-restart:", onError: () => {} });
        made.push(watcherBus);
        expect(await watcherBus.readHistory("live", 0)).toEqual([]);
        // A page reconnecting with Last-Event-ID 3, on another instance: no `startedGraceMs`.
        const reading = readAll(watcherBus, "live", 20_000, 3);
        // Quiet for longer than the two idle wakeups that ended it before.
        await new Promise((resolve) => setTimeout(resolve, 4500));
        host.emit("live", { kind: "output", text: "e4" });
        host.emit("live", { kind: "done" });
        const { seen, abortedByTest } = await reading;
        expect(abortedByTest).toBe(false);
        // Before, it got "3:notice" (gone, its emitter stopped) at about 2 s and ended, missing e4.
        expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["4:output", "5:done"]);
      } finally {
        await Promise.all(made.map((b) => b.close()));
        await own.kill();
      }
    });

    it("refuses a `started` or `startedGraceMs` that is not one, naming it", ({ expect }) => {
      return bus("pre-bad:").then((b) => {
        expect(() => b.watch("x", undefined, { started: "yes" as unknown as boolean })).toThrow(
          /`started` must be true or false/,
        );
        expect(() => b.watch("x", undefined, { startedGraceMs: -1 })).toThrow(
          /`startedGraceMs` must be a number of ms/,
        );
      });
    });
  });
});
