import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import {
  createBus,
  type EventBus,
  type EventStream,
  EventsError,
  fold,
  type RunEvent,
  runMetrics,
  type SequencedEvent,
  type SignalLike,
} from "./index.js";
import { survivors } from "./test-support/gc.js";

// A model of the bus: per run, the ordered list of what `emit` stored. Random interleavings of
// several runs, watchers that join early or late, read at once, slowly or not at all, leave by
// their signal (mid-read too), by `return()` or by a handler that throws, runs ended, and the
// backlog settings moved in between. Every watcher must read a seq-ordered, gap-free list from
// seq 1 of its own run (a gap only where the documented notice says so), finish once its run is
// over, and leave nothing behind: no signal listener, no watcher or run the bus still holds.
//
// R90_EVENTS_RUNS sets how many cases, R90_EVENTS_SEED replays one.

const RUNS = Number(process.env.R90_EVENTS_RUNS ?? 80);
const SEED = process.env.R90_EVENTS_SEED === undefined ? undefined : Number(process.env.R90_EVENTS_SEED);
const RUN_IDS = ["run-1", "run-2", "tenant/run-1"] as const;

/** A signal that counts the listeners it holds, so a watcher that never leaves shows up. */
class CountingSignal implements SignalLike {
  aborted = false;
  readonly listeners = new Map<() => void, boolean>();
  addEventListener(_type: "abort", listener: () => void, options?: { once?: boolean }): void {
    this.listeners.set(listener, options?.once === true);
  }
  removeEventListener(_type: "abort", listener: () => void): void {
    this.listeners.delete(listener);
  }
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    for (const [listener, once] of [...this.listeners]) {
      if (once) this.listeners.delete(listener);
      listener();
    }
  }
}

/** What makes an emitted event awkward: each is applied to an otherwise ordinary event. */
type Hostile = "none" | "huge" | "cycle" | "nested-getter" | "top-getter" | "null-proto" | "surrogate";

interface EventSpec {
  kind: RunEvent["kind"];
  n: number;
  text: string;
  hostile: Hostile;
}

const eventSpec: fc.Arbitrary<EventSpec> = fc.record({
  kind: fc.constantFrom<RunEvent["kind"]>(
    "turn",
    "output",
    "output",
    "output",
    "thinking",
    "thinking",
    "retract",
    "thinking-retract",
    "tool-call",
    "tool-result",
    "usage",
    "notice",
    "error",
    "output",
    "done",
  ),
  n: fc.integer({ min: 0, max: 12 }),
  text: fc.string({ maxLength: 12 }),
  hostile: fc.oneof(
    { weight: 12, arbitrary: fc.constant<Hostile>("none") },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Hostile>(
        "huge",
        "cycle",
        "nested-getter",
        "top-getter",
        "null-proto",
        "surrogate",
      ),
    },
  ),
});

function boom(): never {
  throw new Error("getter that throws");
}

