import type { SignalLike } from "@loopwright/events";

/** The callbacks waiting on one signal, and how to take its one listener off again. */
interface Waiting {
  callbacks: Set<() => void>;
  detach: () => void;
}

const waitingOn = new WeakMap<SignalLike, Waiting>();

/**
 * Calls `callback` once `signal` aborts; answers the function that stops waiting. However many
 * watchers and claims wait on one signal at once (a host's shutdown signal handed to every run),
 * it carries one `abort` listener, taken off when the last of them stops waiting: a listener each
 * made Node print `MaxListenersExceededWarning` from the eleventh on.
 */
export function onAbort(signal: SignalLike, callback: () => void): () => void {
  let entry = waitingOn.get(signal);
  if (!entry) {
    const callbacks = new Set<() => void>();
    const fire = (): void => {
      waitingOn.delete(signal);
      const called = [...callbacks];
      callbacks.clear();
      for (const call of called) call();
    };
    signal.addEventListener("abort", fire, { once: true });
    entry = { callbacks, detach: () => signal.removeEventListener("abort", fire) };
    waitingOn.set(signal, entry);
  }
  const { callbacks, detach } = entry;
  // A function each: one callback given twice (a watcher's bound method) still waits twice.
  const waiting = (): void => callback();
  callbacks.add(waiting);
  return () => {
    if (!callbacks.delete(waiting) || callbacks.size > 0) return;
    detach();
    if (waitingOn.get(signal)?.callbacks === callbacks) waitingOn.delete(signal);
  };
}
