/**
 * One `abort` listener per signal, however many calls wait on it. A run hands every tool call of a
 * step the same signal; a listener of each call's own on it made Node warn of a leak
 * (`MaxListenersExceededWarning: … 11 abort listeners added to [AbortSignal]`) at the eleventh
 * call in parallel, though each was removed when its call ended.
 */
interface Waiting {
  callbacks: Set<() => void>;
  listener: () => void;
}

const waiting = new WeakMap<AbortSignal, Waiting>();

/**
 * Calls `then` once when `signal` aborts (never if it already has: check `aborted` first).
 * Returns the function that stops waiting; the signal's one listener is removed with the last
 * waiter, so a run's signal holds none between its steps.
 */
export function onAbort(signal: AbortSignal, then: () => void): () => void {
  let entry = waiting.get(signal);
  if (!entry) {
    const callbacks = new Set<() => void>();
    const listener = () => {
      waiting.delete(signal);
      for (const callback of [...callbacks]) callback();
    };
    entry = { callbacks, listener };
    waiting.set(signal, entry);
    signal.addEventListener("abort", listener, { once: true });
  }
  const { callbacks, listener } = entry;
  // A function of this waiter's own: one `then` given twice is two waiters, each stopped on its own.
  const mine = () => then();
  callbacks.add(mine);
  return () => {
    callbacks.delete(mine);
    if (callbacks.size === 0 && waiting.get(signal)?.callbacks === callbacks) {
      waiting.delete(signal);
      signal.removeEventListener("abort", listener);
    }
  };
}
