import type { EventStream, EventsSettings, RunEvent, SequencedEvent, SignalLike } from "@loopwright/events";
import { EventsError } from "@loopwright/events";
import { call, type RedisConnection, refusedForGood, shut, timeMicros, whenReady } from "./connection.js";
import { formatEventId } from "./event-id.js";
import { onAbort } from "./on-abort.js";

type Result = IteratorResult<SequencedEvent, undefined>;
const FINISHED: Result = Object.freeze({ done: true, value: undefined }) as Result;

/** What a stream watcher needs from its bus. */
export interface StreamWatcherHost {
  /**
   * A fresh connection of the watcher's own, not yet connected: `XREAD BLOCK` holds the connection
   * it runs on. The watcher connects it, holding it first, so leaving while Redis is away stops
   * its tries.
   */
  client(): RedisConnection;
  settings(): EventsSettings;
  detach(watcher: StreamWatcher): void;
  report(error: unknown): void;
  /**
   * Told of a read that failed and will be tried again (the connection lost, a refusal that passes),
   * `report` when not given.
   */
  readFailed?(error: unknown): void;
  /** A read went through: a failure told through `readFailed` is told again when it recurs. */
  readOk?(): void;
  /**
   * Told of what ended the watcher for good (Redis refusing to read its key as a stream, `WRONGTYPE`),
   * with the watcher's key; `report` when not given.
   */
  readEnded?(error: unknown, key: string): void;
  /**
   * The watcher read entries of `key`: it is a stream, as a run's is. (Not an empty read: one asked
   * before the key was taken may answer after another watcher found it taken.)
   */
  readKey?(key: string): void;
}

/** What a watcher knows of its run beyond `after`, and where its claim is kept. */
export interface StreamWatcherOptions {
  /** The run's claim key (`claimRun`): a claim standing on the id means a run of it is on its way. */
  claimKey?: string | undefined;
  /**
   * The caller knows the run was started though it read none of it (`after` 0): a stream missing
   * at subscribe, with no claim on the id, is a run that is gone rather than one not started yet.
   */
  started?: boolean | undefined;
  /**
   * How long a stream missing at subscribe (with `after` > 0, or `started`) must stay missing, with
   * no claim, before the watcher says the run is gone: a run recorded before its first write may be
   * slow to write it, and a live run whose stream was lost to a Redis restart without persistence,
   * or evicted, has no stream (and no claim) until its next write. Default
   * {@link DEFAULT_MISSING_GRACE_MS}; never less than two idle wakeups in a row (about two seconds).
   */
  startedGraceMs?: number | undefined;
  /**
   * The emitter token of the run the reader read up to `after`, as the event id it resumes from says
   * (`<seq>:<token>`). Taken as that run's mark: an entry under another token is another run's. It
   * lets no entry be read that the entry itself does not show to be that run's (see `belowPosition`).
   */
  token?: string | undefined;
}

/** What a Redis bus's `watch` answers: an `EventStream` that gives each event it hands out an id to resume from. */
export interface RedisEventStream extends EventStream {
  /**
   * The id of an event this stream handed out, for a reader to resume from (`watch`'s `after`; a
   * page's Last-Event-ID): `<seq>:<token>`, the seq with the token of the emitter whose run it was
   * read from, or the bare `<seq>` when that is not known. Throws `EventsError` (`invalid-event`)
   * for an event this stream did not hand out.
   */
  idOf(event: SequencedEvent): string;
}

/**
 * How long, by default, a watcher that finds its run's stream missing at subscribe (though the run
 * existed) waits for it before it says the run is gone, in ms: a minute. A missing stream may have
 * expired (the emitter stopped) or been lost to a restart or an eviction while the emitter lives; the
 * two cannot be told apart from the keys, but a live run writes far more often than this (the loop
 * emits as it works), and its next write brings the stream back.
 */
export const DEFAULT_MISSING_GRACE_MS = 60_000;

/** How many entries one `XREAD` asks for. */
const BATCH = 256;

/**
 * How long one `XREAD` waits for a new entry, in ms. Bounded, so a watcher whose run was started
 * afresh below its position (the new run's entries never pass it) finds out: after each empty wait
 * it reads the stream's top entry, one more command — two a second at most, never a busy loop.
 */
const BLOCK_MS = 1000;

/**
 * How far Redis's clock and this process's monotonic one may drift apart in pace (a fraction of the
 * time passed) before the watcher takes the difference for a step of Redis's clock (see
 * `subscribedByNow`): a thousandth, twice what NTP slews a clock at most.
 */
const CLOCK_PACE_SLACK = 0.001;

/** One stream entry as `XREAD` answers it in RESP2: `[id, [field, value, ...]]`. */
type Entry = [string, string[]];

/**
 * Reads the event stored in one entry; `undefined` for an entry this package did not write — not
 * JSON, no string `kind`, or a `seq` that is not its entry id's (`<seq>-0`), which would move a
 * reader past every later event.
 */
