import { checkEvent, checkRunId, checkSignal, EventsError } from "./errors.js";
import { freezeStored } from "./frozen.js";
import { DEFAULT_EVENTS_SETTINGS, type EventsSettings, mergeSettings } from "./settings.js";
import type { RunEvent, SequencedEvent } from "./types.js";
import { type EventStream, type SignalLike, Watcher } from "./watcher.js";
import { withSeq } from "./with-seq.js";

/** One in-memory event bus: the runs it holds, their watchers, and its own settings and sweep. */
export interface EventBus {
  /**
   * Appends `event` to run `runId`, numbering it with the run's next `seq` (from 1), and hands it
   * to every watcher. Returns the stored event: a copy, frozen with every plain object and array in
   * it (copied too), so no watcher can change what the others read. A notice's `dropped` is left
   * out of the copy: it marks a watcher's gap notice, which only the watcher sets. Throws
   * `EventsError` for a bad id or event.
   */
  emit(runId: string, event: RunEvent): SequencedEvent;
  /**
   * Everything run `runId` has emitted so far, then what it emits next, until its `done` event (or
   * the run is dropped). Aborting `signal`, or `return()`, ends it at once, even mid-wait.
   */
  watch(runId: string, signal?: SignalLike): EventStream;
  /** A copy of the list of what run `runId` has emitted (the events frozen), without subscribing; empty for a run it does not hold. */
  history(runId: string): SequencedEvent[];
  /** Drops run `runId`'s buffer now. Its watchers finish once they have read what they hold. */
  endRun(runId: string): void;
  /** Moves any of the four settings; returns the whole set as it now stands. */
  configure(changes: Partial<EventsSettings>): EventsSettings;
  /** Puts the default settings back and drops every run, finishing their watchers. */
  reset(): EventsSettings;
  /**
   * Drops every run (finishing their watchers) and stops the sweep timer: nothing of the bus is
   * left scheduled. It can still be used afterwards. A bus that is simply dropped is collected
   * too — its timer reaches it only weakly — but `close()` frees it at once.
   */
  close(): void;
  /**
   * Optional: for a bus whose runs are shared by many processes (`@loopwright/redis`). Claims run id
   * `runId` for the run this bus is about to emit under it, across every process sharing the bus, so
   * two hosts that start a run under one id at the same time cannot both emit into it. Resolves once
   * this bus holds the id: nobody else's run under it is in progress, or that run has ended (its
   * `done` is stored). Rejects with `EventsError` (`invalid-run-id`, the message naming the id) when
   * another emitter's run under `runId` is in progress or another process has claimed the id and not
   * yet ended its run; with the bus's own error when it cannot ask (its store away or silent); and
   * with `signal`'s reason when `signal` aborts first. The loop's `runAgentLoop({ runId })` awaits it,
   * when the bus has it, before it sends anything.
   *
   * A bus whose runs live in one process (`createBus`) has none: the runtime's in-process check is
   * all it needs.
   */
  claimRun?(runId: string, signal?: SignalLike): Promise<void>;
  /**
   * Optional, beside `claimRun`: drops run `runId` as this process ran it — its own copy, and in the
   * shared store only what is still this process's (its run's stream, its claim), never another
   * process's run or claim under the id. `endRun` says the run is over on every process and frees
   * the id whoever holds it; the loop's runtime calls this instead, when the bus has it, to drop a
   * run it saw end before it starts the id again. The in-memory bus has none (`endRun` is local there).
   */
  releaseRun?(runId: string): void;
}

interface RunRecord {
  id: string;
  events: SequencedEvent[];
  ended: boolean;
  /** When the run was last touched (on `elapsed`): its last event, or its `done`. */
  touched: number;
  watchers: Set<Watcher>;
}