/** The event a spec stands for, made fresh (cycles and getters cannot be generated as data). */
function build(spec: EventSpec): RunEvent {
  let text = spec.text;
  if (spec.hostile === "huge") text = "x".repeat(300_000);
  if (spec.hostile === "surrogate") text = `${text}\uD800${text}\uDFFF`;
  const usage = { prompt: spec.n * 10, completion: spec.n, total: spec.n * 11, cached: 0 };
  let event: Record<string, unknown>;
  switch (spec.kind) {
    case "turn":
      event = { kind: "turn", step: spec.n + 1 };
      break;
    case "output":
    case "thinking":
      event = { kind: spec.kind, text: text === "" ? "." : text };
      break;
    case "retract":
    case "thinking-retract":
      event = { kind: spec.kind, chars: spec.n };
      break;
    case "tool-call":
      event = { kind: "tool-call", id: `c${spec.n % 3}`, name: "read", args: text };
      break;
    case "tool-result":
      event = {
        kind: "tool-result",
        id: `c${spec.n % 3}`,
        name: "read",
        ok: spec.n % 2 === 0,
        content: text,
        ms: spec.n,
      };
      break;
    case "usage":
      event = {
        kind: "usage",
        usage,
        turn: { usage: { ...usage }, finishReason: spec.n % 4 === 0 ? "length" : "stop" },
      };
      break;
    case "notice":
      // Now and then with a `dropped` of the host's own: a bus leaves it out of what it stores (only
      // a watcher's gap notice carries one), so `fold` never reads the host's notice as a gap. It had
      // been stored with it, and a watcher's own gap over it was drawn though the history filled it.
      event = spec.n % 3 === 0 ? { kind: "notice", text, dropped: spec.n } : { kind: "notice", text };
      break;
    case "error":
      event = { kind: "error", message: text };
      break;
    default:
      event = spec.n % 2 === 0 ? { kind: "done", stopped: true } : { kind: "done" };
  }
  switch (spec.hostile) {
    case "cycle": {
      const inner: Record<string, unknown> = { name: "inner" };
      inner.self = inner;
      inner.event = event;
      event.extra = inner;
      event.me = event;
      break;
    }
    case "nested-getter":
      event.extra = Object.defineProperty({ ok: 1 }, "bad", { enumerable: true, get: boom });
      if (event.kind === "usage")
        Object.defineProperty(event.turn as object, "timings", { enumerable: true, get: boom });
      break;
    case "top-getter":
      Object.defineProperty(event, "bad", { enumerable: true, get: boom });
      break;
    case "null-proto":
      event = Object.assign(Object.create(null) as Record<string, unknown>, event);
      if (event.kind === "usage")
        event.usage = Object.assign(Object.create(null) as object, event.usage as object);
      break;
    default:
      break;
  }
  return event as unknown as RunEvent;
}

type Command =
  | { op: "emit"; run: number; event: EventSpec }
  | { op: "burst"; run: number; count: number; text: string }
  | {
      op: "watch";
      run: number;
      mode: "pump" | "slow-pump" | "pull";
      signal: "none" | "live" | "aborted";
      /** A pump that breaks out of its loop after this many events, or whose handler throws then. */
      leaveAt: number;
      leaveBy: "stay" | "break" | "throw";
    }
  | { op: "read"; watcher: number; count: number }
  | { op: "abort"; watcher: number }
  | { op: "return"; watcher: number }
  | { op: "end"; run: number }
  | { op: "configure"; maxEvents: number; trimSlack: number }
  | { op: "tick" };

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({ op: fc.constant("emit" as const), run: fc.nat(2), event: eventSpec }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("burst" as const),
      run: fc.nat(2),
      count: fc.integer({ min: 2, max: 24 }),
      text: fc.string({ minLength: 1, maxLength: 4 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("watch" as const),
      run: fc.nat(2),
      mode: fc.constantFrom("pump" as const, "slow-pump" as const, "pull" as const),
      signal: fc.constantFrom("none" as const, "live" as const, "live" as const, "aborted" as const),
      leaveAt: fc.nat(8),
      leaveBy: fc.constantFrom("stay" as const, "stay" as const, "break" as const, "throw" as const),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("read" as const),
      watcher: fc.nat(20),
      count: fc.integer({ min: 1, max: 6 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("abort" as const), watcher: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("return" as const), watcher: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("end" as const), run: fc.nat(2) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("configure" as const),
      maxEvents: fc.integer({ min: 1, max: 8 }),
      trimSlack: fc.integer({ min: 1, max: 4 }),
    }),
  },
  { weight: 3, arbitrary: fc.constant({ op: "tick" as const }) },
);

/** One run's life on the bus between two `endRun`s: what emit stored, in order. */
interface Epoch {
  runId: string;
  events: SequencedEvent[];
}

interface WatcherState {
  epoch: Epoch | undefined;
  /** Let go of (`undefined`) once it has left and been checked, to see the bus let go of it too. */
  stream: EventStream | undefined;
  signal: CountingSignal | undefined;
  mode: "pump" | "slow-pump" | "pull";
  received: SequencedEvent[];
  /** Left before the end on purpose: an abort, `return()`, a break or a throw. */
  leftEarly: boolean;
  /** Read nothing at all: its signal was aborted before `watch`. */
  preAborted: boolean;
  pending: Promise<unknown> | undefined;
  finished: boolean;
  pump: Promise<void> | undefined;
}

const macrotask = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Whether `promise` settles within a few turns of the event loop (a watcher left hanging does not). */
async function settles(promise: Promise<unknown>, turns = 20): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  for (let turn = 0; turn < turns && !settled; turn++) await macrotask();
  return settled;
}

