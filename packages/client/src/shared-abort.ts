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
import { protoless } from "./protoless.js";

/** The requests' controllers reached through one signal's listener, held weakly. */
interface Relay {
  controllers: Set<WeakRef<AbortController>>;
  /** How many may be held before the collected ones are swept out (doubling: amortised O(1)). */
  sweepAt: number;
  /** The one listener on the signal, taken off once no request uses it. */
  listener: () => void;
}

const relays = new WeakMap<AbortSignal, Relay>();

const FIRST_SWEEP = 64;

/**
 * Releases a request whose controller was collected unreleased: its response was dropped with its
 * body never read (a stream the caller never iterated), so neither the end of the body nor the SDK's
 * abort will ever release it. Without this, the signal kept its listener until it aborted (for a
 * host's signal, for good). No timer: garbage collection tells.
 */
const dropped = new FinalizationRegistry<() => void>((release) => release());

/** Takes `relay`'s listener off `signal` once it reaches no request. */
function leaveIfUnused(signal: AbortSignal, relay: Relay): void {
  if (relay.controllers.size > 0 || relays.get(signal) !== relay) return;
  relays.delete(signal);
  signal.removeEventListener("abort", relay.listener);
}

/**
 * Aborts `controller` when `signal` aborts (at once if it already has), until the returned release
 * is called (the request settled: its body read to the end, cancelled or failed). The last request
 * of a signal released takes the listener off it, so a long-lived signal (a host's shutdown signal)
 * holds nothing between requests. A request holds its controller as long as it runs (its body
 * read, its stream iterated), so a controller held weakly is reached while it matters, and one
 * whose request was dropped unread is collected instead of being kept by the signal — and, once
 * collected, releases its request (the listener goes with the last, at the next garbage collection
 * after the response was dropped).
 */
export function abortWith(signal: AbortSignal, controller: AbortController): () => void {
  if (signal.aborted) {
    controller.abort();
    return () => {};
  }
  let relay = relays.get(signal);
  if (!relay) {
    const controllers = new Set<WeakRef<AbortController>>();
    const made: Relay = {
      controllers,
      sweepAt: FIRST_SWEEP,
      listener: () => {
        relays.delete(signal);
        for (const held of controllers) held.deref()?.abort();
        controllers.clear();
      },
    };
    relay = made;
    relays.set(signal, made);
    signal.addEventListener("abort", made.listener, { once: true });
  }
  const held = relay;
  const { controllers } = held;
  if (controllers.size >= held.sweepAt) {
    for (const ref of controllers) if (ref.deref() === undefined) controllers.delete(ref);
    held.sweepAt = Math.max(FIRST_SWEEP, controllers.size * 2);
  }
  const ref = new WeakRef(controller);
  controllers.add(ref);
  const release = (): void => {
    if (!controllers.delete(ref)) return;
    dropped.unregister(ref);
    leaveIfUnused(signal, held);
  };
  // Held by the registry, `release` reaches the signal but not the controller.
  dropped.register(controller, release, ref);
  // A request the SDK ends itself (a stream the caller broke out of, its timeout) is settled too,
  // though its body may never be read again.
  controller.signal.addEventListener("abort", release, { once: true });
  return release;
}

/**
 * `response`, calling `release` once its body has been read to the end, cancelled or has failed
 * (at once for a response without a body). The body is relayed as it is read, chunk by chunk: what
 * the SDK reads, and when, is unchanged.
 *
 * The relay costs a stream step a chunk: measured (r82) on 10^5 in-memory chunks, about 1.3 µs a
 * chunk, about 3x reading the bare stream; through the SDK, which spends 8-9 µs a chunk decoding
 * server-sent events and parsing each JSON, the difference was within the noise of a busy machine.
 * A `then`-chain pull instead of an `async` one measured no better, a `pipeThrough` worse.
 */
export function releasedWhenRead(response: Response, release: () => void): Response {
  const { body } = response;
  if (body === null) {
    release();
    return response;
  }
  const reader = body.getReader();
  const relayed = new ReadableStream<Uint8Array>(
    {
      async pull(into) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            release();
            into.close();
          } else into.enqueue(value);
        } catch (error) {
          release();
          into.error(error);
        }
      },
      cancel(reason) {
        release();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  const wrapped = new Response(relayed, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  // The SDK logs and quotes the URL on its errors.
  Object.defineProperty(wrapped, "url", protoless({ value: response.url }));
  Object.defineProperty(wrapped, "redirected", protoless({ value: response.redirected }));
  return wrapped;
}
