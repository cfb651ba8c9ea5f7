import { onAbort } from "./on-abort.js";

/**
 * Waits for `work`, or rejects with `stopped()` as soon as `signal` fires (at once when it already
 * has). The work itself goes on: this ends the wait, not the work.
 */
export async function untilStopped<T>(
  work: Promise<T>,
  signal: AbortSignal | undefined,
  stopped: () => Error,
): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => {});
    throw stopped();
  }
  let stopWaiting: (() => void) | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_resolve, reject) => {
        stopWaiting = onAbort(signal, () => reject(stopped()));
      }),
    ]);
  } finally {
    stopWaiting?.();
  }
}