/** What is left of a case once every run ended: the streams, still kept, and weak references. */
interface Finished {
  kept: EventStream[];
  streams: WeakRef<object>[];
  events: WeakRef<object>[];
}

/** Plays the commands against a fresh bus and checks every watcher against the model. */
async function play(
  commands: Command[],
  start: { maxEvents: number; trimSlack: number },
): Promise<{ bus: EventBus; left: WeakRef<object>[]; finish: () => Promise<Finished> }> {
  const bus = createBus(start);
  let smallestCap = start.maxEvents + start.trimSlack;
  const current = new Map<string, Epoch>();
  const epochs: Epoch[] = [];
  const watchers: WatcherState[] = [];
  const signals: CountingSignal[] = [];

  const epochOf = (runId: string): Epoch => {
    let epoch = current.get(runId);
    if (!epoch) {
      epoch = { runId, events: [] };
      current.set(runId, epoch);
      epochs.push(epoch);
    }
    return epoch;
  };

  /** The run's history is the model's list, the very objects emit returned. */
  const checkHistory = (runId: string): void => {
    const epoch = current.get(runId);
    const held = bus.history(runId);
    expect(held.length).toBe(epoch?.events.length ?? 0);
    held.forEach((event, index) => {
      expect(event).toBe(epoch?.events[index]);
    });
    // Drawn the same, and never throws over hostile payloads.
    expect(fold(held)).toEqual(fold(epoch?.events ?? []));
    runMetrics(held);
  };

  const pull = (state: WatcherState): void => {
    if (state.pending || state.finished || !state.stream) return;
    const pending = state.stream.next().then((result) => {
      state.pending = undefined;
      if (result.done) state.finished = true;
      else state.received.push(result.value);
    });
    state.pending = pending;
  };

  const pumpOf = (state: WatcherState, leaveAt: number, leaveBy: "stay" | "break" | "throw") =>
    (async () => {
      try {
        for await (const event of state.stream as EventStream) {
          state.received.push(event);
          if (leaveBy !== "stay" && state.received.length >= leaveAt) {
            state.leftEarly = true;
            if (leaveBy === "throw") throw new Error("a watcher's handler threw");
            break;
          }
          if (state.mode === "slow-pump") await macrotask();
        }
      } catch (error) {
        if (!(error instanceof Error) || error.message !== "a watcher's handler threw") throw error;
      } finally {
        state.finished = true;
      }
    })();

  for (const step of commands) {
    switch (step.op) {
      case "emit": {
        const runId = RUN_IDS[step.run] as string;
        const event = build(step.event);
        if (step.event.hostile === "top-getter") {
          expect(() => bus.emit(runId, event)).toThrow(EventsError);
          break;
        }
        const epoch = epochOf(runId);
        const stored = bus.emit(runId, event);
        expect(stored.seq).toBe(epoch.events.length + 1);
        if (stored.kind === "notice") expect(Object.hasOwn(stored, "dropped")).toBe(false);
        expect(Object.isFrozen(stored)).toBe(true);
        epoch.events.push(stored);
        break;
      }
      case "burst": {
        // A model streaming its answer: many deltas in one go, before any watcher gets to read.
        const runId = RUN_IDS[step.run] as string;
        const epoch = epochOf(runId);
        for (let count = 0; count < step.count; count++) {
          const stored = bus.emit(runId, { kind: count % 5 === 4 ? "thinking" : "output", text: step.text });
          expect(stored.seq).toBe(epoch.events.length + 1);
          epoch.events.push(stored);
        }
        break;
      }
      case "watch": {
        const runId = RUN_IDS[step.run] as string;
        const signal = step.signal === "none" ? undefined : new CountingSignal();
        if (signal) signals.push(signal);
        if (step.signal === "aborted") signal?.abort();
        const preAborted = step.signal === "aborted";
        const state: WatcherState = {
          epoch: preAborted ? undefined : epochOf(runId),
          stream: bus.watch(runId, signal),
          signal,
          mode: step.mode,
          received: [],
          leftEarly: false,
          preAborted,
          pending: undefined,
          finished: false,
          pump: undefined,
        };
        if (step.mode !== "pull") state.pump = pumpOf(state, Math.max(1, step.leaveAt), step.leaveBy);
        watchers.push(state);
        break;
      }
      case "read": {
        const state = watchers[step.watcher % Math.max(1, watchers.length)];
        if (state?.mode !== "pull") break;
        for (let count = 0; count < step.count; count++) {
          pull(state);
          // Nothing more to read yet: the read stays waiting, as a slow client's would.
          if (state.pending && !(await settles(state.pending, 2))) break;
        }
        break;
      }
      case "abort": {
        const state = watchers[step.watcher % Math.max(1, watchers.length)];
        if (!state?.signal || state.signal.aborted) break;
        // Often while a read is waiting for the next event: it must settle as finished.
        if (state.mode === "pull") pull(state);
        state.leftEarly = true;
        state.signal.abort();
        if (state.pending) expect(await settles(state.pending)).toBe(true);
        break;
      }
      case "return": {
        const state = watchers[step.watcher % Math.max(1, watchers.length)];
        if (state?.mode !== "pull" || state.finished) break;
        state.leftEarly = true;
        await state.stream?.return?.();
        if (state.pending) expect(await settles(state.pending)).toBe(true);
        break;
      }
      case "end": {
        const runId = RUN_IDS[step.run] as string;
        checkHistory(runId);
        bus.endRun(runId);
        current.delete(runId);
        expect(bus.history(runId)).toEqual([]);
        break;
      }
      case "configure": {
        const settings = bus.configure({ maxEvents: step.maxEvents, trimSlack: step.trimSlack });
        expect(settings.maxEvents).toBe(step.maxEvents);
        smallestCap = Math.min(smallestCap, step.maxEvents + step.trimSlack);
        break;
      }
      default:
        await macrotask();
    }
  }

  // Watchers that have left while their runs live on: the bus must keep none of them (nor, for a
  // run that was only watched, the run).
  const left: WeakRef<object>[] = [];
  for (const state of watchers) {
    if (!state.finished || state.pending || !state.stream) continue;
    expect(await state.stream.next()).toEqual({ done: true, value: undefined });
    left.push(new WeakRef(state.stream));
    state.stream = undefined;
  }
  async function finish(): Promise<Finished> {
    // The end: every run still held is ended, and every watcher must then finish.
    for (const runId of RUN_IDS) {
      checkHistory(runId);
      bus.endRun(runId);
    }
    for (const state of watchers) {
      if (state.mode === "pull") {
        for (let reads = 0; !state.finished; reads++) {
          expect(reads).toBeLessThanOrEqual((state.epoch?.events.length ?? 0) + 2);
          pull(state);
          expect(await settles(state.pending as Promise<unknown>)).toBe(true);
        }
      } else {
        // A slow pump takes a turn per event: it is given as many, and some.
        const turns = 20 + 2 * (state.epoch?.events.length ?? 0);
        expect(await settles(state.pump as Promise<void>, turns)).toBe(true);
        await state.pump;
      }
      // Finished for good.
      // check-tests: allow a released stream was checked when it was let go of
      if (state.stream) expect(await state.stream.next()).toEqual({ done: true, value: undefined });
    }

    for (const state of watchers) checkWatcher(state, smallestCap);

    // Nothing left listening on any signal.
    for (const signal of signals) expect(signal.listeners.size).toBe(0);

    // Handed out as weak references, but for the finished streams themselves, which a server may
    // keep until its socket closes: what the bus, or a finished stream, still holds is a leak.
    const kept = watchers.flatMap((state) => (state.stream ? [state.stream] : []));
    const finished = {
      kept,
      streams: kept.map((stream) => new WeakRef(stream)),
      events: epochs.flatMap((epoch) => (epoch.events[0] ? [new WeakRef(epoch.events[0])] : [])),
    };
    watchers.length = 0;
    epochs.length = 0;
    current.clear();
    return finished;
  }
  return { bus, left, finish };
}

