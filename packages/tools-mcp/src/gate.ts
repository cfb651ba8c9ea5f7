import { onAbort } from "./on-abort.js";

/**
 * A readers–writer gate for tool calls: any number of shared (read-only) holders at once, or one
 * exclusive holder alone. Waiters are served in arrival order, so a stream of reads cannot starve
 * a write. An abort while waiting leaves the queue and rejects with the signal's reason.
 */
export class CallGate {
  #readers = 0;
  #writer = false;
  #queue: { shared: boolean; grant: () => void }[] = [];

  /** Waits for a turn; resolves to the release function, to be called once. */
  acquire(shared: boolean, signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#queue.length === 0 && this.#free(shared)) return Promise.resolve(this.#take(shared));
    return new Promise((resolve, reject) => {
      let stopWaiting = () => {};
      const waiter = {
        shared,
        grant: () => {
          stopWaiting();
          resolve(this.#take(shared));
        },
      };
      if (signal)
        stopWaiting = onAbort(signal, () => {
          const at = this.#queue.indexOf(waiter);
          if (at >= 0) this.#queue.splice(at, 1);
          reject(signal.reason);
          this.#drain();
        });
      this.#queue.push(waiter);
    });
  }

  #free(shared: boolean): boolean {
    return shared ? !this.#writer : !this.#writer && this.#readers === 0;
  }

  #take(shared: boolean): () => void {
    if (shared) this.#readers++;
    else this.#writer = true;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (shared) this.#readers--;
      else this.#writer = false;
      this.#drain();
    };
  }

  #drain(): void {
    while (this.#queue.length > 0) {
      const next = this.#queue[0];
      if (!next || !this.#free(next.shared)) return;
      this.#queue.shift();
      next.grant();
    }
  }
}
