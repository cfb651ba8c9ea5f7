import { createBus, type EventBus } from "./bus.js";
import type { EventsSettings } from "./settings.js";
import type { RunEvent, SequencedEvent } from "./types.js";
import type { EventStream, SignalLike } from "./watcher.js";

export type { EventBus } from "./bus.js";
export { createBus } from "./bus.js";
export type { EventsErrorCode } from "./errors.js";
export { checkSignal, EventsError } from "./errors.js";
export type { DisplayBlock, ErrorBlock, NoticeBlock, ReasoningBlock, TextBlock, ToolBlock } from "./fold.js";
export { fold } from "./fold.js";
export type { RunMetrics, RunMetricsOptions, RunOutcome } from "./run-metrics.js";
export { runMetrics } from "./run-metrics.js";
export type { EventsSettings } from "./settings.js";
export { DEFAULT_EVENTS_SETTINGS, mergeSettings } from "./settings.js";
export type {
  CacheBreakReason,
  ContextBreakdown,
  DoneEvent,
  ErrorEvent,
  LedgerEntryLike,
  NoticeEvent,
  OutputEvent,
  RetractEvent,
  RunEvent,
  RunUsageTotals,
  SequencedEvent,
  SideUsageTotals,
  ThinkingEvent,
  ThinkingRetractEvent,
  ToolCallEvent,
  ToolResultEvent,
  TurnEvent,
  TurnMetrics,
  TurnTimings,
  TurnUsage,
  UsageEvent,
} from "./types.js";
export type { EventStream, SignalLike } from "./watcher.js";
export { withSeq } from "./with-seq.js";

/** The bus the top-level functions use; `createBus()` makes another. */
export const defaultBus: EventBus = createBus();

/**
 * Appends an event to a run on the default bus and hands it to the run's watchers.
 *
 * Reads `runId` (a non-empty string) and `event` (an object with a string `kind`); stores a copy
 * with `seq` set to the run's next number, from 1, and returns it. The copy is frozen, and so is a
 * copy of each plain object and array in it, so no watcher can change what another, or `history`,
 * reads; the objects passed in are never frozen or written to. A notice's `dropped` is left out
 * of the copy: only a watcher's gap notice carries one. Throws `EventsError` for a bad
 * id or event. A `done` event marks the run finished: its buffer is kept for `retainEndedMs`
 * (unless a watcher is still on it), then swept.
 */
export function emit(runId: string, event: RunEvent): SequencedEvent {
  return defaultBus.emit(runId, event);
}

/**
 * Reads a run on the default bus: what it already emitted, then what it emits next, until `done`.
 *
 * Aborting `signal` ends the iteration at once, even while it waits for the next event, and so does
 * `return()` (a `break` out of `for await`). A watcher that falls behind keeps only its most recent
 * `maxEvents` live events; the skipped stretch is announced once, by a `notice` with `dropped` set
 * and a `seq` inside the gap. Never throws after the first call (bad `runId` throws `EventsError`).
 */
export function watch(runId: string, signal?: SignalLike): EventStream {
  return defaultBus.watch(runId, signal);
}

/** A copy of the list of everything a run on the default bus has emitted (the events frozen), without subscribing. */
export function history(runId: string): SequencedEvent[] {
  return defaultBus.history(runId);
}

/** Drops a run's buffer on the default bus now; its watchers finish after reading what they hold. */
export function endRun(runId: string): void {
  defaultBus.endRun(runId);
}

/**
 * Moves the default bus's backlog cap, trim slack and two sweep deadlines, returning the whole set.
 *
 * A field left out, or given anything but a positive finite number, keeps what it had.
 */
export function configureEvents(changes: Partial<EventsSettings>): EventsSettings {
  return defaultBus.configure(changes);
}

/** Puts the default bus's settings back to `DEFAULT_EVENTS_SETTINGS` and drops every run it holds. */
export function resetEvents(): EventsSettings {
  return defaultBus.reset();
}
