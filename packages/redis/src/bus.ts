import { createHash, randomBytes } from "node:crypto";
import {
  checkSignal,
  DEFAULT_EVENTS_SETTINGS,
  type EventBus,
  EventsError,
  type EventsSettings,
  mergeSettings,
  type RunEvent,
  type SequencedEvent,
  type SignalLike,
  withSeq,
} from "@loopwright/events";
import { ErrorReply, TimeoutError } from "@redis/client";
import {
  call,
  connectStore,
  mayHaveRun,
  type RedisConnection,
  type RedisOptions,
  refusedForGood,
  resolveOptions,
  shownMs,
  shownUrl,
  shut,
  timeMicros,
  timeoutOption,
  unanswered,
  whenReady,
  within,
} from "./connection.js";
import { RedisStoreError } from "./errors.js";
import { readEventId } from "./event-id.js";
import { onAbort } from "./on-abort.js";
import { MAX_OWED, Owed } from "./owed.js";
import { protoless } from "./protoless.js";
import {
  decode,
  ownerOf,
  type RedisEventStream,
  StreamWatcher,
  type StreamWatcherHost,
} from "./stream-watcher.js";
import { kindOf, storeFailure, teller } from "./tell.js";
import { afterClose } from "./tenant-keys.js";

/** Options for {@link createRedisBus}: where Redis is, and the bus's own limits. */
export interface RedisBusOptions extends RedisOptions {
  /** Laid over `DEFAULT_EVENTS_SETTINGS` the way `configure` lays changes over the current set. */
  settings?: Partial<EventsSettings> | undefined;
  /**
   * How many emitted events not yet sent may wait for Redis while it is away, refusing writes for now
   * (out of memory, loading), or silent (a write unanswered past `writeTimeoutMs`), before the oldest
   * of them are dropped (watchers then see one gap notice for them). A batch already sent and not yet
   * answered (up to 512 events, the oldest waiting) is kept besides: Redis stores it when it answers,
   * and it is sent again if the connection fails instead, so `pending` can stand up to 512 above this.
   * A burst while Redis takes writes is not cut: it waits for the flush, whole. Default 10 000.
   */
  maxPending?: number | undefined;
  /**
   * Each run's stream is trimmed (`XADD MAXLEN ~`) to about this many entries. Default 100 000. A
   * whole number past `Number.MAX_SAFE_INTEGER` (a "no limit" such as `Number.MAX_VALUE`) is held to it.
   */
  maxStreamLength?: number | undefined;
  /**
   * How long, in ms, a write may go unanswered before it counts as failed: past it, what waits unsent
   * is held to `maxPending` (the oldest dropped) and `onError` is told, as when Redis is away. The write
   * itself stays on the wire and is not sent twice; its answer, when Redis wakes, is taken as usual, and
   * its events are kept until then (they are not among those dropped).
   * For a Redis that keeps the connection open and answers nothing (stopped, cut off by the network).
   * Counted from the first turn of the event loop after the write was handed to the client (which
   * writes it to the socket then), and given a tenth of a second more with the process free to read
   * the answer: an emitter busy right after a write, or past the bound, is not taken for a silent
   * Redis. Default 5000.
   */
  writeTimeoutMs?: number | undefined;
}

/** Where a {@link RedisEventBus} watcher starts reading. */
export interface RedisWatchOptions {
  /**
   * Read the events after this seq (0, the default, reads the run from its start). An `after` above
   * 0 says the reader has read the run up to it, so the run existed: if its stream is gone already
   * when the watcher subscribes (expired; or lost to a restart or an eviction, which the next write
   * of a live run undoes) and stays gone, with no claim on the id, for `startedGraceMs` (default a
   * minute), the watcher ends after one `notice` (`dropped: 0`, at seq `after`) saying the stream is
   * gone and that whether the run ended cannot be told.
   *
   * Or an event id a watcher handed out (`idOf`: `<seq>:<token>`, a page's Last-Event-ID): the
   * same seq, and the token of the emitter whose run the reader read. With it, a watcher that finds
   * the stream missing at subscribe reads on through its run's batch sent again from seq 1 after
   * Redis lost it (the entries carry that token and the resend mark), and ends with the "started
   * afresh" notice on a new run (another token). A bare seq, as a number or a string, keeps the
   * rule without a token (see the README's "Event ids"). Anything else throws `EventsError`
   * (`invalid-event`).
   */
  after?: number | string | undefined;
  /**
   * The caller knows the run was started though its reader read none of it (`after` 0: a page
   * loading a run its shared record names). Then a stream missing at subscribe, with no claim on
   * the id, is a run that is gone, told as for `after` above 0, at seq 0. Without it, a missing
   * stream at `after` 0 is a run not started yet, and the watcher waits for it however long.
   */
  started?: boolean | undefined;
  /**
   * With `started`, or `after` above 0: how long, in ms, a stream missing at subscribe must stay
   * missing with no claim before the watcher says the run is gone — for a run recorded before its
   * first write, which may be slow to come, and for a live run whose stream was lost to a Redis
   * restart without persistence or an eviction (it comes back with the run's next write). Default
   * 60 000 (`DEFAULT_MISSING_GRACE_MS`); at least two idle wakeups in a row (about two seconds).
   */
  startedGraceMs?: number | undefined;
}

/**
 * An `EventBus` whose runs live in Redis Streams, so a run emitted on one instance is watched from any other.
 *
 * One stream per run, entry id `<seq>-0`. `emit` stays synchronous: it numbers and
 * queues the event, and an ordered, pipelined flush writes the queue to Redis soon after. It
 * serializes the event first: one JSON cannot write (a `BigInt`, a cycle), or whose `toJSON` writes
 * anything but an object with its `seq` and a string `kind`, throws `EventsError` (`invalid-event`)
 * to its emitter and never reaches the queue.
 */
export interface RedisEventBus extends EventBus {
  /**
   * Claims run id `runId` for the next run this instance emits under it, across every process on
   * this Redis (and prefix), in one script: refused when the run's stream holds another emitter's
   * run that has not ended (no `done`), or another instance has claimed the id and its run has not
   * ended yet. Otherwise the claim (this instance's mark for the run, the one its events carry) is
   * stored with the run's retention (`retainUnendedMs`, capped at {@link MAX_CLAIM_MS}, 24 h) as its
   * expiry, renewed by every write of the run, so the claim of a host that died lapses then; the
   * run's `done`, or `endRun` on any instance, lets go of it sooner. An id whose run
   * ended (its `done` stored) is free to claim, and the new run starts it afresh, as without a claim.
   * The loop's `runAgentLoop({ runId })` calls it before sending anything.
   *
   * Rejects with `EventsError` (`invalid-run-id`, naming the id) when the id is taken, or for a bad
   * id or signal; with `RedisStoreError` (`connect`) when Redis is away (the claim waits for the
   * connection to come back) or does not answer, for `connectTimeoutMs`; (`closed`) after `close()`,
   * or at once when `close()` comes while it waits; with the client's error for a reply that is
   * one; with `signal`'s reason when it aborts first. A run id cannot be claimed without Redis, so a
   * loop run given one does not start while Redis is away. Emitting into a run without claiming it
   * works as before.
   */
  claimRun(runId: string, signal?: SignalLike): Promise<void>;
  /**
   * The run's events from Redis — replay, then live (`XREAD BLOCK`) — until its `done`, an
   * `endRun` on any instance, `return()` or `signal`, or, after one `notice`, its stream gone from
   * Redis (expired) once this watcher has read some of it or resumed at its top (`after` its last
   * event): that notice has `dropped: 0` and the last seq read (see the README's "De-duplicating by seq"). `options.after` starts after a given seq, so
   * a reconnecting reader reads on exactly where it stopped; `idOf(event)` gives the id to resume
   * from. Never throws after the call (a bad `runId` or `after` throws `EventsError`); a lost
   * connection is waited out and read past.
   */
  watch(runId: string, signal?: SignalLike, options?: RedisWatchOptions): RedisEventStream;
  /**
   * The run is over, on any instance: drops this instance's copy, ends its watchers everywhere, and
   * deletes its stream and its claim from Redis whoever holds them — so a host restarted after a
   * crash frees the id its dead run held (and may run it again) with `endRun(id)`. Owed while Redis
   * is away, sent before any later event.
   */
  endRun(runId: string): void;
  /**
   * Drops run `runId` as this instance ran it (the loop's runtime calls it for a run it saw end
   * before it starts the id again): this instance's copy, and in Redis its stream and its claim only
   * while they are this instance's — another host's run or claim under the id stays, and its
   * watchers read on. Owed while Redis is away, like `endRun`.
   */
  releaseRun(runId: string): void;
  /**
   * What this instance emitted into run `runId` and still holds (the in-memory bus's `history`,
   * kept for the same retention, and like the stream no more than about `maxStreamLength` of a
   * run's latest events). A run emitted elsewhere reads through `readHistory`.
   */
  history(runId: string): SequencedEvent[];
  /**
   * The run's events after seq `after` (default 0) as Redis holds them now, from any instance. An
   * entry this package did not write (not JSON, no `kind`, a `seq` not its entry id's) is skipped, as a watcher skips
   * it; the seqs show the gap. Never throws for what another process wrote into the stream; rejects
   * with `EventsError` (`invalid-event`) for an `after` that is not a whole number from 0, with
   * Redis's own refusal (a key of another type, an ACL), and with `RedisStoreError` (`connect`) when
   * Redis stayed away, or did not answer, for `connectTimeoutMs` (a connection away or lost under the
   * read is waited for, and the read asked again, within that time); `RedisStoreError` (`closed`)
   * after `close()`, or when `close()` comes while it waits.
   */
  readHistory(runId: string, after?: number): Promise<SequencedEvent[]>;
  /** Resolves once every event emitted so far is written to Redis (or was dropped; see `onError`). */
  flushed(): Promise<void>;
  /** How many emitted events are still waiting to be written: those not yet sent, and a batch sent and not yet answered. */
  readonly pending: number;
  /**
   * Ends this instance's watchers, writes what is pending if Redis is there, and closes every
   * connection. Emitting afterwards throws `RedisStoreError` (`closed`).
   */
  close(): Promise<void>;
}

interface LocalRun {
  seq: number;
  /** This emitter's mark on the run's stream entries: a new one for each run started here. */
  token: string;
  events: SequencedEvent[];
  ended: boolean;
  touched: number;
  /**
   * `claimRun` was granted for it: while the run has not ended, the claim is asked for again after a
   * reconnect that reaches another server (see `reclaim`), since a Redis restarted without
   * persistence (or failed over to a replica that had not got it) lost it, and another host's claim
   * would have been granted on the id this one runs.
   */
  claimed?: boolean;
  /** `onError` was told that another emitter holds the run: not again for each event. */
  foreignTold?: boolean;
}

