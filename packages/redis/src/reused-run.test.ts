import type { SequencedEvent } from "@loopwright/events";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, type RedisEventBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

async function collect(watcher: AsyncIterable<SequencedEvent>): Promise<SequencedEvent[]> {
  const seen: SequencedEvent[] = [];
  for await (const event of watcher) seen.push(event);
  return seen;
}

const text = (event: SequencedEvent) => (event as { text?: string }).text;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Writes an old run of 600 outputs and a `done` into `runId` and watches it from its start; the
 * replay is read a batch at a time, as the reader uses it, so the watcher returned holds the first.
 */
async function partWayThroughOldRun(bus: RedisEventBus, runId: string) {
  for (let i = 1; i <= 600; i++) bus.emit(runId, { kind: "output", text: `old ${i}` });
  bus.emit(runId, { kind: "done" });
  await bus.flushed();
  const watcher = bus.watch(runId);
  expect(text((await watcher.next()).value as SequencedEvent)).toBe("old 1");
  await pause(100);
  return watcher;
}

/**
 * What such a watcher read after "old 1": old events in order from seq 2, none of the new run's,
 * then one notice for the rest of the old run (its outputs from there and its `done`, seq 601).
 */
function expectOldThenNotice(seen: SequencedEvent[]): void {
  const old = seen.slice(0, -1);
  expect(old.length).toBeGreaterThan(0);
  expect(old.filter((e) => !text(e)?.startsWith("old "))).toEqual([]);
  expect(old.map((e) => e.seq)).toEqual(Array.from({ length: old.length }, (_, i) => i + 2));
  expect(seen.at(-1)).toMatchObject({ kind: "notice", dropped: 601 - old.length - 1, seq: 601 });
}

