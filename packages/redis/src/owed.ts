import { DEFAULT_CONNECT_TIMEOUT_MS, type RedisConnection, shut, unanswered } from "./connection.js";
import { RedisStoreError } from "./errors.js";
import type { Teller } from "./tell.js";

/** What {@link Owed} needs: the link its work goes over, how to send one piece, and its bound. */
export interface OwedOptions<T> {
  /** The connection the work is sent on. Each time it is ready again, what is owed is sent. */
  link: RedisConnection;
  /** Sends one piece of work; resolves once Redis has it, rejects when it did not get there. */
  send(key: string, work: T): Promise<unknown>;
  /** Folds work owed again under a key still owed into what it held (default: the later replaces it). */
  merge?(earlier: T, later: T): T;
  /**
   * How many keys may wait while the link is away, sends are failing or Redis is silent (see
   * `silentAfterMs`); past it the oldest is dropped, and `report` is told. A burst owed while sends
   * go through is not cut: it is sent whole.
   */
  max: number;
  /**
   * How long a send may go unanswered before Redis counts as silent — stopped, or cut off by the
   * network with the connection left open, so the link still reads ready — and `max` applies
   * (default: the link's connect timeout, the store's `connectTimeoutMs`). Counted from the first
   * turn of the event loop after the send was started, when its command is on the socket, not from
   * the hand-off, and given a grace with the loop free (see `unanswered` in connection.ts).
   */
  silentAfterMs?: number | undefined;
  /** Told of each failed send (it is kept and sent again) and of work dropped past `max`. */
  report(error: unknown): void;
  /**
   * When given, told of a failed send instead of `report` (as `RedisStoreError`, a failure like the
   * last told held back) and of each send that went through: the store's own teller.
   */
  teller?: Teller | undefined;
  /** What the work is, in words, for the message about dropped work ("ended runs"). */
  what: string;
  /** Called whenever a flush stops: everything sent, or a send failed, or the link is away. */
  onSettled?(): void;
  /**
   * Told of each piece of work let go before it was ever sent, so it will never be sent as it is:
   * dropped past `max`, replaced by work owed again under its key (or folded into it by `merge`:
   * what the merge carried over goes on in the later work), or dropped by `clear`. Never told of
   * work that was put on the wire, even if that send failed: Redis may have taken it.
   */
  dropped?(key: string, work: T): void;
}

/**
 * How many keys each store's owed work holds while Redis is away (or silent, or refusing its sends): as many
 * forgotten tenants or ended runs as the bus holds events (`maxPending`'s default) then. While sends
 * go through, nothing owed is dropped, however much is owed at once.
 */
export const MAX_OWED = 10_000;

/**
 * How long Redis remembers that a tenant was forgotten (or the capability store reset): 7 days. An
 * instance whose subscription was down when another forgot a tenant reads these marks when it is
 * back and drops what it held of the tenant from before the forget, instead of writing it back or
 * keeping it. An instance away for longer than this can no longer tell, and writes back what it
 * holds (as before). Far beyond what the work owed here outlasts in practice: its bound is a count
 * (`MAX_OWED`), and a link down for days has long since overflowed the bus's `maxPending`.
 */
export const FORGOTTEN_MS = 7 * 24 * 60 * 60 * 1000;

/** How long a store's `close()` waits for what it owes to reach Redis, as the bus waits for its events. */
export const CLOSE_BOUND_MS = 2000;

interface Entry<T> {
  work: T;
  /** Put on the wire at least once: Redis may have taken it, even when the send then failed. */
  sent?: boolean | undefined;
}

/**
 * Work a store owes Redis until its link comes back — deletions and announcements that must reach
 * Redis even when they were asked for while it was out of reach, or while a send was failing.
 *
 * One entry per key: work owed again under a key already owed is merged into it and moves to the
 * back, behind everything owed before it. Entries are sent one at a time, oldest first, by one
 * flush at a time: a flush asked for while one runs joins it, and the running one also sends what
 * was owed meanwhile. An entry leaves only once its send has resolved, and only if it was not owed
 * again while on the wire; a send that fails (the link dropped again mid-flush) stops the flush with
 * that entry and everything behind it still owed, sent on the link's next return or after a short
 * pause that grows to a second while sends keep failing. While the link is away, the last send
 * failed, or a send has gone unanswered for `silentAfterMs` (Redis stopped or cut off with the
 * connection still open: nothing fails, the send just hangs), at most `max` keys are held; past that
 * the oldest are dropped (never the one on the wire) and reported (once, then once per thousand). A
 * burst owed while sends go through is held whole, as the bus holds a burst of events. Never throws
 * from `owe` or `flush`.
 */