interface Pending {
  runId: string;
  /** The token of the local run the event was emitted into. */
  token: string;
  event: SequencedEvent;
  /** The event as written to the stream, serialized when it was emitted. */
  json: string;
  /**
   * Sent before in a call that got no answer (the connection went): Redis may have written it, and
   * lost it since with a restart or a failover. Sent again, its entry is marked so (`r` "1"): a
   * watcher resuming past it tells the run's own batch sent again from a new run's entries by it.
   */
  unanswered: boolean;
  /** Its place among every event queued by this bus (from 0): which were queued before a run was dropped. */
  order: number;
  /**
   * When it was emitted (`performance.now()`): each write sends how long ago, and the append script
   * records when that was by Redis's clock (`t`), so a watcher can tell a late write of an event
   * handed out before it subscribed from a new run's (see the watcher's `belowPosition`).
   */
  emittedAt: number;
}

const FLUSH_BATCH = 512;

/** How many runs ended by a failure (`WRONGTYPE`) the bus remembers having told, so as not to tell them again. */
const MAX_ENDED_RUNS = 1024;

/** How long a write may go unanswered before it counts as failed, by default (`writeTimeoutMs`). */
const DEFAULT_WRITE_TIMEOUT_MS = 5000;
/** How many `TIME` round trips the bus asks when it learns Redis's clock; it keeps the tightest. */
const CLOCK_SAMPLES = 3;
/**
 * How old a learnt lead on Redis's clock may be for a run's first write (seq 1): one older is learnt
 * again first. A clock stepped forward within it, just before a run starts, still stamps that run's
 * first entries up to the step early.
 */
const FRESH_LEAD_MS = 1000;

/**
 * The longest a run id's claim (`claimRun`) lives without a write of its run: the run's
 * `retainUnendedMs`, but never more than 24 hours. Every write of the run renews it. So a host that
 * died after claiming an id and before writing to it holds the id a day at most, even when runs are
 * kept "for ever"; one that died part-way through its run holds it through the run's unended stream,
 * which lives `retainUnendedMs` past its last event (for ever, under a retention kept "for ever"),
 * until that expires or `endRun(id)` on any instance ends the run.
 */
export const MAX_CLAIM_MS = 24 * 60 * 60 * 1000;

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return value === "" ? "an empty string" : "a string";
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}

function checkRunId(runId: unknown, where: string): asserts runId is string {
  if (typeof runId !== "string" || runId === "") {
    throw new EventsError(
      "invalid-run-id",
      `${where} needs a run id as a non-empty string, and was given ${describe(runId)}.`,
    );
  }
  // Keys and channel messages go to Redis as UTF-8, where every unpaired surrogate becomes U+FFFD:
  // "x\uD800" and "x\uDC00" would be one stream, each run reading the other's events.
  if (/\p{Cs}/u.test(runId)) {
    throw new EventsError(
      "invalid-run-id",
      `${where} needs a run id Redis can tell apart from others; this one holds an unpaired UTF-16 surrogate, ` +
        "which Redis would store as U+FFFD, the same as any other. Use well-formed text (a UUID, say).",
    );
  }
}

function checkEvent(event: unknown): asserts event is RunEvent {
  if (
    typeof event !== "object" ||
    event === null ||
    Array.isArray(event) ||
    typeof (event as { kind?: unknown }).kind !== "string"
  ) {
    throw new EventsError(
      "invalid-event",
      `emit needs an event object with a string \`kind\`, and was given ${describe(event)}.`,
    );
  }
}

/**
 * `json` (an event as written) read back with every object and array in it frozen: what `history`
 * holds and `emit` returns, so a reader writing what it was handed (a display rewriting `text`) does
 * not change it for the next, and the emitter reusing its own objects (a `usage` it fills again each
 * turn) does not change what was emitted — as the in-memory bus stores a frozen copy. A parsed text
 * is a tree (no cycle, nothing shared): one pass with a list of its own, so deep nesting cannot
 * overflow the stack.
 */
export function frozenFrom(json: string): SequencedEvent {
  const event = JSON.parse(json) as SequencedEvent;
  const pending: object[] = [event];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    for (const value of Object.values(next)) {
      if (typeof value === "object" && value !== null) pending.push(value);
    }
    Object.freeze(next);
  }
  return event;
}

/** What {@link plainFrozen} answers for a value JSON would not write as it is. */
const NOT_PLAIN = Symbol("not plain");
/** What it answers for a value JSON leaves out of an object (and writes as `null` in an array). */
const LEFT_OUT = Symbol("left out");
/** How deep {@link plainFrozen} copies: deeper (or a cycle), the event takes {@link frozenFrom}'s way. */
const MAX_PLAIN_DEPTH = 64;

/**
 * `event` copied as JSON writes it, each object and array frozen: the same tree as `frozenFrom` of
 * `JSON.stringify(event)` gives — a number that is not finite as `null`, `-0` as `0`, a property
 * whose value is `undefined`, a function or a symbol left out (`null` in an array, as a hole is) —
 * without writing the text and reading it back (a parse per event cost up to a third of an `emit`).
 * `undefined` when the event is not plain data, which that way alone copies faithfully: a `toJSON`
 * anywhere, an object of a class (a `Date`, a boxed string), a `BigInt`, nesting past
 * {@link MAX_PLAIN_DEPTH} (or a cycle). Each getter is read once; the text written is then made
 * from the copy, so it is what the copy holds.
 */
export function plainFrozen(event: object): SequencedEvent | undefined {
  const copy = plainValue(event, 0);
  return typeof copy === "object" && copy !== null ? (copy as SequencedEvent) : undefined;
}

function plainValue(value: unknown, depth: number): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : null;
    case "undefined":
    case "function":
    case "symbol":
      return LEFT_OUT;
    case "bigint":
      return NOT_PLAIN;
  }
  if (value === null) return null;
  const object = value as Record<string, unknown>;
  if (depth >= MAX_PLAIN_DEPTH || typeof object.toJSON === "function") return NOT_PLAIN;
  if (Array.isArray(object)) {
    const out: unknown[] = new Array(object.length);
    for (let i = 0; i < object.length; i++) {
      const item = plainValue(object[i], depth + 1);
      if (item === NOT_PLAIN) return NOT_PLAIN;
      out[i] = item === LEFT_OUT ? null : item;
    }
    return Object.freeze(out);
  }
  const proto = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) return NOT_PLAIN;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(object)) {
    const item = plainValue(object[key], depth + 1);
    if (item === NOT_PLAIN) return NOT_PLAIN;
    if (item === LEFT_OUT) continue;
    // As JSON.parse makes it: an own property, never the copy's prototype.
    if (key === "__proto__") {
      Object.defineProperty(
        out,
        key,
        protoless({ value: item, enumerable: true, writable: true, configurable: true }),
      );
    } else out[key] = item;
  }
  return Object.freeze(out);
}

/**
 * Throws when `json` — what `JSON.stringify` made of an event with a `toJSON` — is not that event as
 * a reader takes it: an object with its `seq` and a string `kind`.
 */
function writtenAs(stored: SequencedEvent, json: string | undefined): asserts json is string {
  const read: unknown = typeof json === "string" ? JSON.parse(json) : undefined;
  const fits =
    typeof read === "object" &&
    read !== null &&
    (read as { seq?: unknown }).seq === stored.seq &&
    typeof (read as { kind?: unknown }).kind === "string";
  if (!fits) {
    throw new Error(
      `its toJSON made ${json === undefined ? "nothing (undefined)" : "text that is not the event"}: ` +
        "what is written must keep a string `kind` and the event's `seq`",
    );
  }
}

/** Checks a seq to read after: a string would be concatenated into the stream id ("5" + 1 is "51"). */
function checkAfter(after: unknown, where: string): asserts after is number {
  if (!Number.isSafeInteger(after) || (after as number) < 0) {
    throw new EventsError(
      "invalid-event",
      `${where}: \`after\` must be a seq (a whole number, 0 or more), and was given ${describe(after)}.`,
    );
  }
}

function positive(value: unknown, name: string, fallback: number, where: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    throw new RedisStoreError(
      "invalid-option",
      `${where}: \`${name}\` must be a positive whole number (leave it out for the default, ${fallback}), and was given ${
        typeof value === "number" ? String(value) : value === null ? "null" : `a ${typeof value}`
      }.`,
    );
  }
  // Held to a whole number Redis reads as one: past 2^53 it is written "1e+21" (or a length Redis
  // cannot hold), and `XADD MAXLEN` refused every event of every run (a host's "no limit",
  // Number.MAX_VALUE).
  return Math.min(value, Number.MAX_SAFE_INTEGER);
}

/** The bus's own limits as checked. */
export interface BusLimits {
  maxPending: number;
  maxStreamLength: number;
  writeTimeoutMs: number;
}

/**
 * Checks the bus's own options (`maxPending`, `maxStreamLength`, `writeTimeoutMs`), throwing
 * `RedisStoreError` (`invalid-option`) naming `where`, the function the host called.
 */
export function busLimits(options: RedisBusOptions, where: string): BusLimits {
  return {
    maxPending: positive(options.maxPending, "maxPending", 10_000, where),
    maxStreamLength: positive(options.maxStreamLength, "maxStreamLength", 100_000, where),
    writeTimeoutMs: timeoutOption(options.writeTimeoutMs, "writeTimeoutMs", where, DEFAULT_WRITE_TIMEOUT_MS),
  };
}

/** A span of time in words, rounded up: "400 ms", "45 s", "12 min", "6 h", "3.5 h", "12 days". */
function shownSpan(ms: number): string {
  if (ms < 1000) return `${Math.ceil(ms)} ms`;
  if (ms < 60_000) return `${Math.ceil(ms / 1000)} s`;
  if (ms < 3_600_000) return `${Math.ceil(ms / 60_000)} min`;
  if (ms < 48 * 3_600_000) return `${Math.ceil(ms / 360_000) / 10} h`;
  return `${Math.ceil(ms / 86_400_000)} days`;
}

/** Past this an expiry is "never" in words: a thousand years. */
const NEVER_MS = 1000 * 365 * 86_400_000;