export function decode(entry: Entry): SequencedEvent | undefined {
  // Read as field and value pairs: a value "e" of another field (an entry another process wrote)
  // is not the field.
  const json = fieldOf(entry, "e");
  if (json === undefined) return undefined;
  try {
    const event = JSON.parse(json) as SequencedEvent;
    return typeof event?.seq === "number" && `${event.seq}-0` === entry[0] && typeof event.kind === "string"
      ? event
      : undefined;
  } catch {
    return undefined;
  }
}

/** The value of one field of an entry; `undefined` for an entry without it. */
function fieldOf(entry: Entry, name: string): string | undefined {
  const fields = entry[1];
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

/** Whether stream entry id `a` (`<ms>-<seq>`) comes after `b`, as Redis orders them. */
function idAbove(a: string, b: string): boolean {
  const [aMs = 0, aSeq = 0] = a.split("-").map(Number);
  const [bMs = 0, bSeq = 0] = b.split("-").map(Number);
  return aMs !== bMs ? aMs > bMs : aSeq > bSeq;
}

/** The token of the emitter that wrote an entry (`o`); `undefined` for one without it. */
export function ownerOf(entry: Entry): string | undefined {
  return fieldOf(entry, "o");
}

function gapNotice(dropped: number, seq: number, why: string, atLeast = false): SequencedEvent {
  const notice = {
    kind: "notice",
    text: `This watcher ${why}: ${atLeast ? "at least " : ""}${dropped} event${dropped === 1 ? " was" : "s were"} skipped.`,
    dropped,
    seq,
  };
  return notice as SequencedEvent<RunEvent>;
}

/**
 * One reader of one run's stream, on a connection of its own. It first replays what the stream
 * held when it subscribed, reading a batch only when its reader has used the last one; then it
 * follows live with `XREAD BLOCK`, into a queue capped the way the in-memory bus caps a slow
 * watcher's (the most recent `maxEvents` kept, one gap notice for the skipped stretch). A seq
 * jump in the stream itself (events lost to a Redis restart or trimmed away) is announced the same
 * way, once. Survives the server going away: it waits for the connection and reads on from the
 * last seq it saw. A run started afresh under its id by another emitter ends it, with one notice for
 * the part of the old run it had not read: seen when an entry of the new emitter's comes, or, when
 * the new run stays below this watcher's position, by a look at the stream's top after each empty
 * `XREAD` (bounded to {@link BLOCK_MS}; a watcher that has read no entry yet takes only a top at or
 * below its position for another run's: one above it is read next, and when a watcher resuming past
 * the stream's top at subscribe reads its first entries, an entry at or below its position written
 * since then tells that they are a new run's, not its reader's run going on — unless it is that
 * run's own batch sent again after Redis lost it, which its emitter marks so: see `belowPosition`). The same look finds the stream
 * gone: a watcher that has read some of the run, or resumed at its top (`after` its last event, the
 * run not ended), ends after one notice when the stream expired without `done` (deleted or evicted
 * before its expiry, it waits for the emitter's next write and reads on). A watcher that finds no stream at subscribe although the
 * run existed — it resumes `after` > 0, so its reader read up to that seq, or its caller says the
 * run `started` — ends too, with a notice at seq `after` that does not say whether the run ended,
 * once the stream has stayed missing with no claim on the id for `startedGraceMs` (default
 * {@link DEFAULT_MISSING_GRACE_MS}: the stream of a live run lost to a restart or an eviction comes
 * back with its next write) and two idle wakeups in a row; an entry read meanwhile, or a claim
 * standing, keeps it reading. With `after` 0 and no such word a missing stream may be a run not
 * started yet, and the watcher waits for it.
 */
export class StreamWatcher implements RedisEventStream {
  private queue: SequencedEvent[] = [];
  private head = 0;
  /** Live events trimmed out of the queue since the reader last took one. */
  private trimmed = 0;
  /** The head event was just named by a gap notice: it is read next, whatever is trimmed meanwhile. */
  private headPinned = false;
  private waiters: ((result: Result) => void)[] = [];
  /** Wakes the read loop when it waits for the reader to use a replay batch. */
  private wantMore: (() => void) | undefined;
  private ending = false;
  private closed = false;
  private conn: RedisConnection | undefined;
  /** The last seq read from the stream (0 before the first). */
  private cursor: number;
  /**
   * The id of the last entry read, an event or not: the next read starts after it. An entry this
   * package did not write is passed over once, not read again on every call (a busy loop while it
   * is the stream's last).
   */
  private readFrom: string;
  /** The pause before reading again after a failed read, in ms (0 after a read that worked). */
  private backoff = 0;
  /**
   * The emitter token on the entries read so far. Another one on a later entry means the run read
   * so far ended and a new run was started under its id (its stream deleted and written afresh):
   * the watcher ends there rather than read the new run's events as the old one's.
   */
  private owner: string | undefined;
  /** The stream's last seq when this watcher subscribed: up to it nothing is trimmed. */
  private replayEnd = 0;
  /**
   * The `run_id` of the server this watcher's connection reaches now (`INFO server`), learnt after
   * each (re)connect; `"?"` when the server will not say. A stream missing from the server it was
   * read on expired or was deleted; missing after a restart, it may only have been lost with it.
   */
  private server: string | undefined;
  /** Counts the connection's (re)connects, so a `run_id` asked across one is not trusted. */
  private connects = 0;
  /** The server on which this watcher last read an entry of the run (undefined before the first). */
  private readOn: string | undefined;
  /** Idle wakeups in a row that found the stream gone, and since when. */
  private goneChecks = 0;
  private goneSince = 0;
  /**
   * When the stream would expire, as its `PTTL` read after the last batch of entries said (the
   * emitter renews it with every write): gone sooner than that, it was deleted or evicted (Redis at
   * `maxmemory`), not expired, and its emitter may still be writing. 0 before the first batch.
   */
  private expiresAt = 0;
  /**
   * The stream was missing when this watcher subscribed although the run existed (`after` > 0: the
   * reader read events of it; or the caller said it `started`), and no entry has been read since:
   * since when, for the idle wakeups' look at whether it is gone for good. 0 when not so.
   */
  private missingSince = 0;
  /**
   * This watcher resumes `after` a seq the stream did not reach when it subscribed (missing, or its
   * top below that seq), and has not read an entry since: whose run the stream holds is not known.
   * The run the reader read writes above its position from here on (its seqs only grow; a stream
   * lost to an eviction or a restart comes back with its next write, and one restored from an older
   * snapshot keeps the entries it had at subscribe) — save a batch it sends again — while a run
   * started afresh under the id writes from seq 1. An entry at or below the position, above the
   * stream's top at subscribe, is one of two: the run's own batch sent again (Redis applied it, then
   * lost it with a restart or a failover before its answer reached the emitter, which sends it
   * again), or a new run's. See `belowPosition` for how they are told apart. Looked at once, when
   * the first entries come (and by the idle look).
   */
  private unplaced = false;
  /** For an `unplaced` watcher, the stream's top entry at subscribe (undefined: the stream was missing). */
  private placedTop: Entry | undefined;
  /**
   * Redis's clock (`TIME`, in µs) as this watcher subscribed, taken before it looked at the stream,
   * for a watcher resuming `after` a seq: an event its reader has was emitted before then. An entry
   * at or below the position that was emitted earlier (its `t`) and written since is the run's own
   * write landing late, not a new run's (see `belowPosition`). Undefined when Redis would not say.
   */
  private subscribedAt: number | undefined;
  /** This process's monotonic clock (`performance.now()`, ms) as the `TIME` of `subscribedAt` answered. */
  private subscribedLocal = 0;
  /** This process's monotonic clock (`performance.now()`, ms) as the `TIME` of `subscribedAt` was asked. */
  private subscribeAsked = 0;
  /** The emitter token each event handed out was read under (`undefined`: not known), for `idOf`. */
  private readonly tokens = new WeakMap<SequencedEvent, string | undefined>();
  /** The token the reader's event id named: its run's, as far as entries show it (see `belowPosition`). */
  private readonly claimed: string | undefined;
  private readonly claimKey: string | undefined;
  private readonly started: boolean;
  private readonly startedGraceMs: number;
  private readonly onAbort = (): void => this.close();
  /** Takes this watcher off its signal (one listener there, however many watchers share it). */
  private readonly stopWaiting: (() => void) | undefined;

  constructor(
    private readonly host: StreamWatcherHost,
    private readonly key: string,
    after: number,
    signal: SignalLike | undefined,
    options: StreamWatcherOptions = {},
  ) {
    this.claimKey = options.claimKey;
    this.started = options.started === true;
    this.startedGraceMs = Math.max(0, options.startedGraceMs ?? DEFAULT_MISSING_GRACE_MS);
    this.claimed = options.token;
    // An entry under another token than the one the reader's id names is another run's: the watcher
    // ends on it as on any change of emitter. The token only ever ends a watcher sooner; it makes
    // no entry read as the reader's run that would not be read without it, save its run's batch
    // sent again that carries it (`belowPosition`).
    this.owner = options.token;
    this.cursor = after;
    this.readFrom = `${after}-0`;
    this.stopWaiting = signal ? onAbort(signal, this.onAbort) : undefined;
    void this.run();
  }

  /** Whether this watcher has stopped reading (finished, left, or aborted). */
  get isClosed(): boolean {
    return this.closed;
  }

  /** The run was dropped (`endRun` on some instance): finish once what is queued has been read. */
  end(): void {
    this.ending = true;
    this.stopReading();
    if (this.available() === 0) this.close();
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

  idOf(event: SequencedEvent): string {
    if (!this.tokens.has(event)) {
      throw new EventsError(
        "invalid-event",
        `idOf: the event (seq ${String((event as { seq?: unknown } | undefined)?.seq)}) was not handed out by this watcher; ` +
          "ask the stream that gave it.",
      );
    }
    return formatEventId(event.seq, this.tokens.get(event));
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Leaves the run now: a pending `next()` settles as finished and the connection is dropped. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    this.head = 0;
    this.stopWaiting?.();
    this.stopReading();
    this.host.detach(this);
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter(FINISHED);
  }

  private stopReading(): void {
    const wake = this.wantMore;
    this.wantMore = undefined;
    wake?.();
    // destroy, not close: a blocked XREAD must end now, not when a new event arrives.
    if (this.conn?.isOpen) shut(this.conn);
  }

  private available(): number {
    return this.queue.length - this.head;
  }

  private take(): Result | undefined {
    if (this.head >= this.queue.length) return undefined;
    if (this.trimmed > 0) {
      const next = this.queue[this.head] as SequencedEvent;
      const dropped = this.trimmed;
      this.trimmed = 0;
      this.headPinned = true;
      const notice = gapNotice(dropped, next.seq - 1, "fell behind");
      this.tokens.set(notice, this.tokens.get(next));
      return { done: false, value: notice };
    }
    const event = this.queue[this.head++] as SequencedEvent;
    this.headPinned = false;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (event.kind === "done") this.close();
    else if (this.available() === 0) {
      const wake = this.wantMore;
      this.wantMore = undefined;
      wake?.();
    }
    return { done: false, value: event };
  }

  /** Hands an event to a waiting reader, or queues it (capped only past the replay). */
  private push(event: SequencedEvent, token = this.owner): void {
    if (this.closed) return;
    this.tokens.set(event, token);
    const waiter = this.available() === 0 && this.trimmed === 0 ? this.waiters.shift() : undefined;
    if (waiter) {
      waiter({ done: false, value: event });
      if (event.kind === "done") this.close();
      return;
    }
    this.queue.push(event);
    if (event.seq <= this.replayEnd) return;
    const { maxEvents, trimSlack } = this.host.settings();
    if (this.available() > maxEvents + trimSlack) {
      // A head a notice has just named stays out of the cut, so no second notice follows the first
      // across the same gap; the cut starts just behind it.
      const keep = this.headPinned ? [this.queue[this.head] as SequencedEvent] : [];
      const from = this.head + keep.length;
      const drop = this.available() - keep.length - maxEvents;
      this.queue = [...keep, ...this.queue.slice(from + drop)];
      this.head = 0;
      this.trimmed += drop;
    }
  }

  private async run(): Promise<void> {
    // A watcher closed as it was made (an aborted signal, a closed bus) opens no connection.
    await Promise.resolve();
    if (this.closed) return;
    try {
      // Held before it connects: a watcher left (or its bus closed) while Redis is away destroys
      // it, which ends its tries; awaited as a result, it kept trying for as long as Redis was away.
      this.conn = this.host.client();
      await this.conn.connect();
      if (this.closed) {
        shut(this.conn);
        return;
      }
      this.conn.on("ready", () => {
        this.connects++;
        this.server = undefined;
      });
      // A connection cut while it looks at the stream's top (Redis's `timeout`, a proxy, a
      // failover) is waited out like one under a read: it looked again once the connection was
      // back, where it ended the watcher before it had read anything ("could not read run …'s
      // events"). Nothing is read or changed before that look, so asking again is the same look.
      while (!(await this.subscribed())) if (this.closed || this.ending) return;
      while (!this.closed && !this.ending) {
        if (this.cursor < this.replayEnd && this.available() > 0) {
          // Replay is read on demand: wait until the reader has used what it holds.
          await new Promise<void>((resolve) => {
            this.wantMore = resolve;
          });
          continue;
        }
        await this.readOnce();
      }
    } catch (error) {
      if (!this.closed && !this.ending) {
        if (this.host.readEnded) this.host.readEnded(error, this.key);
        else this.host.report(error);
      }
      if (!this.closed) this.end();
    } finally {
      // Read to the end (or told to stop): the connection has nothing more to wait for.
      if (this.conn?.isOpen) shut(this.conn);
    }
  }

  /**
   * The run read so far ended and another emitter started its id afresh (its stream deleted): says
   * how much of the old run this watcher did not read, once, and ends. The new run's first entry
   * names the old run's last seq and emitter (`p`, `po`); without it (trimmed away, or started again
   * since) the count is the least it can be — to the stream's top at subscribe time, and the `done`.
   */
  private async endStartedAfresh(): Promise<void> {
    const conn = this.conn as RedisConnection;
    const first = await call<Entry[]>(conn, ["XRANGE", this.key, "-", "+", "COUNT", "1"]).then(
      (entries) => entries[0],
      () => undefined,
    );
    const last = first && fieldOf(first, "po") === this.owner ? Number(fieldOf(first, "p")) : Number.NaN;
    const exact = Number.isSafeInteger(last);
    const end = exact ? last : Math.max(this.replayEnd, this.cursor + 1);
    if (end > this.cursor) {
      const why = "was reading a run that ended and was started afresh under its id by another emitter";
      this.push(gapNotice(end - this.cursor, end, why, !exact));
    }
    this.end();
  }

  /** Learns the `run_id` of the server the connection reaches now (once per connection). */
  private async learnServer(conn: RedisConnection): Promise<void> {
    const connects = this.connects;
    let id: string;
    try {
      const info = await call<string>(conn, ["INFO", "server"]);
      id = /run_id:([0-9a-f]+)/.exec(String(info))?.[1] ?? "?";
    } catch (error) {
      // A server that will not answer INFO (a managed one that renames it): restarts cannot be told.
      if (!refusedForGood(error)) throw error;
      id = "?";
    }
    if (connects === this.connects) this.server = id;
  }

  /**
   * The stream of a run this watcher has read is gone and no `done` came. Ends the watcher, after
   * one notice, only once the emitter is gone too: the stream has been missing on two idle wakeups
   * in a row (a second apart: an `endRun` deletes the stream and announces it at once, and its
   * announcement ends the watcher first, without a notice) from the server the run was read on, and
   * its expiry (as last read, renewed by every write of the emitter) has passed — so it expired: the
   * emitter wrote nothing for its `retainUnendedMs`. Gone before its expiry (deleted by hand, or
   * evicted under `maxmemory`), or after a restart of Redis, the stream may come back with the
   * emitter's next write, and the watcher reads on from where it was: it waits until that expiry
   * (for `retainUnendedMs` at most, after a restart). The notice is the watcher's own, never stored
   * in the stream: it carries the last seq read (or resumed after) and `dropped: 0`, so it never
   * takes a seq the emitter may still use — and its seq is one the reader already has. A reader
   * that de-duplicates by seq keeps it: it skips an event whose seq is below the last it has, or
   * equal to it unless the event is a `notice` with `dropped: 0` (the README's rule).
   */
  private async whenGone(conn: RedisConnection): Promise<boolean> {
    const now = Date.now();
    if (this.missingSince > 0 && this.claimKey !== undefined) {
      // A claim on the id: a run of it is on its way (claimed, not yet written), or its emitter
      // lives and writes on (the claim is renewed with its stream): wait for it.
      if ((await call<number>(conn, ["EXISTS", this.claimKey])) !== 0) {
        this.goneChecks = 0;
        return false;
      }
    }
    if (this.goneChecks++ === 0) this.goneSince = now;
    if (this.server === undefined) await this.learnServer(conn);
    const sameServer = this.server !== undefined && this.server !== "?" && this.server === this.readOn;
    const over =
      this.missingSince > 0
        ? this.goneChecks >= 2 && now - this.missingSince >= this.startedGraceMs
        : sameServer
          ? this.goneChecks >= 2 && now >= this.expiresAt
          : now - this.goneSince >= this.host.settings().retainUnendedMs;
    if (!over || this.closed || this.ending) return false;
    // Missing since subscribe, the stream may have expired after the run's `done` as well as without
    // it (a reader resuming after all but the last events): the notice does not say which.
    const notice = {
      kind: "notice",
      text:
        this.missingSince > 0
          ? "The run's stream is gone from Redis (expired or removed) and whether it ended cannot be " +
            "told. This watcher ends here."
          : "The run's stream is gone from Redis (expired) without its `done`: its emitter stopped " +
            "without ending the run. This watcher ends here.",
      dropped: 0,
      seq: this.cursor,
    };
    this.push(notice as SequencedEvent<RunEvent>);
    this.end();
    return true;
  }

  /**
   * Reads the stream's top at subscribe time: up to it the replay is not trimmed. A reader resuming
   * exactly at that top (`after`, its Last-Event-ID) of a run that has not ended has read the run as
   * far as it goes: the watcher counts it as read here, on this server, with this emitter and this
   * expiry, as if it had read the top entry itself — so it can tell when the stream goes (and says
   * so, once) rather than wait for ever on the key of an emitter that died.
   */
  /**
   * {@link subscribe}, answering false after a failure that passes (the connection lost, a refusal
   * that passes), once the pause and the connection's return are over; a refusal for good throws.
   */
  private async subscribed(): Promise<boolean> {
    try {
      await this.subscribe();
      return true;
    } catch (error) {
      if (this.closed || this.ending) return false;
      if (refusedForGood(error)) throw error;
      if (this.host.readFailed) this.host.readFailed(error);
      else this.host.report(error);
      this.backoff = Math.min(Math.max(this.backoff * 2, 25), 1000);
      await new Promise((resolve) => setTimeout(resolve, this.backoff).unref());
      await whenReady(this.conn as RedisConnection);
      return false;
    }
  }

  private async subscribe(): Promise<void> {
    const conn = this.conn as RedisConnection;
    const connects = this.connects;
    // The first answer kept: a look asked again (the connection lost under it) comes later, and
    // would count more of what was emitted meanwhile as handed out before the watcher came.
    if (this.cursor > 0 && this.subscribedAt === undefined) {
      try {
        const asked = performance.now();
        const at = timeMicros(await call<[string, string]>(conn, ["TIME"]));
        if (Number.isSafeInteger(at)) {
          this.subscribedAt = at;
          this.subscribeAsked = asked;
          this.subscribedLocal = performance.now();
        }
      } catch (error) {
        // A server that will not run TIME (renamed away): late writes cannot be told, as before.
        if (!refusedForGood(error)) throw error;
      }
    }
    const top = (await call<Entry[]>(conn, ["XREVRANGE", this.key, "+", "-", "COUNT", "1"]))[0];
    this.replayEnd = top ? Number.parseInt(top[0], 10) : 0;
    // No stream, though the run existed (the reader read up to `after`, or the caller says it
    // started): it expired (or was dropped) before this watcher came. The idle wakeups look on, as
    // for a stream that goes while watched (see `whenGone`): it ends after one notice at `after`
    // unless a claim stands on the id or an entry comes meanwhile. With `after` 0 and no word that
    // the run started, it may be a run not started yet: the watcher waits for it.
    if (!top && (this.cursor > 0 || this.started)) this.missingSince = Date.now();
    if (this.cursor > 0 && this.replayEnd < this.cursor) {
      this.unplaced = true;
      this.placedTop = top;
    }
    if (!top || this.replayEnd !== this.cursor) return;
    if (fieldOf(top, "end") !== undefined || decode(top)?.kind === "done") return;
    // Not learnt (the connection failed meanwhile): the run counts as read on no known server, and
    // the watcher reads on as before; the first read retries the connection.
    if (this.server === undefined) await this.learnServer(conn).catch(() => {});
    // A token named by the reader's id stays: a top under another one is another run's.
    this.owner ??= ownerOf(top);
    await this.noteRead(conn, connects);
  }

  /** Entries were just read on this connection: the server they were read on, and the stream's expiry. */
  private async noteRead(conn: RedisConnection, connects: number): Promise<void> {
    this.goneChecks = 0;
    this.missingSince = 0;
    if (connects === this.connects && this.server !== undefined) this.readOn = this.server;
    // When the stream expires if the emitter writes nothing more (-1: never; -2: gone already).
    const pttl = await call<number>(conn, ["PTTL", this.key]).catch(() => undefined);
    if (pttl !== undefined) {
      this.expiresAt = pttl === -1 ? Number.POSITIVE_INFINITY : Date.now() + Math.max(0, pttl);
    }
  }

  /**
   * For an `unplaced` watcher: whether the stream now holds an entry at or below its position written
   * since it subscribed (above the stream's top then), and whose. `undefined`: none. `"resend"`: its
   * reader's run's own batch sent again after Redis lost it — the watcher now knows that run's
   * emitter and reads on from its position. `"afresh"`: a run started afresh under the id, which the
   * watcher ends on. Position alone cannot tell them apart (both write at or below it); the entry
   * itself mostly does. The run the reader read writes at or below its position only when it sends
   * again a batch whose first send got no answer (Redis applied it, the reader read it, and Redis lost
   * it), and such an entry is marked so (`r` "1"); a run started afresh writes there on a first send
   * (`r` "0") — or, when its own first write got no answer, marked "1" too. So:
   * - the stream held entries at subscribe: the entry is the reader's run's when it is marked as sent
   *   again and carries the emitter token (`o`) of the top entry seen then (a run started afresh, by
   *   another emitter or by the same one, writes under a token of its own), whether that top entry
   *   is still there or was lost with a later restart;
   * - the stream was missing at subscribe: the watcher knows no token. A bare position does not say
   *   which run the reader read (a page's Last-Event-ID may come from another instance, or from an
   *   earlier run of the id), and what other watchers of this process read does not say it either.
   *   A position given with a token (an event id `<seq>:<token>`) does: see the last case.
   *   So a stream whose first entry is `1-0` holds a new run, marked or not — a false end, with a
   *   notice, when it was the run's first batch sent again, rather than another run's events read
   *   as the reader's — and one that starts higher holds the run's batch sent again when marked so.
   * Entries without the mark come from an earlier version, which did not write it: for them, a
   * stream that held entries at subscribe holds a resend when its top entry seen then is unchanged
   * and the entry carries its token (a stream that held only a seq 1 then is taken for a new run's
   * start), and a stream that was missing holds a new run when its first entry is `1-0`.
   * - the reader's id named its run's token (`claimed`): the entry is the reader's run's when it is
   *   marked as sent again and carries that token, wherever the stream stood at subscribe. The token
   *   proves no more than that: a token of another run, or one made up, matches no entry of the run
   *   written since (each run writes under a random token of its own), so the watcher ends.
   * One more first send is the reader's run's: the write of an event the emitter handed out (an
   * `emit` answer, its copy) before this watcher subscribed, landing after — its reader may have had
   * it from there. Each entry records when its event was emitted, by Redis's clock (`t`, never
   * before the emit), and the watcher took Redis's clock before it looked at the stream
   * (`subscribedAt`): a first send emitted before that, carrying the token of the top seen then (or
   * that top a `done`, the run after it started afresh; or the stream missing) or the token the
   * reader's id named, is read on once it reaches the position (one below it is looked at again).
   * A new run started after the watcher came emits every entry later,
   * so it still ends the watcher; one started a moment before it subscribed, whose write in flight
   * then reaches the position, while the reader's position is an earlier run's, is read on as the
   * reader's (the entries cannot tell that instant apart).
   */
  private async belowPosition(conn: RedisConnection): Promise<"resend" | "afresh" | undefined> {
    const below = (await call<Entry[]>(conn, ["XREVRANGE", this.key, this.readFrom, "-", "COUNT", "1"]))[0];
    if (below === undefined || Number.parseInt(below[0], 10) <= this.replayEnd) return undefined;
    const placed = this.placedTop;
    const mark = fieldOf(below, "r");
    const claimed = this.claimed;
    // A first send of an event emitted before this watcher subscribed: its reader may have had it
    // from the emitter (an `emit` answer, its copy) before the write landed. A new run started after
    // the watcher came emits every entry later than that (`t` records the emit by Redis's clock,
    // never before it), so it is never taken for this.
    const t = fieldOf(below, "t");
    const emitted = t !== undefined && /^\d{1,16}$/.test(t) ? Number(t) : Number.NaN;
    const late =
      mark === "0" &&
      this.subscribedAt !== undefined &&
      Number.isFinite(emitted) &&
      emitted < this.subscribedAt &&
      emitted < ((await this.subscribedByNow(conn)) ?? Number.NEGATIVE_INFINITY);
    let resend: boolean;
    if (claimed !== undefined) {
      // The reader's id names its run's token: only that run's batch sent again, marked so, or its
      // write landing late, is read on — whatever the stream held at subscribe. Another token (a new
      // run, by another emitter or the same one) or a first send emitted after the watcher came ends it.
      resend = (mark === "1" || late) && ownerOf(below) === claimed;
    } else if (placed === undefined) {
      if (mark === "0") resend = late;
      else {
        const first = (await call<Entry[]>(conn, ["XRANGE", this.key, "-", "+", "COUNT", "1"]))[0];
        resend = first !== undefined && first[0] !== "1-0";
      }
    } else if (mark !== undefined) {
      // The run's own entry carries the token of the top seen at subscribe. A late write may also be
      // the first of a run started afresh after an ended one (a `done` on top, below the position):
      // its seq `after` was handed out before the watcher came, so that run is the reader's.
      const same = ownerOf(below) === ownerOf(placed);
      const ended = fieldOf(placed, "end") !== undefined || decode(placed)?.kind === "done";
      resend = (mark === "1" && same) || (late && (same || ended));
    } else {
      const now = (await call<Entry[]>(conn, ["XRANGE", this.key, placed[0], placed[0]]))[0];
      resend =
        this.replayEnd > 1 &&
        now !== undefined &&
        now[1].length === placed[1].length &&
        now[1].every((value, at) => value === placed[1][at]) &&
        ownerOf(below) === ownerOf(placed);
    }
    if (!resend) return "afresh";
    // A first send is read on (as a late write, above) only once it reaches the position: the reader
    // had the event at `after` from the emitter before this watcher came, so that entry was emitted
    // before then too. One below it may be a first part of that write (the rest lands next), or an
    // event in flight of a run that never reaches the position (a reader's position from an earlier,
    // longer run): taken for the reader's, the watcher waited past that run's `done` for seqs above
    // its position, with nothing read and no notice. Undecided, it looks again: the entry at the
    // position, or one emitted since, or the run's `done` below the position, tells.
    if (mark === "0" && Number.parseInt(below[0], 10) < this.cursor) {
      return fieldOf(below, "end") !== undefined || decode(below)?.kind === "done" ? "afresh" : undefined;
    }
    this.unplaced = false;
    this.owner = ownerOf(below);
    return "resend";
  }

  /**
   * When this watcher subscribed, by Redis's clock as it reads now (µs), for an entry stamped since
   * (its `t`): `subscribedAt`, or earlier where the clock now reads less than that plus the time
   * this process has seen pass since — the server's clock stepped back (a correction of its time), or
   * the connection reached another server whose clock runs behind the first's (a failover). An
   * entry written after such a step is stamped by the clock as it reads since: a new run's, started
   * after the watcher came, may read as emitted before `subscribedAt`, and was taken for its reader's
   * run's own write landing late (its events read on as that run's, no notice). Compared with this
   * instead, such an entry counts as emitted since, and ends the watcher with the notice; so does a
   * late write of the reader's run stamped before the step, up to the step's size and the two
   * `TIME` round trips before the subscribe (the safe side). Each clock may run up to a thousandth
   * off the other's pace without counting as a step. Undefined where Redis will not answer `TIME`
   * now (another server, which has it renamed away): no write can then be told to be late.
   *
   * Where the clock stepped, the subscribe is placed by the most time that can have passed since
   * (from the subscribe's `TIME` asked to this one answered), not the least (from that one
   * answering to this one asked): the least placed it later than it was by both round trips, this
   * one's whole wait on its way to Redis included (a loaded host, a slow link, a Redis busy with a
   * script), and a new run's entry emitted within that much of the subscribe counted as emitted
   * before it (r103c; r98b's test failed so under load).
   */
  private async subscribedByNow(conn: RedisConnection): Promise<number | undefined> {
    const at = this.subscribedAt;
    if (at === undefined) return undefined;
    const asked = performance.now();
    let now: number;
    try {
      now = timeMicros(await call<[string, string]>(conn, ["TIME"]));
    } catch (error) {
      if (!refusedForGood(error)) throw error;
      return undefined;
    }
    const answered = performance.now();
    if (!Number.isSafeInteger(now)) return undefined;
    // At least this long passed between the subscribe's TIME answering and this one being asked: a
    // clock that reads no less than `at` plus it has not stepped back, and `at` places the subscribe.
    const least = (asked - this.subscribedLocal) * 1000 * (1 - CLOCK_PACE_SLACK);
    if (now - least >= at) return at;
    // It stepped back: at most this long passed between the subscribe's TIME being asked and this
    // one answering, so the subscribe came no earlier than `now` less it, by the clock as it reads now.
    const most = (answered - this.subscribeAsked) * 1000 * (1 + CLOCK_PACE_SLACK);
    return Math.min(at, now - most);
  }

  private async readOnce(): Promise<void> {
    const conn = this.conn as RedisConnection;
    let reply: [string, Entry[]][] | null;
    const connects = this.connects;
    try {
      if (this.server === undefined) await this.learnServer(conn);
      reply = await call<[string, Entry[]][] | null>(conn, [
        "XREAD",
        "COUNT",
        String(BATCH),
        "BLOCK",
        String(BLOCK_MS),
        "STREAMS",
        this.key,
        this.readFrom,
      ]);
      // The first entries read by a watcher that does not know whose run the stream holds: a run
      // started afresh under the id has written at or below its position (see `unplaced`) and
      // these are that run's, not the continuation of the run its reader read — unless what is
      // there is that run's own batch sent again (`belowPosition` tells).
      if (this.unplaced && (reply?.[0]?.[1]?.length ?? 0) > 0) {
        if ((await this.belowPosition(conn)) === "afresh") {
          await this.endStartedAfresh();
          return;
        }
        this.unplaced = false;
      }
      // Nothing new for a while: the run read so far may have been started afresh below this
      // watcher's position (only a watcher that knows whose run it reads, or where the stream stood
      // when it subscribed, can tell), or its stream may be gone (only a watcher that has read some
      // of it, resumed at its top, or found it missing at subscribe though the run existed, can tell).
      if (
        reply === null &&
        (this.owner !== undefined || this.readOn !== undefined || this.missingSince > 0 || this.unplaced)
      ) {
        const top = (await call<Entry[]>(conn, ["XREVRANGE", this.key, "+", "-", "COUNT", "1"]))[0];
        const owner = top && ownerOf(top);
        // Another emitter's entry on top: the run was started afresh. But a watcher that has read
        // no entry yet knows no emitter, and an entry above its position may be the run's own next
        // write, made between the empty XREAD and this look: the next XREAD reads it (and checks
        // it, above). Only an entry at or below its position, which no XREAD of it will reach,
        // tells — and, for a watcher that subscribed to a stream below its position, only one above
        // that stream's top then which `belowPosition` finds a new run's: the entries it held may be
        // the run's own, restored by a restart, and one written since may be the run's own batch
        // sent again after Redis lost it.
        if (
          top &&
          owner !== undefined &&
          owner !== this.owner &&
          (this.owner !== undefined ||
            (!idAbove(top[0], this.readFrom) &&
              (!this.unplaced || (await this.belowPosition(conn)) === "afresh")))
        ) {
          await this.endStartedAfresh();
          return;
        }
        if (
          !top &&
          (this.readOn !== undefined || this.missingSince > 0) &&
          (await call<number>(conn, ["EXISTS", this.key])) === 0
        ) {
          if (await this.whenGone(conn)) return;
        } else this.goneChecks = 0;
      }
    } catch (error) {
      if (this.closed || this.ending) return;
      // Redis answered that this key cannot be read as a stream (it holds another type now): reading
      // again cannot change that, so the watcher ends and says why (in `run`).
      if (refusedForGood(error)) throw error;
      // The server went away (or restarted), or answered with a refusal that passes (loading, busy):
      // read on from the same seq once it is back, after a pause that grows while it lasts.
      if (this.host.readFailed) this.host.readFailed(error);
      else this.host.report(error);
      this.backoff = Math.min(Math.max(this.backoff * 2, 25), 1000);
      await new Promise((resolve) => setTimeout(resolve, this.backoff).unref());
      await whenReady(conn);
      return;
    }
    if (this.backoff > 0) this.host.readOk?.();
    this.backoff = 0;
    const entries = reply?.[0]?.[1] ?? [];
    if (entries.length > 0) {
      this.host.readKey?.(this.key);
      await this.noteRead(conn, connects);
    }
    for (const entry of entries) {
      const owner = ownerOf(entry);
      if (owner !== undefined) {
        if (this.owner !== undefined && owner !== this.owner) {
          await this.endStartedAfresh();
          return;
        }
        this.owner = owner;
      }
      this.readFrom = entry[0];
      const event = decode(entry);
      if (!event || event.seq <= this.cursor) continue;
      if (event.seq > this.cursor + 1) {
        const dropped = event.seq - this.cursor - 1;
        this.push(gapNotice(dropped, event.seq - 1, "could not read part of the run from Redis"));
      }
      this.cursor = event.seq;
      this.push(event, owner);
      if (event.kind === "done") {
        this.ending = true;
        return;
      }
    }
  }
}
