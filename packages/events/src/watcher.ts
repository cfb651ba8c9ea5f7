import { DEFAULT_EVENTS_SETTINGS, type EventsSettings } from "./settings.js";
import type { NoticeEvent, RunEvent, SequencedEvent } from "./types.js";

/** The narrow shape of an `AbortSignal` that `watch` reads. */
export interface SignalLike {
  readonly aborted: boolean;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/**
 * What `watch` returns: an async iterator of a run's events that is its own iterable (so it goes
 * straight into `for await`) and finishes with `undefined`. The same contract as TypeScript 5.6's
 * `AsyncIterableIterator<SequencedEvent, undefined>`, written out so the declarations also read on
 * TypeScript 5.4 and 5.5, whose `AsyncIterableIterator` takes one type argument.
 */
export interface EventStream extends AsyncIterator<SequencedEvent, undefined> {
  [Symbol.asyncIterator](): EventStream;
}

type Result = IteratorResult<SequencedEvent, undefined>;

/** What a watcher that has read its replay, or has none, refers to instead of the run's list. */
const NOTHING: readonly SequencedEvent[] = Object.freeze([]);

const FINISHED: Result = Object.freeze({ done: true, value: undefined }) as Result;

/** What a watcher needs from its bus: the live settings and a way to leave its run. */
export interface WatcherHost {
  settings(): EventsSettings;
  detach(watcher: Watcher): void;
}

/** The host of a watcher that has left: nothing of its bus or run. */
const LEFT: WatcherHost = Object.freeze({
  settings: () => DEFAULT_EVENTS_SETTINGS,
  detach: () => {},
});

/**
 * One reader of one run: the run's history up to the moment it subscribed, read by cursor (no
 * copy), then the live events in a queue of its own that is capped when the reader falls behind.
 */
export class Watcher implements EventStream {
  /**
   * The run's own list, read in place up to `replayEnd`; let go of (`NOTHING`) once read or left.
   * Held on, it kept every event the run emitted after this watcher joined too, and the run's whole
   * history after `endRun` dropped it, for as long as anything held the watcher (a stalled or
   * finished stream a server keeps until its socket closes).
   */
  private replay: readonly SequencedEvent[];
  private replayAt = 0;
  private readonly replayEnd: number;
  private queue: (SequencedEvent | undefined)[] = [];
  private head = 0;
  private gap = 0;
  /** The event right behind a gap notice that was just read: held out of reach of trimming. */
  private pinned: SequencedEvent | undefined;
  private waiters: ((result: Result) => void)[] = [];
  private ending = false;
  private closed = false;
  private host: WatcherHost;
  private readonly signal: SignalLike | undefined;
  private readonly onAbort = (): void => {
    this.close();
  };

  constructor(host: WatcherHost, replay: readonly SequencedEvent[], signal: SignalLike | undefined) {
    this.host = host;
    this.replayEnd = replay.length;
    this.replay = this.replayEnd === 0 ? NOTHING : replay;
    this.signal = signal;
    signal?.addEventListener("abort", this.onAbort, { once: true });
  }

  /** Whether this watcher has stopped reading (finished, left, or aborted). */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Hands a live event over: straight to a waiting reader, or into the capped queue. */
  push(event: SequencedEvent): void {
    if (this.closed || this.ending) return;
    if (event.kind === "done") this.ending = true;
    const waiter = this.waiters.length > 0 && this.idle() ? this.waiters.shift() : undefined;
    if (waiter) {
      this.deliver(event, waiter);
      return;
    }
    this.queue.push(event);
    const { maxEvents, trimSlack } = this.host.settings();
    const waiting = this.queue.length - this.head;
    if (waiting > maxEvents + trimSlack) this.trim(waiting - maxEvents);
  }