export class Owed<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private running: Promise<boolean> | undefined;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private backoff = 0;
  private dropped = 0;
  private closed = false;
  /** The one `finish` (a store's `close()`), once asked for. */
  private finishing: Promise<void> | undefined;
  /** `report` was told that work owed after `close()` goes nowhere. */
  private toldClosed = false;
  /** Set when a send failed, cleared when one goes through: Redis is there but not taking the work. */
  private failing = false;
  /** The key on the wire. */
  private onWire: string | undefined;
  /**
   * Set when the send on the wire has gone unanswered for `silentAfterMs`, and then for a grace more
   * with the event loop free to read its answer (see {@link watch}); cleared when it settles.
   */
  private silent = false;
  /** Stops watching the send on the wire (see {@link watch}): at `close`. */
  private unwatch: (() => void) | undefined;
  private readonly silentAfterMs: number;
  private readonly onReady = (): void => {
    void this.flush();
  };

  constructor(private readonly options: OwedOptions<T>) {
    const socket = options.link.options?.socket as { connectTimeout?: unknown } | undefined;
    const linkTimeout = typeof socket?.connectTimeout === "number" ? socket.connectTimeout : undefined;
    this.silentAfterMs = options.silentAfterMs ?? linkTimeout ?? DEFAULT_CONNECT_TIMEOUT_MS;
    options.link.on("ready", this.onReady);
  }

  /** How many keys are owed, the one on the wire included. */
  get size(): number {
    return this.entries.size;
  }

  /** Whether anything is owed under `key` (on the wire or not). */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Owes `work` under `key` (merged into what the key already owes) and sends it now if the link is up. */
  owe(key: string, work: T): void {
    if (this.closed) {
      // The connections are gone: told, once, rather than dropped in silence.
      if (!this.toldClosed) {
        this.toldClosed = true;
        this.options.report(
          new RedisStoreError(
            "closed",
            `work asked for after close() (${this.options.what}) is not sent to Redis (told once): the store's connections are closed.`,
          ),
        );
      }
      return;
    }
    const held = this.entries.get(key);
    const merged = held && this.options.merge ? this.options.merge(held.work, work) : work;
    // A fresh entry object: one on the wire is left in place only if nothing was owed on top of it.
    this.entries.delete(key);
    this.entries.set(key, { work: merged });
    if (held) this.letGo(key, held);
    if (this.entries.size > this.options.max && this.stuck()) this.trim();
    if (this.options.link.isReady) void this.flush();
  }

  /**
   * Whether the work cannot go now: the link is away, the last send failed, or a send has gone
   * unanswered for `silentAfterMs` (see {@link check}). Only then is what is owed bounded: a burst owed while Redis
   * takes the work is sent whole.
   */
  /** What this queue's teller names (and tells apart) as its kind of command. */
  private sending(): string {
    return `send the ${this.options.what} it owes Redis`;
  }

  private stuck(): boolean {
    return !this.options.link.isReady || this.failing || this.silent;
  }

  /** Drops the oldest keys past `max` (never the one on the wire, whose send may yet land) and reports it. */
  private trim(): void {
    let over = this.entries.size - this.options.max;
    for (const key of this.entries.keys()) {
      if (over <= 0) break;
      if (key === this.onWire) continue;
      const entry = this.entries.get(key) as Entry<T>;
      this.entries.delete(key);
      this.letGo(key, entry);
      over--;
      this.dropped++;
      if (this.dropped === 1 || this.dropped % 1000 === 0) {
        this.options.report(
          new RedisStoreError(
            "connect",
            `Redis has been out of reach (or silent, or refusing what was sent) while more than ${this.options.max} ` +
              `${this.options.what} waited to be sent; the oldest were dropped (${this.dropped} so far).`,
          ),
        );
      }
    }
  }

  /**
   * Tells `dropped` of an entry let go, unless it was ever sent: one on the wire may land yet, and
   * one whose send failed may have landed before the connection did (its answer lost with it).
   */
  private letGo(key: string, entry: Entry<T>): void {
    if (!entry.sent) this.options.dropped?.(key, entry.work);
  }

  /** Drops everything owed (what is on the wire still lands, but is not sent again). */
  clear(): void {
    const held = [...this.entries];
    this.entries.clear();
    for (const [key, entry] of held) this.letGo(key, entry);
  }

  /**
   * Sends what is owed, oldest first; joins a flush already running. Resolves `true` once nothing is
   * owed, `false` when it stopped first (a failed send, the link away, or `close`). Never rejects.
   */
  flush(): Promise<boolean> {
    if (this.running) return this.running;
    // Started a microtask later, so `running` is set before any send: a send that owes more (or a
    // `flush` from inside it) joins this flush instead of starting a second one beside it.
    const running = Promise.resolve()
      .then(() => this.drain())
      .finally(() => {
        this.running = undefined;
        this.options.onSettled?.();
      })
      .then((done) => {
        // Work owed while this flush was finishing — after the drain's last look found nothing,
        // before `running` was cleared — joined it and was never sent: it waited for the next
        // reconnect. A route latch written back after a Redis restart was lost so (its `owe`
        // came in that window when the command link's `ready` came just before it).
        if (done && this.entries.size > 0 && !this.closed && this.options.link.isReady) return this.flush();
        return done;
      });
    this.running = running;
    return running;
  }

  /**
   * For a store's `close()`: sends what is owed first when the link is up (a forget made just
   * before `close()` — a one-shot admin command — reaches Redis instead of being dropped with the
   * connection), waiting at most `boundMs`; then closes, and tells `report` (`closed`) of whatever is
   * still owed, once: a second call (during the first, or after it) gets the first's promise. Never
   * rejects.
   */
  finish(boundMs = CLOSE_BOUND_MS): Promise<void> {
    this.finishing ??= this.finishOnce(boundMs);
    return this.finishing;
  }

  private async finishOnce(boundMs: number): Promise<void> {
    if (!this.closed && this.entries.size > 0 && this.options.link.isReady) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        this.flush(),
        new Promise((resolve) => {
          timer = setTimeout(resolve, boundMs);
        }),
      ]);
      clearTimeout(timer);
    }
    this.close();
    if (this.entries.size > 0) {
      this.options.report(
        new RedisStoreError(
          "closed",
          `${this.entries.size} ${this.options.what} were not sent to Redis before close().`,
        ),
      );
    }
  }

  /** Stops sending and listening; what is still owed is left (read `size` first to report it). */
  close(): void {
    this.closed = true;
    this.options.link.off("ready", this.onReady);
    this.unwatch?.();
    this.unwatch = undefined;
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
  }

  private async drain(): Promise<boolean> {
    while (!this.closed && this.entries.size > 0) {
      if (!this.options.link.isReady) return false;
      const [key, entry] = this.entries.entries().next().value as [string, Entry<T>];
      this.onWire = key;
      entry.sent = true;
      try {
        const answer = this.options.send(key, entry.work);
        this.watch(answer);
        await answer;
      } catch (error) {
        this.unwatch?.();
        this.onWire = undefined;
        this.silent = false;
        this.failing = true;
        if (this.options.teller) this.options.teller.fail(error, this.sending());
        else this.options.report(error);
        this.later();
        return false;
      }
      this.unwatch?.();
      this.onWire = undefined;
      this.silent = false;
      this.failing = false;
      this.options.teller?.ok(this.sending());
      if (this.entries.get(key) === entry) this.entries.delete(key);
    }
    this.backoff = 0;
    if (this.entries.size === 0) this.dropped = 0;
    return this.entries.size === 0;
  }

  /**
   * Watches the send just started: once it has gone unanswered for `silentAfterMs`, counted from the
   * first turn of the event loop after it was started — when the client has written its command, and
   * this process is first free to read an answer — and then for a grace more with the loop free,
   * Redis is silent: what is owed past `max` (a burst made before that could be told) is cut down to
   * it, and so is what is owed after, until a send settles. Counted from the hand-off, a process busy
   * right after it (a long synchronous burst of forgets or ended runs) spent the bound before the
   * command was written, and a Redis slowed by load, left only the grace, was taken for silent and
   * what was owed past `max` dropped. A process busy past the bound after the write is given the
   * grace too: the answer may be waiting unread in its socket. See `unanswered` in connection.ts.
   */
  private watch(answer: Promise<unknown>): void {
    this.unwatch = unanswered(answer, this.silentAfterMs, () => {
      if (this.closed || this.onWire === undefined) return;
      this.silent = true;
      if (this.entries.size > this.options.max) this.trim();
    });
  }

  /** Tries again after a pause: a send can fail with the link still up (Redis loading, busy). */
  private later(): void {
    if (this.closed || this.retry) return;
    this.backoff = Math.min(Math.max(this.backoff * 2, 25), 1000);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.flush();
    }, this.backoff);
    this.retry.unref();
  }
}

/**
 * A tenant store's `close()`: marks the store closed (`mark`), sends what `owed` still holds (a
 * forget or latch made just before `close()` still reaches Redis when it is there, see
 * {@link Owed.finish}), then closes the connections. One close: a second call (during the first,
 * or after it) gets the first's promise.
 */
export function closeOnce(
  owed: { finish(): Promise<void> },
  mark: () => void,
  ...connections: readonly RedisConnection[]
): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= (async () => {
      mark();
      await owed.finish();
      for (const connection of connections) shut(connection);
    })();
    return closing;
  };
}
