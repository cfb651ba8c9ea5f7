import { describe, expect, it } from "vitest";
import { createBus } from "./bus.js";
import { collected } from "./test-support/gc.js";
import type { SequencedEvent } from "./types.js";

async function readAll(stream: AsyncIterable<SequencedEvent>): Promise<SequencedEvent[]> {
  const out: SequencedEvent[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

describe("configure lowering maxEvents under a watcher already behind", () => {
  it("cuts its backlog at once, for a run that has finished too, and says so in one gap notice", async () => {
    const bus = createBus({ maxEvents: 1000, trimSlack: 100 });
    const stalled = bus.watch("run");
    for (let i = 0; i < 900; i++) bus.emit("run", { kind: "output", text: `${i} ` });
    bus.emit("run", { kind: "done" });
    // A host short of memory lowers the cap: no event is emitted after it, the run is over.
    bus.configure({ maxEvents: 10, trimSlack: 5 });
    const read = await readAll(stalled);
    // It had kept all 901 and read them without a gap: the cap it was set to held for nobody.
    expect(read).toHaveLength(11);
    expect(read[0]).toMatchObject({ kind: "notice", dropped: 891, seq: 891 });
    expect(read.slice(1).map((event) => event.seq)).toEqual([
      892, 893, 894, 895, 896, 897, 898, 899, 900, 901,
    ]);
    expect(read.at(-1)?.kind).toBe("done");
  });

  it("releases what it cut before the watcher reads again", async () => {
    // Set up apart, so this test's own frame holds no stored event.
    const { stalled, ref } = (() => {
      const bus = createBus({ maxEvents: 1000, trimSlack: 100 });
      const watcher = bus.watch("run");
      const first = bus.emit("run", { kind: "output", text: "x".repeat(100_000) });
      for (let i = 0; i < 50; i++) bus.emit("run", { kind: "output", text: "y" });
      bus.emit("run", { kind: "done" });
      bus.configure({ maxEvents: 10, trimSlack: 5 });
      bus.endRun("run"); // the run's own history goes: only the stalled watcher's queue could hold the event
      return { stalled: watcher, ref: new WeakRef(first) };
    })();
    expect(await collected(ref)).toBe(true);
    // The watcher still reads what it keeps, the gap said once.
    const read = await readAll(stalled);
    expect(read.filter((event) => event.kind === "notice")).toHaveLength(1);
    expect(read.at(-1)?.kind).toBe("done");
  });

  it("leaves a watcher within the new cap and slack as it was", async () => {
    const bus = createBus({ maxEvents: 1000, trimSlack: 100 });
    const stalled = bus.watch("run");
    for (let i = 0; i < 14; i++) bus.emit("run", { kind: "output", text: `${i}` });
    bus.emit("run", { kind: "done" });
    bus.configure({ maxEvents: 10, trimSlack: 5 });
    const read = await readAll(stalled);
    expect(read.map((event) => event.seq)).toEqual(Array.from({ length: 15 }, (_, index) => index + 1));
  });
});

describe("a watcher kept after it has read its run", () => {
  it("does not keep the run's history once endRun dropped it", async () => {
    // A server keeps each SSE stream in a set of connections until its socket closes.
    const kept: AsyncIterable<SequencedEvent>[] = [];
    const { bus, ref } = (() => {
      const own = createBus();
      const stream = own.watch("run");
      kept.push(stream);
      const first = own.emit("run", { kind: "output", text: "x".repeat(1_000_000) });
      own.emit("run", { kind: "done" });
      return { bus: own, ref: new WeakRef(first) };
    })();
    for (const stream of kept)
      expect((await readAll(stream)).map((event) => event.kind)).toEqual(["output", "done"]);
    bus.endRun("run");
    // It had held the run's own list (its replay, read in place) and the run itself (to leave it).
    expect(await collected(ref)).toBe(true);
    expect(kept).toHaveLength(1);
  });

  it("nor, still reading what it holds, the history before it joined", async () => {
    const kept: AsyncIterator<SequencedEvent>[] = [];
    const { bus, ref } = (() => {
      const own = createBus();
      const first = own.emit("run", { kind: "output", text: "x".repeat(1_000_000) });
      const stream = own.watch("run");
      kept.push(stream);
      return { bus: own, ref: new WeakRef(first) };
    })();
    const reader = kept[0] as AsyncIterator<SequencedEvent>;
    expect((await reader.next()).value?.seq).toBe(1); // its replay, read
    bus.emit("run", { kind: "output", text: "later" }); // queued: it is not reading
    bus.endRun("run");
    expect(await collected(ref)).toBe(true);
    // It still reads what it holds, then finishes.
    expect((await reader.next()).value).toMatchObject({ kind: "output", text: "later", seq: 2 });
    expect(await reader.next()).toEqual({ done: true, value: undefined });
  });
});
