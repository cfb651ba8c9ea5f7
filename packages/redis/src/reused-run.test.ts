import type { SequencedEvent } from "@loopwright/events";
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

// Each bus stands for a process of its own: its own connections, its own seq counters.
describe.skipIf(!HAS_REDIS)("a run id used again, in another process, after its run ended", () => {
  let server: RedisServer;
  const buses: RedisEventBus[] = [];
  let prefixes = 0;
  /** `count` buses on one fresh prefix, each with its own list of what it reported. */
  const processes = async (count: number) => {
    const prefix = `reuse${prefixes++}:`;
    return Promise.all(
      Array.from({ length: count }, async () => {
        const errors: unknown[] = [];
        const bus = await createRedisBus({ url: server.url, prefix, onError: (e) => errors.push(e) });
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
    for (let i = 1; i <= 600; i++) a.bus.emit("long", { kind: "output", text: `old ${i}` });
    a.bus.emit("long", { kind: "done" });
    await a.bus.flushed();
    const watcher = a.bus.watch("long");
    // The replay is read a batch at a time, as the reader uses it: this watcher holds the first.
    expect(text((await watcher.next()).value as SequencedEvent)).toBe("old 1");
    await pause(100);

    for (let i = 1; i <= 700; i++) b.bus.emit("long", { kind: "output", text: `new ${i}` });
    await b.bus.flushed();

    const rest = await collect(watcher);
    expect(rest.length).toBeGreaterThan(0);
    expect(rest.filter((e) => !(e.kind === "done" || text(e)?.startsWith("old ")))).toEqual([]);
    expect(rest.map((e) => e.seq)).toEqual(Array.from({ length: rest.length }, (_, i) => i + 2));
  });
});