/**
 * How an unended stream under a refused id frees it by itself: it expires `retainUnendedMs` (of its
 * emitter) after the run's last event — `pttl` (the stream's `PTTL`; -1 for none) from now if that
 * run writes nothing more — or, kept "for ever", never: then only its `done` or `endRun` frees it.
 * A lapsed claim frees nothing while the stream is there.
 */
function freedByExpiry(pttl: number, retainUnendedMs: number): string {
  const here =
    Number.isFinite(retainUnendedMs) && retainUnendedMs < NEVER_MS ? shownSpan(retainUnendedMs) : "for ever";
  if (!Number.isFinite(pttl) || pttl === -1 || pttl >= NEVER_MS) {
    return (
      "and by nothing else: its stream is kept for ever (its emitter's retainUnendedMs) and never expires, so for a " +
      `host that died use endRun(id) (retainUnendedMs on this instance: ${here}).`
    );
  }
  return (
    `or by its stream expiring retainUnendedMs after that run's last event: in ${shownSpan(Math.max(0, pttl))} if it ` +
    `writes nothing more (retainUnendedMs on this instance: ${here}). A lapsed claim does not free it while the stream is there.`
  );
}

/** A run id as a message shows it: quoted, and cut past 200 characters. */
function shownRun(runId: string): string {
  return JSON.stringify(runId.length > 200 ? `${runId.slice(0, 200)}…` : runId);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Lua: `latest(stream)` reads a run's stream's last entry alone and answers it (nil when the stream
 * is empty or gone), its emitter's token (`o`; false for an entry from an earlier version, which has
 * none) and whether its run ended there (`end`; for an entry without a token, its JSON is a `done`).
 * The append and the claim both decide on it.
 */
const LATEST_ENTRY_LUA = `
local function latest(stream)
  local top = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)[1]
  local owner, ended, json = false, false, false
  if top then
    local fields = top[2]
    for i = 1, #fields - 1, 2 do
      if fields[i] == 'o' then owner = fields[i + 1]
      elseif fields[i] == 'end' then ended = true
      elseif fields[i] == 'e' then json = fields[i + 1] end
    end
    if not owner and json then
      local ok, event = pcall(cjson.decode, json)
      ended = ok and type(event) == 'table' and event.kind == 'done'
    end
  end
  return top, owner, ended
end
`;

/**
 * Appends a run's events (KEYS: the run's stream, its claim; ARGV: max length, expiry in ms, the
 * emitter's token, the claim's expiry in ms, the latest Redis's clock can read at the send by the
 * emitter's bound (µs; "" when it has none), then per event its id, JSON, "1" for a `done` or "0",
 * "1" if it was sent before in a call that got no answer or "0", and how long before the send it
 * was emitted, in µs)
 * and renews the stream's expiry, and the claim's when it is this emitter's, in one call. Writing
 * the run's `done` also lets go of its claim (`claimRun`), when the claim is this emitter's. Answers per event:
 * 1 written; 0 its id is not above the stream's top (already written by an earlier try whose reply
 * was lost, or by another emitter); -1 the stream's latest entry is another emitter's and its run has
 * not ended. Each entry carries its emitter's token (`o`) and a `done` is marked (`end`), so the
 * script reads the stream's last entry alone to tell whose run it holds and whether that run ended.
 * Each entry also says whether it is sent again after a call that got no answer (`r`: "1", else
 * "0"), so a watcher resuming past the stream's top can tell its run's own batch, written again
 * after Redis lost it, from a new run's entries (see the watcher's `belowPosition`), and when its
 * event was emitted, by Redis's clock, in µs (`t`: the send by Redis's clock — its `TIME` as the
 * script runs, or the emitter's bound when lower — less the age the emitter sent; at or after the
 * emit, never before it), so that watcher can tell the run's write
 * of an event handed out before it subscribed, landing after, from a new run's written since (left
 * out when the script cannot read `TIME`).
 *
 * A run started afresh under the id of one that ended in another process (its first batch starts at
 * seq 1, the stream's last entry is a `done` not written by this emitter) deletes the old stream
 * first: it is one script, so of two processes starting the same id at once only the first resets;
 * the second finds the first's run, unended, and is refused. An entry without a token (written by
 * an earlier version) whose JSON is a `done` counts as ended. The new run's first entry carries the
 * old run's last seq (`p`) and emitter (`po`), so a watcher left part-way through the old run can say
 * how much of it was gone.
 *
 * Retention is the key's expiry, renewed by every write: an unended run lives `retainUnendedMs`
 * past its last event, an ended one `retainEndedMs` past its `done`.
 */
const APPEND_SCRIPT = `${LATEST_ENTRY_LUA}
-- Writes after TIME: replicated as effects (the default from Redis 5; asked for on older servers).
if redis.replicate_commands then pcall(redis.replicate_commands) end
local clockOk, clock = pcall(redis.call, 'TIME')
local now = clockOk and type(clock) == 'table' and tonumber(clock[1]) * 1000000 + tonumber(clock[2]) or nil
-- The send, by Redis's clock: no later than now, nor than the emitter's bound (ARGV[5]) when it has one.
if now and ARGV[5] ~= '' then now = math.min(now, tonumber(ARGV[5])) end
local token = ARGV[3]
-- This emitter's claim lives on while its run writes: renewed with every write.
if redis.call('GET', KEYS[2]) == token then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
local top, owner, ended = latest(KEYS[1])
-- The new run's first entry names the old run's last seq and emitter, for its late watchers.
local reset = false
if ended and owner ~= token and ARGV[6] == '1-0' then
  reset = {'p', string.match(top[1], '^%d+')}
  if owner then reset[3], reset[4] = 'po', owner end
  redis.call('DEL', KEYS[1])
  top, owner = nil, false
end
local topSeq = top and tonumber(string.match(top[1], '^%d+')) or 0
local foreign = owner and owner ~= token
local written = {}
for i = 6, #ARGV, 5 do
  if foreign and tonumber(string.match(ARGV[i], '^%d+')) > topSeq then
    written[#written + 1] = -1
  else
    local command = {'XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], ARGV[i], 'e', ARGV[i + 1], 'o', token, 'r', ARGV[i + 3]}
    if now then
      command[#command + 1], command[#command + 2] = 't', string.format('%.0f', now - tonumber(ARGV[i + 4]))
    end
    if ARGV[i + 2] == '1' then
      command[#command + 1], command[#command + 2] = 'end', '1'
      if redis.call('GET', KEYS[2]) == token then redis.call('DEL', KEYS[2]) end
    end
    if reset and i == 6 then
      for _, value in ipairs(reset) do command[#command + 1] = value end
    end
    local reply = redis.pcall(unpack(command))
    if type(reply) == 'table' and reply.err then
      if string.find(reply.err, 'equal or smaller', 1, true) then
        written[#written + 1] = 0
      else
        return redis.error_reply(reply.err)
      end
    else
      written[#written + 1] = 1
    end
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return written
`;

const APPEND_SHA = createHash("sha1").update(APPEND_SCRIPT).digest("hex");

/**
 * Claims a run id for one emitter (KEYS: the run's stream, its claim; ARGV: the emitter's token,
 * the claim's expiry in ms). Refused (answers "run:" and the stream's `PTTL`) when the stream's latest entry is another
 * emitter's and its run has not ended (that entry is not a `done`; one without a token, from an
 * earlier version, counts as another emitter's), or (answers "claim") when the claim key holds another emitter's token and that
 * emitter's run has not ended in the stream: claimed and not yet written, or still running. Else it
 * records this emitter's token as the claim, expiring with the run's retention capped at
 * {@link MAX_CLAIM_MS} and renewed by each write of the run (a host that dies holding it frees the
 * id then), and answers "ok". The run's `done` (APPEND_SCRIPT) or an `endRun` lets go of the claim sooner.
 */
const CLAIM_SCRIPT = `${LATEST_ENTRY_LUA}
local token = ARGV[1]
local top, owner, ended = latest(KEYS[1])
if top and not ended and owner ~= token then return 'run:' .. redis.call('PTTL', KEYS[1]) end
local held = redis.call('GET', KEYS[2])
if held and held ~= token and not (top and ended and owner == held) then return 'claim' end
redis.call('SET', KEYS[2], token, 'PX', ARGV[2])
return 'ok'
`;

const CLAIM_SHA = createHash("sha1").update(CLAIM_SCRIPT).digest("hex");

/**
 * Drops a run from Redis (KEYS: its stream, its claim; ARGV: "all" or "own", then the tokens this
 * instance ran it under). "all" (`endRun`: this run is over, on any instance) deletes the stream and
 * the claim, whoever holds them, so an id a dead host held is free at once. "own" (`releaseRun`)
 * deletes the stream only when its latest entry is one of those tokens', and the claim only when it
 * holds one of them: another emitter's run or claim on the id stays. Answers 1 when it deleted the
 * stream ("all": always), 0 when it left it or found none — so a release that found no stream (it
 * expired, was evicted, or another host's claim stands on the id with nothing written yet) announces
 * nothing, and the watchers of whatever run comes under the id read on.
 */
const END_SCRIPT = `
local mine = {}
for i = 2, #ARGV do mine[ARGV[i]] = true end
if ARGV[1] == 'all' then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end
local held = redis.call('GET', KEYS[2])
if held and mine[held] then redis.call('DEL', KEYS[2]) end
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if not top then return 0 end
local fields = top[2]
for i = 1, #fields - 1, 2 do
  if fields[i] == 'o' and mine[fields[i + 1]] then
    redis.call('DEL', KEYS[1])
    return 1
  end
end
return 0
`;

const END_SHA = createHash("sha1").update(END_SCRIPT).digest("hex");

