/**
 * Calls a watcher the loop does not await (onEvent, onToolCall, onToolResult) so that it cannot
 * break the run: a throw is dropped, and so is the rejection of a promise it returns — left alone,
 * that would be an unhandled rejection, which ends a Node process.
 */
export function tell<A extends unknown[]>(watcher: ((...args: A) => unknown) | undefined, ...args: A): void {
  if (!watcher) return;
  try {
    const returned = watcher(...args);
    if (typeof (returned as PromiseLike<unknown> | undefined)?.then === "function") {
      (returned as PromiseLike<unknown>).then(undefined, () => {});
    }
  } catch {
    // A watcher's failure is the watcher's; the run and its transcript go on.
  }
}
