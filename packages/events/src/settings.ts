import { EventsError } from "./errors.js";

/** The four numbers behind a bus's backlogs and its sweep. */
export interface EventsSettings {
  /** How many events a slow watcher's queue keeps: the most recent ones. */
  maxEvents: number;
  /** How far past `maxEvents` a queue may run before it is cut back, so trimming happens in batches. */
  trimSlack: number;
  /** How long a finished run's buffer is kept after its `done`, for a watcher that comes late. */
  retainEndedMs: number;
  /** How long a run that never ended is kept after its last event before it is dropped. */
  retainUnendedMs: number;
}

/** The settings a new bus starts with and `resetEvents` puts back. */
export const DEFAULT_EVENTS_SETTINGS: Readonly<EventsSettings> = Object.freeze({
  maxEvents: 1000,
  trimSlack: 100,
  retainEndedMs: 10 * 60_000,
  retainUnendedMs: 6 * 60 * 60_000,
});

const KEYS = ["maxEvents", "trimSlack", "retainEndedMs", "retainUnendedMs"] as const;

/**
 * `current` with every field of `changes` that is a positive finite number laid over it. Anything
 * else — a missing field, zero, a negative, NaN, a string — keeps what `current` had, because none
 * of the four has a meaningful zero and a 0 passed for "no opinion" must not switch a cap off.
 * Throws `EventsError` (`invalid-argument`) when a field throws when read (a getter, a revoked Proxy).
 */
export function mergeSettings(current: EventsSettings, changes: unknown): EventsSettings {
  const next = { ...current };
  if (typeof changes !== "object" || changes === null) return next;
  for (const key of KEYS) {
    let value: unknown;
    try {
      value = Object.hasOwn(changes, key) ? (changes as Record<string, unknown>)[key] : undefined;
    } catch (cause) {
      // A getter that throws or a revoked Proxy: refused by name, not a raw TypeError from inside.
      throw new EventsError(
        "invalid-argument",
        `The events settings could not be read: reading ${key} threw (a throwing getter or a revoked Proxy). Pass a plain object such as { maxEvents: 200 }.`,
        { cause },
      );
    }
    if (typeof value === "number" && Number.isFinite(value) && value > 0) {
      next[key] = key === "maxEvents" || key === "trimSlack" ? Math.ceil(value) : value;
    }
  }
  return next;
}