/**
 * Plays a case, then checks that nothing of it is left held: not a watcher, not an ended run's
 * events, though the bus itself lives on. Apart from `play`, whose suspended frame held its
 * locals (the last event emitted) for as long as it ran.
 */
async function playAndCollect(
  commands: Command[],
  start: { maxEvents: number; trimSlack: number },
  collect: boolean,
): Promise<void> {
  const { bus, left, finish } = await play(commands, start);
  // A full collection costs tens of milliseconds: a share of the cases pay it (part of the input,
  // so a case that leaks shrinks as one that collects).
  if (collect) expect(await survivors(left)).toBe(0);
  const finished = await finish();
  // Every run ended: none of its events is held, not even by a finished stream still kept.
  if (collect) expect(await survivors(finished.events)).toBe(0);
  finished.kept.length = 0;
  if (collect) expect(await survivors(finished.streams)).toBe(0);
  // The bus is still usable afterwards, and starts every run afresh.
  expect(bus.emit(RUN_IDS[0], { kind: "done" }).seq).toBe(1);
  bus.close();
}

/** One watcher's reading against the model list of its run. */
function checkWatcher(state: WatcherState, smallestCap: number): void {
  if (state.preAborted) {
    expect(state.received).toEqual([]);
    return;
  }
  const events = state.epoch?.events ?? [];
  const doneAt = events.findIndex((event) => event.kind === "done");
  // What it should read to the end: up to and including the first `done`, or all the run held.
  const whole = doneAt === -1 ? events : events.slice(0, doneAt + 1);
  let previous = 0;
  let gapBefore = false;
  let gaps = 0;
  for (const event of state.received) {
    const isGap =
      event.kind === "notice" &&
      typeof (event as { dropped?: unknown }).dropped === "number" &&
      !events.includes(event);
    if (isGap) {
      // The documented truncation notice: once per gap, a real event behind it, seq inside the gap.
      expect(gapBefore).toBe(false);
      gapBefore = true;
      gaps++;
      continue;
    }
    // One of its own run's events, in order, with nothing missing unless a notice said so.
    expect(event).toBe(events[event.seq - 1]);
    if (gapBefore) {
      const notice = state.received[state.received.indexOf(event) - 1] as SequencedEvent & {
        dropped: number;
      };
      expect(notice.seq).toBe(event.seq - 1);
      expect(notice.dropped).toBe(event.seq - previous - 1);
      expect(notice.dropped).toBeGreaterThan(0);
    } else {
      expect(event.seq).toBe(previous + 1);
    }
    gapBefore = false;
    previous = event.seq;
  }
  // Only one that left as it read a notice (its handler broke out on it) ends on one.
  if (!state.leftEarly) expect(gapBefore).toBe(false);
  expect(previous).toBeLessThanOrEqual(whole.length);
  // Never cut when its run never held more than the smallest cap it lived under.
  if (events.length <= smallestCap) expect(gaps).toBe(0);
  // A watcher that stayed reads its run to the end.
  if (!state.leftEarly) expect(previous).toBe(whole.length);
  // What it read, passed with the run's history in either order, draws what the history draws.
  const drawn = fold(events);
  expect(fold([...state.received, ...events])).toEqual(drawn);
  expect(fold([...events, ...state.received])).toEqual(drawn);
}

describe("the bus against a model of its runs", () => {
  it(
    "hands every watcher its own run, in order, capped only as documented, and keeps nothing after",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(command, { minLength: 1, maxLength: 100, size: "max" }),
          fc.record({ maxEvents: fc.integer({ min: 1, max: 6 }), trimSlack: fc.integer({ min: 1, max: 3 }) }),
          fc.oneof({ weight: 1, arbitrary: fc.constant(true) }, { weight: 3, arbitrary: fc.constant(false) }),
          playAndCollect,
        ),
        propertyRuns(RUNS, { ...(SEED === undefined ? {} : { seed: SEED }) }),
      );
    },
    propertyTimeout(60_000),
  );
});
