import { afterEach, describe, expect, it, vi } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { createBus } from "./bus.js";
import { EventsError } from "./errors.js";
import { configureEvents, emit, endRun, history, resetEvents, watch } from "./index.js";
import { DEFAULT_EVENTS_SETTINGS } from "./settings.js";
import type { SequencedEvent } from "./types.js";

async function collect(iterable: AsyncIterable<SequencedEvent>): Promise<SequencedEvent[]> {
  const out: SequencedEvent[] = [];
  for await (const event of iterable) out.push(event);
  return out;
}

afterEach(() => {
  resetEvents();
  vi.useRealTimers();
});

describe("emit and history", () => {
  it("numbers each run's events from 1, separately per run", () => {
    const bus = createBus();
    expect(bus.emit("a", { kind: "output", text: "x" }).seq).toBe(1);
    expect(bus.emit("a", { kind: "output", text: "y" }).seq).toBe(2);
    expect(bus.emit("b", { kind: "output", text: "z" }).seq).toBe(1);
    expect(bus.history("a").map((e) => e.seq)).toEqual([1, 2]);
  });

  it("stores a copy, so the caller's object is not changed and history cannot be edited", () => {
    const bus = createBus();
    const event = { kind: "output" as const, text: "x" };
    bus.emit("a", event);
    expect(event).toEqual({ kind: "output", text: "x" });
    bus.history("a").pop();
    expect(bus.history("a")).toHaveLength(1);
  });

  it("answers an empty history for a run it never saw", () => {
    expect(createBus().history("nobody")).toEqual([]);
  });

  it("refuses a missing run id or an event without a kind with a typed error", () => {
    const bus = createBus();
    expect(() => bus.emit("", { kind: "done" })).toThrow(EventsError);
    expect(() => bus.emit("a", {} as never)).toThrow(/string `kind`/);
    let thrown: unknown;
    try {
      bus.emit(42 as never, { kind: "done" });
    } catch (error) {
      thrown = error;
    }
    expect(EventsError.isInstance(thrown)).toBe(true);
    expect((thrown as EventsError).code).toBe("invalid-run-id");
  });

  it("keeps the top-level functions on one default bus", async () => {
    emit("run", { kind: "output", text: "hi" });
    emit("run", { kind: "done" });
    expect(history("run")).toHaveLength(2);
    expect((await collect(watch("run"))).map((e) => e.kind)).toEqual(["output", "done"]);
    endRun("run");
    expect(history("run")).toEqual([]);
  });
});

