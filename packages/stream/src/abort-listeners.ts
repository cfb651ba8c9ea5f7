import { StreamError } from "./errors.js";

/** The callers waiting on one signal, and how to take its one listener off again. */
interface Waiting {
  callbacks: Set<() => void>;
  detach: () => void;
}

/**
 * Everything waiting on one signal, behind the one listener added to it. A host that hands the
 * same `AbortSignal` to many runs at once would otherwise add a listener per request in flight,
 * and past ten Node prints `MaxListenersExceededWarning` into the host's logs.
 */
const waiting = new WeakMap<AbortSignal, Waiting>();

/** Whether `value` can be listened to as an abort signal (an `AbortSignal`, from any realm). */
export function isAbortSignal(value: unknown): value is AbortSignal {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Partial<AbortSignal>).aborted === "boolean" &&
    typeof (value as Partial<AbortSignal>).addEventListener === "function" &&
    typeof (value as Partial<AbortSignal>).removeEventListener === "function"
  );
}

/**
 * Calls `onAbort` once when `signal` aborts; answers the function that stops listening. However many
 * callers listen to one signal, it carries one listener, removed when the last caller stops. A
 * signal already aborted calls `onAbort` on the next microtask (its abort event will not come
 * again), unless the caller stopped listening first. Every caller is told even when another's
 * `onAbort` throws (the first such exception is thrown on afterwards, as from its own listener).
 * Throws `StreamError` `"invalid-argument"` for a `signal` that is not an `AbortSignal` or an
 * `onAbort` that is not a function.
 */
export function listenForAbort(signal: AbortSignal, onAbort: () => void): () => void {
  if (!isAbortSignal(signal)) {
    throw new StreamError("invalid-argument", "listenForAbort: signal must be an AbortSignal.");
  }
  if (typeof onAbort !== "function") {
    throw new StreamError("invalid-argument", "listenForAbort: onAbort must be a function.");
  }
  if (signal.aborted) {
    // Its abort event has come and gone, and no other will: told on the next microtask (once the
    // caller holds its stop function), unless it stops listening first.
    let live = true;
    queueMicrotask(() => {
      if (live) onAbort();
    });
    return () => {
      live = false;
    };
  }
  let entry = waiting.get(signal);
  if (!entry) {
    const callbacks = new Set<() => void>();
    const fire = () => {
      waiting.delete(signal);
      // Every caller is told, whatever one of them throws: one host's failing callback must not
      // leave the other runs on this signal running. The first exception is then thrown on, as its
      // own listener's would have been.
      const failures: unknown[] = [];
      for (const callback of [...callbacks]) {
        try {
          callback();
        } catch (error) {
          failures.push(error);
        }
      }
      callbacks.clear();
      if (failures.length > 0) throw failures[0];
    };
    signal.addEventListener("abort", fire, { once: true });
    entry = { callbacks, detach: () => signal.removeEventListener("abort", fire) };
    waiting.set(signal, entry);
  }
  const { callbacks, detach } = entry;
  const once = () => {
    callbacks.delete(once);
    onAbort();
  };
  callbacks.add(once);
  return () => {
    if (!callbacks.delete(once) || callbacks.size > 0) return;
    detach();
    if (waiting.get(signal)?.callbacks === callbacks) waiting.delete(signal);
  };
}