// Each bus stands for a process of its own: its own connections, its own seq counters.
describe.skipIf(!HAS_REDIS)("a run id used again, in another process, after its run ended", () => {
  let server: RedisServer;
  const buses: RedisEventBus[] = [];
  let prefixes = 0;
  /** `count` buses on one fresh prefix (of the file's Redis, or `url`'s), each with its own list of what it reported. */
  const processes = async (count: number, url = server.url) => {
    const prefix = `reuse${prefixes++}:`;
    return Promise.all(
      Array.from({ length: count }, async () => {
        const errors: unknown[] = [];
        const bus = await createRedisBus({ url, prefix, onError: (e) => errors.push(e) });
        buses.push(bus);
        return { bus, errors };
      }),
    );
  };

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close()));
    await server.kill();
  });

  it("starts afresh from seq 1: a watcher on any instance reads the new run, not the old one", async () => {
    const [a, b, c] = await processes(3);
    if (!a || !b || !c) throw new Error("three buses");
    a.bus.emit("job", { kind: "output", text: "old 1" });
    a.bus.emit("job", { kind: "output", text: "old 2" });
    a.bus.emit("job", { kind: "done" });
    await a.bus.flushed();

    expect(b.bus.emit("job", { kind: "output", text: "new 1" }).seq).toBe(1);
    b.bus.emit("job", { kind: "done" });
    await b.bus.flushed();

    const seen = await collect(c.bus.watch("job"));
    expect(seen.map((e) => [e.seq, e.kind, text(e)])).toEqual([
      [1, "output", "new 1"],
      [2, "done", undefined],
    ]);
    expect((await a.bus.readHistory("job")).map(text)).toEqual(["new 1", undefined]);
    expect(b.errors).toEqual([]);
  });

  it("two processes starting the same ended id at once: one run is written whole, the other is refused, never a mix", async () => {
    const [a, b, c, d] = await processes(4);
    if (!a || !b || !c || !d) throw new Error("four buses");
    a.bus.emit("race", { kind: "output", text: "old" });
    a.bus.emit("race", { kind: "done" });
    await a.bus.flushed();

    const watching = collect(d.bus.watch("race", undefined, { after: 2 }));
    // Both start in the same tick, so their first writes reach Redis together; then each runs
    // ahead of the other in turn, so the one refused at first has seqs above the other's later.
    for (let round = 0; round < 8; round++) {
      const [ahead, behind] = round % 2 === 0 ? [b, c] : [c, b];
      for (let i = 0; i < 3; i++) ahead.bus.emit("race", { kind: "output", text: ahead === b ? "b" : "c" });
      behind.bus.emit("race", { kind: "output", text: behind === b ? "b" : "c" });
      await Promise.all([b.bus.flushed(), c.bus.flushed()]);
    }
    b.bus.emit("race", { kind: "done" });
    c.bus.emit("race", { kind: "done" });
    await Promise.all([b.bus.flushed(), c.bus.flushed()]);

    const stored = await a.bus.readHistory("race");
    const writers = new Set(stored.filter((e) => e.kind === "output").map(text));
    expect(writers.size).toBe(1);
    const winner = writers.has("b") ? b : c;
    const loser = winner === b ? c : b;
    // Each wrote 16 outputs and a done.
    expect(stored.map((e) => e.seq)).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
    expect(stored.at(-1)?.kind).toBe("done");
    expect(winner.errors).toEqual([]);
    expect(loser.errors.length).toBeGreaterThan(0);
    // Refused from its very first write: had both reset the old run, the loser's first batch would
    // have been written (and then deleted by the other's reset), and refused only later on.
    expect(String(loser.errors[0])).toMatch(/seq 1 .*another instance|another instance.*seq 1 /);
    // A watcher that was waiting past the old run's end reads one process's events, never both.
    const tail = await watching;
    expect(tail.at(-1)?.kind).toBe("done");
    expect(new Set(tail.filter((e) => e.kind === "output").map(text))).toEqual(writers);
  });

  it("a watcher part-way through the old run when it is started afresh ends, and reads none of the new run as the old one's", async () => {
    const [a, b] = await processes(2);
    if (!a || !b) throw new Error("two buses");
    const watcher = await partWayThroughOldRun(a.bus, "long");

    for (let i = 1; i <= 700; i++) b.bus.emit("long", { kind: "output", text: `new ${i}` });
    await b.bus.flushed();

    const rest = await collect(watcher);
    expectOldThenNotice(rest);
  });

  it.concurrent("a watcher part-way through the old run ends with a gap notice when the new run is shorter than where it stood", async () => {
    const [a, b] = await processes(2);
    if (!a || !b) throw new Error("two buses");
    const watcher = await partWayThroughOldRun(a.bus, "short");

    // The new run ends below every seq the watcher has read: no entry past its position ever comes.
    for (let i = 1; i <= 5; i++) b.bus.emit("short", { kind: "output", text: `new ${i}` });
    b.bus.emit("short", { kind: "done" });
    await b.bus.flushed();

    const rest = await Promise.race([collect(watcher), pause(8000).then(() => "still waiting" as const)]);
    expect(rest).not.toBe("still waiting");
    const seen = rest as SequencedEvent[];
    expectOldThenNotice(seen);
    expect(text(seen.at(-1) as SequencedEvent)).toMatch(/started afresh/);
    // The new run's first entry named where the old one ended: the count is exact.
    expect(text(seen.at(-1) as SequencedEvent)).not.toMatch(/at least/);
    // A watcher of the new run reads it whole.
    expect((await collect(a.bus.watch("short"))).map(text)).toEqual([
      "new 1",
      "new 2",
      "new 3",
      "new 4",
      "new 5",
      undefined,
    ]);
    expect(a.errors).toEqual([]);
    expect(b.errors).toEqual([]);
  }, 15_000);

  it.concurrent("a watcher whose run was started afresh twice before it looked ends with a notice that gives the least it skipped", async () => {
    const [a, b, c] = await processes(3);
    if (!a || !b || !c) throw new Error("three buses");
    const watcher = await partWayThroughOldRun(a.bus, "twice");
    b.bus.emit("twice", { kind: "output", text: "second run" });
    b.bus.emit("twice", { kind: "done" });
    await b.bus.flushed();
    // The second run's first entry named the old run's end; the third's names the second's.
    c.bus.emit("twice", { kind: "done" });
    await c.bus.flushed();

    const seen = await collect(watcher);
    expectOldThenNotice(seen);
    expect(text(seen.at(-1) as SequencedEvent)).toMatch(/at least \d+ events were skipped/);
  }, 15_000);

  // These three wait on the watcher's bounded XREAD (the last on purpose, for 3 s), each on its own
  // prefix: they wait side by side. The last counts every command its Redis processed, so it has a
  // Redis of its own that the other two cannot add to.
  it.concurrent("an idle watcher asks Redis O(1) times a second while it waits, and still reads the next event at once", async () => {
    const own = await RedisServer.start();
    const [a] = await processes(1, own.url);
    if (!a) throw new Error("one bus");
    a.bus.emit("idle", { kind: "output", text: "first" });
    await a.bus.flushed();
    const watcher = a.bus.watch("idle");
    expect(text((await watcher.next()).value as SequencedEvent)).toBe("first");
    const waiting = watcher.next();
    const raw = createClient({ url: own.url, RESP: 2 });
    await raw.connect();
    const commands = async () =>
      Number(/total_commands_processed:(\d+)/.exec(String(await raw.sendCommand(["INFO", "stats"])))?.[1]);
    try {
      await pause(100);
      const before = await commands();
      await pause(3000);
      // A bounded XREAD and one look at the stream's top per bound: a handful in 3 s, not thousands.
      expect((await commands()) - before).toBeLessThan(15);
      // "At once": the watcher waits inside a blocking XREAD, which Redis answers as the event is
      // written, rather than between reads (a poll, or a pause after each bound). Seen on Redis's
      // side (a connection blocked in `xread`), not as a number of ms, which a loaded machine
      // stretches. Looked for until seen: between two bounded reads the connection is briefly not.
      const blocked = async () =>
        String(await raw.sendCommand(["CLIENT", "LIST"]))
          .split("\n")
          .some((line) => /\bflags=\w*b/.test(line) && /\bcmd=xread\b/.test(line));
      let seenBlocked = false;
      for (let i = 0; i < 200 && !seenBlocked; i++) {
        seenBlocked = await blocked();
        if (!seenBlocked) await pause(10);
      }
      expect(seenBlocked).toBe(true);
      a.bus.emit("idle", { kind: "output", text: "second" });
      expect(text((await waiting).value as SequencedEvent)).toBe("second");
    } finally {
      raw.destroy();
      await watcher.return?.();
      await a.bus.close();
      await own.kill();
    }
  }, 10_000);
});