interface TimerHost {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const timers = globalThis as unknown as TimerHost;
const clock = globalThis as unknown as { performance?: { now?: () => number } };

/**
 * Milliseconds on a clock that only moves forward at the pace time passes (`performance.now()`),
 * what retention is measured on: the wall clock (`Date.now()`) steps when a host's clock is set, and
 * a step back an hour kept every buffered run an hour longer, one forward swept runs still within
 * their retention. `Date.now()` where a platform has no `performance`.
 */
const elapsed: () => number =
  typeof clock.performance?.now === "function"
    ? () => (clock.performance as { now: () => number }).now()
    : () => Date.now();

/**
 * The longest delay a timer takes as it is: Node and browsers hold it in a signed 32-bit integer,
 * and a longer one fires at once. A deadline further off than this is reached in more than one
 * wait (the sweep finds nothing due and plans the next), rather than in a sweep every millisecond.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Lets a Node timer not keep the process alive; a browser's numeric handle has no `unref`. */
function unref(handle: unknown): void {
  if (typeof handle === "object" && handle !== null) {
    const unrefFn = (handle as { unref?: unknown }).unref;
    if (typeof unrefFn === "function") unrefFn.call(handle);
  }
}

/**
 * A timer callback that reaches its bus only through a weak reference. Made at module level, so
 * the closure holds nothing of `createBus`'s scope: a pending sweep (hours away by default) never
 * keeps a dropped bus, and every run buffered in it, alive.
 */
function weakSweep(target: { sweep(): void }): () => void {
  const ref = new WeakRef(target);
  return () => ref.deref()?.sweep();
}

/**
 * Makes an event bus with its own runs, settings and sweep. `settings` is laid over the defaults
 * the way `configure` lays changes over the current set. The top-level `emit`, `watch`, `history`,
 * `endRun`, `configureEvents` and `resetEvents` use one default bus; a host whose tenants must not
 * share one makes its own here.
 */
export function createBus(settings?: Partial<EventsSettings>): EventBus {
  let current = mergeSettings(DEFAULT_EVENTS_SETTINGS, settings);
  const runs = new Map<string, RunRecord>();
  let timer: { handle: unknown; at: number } | undefined;

  const deadline = (run: RunRecord): number =>
    run.touched + (run.ended ? current.retainEndedMs : current.retainUnendedMs);

  const schedule = (at: number): void => {
    if (timer && timer.at <= at) return;
    if (timer) timers.clearTimeout(timer.handle);
    const handle = timers.setTimeout(weakSweep(sweeper), Math.min(MAX_TIMER_MS, Math.max(0, at - elapsed())));
    unref(handle);
    timer = { handle, at };
  };

  const scheduleNext = (): void => {
    let earliest = Number.POSITIVE_INFINITY;
    for (const run of runs.values()) {
      if (run.watchers.size === 0) earliest = Math.min(earliest, deadline(run));
    }
    if (earliest !== Number.POSITIVE_INFINITY) schedule(earliest);
  };

  // Held strongly only by this bus's own closures; the timer holds it weakly.
  const sweeper = {
    sweep(): void {
      timer = undefined;
      const now = elapsed();
      for (const [runId, run] of runs) {
        // A run with a listener is never reaped: the listener is still reading it.
        if (run.watchers.size === 0 && deadline(run) <= now) runs.delete(runId);
      }
      scheduleNext();
    },
  };

  const host = (run: RunRecord) => ({
    settings: () => current,
    detach: (watcher: Watcher) => {
      if (run.watchers.delete(watcher) && run.watchers.size === 0 && runs.get(run.id) === run) {
        // A run that was only watched, never emitted into, has nothing a later watcher could read:
        // forget it now, not hours later (a watch on every id a client names would pile up).
        if (run.events.length === 0) runs.delete(run.id);
        else schedule(deadline(run));
      }
    },
  });

  const open = (runId: string): RunRecord => {
    let run = runs.get(runId);
    if (!run) {
      run = { id: runId, events: [], ended: false, touched: elapsed(), watchers: new Set() };
      runs.set(runId, run);
    }
    return run;
  };

  const drop = (runId: string): void => {
    const run = runs.get(runId);
    if (!run) return;
    runs.delete(runId);
    for (const watcher of [...run.watchers]) watcher.end();
    run.watchers.clear();
    // A watcher still reading what it holds keeps this record (to leave it): not the run's history,
    // which `endRun` drops now. One still replaying holds the list it reads itself.
    run.events = [];
  };

  return {
    emit(runId, event) {
      checkRunId(runId, "emit");
      checkEvent(event, "emit");
      const run = open(runId);
      // Frozen through, so no watcher can change what the others and `history` read.
      const stored = freezeStored(withSeq(event, run.events.length + 1));
      run.events.push(stored);
      run.touched = elapsed();
      if (stored.kind === "done") run.ended = true;
      for (const watcher of run.watchers) watcher.push(stored);
      // Planned whenever no one watches: an earlier deadline than the timer's (a run that never ended,
      // where finished runs are kept longer) moves the timer; a later one costs a comparison.
      if (run.watchers.size === 0) schedule(deadline(run));
      return stored;
    },

    watch(runId, signal) {
      checkRunId(runId, "watch");
      checkSignal(signal, "watch");
      if (signal?.aborted) {
        // Gone before it started: hand back a finished watcher without opening a run for it.
        const stale = runs.get(runId);
        const watcher = new Watcher(
          { settings: () => current, detach: () => {} },
          stale?.events ?? [],
          undefined,
        );
        watcher.close();
        return watcher;
      }
      const run = open(runId);
      let watcher: Watcher;
      try {
        watcher = new Watcher(host(run), run.events, signal);
      } catch (cause) {
        // A signal-like whose addEventListener throws: refused, and the run opened for it forgotten.
        if (run.events.length === 0 && run.watchers.size === 0) runs.delete(runId);
        throw new EventsError(
          "invalid-signal",
          "watch could not listen on its signal: its addEventListener threw. Pass the request's AbortSignal.",
          { cause },
        );
      }
      run.watchers.add(watcher);
      return watcher;
    },

    history(runId) {
      checkRunId(runId, "history");
      return [...(runs.get(runId)?.events ?? [])];
    },

    endRun(runId) {
      checkRunId(runId, "endRun");
      drop(runId);
    },

    configure(changes) {
      current = mergeSettings(current, changes);
      // A lowered cap holds now, for every watcher already behind (one of a finished run has no
      // push left to cut its queue at).
      for (const run of runs.values()) for (const watcher of run.watchers) watcher.recap();
      // The deadlines may have moved either way: plan the sweep afresh.
      if (timer) timers.clearTimeout(timer.handle);
      timer = undefined;
      scheduleNext();
      return { ...current };
    },

    reset() {
      current = { ...DEFAULT_EVENTS_SETTINGS };
      for (const runId of [...runs.keys()]) drop(runId);
      if (timer) timers.clearTimeout(timer.handle);
      timer = undefined;
      return { ...current };
    },

    close() {
      for (const runId of [...runs.keys()]) drop(runId);
      if (timer) timers.clearTimeout(timer.handle);
      timer = undefined;
    },
  };
}