/** Lets go of a claim (KEYS: the claim; ARGV: the mark) when it is still that mark's. */
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`;

const RELEASE_SHA = createHash("sha1").update(RELEASE_SCRIPT).digest("hex");

/** A run ended or released here, owed to Redis until its stream is deleted and every instance told. */
interface EndOwed {
  runId: string;
  /** Every token the id was run under here: each claim of them is let go. */
  tokens: string[];
  /** `endRun` (the run is over, whoever holds it); else `releaseRun`. */
  all: boolean;
  /** The watchers here when a release was asked for: ended once it deleted the stream. */
  watching: Set<StreamWatcher>;
}

/** Runs a script by its digest, sending its text once when the server does not hold it (NOSCRIPT). */
function evalScript<T>(writer: RedisConnection, sha: string, script: string, keyed: string[]): Promise<T> {
  return call<T>(writer, ["EVALSHA", sha, ...keyed]).catch((error: unknown) =>
    error instanceof Error && error.message.startsWith("NOSCRIPT")
      ? call<T>(writer, ["EVAL", script, ...keyed])
      : Promise.reject(error),
  );
}

/** `work`, or the signal's reason once `signal` aborts first. */
function untilAborted<T>(work: Promise<T>, signal: SignalLike | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject((signal as { reason?: unknown }).reason);
  let stop: () => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    stop = onAbort(signal, () => reject((signal as { reason?: unknown }).reason));
  });
  return Promise.race([work, aborted]).finally(() => stop());
}

/**
 * Makes an event bus on Redis Streams and connects it; resolves once it is ready to emit.
 *
 * It holds a writer and a subscriber connection, and each watcher opens one more, because
 * `XREAD BLOCK` holds the connection it runs on.
 *
 * Delivery: events of one run reach Redis in `seq` order (a run's events of a batch go in one
 * script call, so a refusal for now or an emptied script cache never lets a later seq in before an
 * earlier one) and are written at most once each, and one that cannot be written is reported; a
 * watcher reads each stored event exactly once, in order, across reconnects. While Redis is away,
 * emitted events wait (up to `maxPending`) and are written when it is back; events Redis lost (a
 * restart without persistence, trimming) show up to watchers as one gap notice. One instance emits
 * into a run: its seq counter lives in that process, and another emitter's writes into a run that has
 * not ended are refused (through `onError`); `claimRun` asks for a run id before the first event,
 * so a host finds out, as a rejection, that another host is running under it. A run started under the id of one that ended in another
 * process starts afresh: its first write clears the old stream, atomically, so of two processes
 * starting it at once only one does.
 *
 * Throws `RedisStoreError` (`invalid-option`, `connect`) when the options are wrong or Redis cannot
 * be reached at first, or does not answer within `connectTimeoutMs`; never throws from `emit` for a
 * Redis failure. A Redis that stops answering later counts as away once a write has gone unanswered
 * for `writeTimeoutMs`.
 */
export function createRedisBus(options: RedisBusOptions): Promise<RedisEventBus> {
  return openBus(options, "createRedisBus");
}

/**
 * {@link createRedisBus}, its refusals naming `where` (the function the host called):
 * `createRedisStores` opens its bus with this.
 */
export async function openBus(options: RedisBusOptions, where: string): Promise<RedisEventBus> {
  resolveOptions(options, where);
  const { maxPending, maxStreamLength, writeTimeoutMs } = busLimits(options, where);
  const { resolved, writer, subscriber, bounded, starting } = await connectStore(options, where);
  const { prefix, report } = resolved;
  /** Where an earlier version announced an ended run, by its id alone (still sent, never read). */
  const endChannel = `${prefix}bus:end`;
  /**
   * Where an ended run is announced: `[instance, all, runId]`, so an instance passes over its own
   * announcement heard back (see `heardEnd`) and knows an `endRun` (1) from a `releaseRun` (0).
   */
  const endedChannel = `${prefix}bus:ended`;
  /** This instance, in the announcements it sends. */
  const self = randomBytes(9).toString("base64url");
  const keyOf = (runId: string) => `${prefix}run:${runId}`;
  /** What the bus's tellers name (and tell apart) as the kind of command that failed. */
  const WRITE_EVENTS = "write events";
  const READ_EVENTS =
    "read a watched run's events (its watchers read on from where they were once Redis answers)";
  const claimKeyOf = (runId: string) => `${prefix}claim:${runId}`;

  let current = mergeSettings(DEFAULT_EVENTS_SETTINGS, options.settings);
  let closed = false;
  const runs = new Map<string, LocalRun>();
  const watchers = new Map<string, Set<StreamWatcher>>();
  /** The run each watcher in `watchers` reads. */
  const watcherRuns = new WeakMap<StreamWatcher, string>();
  let pending: Pending[] = [];
  /** How many events were ever queued: the next one's `order`. */
  let queued = 0;
  /**
   * Runs dropped (`endRun`, `releaseRun`, `reset`) whose events may still wait in `pending`, each
   * with the `order` below which its events go. They are taken out by one pass over the queue
   * (`purge`) before it is next read, not by a pass per run dropped: ending many runs with a backlog
   * queued was quadratic (4 000 runs of 10 events each: 16 s).
   */
  const droppedBefore = new Map<string, number>();
  const purge = (): void => {
    if (droppedBefore.size === 0) return;
    compact();
    const alive = (item: Pending) => !(item.order < (droppedBefore.get(item.runId) ?? 0));
    // The run's entries on the wire leave the head with the rest of it.
    sending = pending.slice(0, sending).filter(alive).length;
    pending = pending.filter(alive);
    droppedBefore.clear();
  };
  /**
   * How many of the first entries of `pending` are on the wire: the batch the flush sent and awaits
   * (0 when none). The cut in `bound` never takes them: Redis stores them when it answers.
   */
  let sending = 0;
  /**
   * How many entries just behind the batch on the wire (`pending[sending…]`) `bound` has dropped and
   * not yet cut out of the array: they are cut in one splice once they are many (an eighth of
   * `maxPending`, at least a batch), or before the queue is next read by place. A splice per emit
   * moved the whole queue: with Redis away and the queue full, each emit cost O(`maxPending`)
   * (100 000 emits took 8–15 s at the default 10 000, and 35 s at 100 000).
   */
  let dropping = 0;
  const compact = (): void => {
    if (dropping === 0) return;
    pending.splice(sending, dropping);
    dropping = 0;
  };
  /** How many events wait to be written: those queued, less those dropped and not yet cut out. */
  const unwritten = (): number => pending.length - dropping;
  /** The last write failed (a lost connection, or Redis refusing for now): what waits is bounded. */
  let writesFailing = false;
  let flushing = false;
  /**
   * Runs ended here (`endRun`, `reset`) until Redis has had their stream deleted and every instance
   * told. The flush sends them before any event, so a run started afresh under the same id comes after.
   */
  /**
   * What the bus tells of its writes failing for a reason that passes: once while the same failure
   * lasts (each retry, up to one a second, was told before), again when it changes or after Redis
   * took a write.
   */
  const told = teller(resolved, "The bus");
  /** What the bus tells of its watchers' reads failing: once across them while the same failure lasts. */
  const reads = teller(resolved, "The bus");
  /**
   * Runs whose watchers a failure ended (their key holding another type, `WRONGTYPE`), with the
   * failure's kind (`kindOf`): told once for the run until a watcher reads entries of its key or a
   * write of it goes through, the run is dropped here, or it fails otherwise. The last {@link MAX_ENDED_RUNS} are held.
   */
  const endedRuns = new Map<string, string>();
  /**
   * Runs whose writes Redis refused for good (their key holding another type), with the refusal's
   * kind: told once for the run until a write of it goes through, it is dropped here, or it is
   * refused otherwise. The last {@link MAX_ENDED_RUNS} are held.
   */
  const refusedWrites = new Map<string, string>();
  /**
   * What `ends` calls as each of its flushes stops: `settle`, once the bus has it. A reconnect while
   * the bus is still starting (its `TIME` round trips, its `SUBSCRIBE`) flushes `ends` at 'ready',
   * before `settle` is defined: called then, it threw a ReferenceError that escaped as an unhandled
   * rejection (which ends a host's process). Nothing can wait on the bus's idle before it is made.
   */
  let settled = (): void => {};
  const ends = new Owed<EndOwed>({
    link: writer,
    // Told after the stream is gone (the script may go twice, as EVALSHA then EVAL): an instance
    // told reads the run deleted. A `releaseRun` that deleted nothing (the stream another emitter's,
    // or not there) tells nobody: another host may have claimed the id, and its watchers read on.
    // Each timed by `answered` as one write, as a batch of events is: the whole flush of the ended
    // runs owed was, and 10 000 of them, three round trips each, took longer than writeTimeoutMs
    // with Redis answering every one at once: taken for silent, the bus dropped the events queued
    // behind them past `maxPending` and told onError Redis "did not answer a write".
    send: (_key, work) => answered(endOne(work)),
    // Every token the id was run under here, so each claim of them is let go; an `endRun` among
    // them makes it one.
    merge: (earlier, later) => ({
      runId: later.runId,
      tokens: [...new Set([...earlier.tokens, ...later.tokens])],
      all: earlier.all || later.all,
      watching: new Set([...earlier.watching, ...later.watching]),
    }),
    max: MAX_OWED,
    report,
    teller: told,
    what: "ended runs",
    onSettled: () => settled(),
  });
  /** Sends one ended run owed (see `ends`): its stream deleted, its claim let go, every instance told. */
  async function endOne({ runId, tokens, all, watching }: EndOwed): Promise<void> {
    const deleted = await evalScript<number>(writer, END_SHA, END_SCRIPT, [
      "2",
      keyOf(runId),
      claimKeyOf(runId),
      all ? "all" : "own",
      ...tokens,
    ]);
    if (!all && deleted !== 1) return;
    // This instance's watchers are ended here, not by the announcement heard back: that comes
    // later, and by then a watcher of the run started afresh under the id may be waiting (a page
    // watching the id again right after `releaseRun` or `endRun`), which it must not end. Only the
    // watchers there when the release was asked for end; an `endRun` ended its own at once.
    for (const watcher of watching) if (watchers.get(runId)?.has(watcher)) watcher.end();
    await Promise.all([
      call(writer, ["PUBLISH", endedChannel, JSON.stringify([self, all ? 1 : 0, runId])]),
      // The plain id on the channel an earlier version listens on, for its instances beside this
      // one in a rolling upgrade.
      call(writer, ["PUBLISH", endChannel, runId]),
    ]);
  }
  let droppedWhileAway = 0;
  /**
   * The claims and reads on their way (`claimRun`, `readHistory`): `close()` ends each with
   * `RedisStoreError` (`closed`).
   */
  const claiming = new Set<() => void>();
  /**
   * The calls waiting for the command connection to be ready, woken by one listener: a listener of
   * their own each put Node's "Possible EventEmitter memory leak detected. 11 ready listeners"
   * warning on stderr once eleven reads (`readHistory` per request of a host) waited while Redis
   * was away.
   */
  const readyWaiters = new Set<() => void>();
  /**
   * How far Redis's clock (`TIME`, µs) runs ahead of this process's `performance.now()` (in µs), at
   * most: a `TIME` asked at local time `before` answers a reading taken no sooner, so its value less
   * `before` is never below the true lead. With it each write tells the script when it was sent by
   * Redis's clock, within the round trip of that `TIME` rather than of the write itself (which may
   * wait behind a slow Redis), and so when each event was emitted (the entry's `t`). Learnt at
   * connect and reconnect, and again when a minute old, as the two clocks drift apart. Undefined
   * before it is learnt, from a reconnect until it is learnt again, or where Redis will not run
   * `TIME`: the script's own clock is used alone.
   */
  let clockLead: number | undefined;
  let clockLearnt = Number.NEGATIVE_INFINITY;
  /**
   * The command connection's connects so far: a lead is learnt from samples all taken on one (a
   * reconnect may reach another server — a failover, a restart elsewhere — whose clock is not the
   * last one's), and a learn is asked once per connect (`clockAsked`: the connect it was asked on).
   */
  let clockEpoch = 0;
  let clockAsked = -1;
  /** The learn asked on this connect, while it is on its way (one a run's first write may wait for). */
  let clockLearning: Promise<void> = Promise.resolve();
  const learnClock = (): Promise<void> => {
    if (clockAsked !== clockEpoch) clockLearning = learnClockNow();
    return clockLearning;
  };
  const learnClockNow = async (): Promise<void> => {
    const epoch = clockEpoch;
    clockAsked = epoch;
    // The tightest of a few: each overstates the lead by at most its own round trip, which a busy
    // host or a slow moment of Redis's stretches (the bound is then that much late, and a watcher
    // subscribing within it of an emit takes the late write for a new run's: the notice).
    let best = Number.POSITIVE_INFINITY;
    try {
      for (let sample = 0; sample < CLOCK_SAMPLES; sample++) {
        const before = performance.now();
        // Bounded: the bus's start waits for these (a write right after it goes with the bound).
        const answered = await bounded(call<[string, string]>(writer, ["TIME"]), "read Redis's clock");
        const lead = timeMicros(answered) - before * 1000;
        if (Number.isFinite(lead)) best = Math.min(best, lead);
      }
    } catch {
      // Not learnt now (the connection lost, TIME refused): writes go without the bound until it is,
      // or with what the samples before the failure gave.
    } finally {
      if (clockAsked === epoch) clockAsked = -1;
    }
    // Reconnected meanwhile: the samples may be two servers' (a later learn asks again).
    if (epoch !== clockEpoch) return;
    if (Number.isFinite(best)) clockLead = best;
    // Asked again in a minute (or at a reconnect) even when no sample came: a server that will not
    // run TIME was asked with every write, each refused.
    clockLearnt = performance.now();
  };
  await learnClock();
  writer.on("ready", () => {
    // A lead learnt before this connect may be another server's, whose clock runs behind this one's:
    // a write sent with it would record its events as emitted earlier than they were, and a watcher
    // that subscribed just before a new run's emit would take that run's write for its reader's own
    // landing late. Until the lead is learnt again, writes go without the bound (the script's own
    // clock, never early).
    clockEpoch++;
    clockLead = undefined;
    void learnClock();
    const woken = [...readyWaiters];
    readyWaiters.clear();
    for (const wake of woken) wake();
    void reclaim().catch(() => {});
  });
  /**
   * The `run_id` of the server the command connection reached when this bus last looked (`INFO
   * server`), learnt once a claim is granted: a reconnect to another one (a restart, a failover)
   * is what loses claims; forgotten at a reconnect that finds no claim left to keep, and learnt again
   * with the next claim. `"?"`: a server that will not answer `INFO` (restarts cannot be told);
   * `""`: not learnt, the connection having failed first (taken for another server).
   */
  let serverId: string | undefined;
  const learnServer = async (): Promise<string> => {
    try {
      const info = await call<string>(writer, ["INFO", "server"]);
      return /run_id:([0-9a-f]+)/.exec(String(info))?.[1] ?? "?";
    } catch (error) {
      if (!refusedForGood(error)) throw error;
      return "?";
    }
  };
  const claimedRuns = () => [...runs].filter(([, run]) => run.claimed && !run.ended);
  /**
   * After a reconnect to a server other than the one a claim was granted on (Redis restarted
   * without persistence, or failed over to a replica that had not got the claim), claims again each
   * run this instance claimed and runs, not ended: every claim and stream was lost, and until the
   * run's next write another host's `claimRun` of the id was granted (README, "After a Redis
   * restart"). The same script as `claimRun`, with the run's own mark: where another host's claim or
   * run took the id meanwhile it is refused, and the run's next writes are told through `onError`
   * as another emitter's run. Not after a reconnect to the same server: the claims are there, and
   * an `endRun` from another instance that deleted one as the link dropped must not be undone
   * before its announcement arrives. Nothing waits on it; a failure (the connection gone again) is
   * tried at the next reconnect.
   */
  const reclaim = async (): Promise<void> => {
    if (closed) return;
    if (claimedRuns().length === 0) {
      // No claim to keep: the server is learnt again by the next one granted. Kept, it went stale
      // across a restart, and the next reconnect to the server Redis came back as claimed again
      // there, undoing an `endRun` another instance sent as the link dropped.
      serverId = undefined;
      return;
    }
    if (serverId === undefined || serverId === "?") return;
    const now = await learnServer();
    if (now === serverId || closed) return;
    const unknown = serverId === "";
    serverId = now;
    if (now === "?" && !unknown) return;
    for (const [runId, run] of claimedRuns()) {
      void evalScript<string>(writer, CLAIM_SHA, CLAIM_SCRIPT, [
        "2",
        keyOf(runId),
        claimKeyOf(runId),
        run.token,
        claimTtl(),
      ]).then(
        (answer) => {
          // Dropped here while the claim was on its way (an `endRun` heard from another instance, a
          // `releaseRun`): the claim may have landed after that deleted it, so it is let go of again,
          // or it would hold the id against every other host's claim for up to `retainUnendedMs`.
          if (answer === "ok" && !closed && runs.get(runId) !== run) {
            ends.owe(runId, { runId, tokens: [run.token], all: false, watching: new Set() });
          }
        },
        () => {},
      );
    }
  };
  /**
   * `wait()` resolves once the command connection is ready (at once when it is, and once `stop()`
   * was called: the caller has given up and only looks at that); `stop()` lets go of the wait.
   */
  const writerReady = (): { wait: () => Promise<void>; stop: () => void } => {
    let waiter: (() => void) | undefined;
    let stopped = false;
    return {
      wait: () =>
        writer.isReady || stopped
          ? Promise.resolve()
          : new Promise<void>((resolve) => {
              waiter = resolve;
              readyWaiters.add(resolve);
            }),
      stop: () => {
        stopped = true;
        if (waiter) readyWaiters.delete(waiter);
      },
    };
  };
  /**
   * For a call that waits on Redis (`claimRun`, `readHistory`): `closedFirst` rejects with
   * `RedisStoreError` (`closed`), saying `message`, when `close()` comes first; `done()` once the
   * call settled.
   */
  const endedByClose = (message: string): { closedFirst: Promise<never>; done: () => void } => {
    let onClose: () => void = () => {};
    const closedFirst = new Promise<never>((_, reject) => {
      onClose = () => reject(new RedisStoreError("closed", message));
    });
    claiming.add(onClose);
    return { closedFirst, done: () => claiming.delete(onClose) };
  };
  /**
   * What every `flushed()` asked meanwhile waits on: one promise until the queue is empty, however
   * often it is asked (a host asking per request while Redis is away held one resolver per call).
   */
  let idle: { promise: Promise<void>; resolve: () => void } | undefined;
  let sweepTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * The flush's waits in progress (a pause between tries, the connection's return): `close()` ends
   * each at once. A set, not one promise raced against every wait: each race left a reaction on that
   * promise until `close()`, about 600 bytes a try, so a Redis refusing writes for days (one try a
   * second) grew the heap without bound.
   */
  const wakers = new Set<() => void>();
  const closing = (): void => {
    for (const wake of [...wakers]) wake();
    wakers.clear();
  };
  /** Resolves when `work` settles or `close()` comes, whichever is first; holds nothing after. */
  const orClosed = (work: Promise<unknown>): Promise<void> =>
    new Promise<void>((resolve) => {
      if (closed) {
        resolve();
        return;
      }
      const wake = (): void => {
        wakers.delete(wake);
        resolve();
      };
      wakers.add(wake);
      work.then(wake, wake);
    });

  const endLocal = (runId: string): void => {
    const set = watchers.get(runId);
    if (!set) return;
    watchers.delete(runId);
    for (const watcher of [...set]) watcher.end();
  };
  /**
   * Another instance ended or released a run: its watchers here end after what they hold. An
   * `endRun` (the run is over, whoever ran it) also drops this instance's own copy of the run, as
   * `endRun` here would, so its `history` is empty and its next `emit` under the id starts a new run
   * from seq 1 — it went on numbering the old run into the deleted stream, which a watcher then read
   * as a gap. What it emitted into the run before it heard (written after the deletion, or still
   * queued) goes with the run: queued events are dropped, written ones deleted by a release of its
   * own mark, which leaves another emitter's run under the id alone. Its own announcement, heard
   * back, is passed over: it acted on it when it sent it, and a run or watcher started since is not
   * the one it ended.
   */
  const heardEnd = (message: string): void => {
    let told: unknown;
    try {
      told = JSON.parse(message);
    } catch {
      return;
    }
    if (!Array.isArray(told) || told.length !== 3) return;
    const [from, all, runId] = told as unknown[];
    if (typeof from !== "string" || typeof runId !== "string" || from === self) return;
    const run = runs.get(runId);
    if (all === 1 && run) {
      runs.delete(runId);
      endedRuns.delete(runId);
      refusedWrites.delete(runId);
      droppedBefore.set(runId, queued);
      // A claimed run with nothing written is let go of too: its claim may have been set after the
      // `endRun` deleted it (asked again after a reconnect, or a `claimRun` on its way), and would
      // hold the id against every other host's claim for up to `retainUnendedMs`.
      if (run.seq > 0 || run.claimed) {
        ends.owe(runId, { runId, tokens: [run.token], all: false, watching: new Set() });
      }
    }
    endLocal(runId);
  };
  await starting(
    `subscribe to ${endedChannel}`,
    bounded(subscriber.subscribe(endedChannel, heardEnd), "SUBSCRIBE"),
  );

  const deadline = (run: LocalRun) =>
    run.touched + (run.ended ? current.retainEndedMs : current.retainUnendedMs);
  // Redis counts an expiry in whole ms below 2^63 from now, and reads no exponent: a retention past
  // that (a host's "for ever", Number.MAX_VALUE) is held to about 285,000 years, not refused by
  // PEXPIRE after the events were appended (they were reported dropped and the stream never expired).
  const ttl = (run: LocalRun | undefined) =>
    String(
      Math.min(
        Math.ceil(run?.ended ? current.retainEndedMs : current.retainUnendedMs),
        Number.MAX_SAFE_INTEGER,
      ),
    );

  // A claim lives the run's retention, capped at MAX_CLAIM_MS, renewed by each write of the run.
  const claimTtl = () => String(Math.min(Math.ceil(current.retainUnendedMs), MAX_CLAIM_MS));

  const sweep = (): void => {
    sweepTimer = undefined;
    const now = Date.now();
    let earliest = Number.POSITIVE_INFINITY;
    for (const [runId, run] of runs) {
      if (deadline(run) <= now) runs.delete(runId);
      else earliest = Math.min(earliest, deadline(run));
    }
    if (earliest !== Number.POSITIVE_INFINITY) schedule(earliest);
  };
  function schedule(at: number): void {
    if (sweepTimer || closed) return;
    sweepTimer = setTimeout(sweep, Math.min(2 ** 31 - 1, Math.max(0, at - Date.now())));
    sweepTimer.unref();
  }

  /**
   * Holds what waits unsent to `maxPending`, dropping the oldest of it, while Redis is away, refusing
   * writes for now, or leaving a write unanswered past `writeTimeoutMs`; a burst while it takes writes
   * waits, whole. The batch on the wire (the first `sending` entries) is kept: it is not sent twice,
   * and Redis stores it when it answers, so dropping it would only hide it from the count.
   */
  const bound = (): void => {
    purge();
    const unsent = unwritten() - sending;
    if (unsent <= maxPending || (writer.isReady && !writesFailing)) return;
    const excess = unsent - maxPending;
    dropping += excess;
    if (dropping >= Math.max(FLUSH_BATCH, maxPending >> 3)) compact();
    const before = droppedWhileAway;
    droppedWhileAway += excess;
    if (before === 0 || Math.floor(before / 1000) !== Math.floor(droppedWhileAway / 1000)) {
      report(
        new RedisStoreError(
          "connect",
          `Redis has been away, silent or refusing writes while more than ${maxPending} events waited to be sent; ` +
            `the oldest of those not yet sent are dropped (${droppedWhileAway} so far; a batch already sent is kept, and stored when Redis answers).`,
        ),
      );
    }
  };

  /**
   * Awaits a write (a batch, or one ended run owed) as it is. If it is still unanswered after
   * `writeTimeoutMs` (Redis stopped, or cut off with the connection left open), writes count as
   * failing from then on: the queue is held to `maxPending` and `onError` is told, once per silence.
   * Nothing is sent again meanwhile: the write on the wire is answered when Redis wakes, or fails
   * with the connection. The bound is counted as `unanswered` counts it: from the first turn of the
   * event loop after the write was handed over (when the client writes it), with a grace with the
   * loop free. Counted from the hand-off, an emitter busy right after it (a long synchronous burst)
   * spent the bound before the batch was written: a Redis answering at once was taken for silent,
   * and the events past `maxPending` were dropped.
   */
  const answered = async <T>(write: Promise<T>): Promise<T> => {
    let stop: () => void = () => {};
    const late = new Promise<true>((resolve) => {
      stop = unanswered(write, writeTimeoutMs, () => resolve(true));
    });
    const silent = await Promise.race([
      write.then(
        () => false,
        () => false,
      ),
      late,
    ]);
    stop();
    if (silent) {
      if (!writesFailing) {
        report(
          new RedisStoreError(
            "connect",
            `Redis at ${shownUrl(resolved.url)} did not answer a write within ${shownMs(writeTimeoutMs)}; ` +
              (sending > 0
                ? `until it does, the ${sending} events of that write are kept (stored when it answers, sent again if ` +
                  `the connection fails) and at most ${maxPending} more wait unsent (maxPending), the oldest of them dropped.`
                : `until it does, at most ${maxPending} events wait unsent (maxPending), the oldest of them dropped.`),
          ),
        );
      }
      writesFailing = true;
      bound();
    }
    return write;
  };

  const settle = (): void => {
    purge();
    if ((unwritten() > 0 || ends.size > 0) && !closed) return;
    const waiting = idle;
    idle = undefined;
    waiting?.resolve();
  };
  settled = settle;

  /**
   * Writes a batch, one script call per run in it (all of that run's events in the batch, in seq
   * order, so no later seq of a run can land while an earlier one is refused or waits for the
   * script to be loaded), and answers the items that are done with: written, already there, or
   * refused for good (reported and dropped, so one run whose key Redis will not take never holds up
   * the others). Items of a call that failed for a reason that passes (a lost connection, Redis
   * loading, busy or out of memory) are kept, to go first in the next batch.
   */
  const writeBatch = async (batch: Pending[]): Promise<Set<Pending>> => {
    // A run's events of the whole batch in one group: the queue holds them in seq order.
    const byRun = new Map<string, Pending[]>();
    for (const item of batch) {
      const group = byRun.get(item.token);
      if (group) group.push(item);
      else byRun.set(item.token, [item]);
    }
    const groups = [...byRun.values()];
    // A run's first write goes with a lead learnt within the last second (`FRESH_LEAD_MS`), waited
    // for: a lead learnt before Redis's clock stepped forward reads that much early, and so would the
    // new run's `t`, and a watcher that subscribed before its start, resuming after a seq of an
    // earlier run, took the new run's entries for its reader's run's own write landing late (read on,
    // no notice). Only where a lead is used: without one, the script's own clock is never early.
    if (
      clockLead !== undefined &&
      performance.now() - clockLearnt > FRESH_LEAD_MS &&
      batch.some((item) => item.event.seq === 1)
    ) {
      await learnClock();
    }
    const sends = groups.map((group) => {
      const { runId, token } = group[0] as Pending;
      const sentAt = performance.now();
      if (sentAt - clockLearnt > 60_000) void learnClock();
      const sentBound = clockLead === undefined ? "" : String(Math.ceil(sentAt * 1000 + clockLead));
      const args = [String(maxStreamLength), ttl(runs.get(runId)), token, claimTtl(), sentBound];
      for (const item of group) {
        args.push(
          `${item.event.seq}-0`,
          item.json,
          item.event.kind === "done" ? "1" : "0",
          item.unanswered ? "1" : "0",
          // How long before this send it was emitted, in µs, on this process's monotonic clock: the
          // script takes it from the send by Redis's clock (see `clockLead`).
          String(Math.max(0, Math.round((sentAt - item.emittedAt) * 1000))),
        );
      }
      // By digest: the script's text is not sent with every batch. A server that does not hold it
      // yet (a restart, SCRIPT FLUSH) answers NOSCRIPT, and the text goes once, loading it again.
      return evalScript<number[]>(writer, APPEND_SHA, APPEND_SCRIPT, [
        "2",
        keyOf(runId),
        claimKeyOf(runId),
        ...args,
      ]);
    });
    const results = await Promise.allSettled(sends);
    const handled = new Set<Pending>();
    const refusedRuns = new Set<string>();
    /**
     * The first failure of the batch that passes (told at most once per batch, through `told`: once
     * while the same failure lasts), and how many events it kept.
     */
    let passing: { reason: unknown } | undefined;
    let kept = 0;
    const checks: Promise<void>[] = [];
    for (const [g, result] of results.entries()) {
      const group = groups[g] as Pending[];
      const { runId, token } = group[0] as Pending;
      if (result.status === "rejected") {
        if (mayHaveRun(result.reason)) for (const item of group) item.unanswered = true;
        if (!refusedForGood(result.reason)) {
          // Kept, to be sent again first; told at most once per batch.
          passing ??= { reason: result.reason };
          kept += group.length;
          continue;
        }
        const kind = kindOf(result.reason);
        if (!refusedRuns.has(runId) && refusedWrites.get(runId) !== kind) {
          refusedRuns.add(runId);
          refusedWrites.delete(runId);
          refusedWrites.set(runId, kind);
          if (refusedWrites.size > MAX_ENDED_RUNS)
            refusedWrites.delete(refusedWrites.keys().next().value as string);
          report(
            new RedisStoreError(
              "refused",
              `Redis refused to store run ${shownRun(runId)}'s events ` +
                `(${errorText(result.reason)}); they were dropped, and so are its next ones while Redis refuses them ` +
                "(told once while it lasts); the other runs' events are written as usual.",
              { cause: result.reason },
            ),
          );
        }
        for (const item of group) handled.add(item);
        continue;
      }
      if (refusedWrites.size > 0) refusedWrites.delete(runId);
      if (endedRuns.size > 0) endedRuns.delete(runId);
      const below: Pending[] = [];
      for (const [i, item] of group.entries()) {
        const answer = result.value[i];
        if (answer === 0) below.push(item);
        else {
          if (answer === -1) toldForeign(runId, token, item.event.seq, false);
          handled.add(item);
        }
      }
      if (below.length > 0) checks.push(settleBelow(runId, token, below, handled));
    }
    if (passing) {
      const { reason } = passing;
      told.tell(
        reason instanceof TimeoutError
          ? new RedisStoreError(
              "connect",
              `Redis at ${shownUrl(resolved.url)} did not take ${kept} events of a batch of ${batch.length} in time: ` +
                "the client's command timeout passed while they waited to be written (Redis silent, or reading slowly). " +
                "They are kept and sent again (told once while the same failure lasts).",
              { cause: reason },
            )
          : new RedisStoreError(
              reason instanceof ErrorReply ? "refused" : "connect",
              `Redis at ${shownUrl(resolved.url)} did not take ${kept} events of a batch of ${batch.length}` +
                (reason instanceof ErrorReply
                  ? ` for now: it answered ${errorText(reason)}`
                  : `: the connection failed (${errorText(reason)})`) +
                ". They are kept and sent again (told once while the same failure lasts: again when it changes, or after Redis took a write).",
              { cause: reason },
            ),
        reason,
        WRITE_EVENTS,
      );
    }
    await Promise.all(checks);
    return handled;
  };

  /**
   * Events the script answered 0 for (their id is not above the stream's top): each counts as
   * written only if the stream holds its seq from this emitter (its `o` token), as after an earlier
   * try whose reply was lost. The others were not written and are told, never dropped silently:
   * once per run when the stream's top is another emitter's, with their count otherwise. If Redis
   * cannot be read now, they stay queued and are sent (and checked) again.
   */
  const settleBelow = async (
    runId: string,
    token: string,
    items: Pending[],
    handled: Set<Pending>,
  ): Promise<void> => {
    const key = keyOf(runId);
    const first = (items[0] as Pending).event.seq;
    const last = (items.at(-1) as Pending).event.seq;
    let held: [string, string[]][];
    let top: [string, string[]] | undefined;
    let oldest: [string, string[]] | undefined;
    try {
      [held, top, oldest] = await Promise.all([
        call<[string, string[]][]>(writer, ["XRANGE", key, `${first}-0`, `${last}-0`]),
        call<[string, string[]][]>(writer, ["XREVRANGE", key, "+", "-", "COUNT", "1"]).then((t) => t[0]),
        call<[string, string[]][]>(writer, ["XRANGE", key, "-", "+", "COUNT", "1"]).then((t) => t[0]),
      ]);
    } catch {
      return;
    }
    const ours = new Set(held.filter((entry) => ownerOf(entry) === token).map((entry) => entry[0]));
    // Below the stream's oldest entry, when that entry is this emitter's: written by the try whose
    // reply was lost, then trimmed away (`maxStreamLength`) by the later events written with it or
    // after it. This emitter writes a run in seq order, so a later seq of its own there means the
    // earlier one went first; it was told as dropped, "the stream was changed outside this bus".
    const trimmedPast =
      oldest !== undefined && ownerOf(oldest) === token ? Number(oldest[0].split("-")[0]) : 0;
    const lost = items.filter((item) => !ours.has(`${item.event.seq}-0`) && item.event.seq >= trimmedPast);
    for (const item of items) handled.add(item);
    if (lost.length === 0) return;
    const topOwner = top && ownerOf(top);
    if (top && topOwner !== token) {
      toldForeign(runId, token, (lost[0] as Pending).event.seq, true);
      return;
    }
    const seqs = lost.map((item) => item.event.seq);
    report(
      new RedisStoreError(
        "invalid-option",
        `${lost.length} event${lost.length === 1 ? " of run " : "s of run "}${shownRun(runId)} (seq ${seqs[0]}` +
          `${seqs.length > 1 ? `–${seqs.at(-1)}` : ""}) ${lost.length === 1 ? "was" : "were"} dropped: Redis already ` +
          `holds later entries of the run${top ? ` from this instance (up to ${top[0]})` : ""}, and a stream takes no ` +
          "entry at or below its top: the stream was changed outside this bus (restored, or edited by hand).",
      ),
    );
  };

  /**
   * Tells `onError`, once per run, that another emitter holds run `runId` and this instance's events
   * of it from seq `seq` on are not written: its stream already holds that seq or later (`below`),
   * or its latest entries are another emitter's in a run that has not ended.
   */
  const toldForeign = (runId: string, token: string, seq: number, below: boolean): void => {
    const run = runs.get(runId);
    const local = run?.token === token ? run : undefined;
    if (local?.foreignTold) return;
    if (local) local.foreignTold = true;
    report(
      new RedisStoreError(
        "invalid-option",
        `Run ${shownRun(runId)} ` +
          (below
            ? `already holds seq ${seq} or later in Redis, written by another emitter (another instance, or an earlier process).`
            : "is being emitted by another emitter (another instance, or an earlier process): the latest events in its " +
              "stream are not this instance's and that run has not ended.") +
          ` One instance emits into a run; this instance's events of it from seq ${seq} on are not written ` +
          "(told once per run).",
      ),
    );
  };

  const flush = async (): Promise<void> => {
    if (flushing) return;
    flushing = true;
    let backoff = 0;
    try {
      for (;;) {
        purge();
        compact();
        if ((pending.length === 0 && ends.size === 0) || closed) break;
        if (!writer.isReady) {
          await orClosed(whenReady(writer));
          continue;
        }
        // An endRun made while Redis was away goes first: before the events of a run started
        // afresh under the same id.
        // Each ended run is timed as it is sent (see `ends`), not the flush of them all as one write.
        let failed = ends.size > 0 && !(await ends.flush());
        purge();
        compact();
        if (!failed && pending.length > 0) {
          const batch = pending.slice(0, FLUSH_BATCH);
          sending = batch.length;
          let handled: Set<Pending>;
          try {
            handled = await answered(writeBatch(batch));
          } finally {
            // What `bound` dropped meanwhile sits behind the batch: cut out while `sending` still says where.
            compact();
            sending = 0;
          }
          // `pending` may have been trimmed or had runs dropped meanwhile, but nothing goes in ahead
          // of the batch: whatever of it is left is in the first FLUSH_BATCH places. Only those are
          // rewritten, not the whole queue (a burst of 10^5 emits was quadratic).
          const window = pending.slice(0, FLUSH_BATCH).filter((item) => !handled.has(item));
          pending.splice(0, Math.min(FLUSH_BATCH, pending.length), ...window);
          failed = handled.size < batch.length;
        }
        writesFailing = failed;
        // Redis took the writes: events dropped from now on are another outage's, told afresh.
        if (!failed) {
          droppedWhileAway = 0;
          told.ok(WRITE_EVENTS);
        }
        if (failed) {
          // Redis could not take it yet (or the connection went): wait a little, longer each time,
          // rather than ask again at once.
          backoff = Math.min(Math.max(backoff * 2, 25), 1000);
          await orClosed(new Promise((resolve) => setTimeout(resolve, backoff).unref()));
          await orClosed(whenReady(writer));
        } else backoff = 0;
      }
    } finally {
      flushing = false;
      settle();
    }
  };

  let kicked = false;
  const kick = (): void => {
    // One flush planned per burst of emits, not one microtask per event.
    if (flushing || kicked) return;
    kicked = true;
    queueMicrotask(() => {
      kicked = false;
      void flush();
    });
  };

  const host: StreamWatcherHost = {
    client() {
      const conn: RedisConnection = writer.duplicate();
      conn.on("error", () => {});
      return conn;
    },
    settings: () => current,
    detach(watcher) {
      // By the watcher's own run: looking through every run watched made each watcher leaving cost
      // as much as there were runs watched (20 000 watchers leaving took 20 s).
      const runId = watcherRuns.get(watcher);
      const set = runId === undefined ? undefined : watchers.get(runId);
      if (set?.delete(watcher) && set.size === 0) watchers.delete(runId as string);
    },
    report,
    readFailed: (error) => reads.fail(error, READ_EVENTS),
    readOk: () => reads.ok(READ_EVENTS),
    // What ends a run's watchers (its reader stops hearing the run) is told as this package's error,
    // once for the run while it lasts: not once per watcher of it, nor again for a watcher that
    // comes meanwhile.
    readEnded: (error, key) => {
      const runId = key.slice(prefix.length + 4);
      const kind = kindOf(error);
      if (endedRuns.get(runId) === kind) return;
      endedRuns.delete(runId);
      endedRuns.set(runId, kind);
      if (endedRuns.size > MAX_ENDED_RUNS) endedRuns.delete(endedRuns.keys().next().value as string);
      report(
        storeFailure(
          resolved,
          error,
          `read run ${shownRun(runId)}'s events, so its watchers ended`,
          "The bus",
        ),
      );
    },
    readKey: (key) => {
      if (endedRuns.size > 0) endedRuns.delete(key.slice(prefix.length + 4));
    },
  };

  /** `all`: `endRun` (the run is over, whoever holds it); else `releaseRun` (only what is this instance's). */
  const dropRun = (runId: string, all: boolean): void => {
    const token = runs.get(runId)?.token;
    runs.delete(runId);
    endedRuns.delete(runId);
    refusedWrites.delete(runId);
    // Its events queued so far go at the next `purge`, before the queue is read again.
    droppedBefore.set(runId, queued);
    // A release leaves watchers to the announcement: sent only when it deleted this instance's
    // stream. With no stream there, this instance's watchers of the id are left as every other
    // instance's are: a watcher that read the old run ends when it finds the stream gone, and one
    // that read none of it reads whichever run comes under the id next.
    if (all) endLocal(runId);
    // Owed until Redis has it: the stream deleted and every instance told, even if Redis is away now.
    // A release ends this instance's watchers of the id only once it deleted the stream: those
    // watching now, not one that starts meanwhile.
    ends.owe(runId, {
      runId,
      tokens: token === undefined ? [] : [token],
      all,
      watching: all ? new Set() : new Set(watchers.get(runId) ?? []),
    });
  };

  const newRun = (): LocalRun => ({
    seq: 0,
    token: randomBytes(9).toString("base64url"),
    events: [],
    ended: false,
    touched: Date.now(),
  });

  const bus: RedisEventBus = {
    async claimRun(runId, signal) {
      checkRunId(runId, "claimRun");
      checkSignal(signal, "claimRun");
      if (closed) throw afterClose("claimRun", "bus");
      if (signal?.aborted) throw (signal as { reason?: unknown }).reason;
      let run = runs.get(runId);
      const made = run === undefined;
      if (!run) {
        run = newRun();
        runs.set(runId, run);
        schedule(deadline(run));
      }
      const local = run;
      // A refused or failed claim leaves nothing here: the run record it made goes unless emitted into.
      const letGo = () => {
        if (made && runs.get(runId) === local && local.seq === 0) runs.delete(runId);
      };
      // While the connection is away (reconnecting), or drops under the claim, the claim waits for it
      // and asks again, within the same bound: the script is the same for the same mark, so a claim
      // asked twice (the first answer lost) is one claim.
      const ready = writerReady();
      let givenUp = false;
      const ask = async (): Promise<string> => {
        for (;;) {
          await ready.wait();
          // An `endRun` of this id still owed (the runtime ends a finished run before starting the
          // id again) reaches Redis first: the claim reads the stream after it, not the old run's.
          if (ends.has(runId)) await ends.flush();
          if (givenUp) return "given up";
          try {
            const answer = await evalScript<string>(writer, CLAIM_SHA, CLAIM_SCRIPT, [
              "2",
              keyOf(runId),
              claimKeyOf(runId),
              local.token,
              claimTtl(),
            ]);
            // Answered after the claim gave up (a silent Redis woke): the run will not start, so its
            // claim is let go rather than hold the id for the retention.
            if (givenUp && answer === "ok" && runs.get(runId) !== local) {
              void evalScript(writer, RELEASE_SHA, RELEASE_SCRIPT, [
                "1",
                claimKeyOf(runId),
                local.token,
              ]).catch(() => {});
            }
            return answer;
          } catch (error) {
            if (givenUp || refusedForGood(error)) throw error;
            await new Promise((resolve) => setTimeout(resolve, 25).unref());
          }
        }
      };
      let answer: string;
      // `close()` ends the claim at once (Redis away, it would wait out `connectTimeoutMs`, holding
      // the process up that long after its bus closed).
      const closing = endedByClose(`claimRun: the bus was closed before run ${shownRun(runId)} was claimed.`);
      try {
        answer = await untilAborted(
          within(
            Promise.race([ask(), closing.closedFirst]),
            resolved.connectTimeoutMs,
            () =>
              new RedisStoreError(
                "connect",
                `claimRun: Redis at ${shownUrl(resolved.url)} was away or did not answer within ` +
                  `${shownMs(resolved.connectTimeoutMs)} (connectTimeoutMs), so run ${shownRun(runId)} was not claimed ` +
                  "and nothing of it was sent. Check that the server is running and reachable.",
              ),
          ),
          signal,
        );
      } catch (error) {
        letGo();
        throw error;
      } finally {
        givenUp = true;
        closing.done();
        ready.stop();
      }
      if (answer === "ok") {
        local.claimed = true;
        // Which server granted it, looked up beside the run's first writes (not waited for: a
        // silent server must not hold the claim past its bound).
        if (serverId === undefined) {
          serverId = "?";
          learnServer().then(
            (id) => {
              serverId = id;
            },
            () => {
              // The link went before it answered: which server granted the claim is not known,
              // so the next reconnect claims again whatever server it reaches.
              serverId = "";
            },
          );
        }
        return;
      }
      letGo();
      const byRun = answer.startsWith("run:");
      throw new EventsError(
        "invalid-run-id",
        `claimRun: run id ${shownRun(runId)} is taken: ` +
          (byRun
            ? "another emitter's run under it (another host, or an earlier process) is in progress in Redis, not ended. "
            : "another emitter (another host) has claimed it for a run that has not ended and has written nothing yet. ") +
          "Run ids must be unique across every host sharing this Redis: give this run an id of its own " +
          "(namespace ids per tenant), or wait for that run's end. The id is freed by that run's done, by " +
          "endRun(id) on any instance (for a host that died: its run is over), " +
          (byRun
            ? freedByExpiry(Number(answer.slice(4)), current.retainUnendedMs)
            : `or by the claim lapsing once its run has written nothing for retainUnendedMs (at most ${MAX_CLAIM_MS / 3_600_000} h).`),
      );
    },

    emit(runId, event) {
      checkRunId(runId, "emit");
      checkEvent(event);
      if (closed) throw afterClose("emit", "bus");
      let run = runs.get(runId);
      // Serialized here, so an event JSON cannot write is refused to its emitter instead of
      // failing the flush that carries every run's events.
      let stored: SequencedEvent;
      let json: string;
      // Kept and handed out as written, frozen through: copied so when the event is plain data,
      // else read back from what was written (see `plainFrozen`, `frozenFrom`).
      let frozen: SequencedEvent | undefined;
      try {
        stored = withSeq(event, (run?.seq ?? 0) + 1);
        frozen = plainFrozen(stored);
        json = JSON.stringify(frozen ?? stored);
        // A `toJSON` on the event decides what is written: nothing at all (undefined, which no
        // write can carry: the flush would try it again for ever, holding up `flushed()`), or text
        // that is not this event (no `seq`, no `kind`: every reader would skip it as another
        // process's entry). Read back only then, so an event without one costs no parse.
        if (typeof (stored as { toJSON?: unknown }).toJSON === "function") writtenAs(stored, json);
        // A `kind` the event only inherits (a class's getter) is not copied, nor written.
        else if (typeof stored.kind !== "string") {
          throw new Error("its `kind` is not its own enumerable property, so it is not copied nor written");
        }
      } catch (cause) {
        throw new EventsError(
          "invalid-event",
          `emit on a Redis bus needs an event JSON can write (no BigInt, no cycle, no throwing getter); this one failed: ${cause instanceof Error ? cause.message : String(cause)}`,
          { cause },
        );
      }
      stored = frozen ?? frozenFrom(json);
      if (!run) {
        run = newRun();
        runs.set(runId, run);
      }
      run.seq = stored.seq;
      run.events.push(stored);
      // The local copy keeps no more than the stream does (`MAXLEN ~`): cut back in batches of a tenth.
      if (run.events.length > maxStreamLength + Math.ceil(maxStreamLength / 10)) {
        run.events.splice(0, run.events.length - maxStreamLength);
      }
      run.touched = Date.now();
      if (stored.kind === "done") run.ended = true;
      pending.push({
        runId,
        token: run.token,
        event: stored,
        json,
        unanswered: false,
        order: queued++,
        emittedAt: performance.now(),
      });
      bound();
      schedule(deadline(run));
      kick();
      return stored;
    },

    watch(runId, signal, watchOptions) {
      checkRunId(runId, "watch");
      checkSignal(signal, "watch");
      // A seq passed where the options go (`watch(id, signal, 12)`) would read the run from its start.
      if (
        watchOptions !== undefined &&
        (typeof watchOptions !== "object" || watchOptions === null || Array.isArray(watchOptions))
      ) {
        throw new EventsError(
          "invalid-event",
          `watch: its options are an object such as { after: 12 }, and were given ${describe(watchOptions)}.`,
        );
      }
      const asked = watchOptions?.after ?? 0;
      let after: number;
      let token: string | undefined;
      if (typeof asked === "string") ({ seq: after, token } = readEventId(asked));
      else {
        checkAfter(asked, "watch");
        after = asked;
      }
      const started = watchOptions?.started;
      if (started !== undefined && typeof started !== "boolean") {
        throw new EventsError(
          "invalid-event",
          `watch: \`started\` must be true or false, and was given ${describe(started)}.`,
        );
      }
      const grace = watchOptions?.startedGraceMs;
      if (grace !== undefined && (typeof grace !== "number" || !Number.isFinite(grace) || grace < 0)) {
        throw new EventsError(
          "invalid-event",
          `watch: \`startedGraceMs\` must be a number of ms, 0 or more, and was given ${describe(grace)}.`,
        );
      }
      const watcher = new StreamWatcher(host, keyOf(runId), after, signal, {
        claimKey: claimKeyOf(runId),
        started,
        startedGraceMs: grace,
        token,
      });
      if (closed || signal?.aborted) {
        watcher.close();
        return watcher;
      }
      let set = watchers.get(runId);
      if (!set) {
        set = new Set();
        watchers.set(runId, set);
      }
      set.add(watcher);
      watcherRuns.set(watcher, runId);
      return watcher;
    },

    history(runId) {
      checkRunId(runId, "history");
      return [...(runs.get(runId)?.events ?? [])];
    },

    async readHistory(runId, after = 0) {
      checkRunId(runId, "readHistory");
      checkAfter(after, "readHistory");
      if (closed) throw afterClose("readHistory", "bus");
      // A read changes nothing, so one whose connection is away (reconnecting after a cut: Redis's
      // `timeout`, a proxy, a failover) or drops under it waits for the connection and asks again,
      // as `claimRun` does; it rejected at once with the client's bare "Socket closed unexpectedly"
      // though Redis was there. Bounded: a Redis that stays away, or keeps the connection and
      // answers nothing, rejects it after `connectTimeoutMs`, not never; `close()` ends it at once.
      const ready = writerReady();
      let givenUp = false;
      const ask = async (): Promise<[string, string[]][]> => {
        for (;;) {
          await ready.wait();
          if (givenUp) return [];
          try {
            return await call<[string, string[]][]>(writer, ["XRANGE", keyOf(runId), `${after + 1}-0`, "+"]);
          } catch (error) {
            // Redis's own answer (a key of another type, an ACL) is the read's answer.
            if (givenUp || error instanceof ErrorReply) throw error;
            await new Promise((resolve) => setTimeout(resolve, 25).unref());
          }
        }
      };
      const closing = endedByClose(`readHistory: the bus was closed before run ${shownRun(runId)} was read.`);
      let entries: [string, string[]][];
      try {
        entries = await within(
          Promise.race([ask(), closing.closedFirst]),
          resolved.connectTimeoutMs,
          () =>
            new RedisStoreError(
              "connect",
              `readHistory: Redis at ${shownUrl(resolved.url)} was away or did not answer within ` +
                `${shownMs(resolved.connectTimeoutMs)} (connectTimeoutMs). Check that the server is running and reachable.`,
            ),
        );
      } finally {
        givenUp = true;
        closing.done();
        ready.stop();
      }
      // An entry this package did not write is skipped, as a watcher skips it: the seqs show the gap.
      return entries.map(decode).filter((event) => event !== undefined);
    },

    endRun(runId) {
      checkRunId(runId, "endRun");
      dropRun(runId, true);
    },

    releaseRun(runId) {
      checkRunId(runId, "releaseRun");
      dropRun(runId, false);
    },

    configure(changes) {
      current = mergeSettings(current, changes);
      if (sweepTimer) clearTimeout(sweepTimer);
      sweepTimer = undefined;
      sweep();
      return { ...current };
    },

    reset() {
      current = { ...DEFAULT_EVENTS_SETTINGS };
      // Each run as this instance ran it: another host's run or claim taken under an id since stays.
      for (const runId of [...runs.keys()]) dropRun(runId, false);
      for (const runId of [...watchers.keys()]) endLocal(runId);
      return { ...current };
    },

    flushed() {
      purge();
      if (unwritten() === 0 && ends.size === 0 && !flushing) {
        return Promise.resolve();
      }
      if (!idle) {
        let resolve: () => void = () => {};
        const promise = new Promise<void>((settled) => {
          resolve = settled;
        });
        idle = { promise, resolve };
      }
      return idle.promise;
    },

    get pending() {
      purge();
      return unwritten();
    },

    // One close: a second call (during the first, or after it) gets the first's promise, and what
    // was not written is told once.
    close() {
      closeOnce ??= closeBus();
      return closeOnce;
    },
  };
  let closeOnce: Promise<void> | undefined;
  const closeBus = async (): Promise<void> => {
    purge();
    if (writer.isReady && (unwritten() > 0 || ends.size > 0)) {
      await Promise.race([bus.flushed(), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    }
    closed = true;
    closing();
    for (const giveUp of [...claiming]) giveUp();
    if (sweepTimer) clearTimeout(sweepTimer);
    for (const runId of [...watchers.keys()]) endLocal(runId);
    purge();
    compact();
    if (pending.length > 0)
      report(new RedisStoreError("closed", `${pending.length} events were not written before close().`));
    ends.close();
    if (ends.size > 0)
      report(
        new RedisStoreError(
          "closed",
          `${ends.size} ended run(s) were not deleted from Redis nor announced before close().`,
        ),
      );
    ends.clear();
    pending = [];
    sending = 0;
    settle();
    shut(subscriber);
    shut(writer);
  };
  return bus;
}
