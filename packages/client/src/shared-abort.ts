/**
 * The caller's signal of a pooled client's requests, carried by one `abort` listener however many
 * requests share it.
 *
 * The `openai` SDK adds a listener to the caller's signal for each request (`fetchWithTimeout`) and
 * never takes it off: a run's signal handed to 11 concurrent requests made Node print
 * `MaxListenersExceededWarning`, and every request a long-lived signal saw (a host's shutdown
 * signal, a run of a thousand steps) left its listener, and the request's controller, on it until
 * the signal aborted.
 */

/** The requests' controllers reached through one signal's listener, held weakly. */
interface Relay {
  controllers: Set<WeakRef<AbortController>>;
  /** How many may be held before the collected ones are swept out (doubling: amortised O(1)). */
  sweepAt: number;
}

const relays = new WeakMap<AbortSignal, Relay>();

const FIRST_SWEEP = 64;

/**
 * Aborts `controller` when `signal` aborts (at once if it already has). A request holds its
 * controller as long as it runs (its body read, its stream iterated), so a controller held weakly
 * is reached while it matters, and a finished request's is collected instead of being kept by the
 * signal.
 */
export function abortWith(signal: AbortSignal, controller: AbortController): void {
  if (signal.aborted) {
    controller.abort();
    return;
  }
  let relay = relays.get(signal);
  if (!relay) {
    const made: Relay = { controllers: new Set(), sweepAt: FIRST_SWEEP };
    relay = made;
    relays.set(signal, made);
    signal.addEventListener(
      "abort",
      () => {
        relays.delete(signal);
        for (const held of made.controllers) held.deref()?.abort();
        made.controllers.clear();
      },
      { once: true },
    );
  }
  const { controllers } = relay;
  if (controllers.size >= relay.sweepAt) {
    for (const held of controllers) if (held.deref() === undefined) controllers.delete(held);
    relay.sweepAt = Math.max(FIRST_SWEEP, controllers.size * 2);
  }
  controllers.add(new WeakRef(controller));
}
