import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { createBus } from "./bus.js";
import { EventsError } from "./errors.js";
import { fold } from "./fold.js";
import { runMetrics } from "./run-metrics.js";
import type { RunEvent, SequencedEvent } from "./types.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

describe("events built from outside JSON", () => {
  it("stores an event carrying __proto__ as data as a faithful copy, never with that value as its prototype", () => {
    const bus = createBus();
    // What a relay reading events from a socket or a file hands emit.
    const text =
      '{"kind":"tool-result","id":"c1","name":"f","content":"fine","__proto__":{"ok":false,"kind":"done"}}';
    const stored = bus.emit("r", JSON.parse(text) as RunEvent);
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
    expect(JSON.stringify(stored)).toBe(`${text.slice(0, -1)},"seq":1}`);
    expect(JSON.stringify(bus.history("r")[0])).toBe(JSON.stringify(stored));
    // Read as the event was given: no `ok` of its own, so not a failed tool.
    expect(runMetrics(bus.history("r")).toolErrors).toBe(0);
    expect(fold(bus.history("r"))).toEqual([
      { kind: "tool", id: "c1", name: "f", args: "", result: { ok: true, content: "fine" } },
    ]);
    bus.close();
  });

  it("forgets a run that was only watched once its last watcher leaves", async () => {
    const bus = createBus();
    const heap = () => {
      gc();
      return process.memoryUsage().heapUsed;
    };
    const before = heap();
    // A client naming run ids that never start (a typo, a crawler, an old link).
    for (let i = 0; i < 20_000; i++) {
      const controller = new AbortController();
      const watcher = bus.watch(`never-started-${i}-${"x".repeat(64)}`, controller.signal);
      const waiting = watcher.next();
      controller.abort();
      await waiting;
    }
    const grown = heap() - before;
    // Each kept run is a record, a Set, an array and a 90-character key: about 11 MB for these.
    expect(grown).toBeLessThan(3_000_000);
    // A run that did start is still kept for a late watcher.
    bus.emit("started", { kind: "output", text: "kept" });
    const controller = new AbortController();
    const watcher = bus.watch("started", controller.signal);
    await watcher.next();
    controller.abort();
    expect(bus.history("started")).toHaveLength(1);
    bus.close();
  }, 30_000);

  it("reads only a settings object's own fields, so a polluted Object.prototype moves no number", () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto.maxEvents = 1;
    proto.retainEndedMs = 1;
    try {
      const bus = createBus({});
      expect(bus.configure({})).toMatchObject({ maxEvents: 1000, retainEndedMs: 600_000 });
      bus.close();
    } finally {
      delete proto.maxEvents;
      delete proto.retainEndedMs;
    }
  });

  it("refuses a signal that is not one with an EventsError naming it, before it opens the run", async () => {
    const bus = createBus();
    for (const signal of [{}, "abort", { aborted: false }, { aborted: false, addEventListener: () => {} }]) {
      let thrown: unknown;
      try {
        bus.watch("r", signal as never);
      } catch (error) {
        thrown = error;
      }
      expect(EventsError.isInstance(thrown), String(thrown)).toBe(true);
      expect((thrown as EventsError).code).toBe("invalid-signal");
      expect((thrown as EventsError).message).toMatch(/signal/);
    }
    // A real one, and none, still watch.
    const controller = new AbortController();
    const watching = bus.watch("r", controller.signal);
    bus.emit("r", { kind: "done" });
    expect((await watching.next()).value).toMatchObject({ kind: "done" });
    bus.close();
  });

  it("any run ids, any interleaving of emits, watches and ends: a watcher reads only its own run, in order, to done", async () => {
    const id = fc.oneof(
      fc.string({ unit: "binary", minLength: 1, maxLength: 4 }),
      fc.constantFrom(
        "__proto__",
        "toString",
        "constructor",
        "hasOwnProperty",
        "*",
        "a:b",
        "x\uD800",
        "x\uDC00",
      ),
    );
    const step = fc.oneof(
      fc.record({ op: fc.constant("emit" as const), run: fc.nat(3) }),
      fc.record({ op: fc.constant("watch" as const), run: fc.nat(3) }),
      fc.record({ op: fc.constant("end" as const), run: fc.nat(3) }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(id, { minLength: 4, maxLength: 4 }),
        fc.array(step, { maxLength: 40 }),
        async (ids, steps) => {
          const bus = createBus();
          const readers: { run: number; reading: Promise<SequencedEvent[]> }[] = [];
          const read = async (watcher: AsyncIterable<SequencedEvent>) => {
            const seen: SequencedEvent[] = [];
            for await (const event of watcher) seen.push(event);
            return seen;
          };
          let n = 0;
          for (const { op, run } of steps) {
            const runId = ids[run] as string;
            if (op === "emit") bus.emit(runId, { kind: "output", text: `${run}#${n++}` });
            else if (op === "watch") readers.push({ run, reading: read(bus.watch(runId)) });
            else bus.endRun(runId);
          }
          for (const runId of ids) bus.emit(runId, { kind: "done" });
          for (const { run, reading } of readers) {
            const seen = await reading;
            const own = seen.filter((e) => e.kind === "output").map((e) => (e as { text: string }).text);
            expect(own.every((text) => text.startsWith(`${run}#`))).toBe(true);
            const seqs = seen.map((e) => e.seq);
            expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
            expect(new Set(seqs).size).toBe(seqs.length);
          }
          bus.close();
        },
      ),
      propertyRuns(200),
    );
  });
});