  /**
   * The settings moved (`configure`): a queue already past the new cap plus slack is cut back now,
   * as a push would cut it. Without this a stalled watcher kept its old backlog until its run
   * emitted again, and for a run already finished (no push ever comes) until it read: lowering
   * `maxEvents` to free memory freed none of it.
   */
  recap(): void {
    if (this.closed) return;
    const { maxEvents, trimSlack } = this.host.settings();
    const waiting = this.queue.length - this.head;
    if (waiting > maxEvents + trimSlack) this.trim(waiting - maxEvents);
  }

  /** The run was dropped (`endRun`, a reset): finish once what is queued has been read. */
  end(): void {
    this.ending = true;
    if (this.idle()) this.close();
  }

  next(): Promise<Result> {
    if (this.closed) return Promise.resolve(FINISHED);
    const ready = this.take();
    if (ready) return Promise.resolve(ready);
    if (this.ending) {
      this.close();
      return Promise.resolve(FINISHED);
    }
    return new Promise((resolve) => {
      this.waiters.push(resolve);
    });
  }

  return(): Promise<Result> {
    this.close();
    return Promise.resolve(FINISHED);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Leaves the run now: a pending `next()` settles as finished, and nothing more is queued. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.replay = NOTHING;
    this.replayAt = this.replayEnd;
    this.queue = [];
    this.head = 0;
    this.gap = 0;
    this.pinned = undefined;
    try {
      this.signal?.removeEventListener("abort", this.onAbort);
    } catch {
      // A signal-like whose removeEventListener throws: the watcher still leaves its run, or the run
      // would never be swept. Its listener only closes a watcher already closed.
    }
    this.host.detach(this);
    // The bus's side holds the run: a closed watcher a consumer still keeps must not keep it too.
    this.host = LEFT;
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter(FINISHED);
  }

  private idle(): boolean {
    return (
      this.replayAt >= this.replayEnd &&
      this.pinned === undefined &&
      this.gap === 0 &&
      this.head >= this.queue.length
    );
  }

  private deliver(event: SequencedEvent, waiter: (result: Result) => void): void {
    waiter({ done: false, value: event });
    // `done` is the last thing a watcher reads: leave the run now, so the sweep may reap it.
    if (event.kind === "done") this.close();
  }

  private take(): Result | undefined {
    if (this.replayAt < this.replayEnd) {
      const event = this.replay[this.replayAt++] as SequencedEvent;
      if (this.replayAt >= this.replayEnd) this.replay = NOTHING;
      if (event.kind === "done") this.close();
      return { done: false, value: event };
    }
    if (this.pinned) {
      const event = this.pinned;
      this.pinned = undefined;
      if (event.kind === "done") this.close();
      return { done: false, value: event };
    }
    if (this.head < this.queue.length) {
      const next = this.queue[this.head] as SequencedEvent;
      if (this.gap > 0) {
        // The notice's seq names the event behind it, so that event is the next one read whatever
        // is trimmed meanwhile: a second notice never follows the first across the same gap.
        this.queue[this.head] = undefined;
        this.head++;
        this.pinned = next;
        const dropped = this.gap;
        this.gap = 0;
        const notice: SequencedEvent<NoticeEvent> = {
          kind: "notice",
          text: `This watcher fell behind: ${dropped} event${dropped === 1 ? " was" : "s were"} skipped.`,
          dropped,
          seq: next.seq - 1,
        };
        return { done: false, value: notice as SequencedEvent<RunEvent> };
      }
      this.queue[this.head] = undefined;
      this.head++;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      if (next.kind === "done") this.close();
      return { done: false, value: next };
    }
    return undefined;
  }

  private trim(drop: number): void {
    // The dropped events are released now, not when a stalled reader next wakes up: their slots are
    // emptied and skipped. The array is copied only once its empty front outgrows what it keeps, so
    // a small `trimSlack` under a large `maxEvents` costs what it drops, not a copy of the whole
    // queue per event (trimSlack 1 under maxEvents 20 000 took 46 s for 50 000 events).
    const end = this.head + drop;
    this.queue.fill(undefined, this.head, end);
    this.head = end;
    this.gap += drop;
    if (this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }
}