describe("watch", () => {
  it("replays what the run already emitted, then yields live events until done", async () => {
    const bus = createBus();
    bus.emit("r", { kind: "output", text: "a" });
    const seen = collect(bus.watch("r"));
    bus.emit("r", { kind: "output", text: "b" });
    await Promise.resolve();
    bus.emit("r", { kind: "done" });
    bus.emit("r", { kind: "output", text: "after" });
    expect((await seen).map((e) => [e.seq, e.kind])).toEqual([
      [1, "output"],
      [2, "output"],
      [3, "done"],
    ]);
  });

  it("ends promptly when its signal aborts while it waits for the next event", async () => {
    const bus = createBus();
    const controller = new AbortController();
    const iterator = bus.watch("r", controller.signal);
    const pending = iterator.next();
    controller.abort();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it("ends promptly on return() even while a next() is waiting", async () => {
    const bus = createBus();
    const iterator = bus.watch("r");
    const pending = iterator.next();
    await iterator.return?.();
    await expect(pending).resolves.toMatchObject({ done: true });
  });

  it("yields nothing for a signal that is already aborted, on a known run or an unknown one", async () => {
    const bus = createBus();
    bus.emit("r", { kind: "output", text: "a" });
    expect(await collect(bus.watch("r", AbortSignal.abort()))).toEqual([]);
    expect(await collect(bus.watch("never", AbortSignal.abort()))).toEqual([]);
    expect(bus.history("never")).toEqual([]);
  });

  it("finishes a watcher whose run is dropped, after it reads what it holds", async () => {
    const bus = createBus();
    const iterator = bus.watch("r");
    bus.emit("r", { kind: "output", text: "a" });
    bus.endRun("r");
    await expect(iterator.next()).resolves.toMatchObject({ done: false, value: { seq: 1 } });
    await expect(iterator.next()).resolves.toMatchObject({ done: true });
  });
});

describe("a slow watcher", () => {
  it("keeps only the most recent events, trimming in batches, and reports the gap once", async () => {
    const bus = createBus({ maxEvents: 10, trimSlack: 5 });
    const iterator = bus.watch("r");
    for (let i = 0; i < 16; i++) bus.emit("r", { kind: "output", text: String(i) });
    // 16 waiting is past 10 + 5: cut back to the newest 10, so 6 were dropped.
    const seen = [];
    bus.emit("r", { kind: "done" });
    for await (const event of iterator) seen.push(event);
    const notice = seen[0] as SequencedEvent & { dropped?: number };
    expect(notice.kind).toBe("notice");
    expect(notice.dropped).toBe(6);
    expect(seen.slice(1).map((e) => e.seq)).toEqual([7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]);
    expect(seen.filter((e) => e.kind === "notice")).toHaveLength(1);
  });

  it("gives the gap notice a seq inside the gap, never one a real event has", async () => {
    const bus = createBus({ maxEvents: 3, trimSlack: 1 });
    const iterator = bus.watch("r");
    for (let i = 0; i < 30; i++) bus.emit("r", { kind: "output", text: String(i) });
    bus.emit("r", { kind: "done" });
    const seen = await collect(iterator);
    const real = new Set(seen.filter((e) => e.kind !== "notice").map((e) => e.seq));
    const notices = seen.filter((e) => e.kind === "notice");
    expect(notices).toHaveLength(1);
    const gap = notices[0] as SequencedEvent;
    expect(real.has(gap.seq)).toBe(false);
    const next = seen[seen.indexOf(gap) + 1] as SequencedEvent;
    expect(gap.seq).toBe(next.seq - 1);
    expect(gap.seq).toBeGreaterThan(0);
  });

  it("reports a later gap with a notice of its own once the first was read", async () => {
    const bus = createBus({ maxEvents: 2, trimSlack: 1 });
    const iterator = bus.watch("r");
    for (let i = 0; i < 5; i++) bus.emit("r", { kind: "output", text: "a" });
    const first = await iterator.next();
    expect(first.value?.kind).toBe("notice");
    for (let i = 0; i < 5; i++) bus.emit("r", { kind: "output", text: "b" });
    bus.emit("r", { kind: "done" });
    const rest = await collect(iterator);
    expect(rest.filter((e) => e.kind === "notice")).toHaveLength(1);
  });

  it("replays a long history in full before any live trimming applies", async () => {
    const bus = createBus({ maxEvents: 5, trimSlack: 1 });
    for (let i = 0; i < 50; i++) bus.emit("r", { kind: "output", text: "x" });
    bus.emit("r", { kind: "done" });
    const seen = await collect(bus.watch("r"));
    expect(seen).toHaveLength(51);
    expect(seen.some((e) => e.kind === "notice")).toBe(false);
  });
});

describe("retention", () => {
  it("sweeps a finished run's buffer after retainEndedMs", () => {
    vi.useFakeTimers();
    const bus = createBus({ retainEndedMs: 1000 });
    bus.emit("r", { kind: "output", text: "a" });
    bus.emit("r", { kind: "done" });
    vi.advanceTimersByTime(999);
    expect(bus.history("r")).toHaveLength(2);
    vi.advanceTimersByTime(2);
    expect(bus.history("r")).toEqual([]);
  });

  it("sweeps a run that never ended after retainUnendedMs of silence", () => {
    vi.useFakeTimers();
    const bus = createBus({ retainUnendedMs: 5000, retainEndedMs: 100 });
    bus.emit("r", { kind: "output", text: "a" });
    vi.advanceTimersByTime(4000);
    bus.emit("r", { kind: "output", text: "b" });
    vi.advanceTimersByTime(4000);
    expect(bus.history("r")).toHaveLength(2);
    vi.advanceTimersByTime(1001);
    expect(bus.history("r")).toEqual([]);
  });

  it("sweeps a run that never ended on time when finished runs are kept longer than unfinished ones", () => {
    // Keep a finished run a long while for late viewers, give up on a stuck one soon. The sweep was
    // planned only for the first run's deadline, so the stuck run stayed until the finished one went.
    vi.useFakeTimers();
    const bus = createBus({ retainEndedMs: 60_000, retainUnendedMs: 1000 });
    bus.emit("finished", { kind: "done" });
    bus.emit("stuck", { kind: "output", text: "a" });
    vi.advanceTimersByTime(1001);
    expect(bus.history("stuck")).toEqual([]);
    expect(bus.history("finished")).toHaveLength(1);
    vi.advanceTimersByTime(60_000);
    expect(bus.history("finished")).toEqual([]);
  });

  it("never sweeps a run while a watcher is on it, and sweeps it once the watcher leaves", async () => {
    vi.useFakeTimers();
    const bus = createBus({ retainUnendedMs: 1000 });
    bus.emit("r", { kind: "output", text: "a" });
    const controller = new AbortController();
    const iterator = bus.watch("r", controller.signal);
    await iterator.next();
    vi.advanceTimersByTime(10_000);
    expect(bus.history("r")).toHaveLength(1);
    controller.abort();
    vi.advanceTimersByTime(1001);
    expect(bus.history("r")).toEqual([]);
  });

  it("keeps a run for a deadline longer than a timer can wait, without sweeping every millisecond", () => {
    vi.useFakeTimers();
    const day = 24 * 60 * 60_000;
    const bus = createBus({ retainEndedMs: 30 * day });
    const spy = vi.spyOn(globalThis, "setTimeout");
    bus.emit("r", { kind: "done" });
    // A delay past 2^31 - 1 ms fires at once; the sweep must wait in steps no longer than that.
    for (const call of spy.mock.calls) expect(call[1]).toBeLessThanOrEqual(2 ** 31 - 1);
    vi.advanceTimersByTime(29 * day);
    expect(bus.history("r")).toHaveLength(1);
    expect(spy.mock.calls.length).toBeLessThan(10);
    vi.advanceTimersByTime(day + 1);
    expect(bus.history("r")).toEqual([]);
    spy.mockRestore();
  });

  it("does not keep a Node process alive with its sweep timer", () => {
    vi.useRealTimers();
    const bus = createBus();
    const spy = vi.spyOn(globalThis, "setTimeout");
    bus.emit("unref-check", { kind: "done" });
    const handle = spy.mock.results[0]?.value as { hasRef(): boolean };
    spy.mockRestore();
    expect(handle.hasRef()).toBe(false);
    bus.reset();
  });
});

describe("configureEvents and resetEvents", () => {
  it("moves the numbers it is given and returns the whole set", () => {
    const settings = configureEvents({ maxEvents: 200, retainUnendedMs: 5 * 60_000 });
    expect(settings).toEqual({ ...DEFAULT_EVENTS_SETTINGS, maxEvents: 200, retainUnendedMs: 300_000 });
  });

  it("ignores zero, negatives and non-numbers, keeping what was there", () => {
    configureEvents({ maxEvents: 50 });
    const settings = configureEvents({
      maxEvents: 0,
      trimSlack: -1,
      retainEndedMs: Number.NaN,
      retainUnendedMs: "5" as never,
    });
    expect(settings).toEqual({ ...DEFAULT_EVENTS_SETTINGS, maxEvents: 50 });
  });

  it("puts the defaults back and drops what the bus held", () => {
    configureEvents({ maxEvents: 3 });
    emit("r", { kind: "output", text: "a" });
    expect(resetEvents()).toEqual(DEFAULT_EVENTS_SETTINGS);
    expect(history("r")).toEqual([]);
  });
});

describe("a watcher under any mix of emits and reads", () => {
  it("sees seqs only ever increasing, each gap announced by one notice numbered inside it", async () => {
    const fc = (await import("fast-check")).default;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 30 })), {
          maxLength: 30,
        }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 4 }),
        async (schedule, maxEvents, trimSlack) => {
          const bus = createBus({ maxEvents, trimSlack });
          const iterator = bus.watch("r");
          const seen: SequencedEvent[] = [];
          for (const [emits, reads] of schedule) {
            for (let i = 0; i < emits; i++) bus.emit("r", { kind: "output", text: "x" });
            for (let i = 0; i < reads; i++) {
              const waiting = iterator.next();
              const winner = await Promise.race([waiting, Promise.resolve("empty" as const)]);
              if (winner === "empty") {
                bus.emit("r", { kind: "output", text: "y" });
                const settled = await waiting;
                if (settled.value) seen.push(settled.value);
                continue;
              }
              if (winner.value) seen.push(winner.value);
            }
          }
          bus.emit("r", { kind: "done" });
          for await (const event of iterator) seen.push(event);
          const emitted = bus.history("r").length;
          let last = 0;
          for (let i = 0; i < seen.length; i++) {
            const event = seen[i] as SequencedEvent;
            expect(event.seq).toBeGreaterThan(last);
            last = event.seq;
            if (event.kind === "notice") {
              const next = seen[i + 1] as SequencedEvent;
              expect(next.kind).not.toBe("notice");
              expect(event.seq).toBe(next.seq - 1);
            }
          }
          const real = seen.filter((e) => e.kind !== "notice").length;
          const dropped = seen.reduce((sum, e) => sum + ((e as { dropped?: number }).dropped ?? 0), 0);
          expect(real + dropped).toBe(emitted);
          expect(seen.at(-1)?.kind).toBe("done");
        },
      ),
      propertyRuns(150),
    );
  });
});
