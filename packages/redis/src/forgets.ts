import { randomBytes } from "node:crypto";
import { FORGOTTEN_MS } from "./owed.js";

/**
 * Lua: records a forget's (or a reset's) mark in the forgotten set (KEYS[1]; ARGV[1..4]: when,
 * mark, cutoff, kept ms — see {@link ForgetLog.remembered}), trims marks past the cutoff and renews
 * the set's expiry. The capability store and calibration both start their forget scripts with it.
 */
export const REMEMBER_LUA = `
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
`;

/**
 * How long a mark is kept here: a day past the record's `FORGOTTEN_MS`, so a mark heard from a host
 * whose clock runs ahead of this one's (by less than a day) is still known while
 * {@link ForgetLog.catchUp} would take its record, scored by that host's clock, as within the 7 days.
 */
export const KEPT_MS = FORGOTTEN_MS + 24 * 60 * 60 * 1000;
/** How often, at most, the marks' ages are looked at while they stay few. */
const LOOK_EVERY_MS = 60 * 60 * 1000;
/** Marks below this many are looked at only hourly. */
const LOOK_PAST = 1024;

/**
 * One store's record of forgets (the capability store's and calibration's), as this instance knows
 * it, and the generation its writes carry.
 *
 * Every forget (or reset) moves the store's generation (`<prefix>…:generation`) on by one and
 * announces it; a write carries the last generation this instance was told of and is refused when
 * Redis is past it. Each forget is also kept in Redis, for `FORGOTTEN_MS`, as a mark
 * (`<nonce>␀<name>`) in a sorted set by when it was made; an instance whose subscription was down
 * reads that set when it is back and carries out each forget it did not know of.
 *
 * The marks it knows of (`seen`) are its own forgets and those it was told of or read: its own,
 * echoed back, or read again after a reconnect, is not taken for one it missed (that would drop a
 * latch or reading it learned since). Its own stay only while they may reach Redis — {@link unsent}
 * lets go of one whose forget was dropped unsent from the work owed — so a long outage with many
 * forgets holds as many marks as forgets are owed (`MAX_OWED`), not one per forget.
 *
 * Every mark goes by age too, Redis reachable or not: one older than {@link KEPT_MS} (counted from
 * when it was made or last sent here, or heard; for one read from Redis, from when it was made) is
 * let go when a mark is next added and a look is due (at most hourly, or once the marks have doubled
 * since the last look; see `tidy`), so a healthy process holds the marks of about the last 8 days,
 * not one per forget ever made or heard. That leaves the race the marks close closed: a mark is kept
 * a day past the record's 7, and {@link catchUp} passes over a mark older than `FORGOTTEN_MS` still
 * in Redis (the record trims it at its next forget) rather than take it for one missed.
 */
export class ForgetLog {
  /** Each mark known here, and when (ms, see {@link KEPT_MS}) its age is counted from. */
  private readonly seen = new Map<string, number>();
  /** When the next look at the marks' ages is due, however few they are. */
  private lookAt = 0;
  /** How many marks make a look due before `lookAt`. */
  private lookPast = LOOK_PAST;
  /** The last generation this instance has been told of: what its writes carry. */
  generation = 0;
  /** The highest generation announced since the last {@link catchUp} began reading it. */
  private heard = 0;

  /**
   * `ask`: a bounded read on the store's command connection; `generationKey` and `forgottenKey`: the
   * store's generation counter and its sorted set of marks.
   */
  constructor(
    private readonly ask: <T>(command: string[]) => Promise<T>,
    private readonly generationKey: string,
    private readonly forgottenKey: string,
  ) {}

  /** How many marks are known here (for the tests). */
  get size(): number {
    return this.seen.size;
  }

  /**
   * A fresh mark for a forget of `name` made here now (a nonce, then the name; the capability
   * store's reset uses the name ""), known from now on, and when it was made.
   */
  own(name: string): { mark: string; at: number } {
    const mark = `${randomBytes(9).toString("base64url")}\u0000${name}`;
    const at = Date.now();
    this.add(mark, at);
    return { mark, at };
  }

  /**
   * Lets go of one of this instance's own marks whose forget will never reach Redis (dropped from
   * the work owed before it was sent): no echo and no record of it will come.
   */
  unsent(mark: string): void {
    this.seen.delete(mark);
  }

  /**
   * The forget's ARGV as {@link REMEMBER_LUA} reads it (when, mark, cutoff, kept ms), then the
   * channel it is announced on.
   */
  remembered(mark: string, at: number, channel: string): string[] {
    // Sent now: its echo, or its record read after a reconnect, may come from now on, so its age
    // counts from now (a forget owed through an outage longer than marks are kept was let go).
    const now = Date.now();
    this.add(mark, now);
    return [String(at), mark, String(now - FORGOTTEN_MS), String(FORGOTTEN_MS), channel];
  }

  /**
   * Takes an announcement's generation and mark (either may be absent). Answers `true` when the mark
   * was known here already — this instance's own forget echoed back, carried out when it was made,
   * so what it learned since stays — and the announcement is to be passed over.
   */
  announced(generation: unknown, mark: unknown): boolean {
    // Announced in the order Redis made them: the forgets up to this one are done here.
    if (typeof generation === "number") {
      this.heard = Math.max(this.heard, generation);
      this.generation = Math.max(this.generation, generation);
    }
    if (typeof mark !== "string") return false;
    if (this.seen.has(mark)) return true;
    this.add(mark, Date.now());
    return false;
  }

  /**
   * Reads the forgets Redis remembers and hands each this instance did not know of to `missed`
   * (its name, and when it was made by the forgetting host's clock), oldest first; then lets go of
   * the marks past {@link KEPT_MS} and takes Redis's generation.
   *
   * A mark older than `FORGOTTEN_MS` is past the record's keeping (Redis trims it at its next
   * forget) and is passed over, not carried out: it may be one this instance made or heard and has
   * let go since, and carried out again it would drop what was learned after it. An instance away
   * that long can no longer tell what was forgotten meanwhile (as the README says).
   */
  async catchUp(missed: (name: string, at: number) => void): Promise<void> {
    // Read before the marks: every forget up to this generation has its mark among them, so once
    // they are carried out this instance may write with it.
    this.heard = 0;
    const current = Number((await this.ask<string | null>(["GET", this.generationKey])) ?? 0);
    const flat = await this.ask<string[]>(["ZRANGE", this.forgottenKey, "0", "-1", "WITHSCORES"]);
    const now = Date.now();
    const past = now - FORGOTTEN_MS;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const mark = flat[i] as string;
      const at = Number(flat[i + 1]);
      if (this.seen.has(mark) || at < past) continue;
      this.seen.set(mark, at);
      missed(mark.slice(mark.indexOf("\u0000") + 1), at);
    }
    this.tidy(now);
    // Set, not only raised (after Redis lost its data the generation starts again from 0), but never
    // below one announced while it was read: that forget is carried out here already.
    if (Number.isFinite(current)) this.generation = Math.max(current, this.heard);
  }

  /** Knows `mark`, its age counted from `at`, and lets go of the old marks when a look is due. */
  private add(mark: string, at: number): void {
    this.seen.set(mark, at);
    // Due by number, by time, or because the clock was set back past the last look.
    const due = at >= this.lookAt || at < this.lookAt - LOOK_EVERY_MS;
    if (due || this.seen.size >= this.lookPast) this.tidy(at);
  }

  /**
   * Lets go of every mark past {@link KEPT_MS} at `now`: one pass, made at most hourly or once the
   * marks have doubled since the last (a few steps per mark added, on average), and no timer.
   */
  private tidy(now: number): void {
    const old = now - KEPT_MS;
    for (const [mark, at] of this.seen) if (at < old) this.seen.delete(mark);
    this.lookAt = now + LOOK_EVERY_MS;
    this.lookPast = Math.max(LOOK_PAST, 2 * this.seen.size);
  }
}

/** Each store's log, for {@link marksKnown}. */
const logs = new WeakMap<object, ForgetLog>();

/** Ties `store` to its log, so {@link marksKnown} can count its marks. */
export function registerForgetLog(store: object, log: ForgetLog): void {
  logs.set(store, log);
}

/**
 * How many forgets' (and resets') marks a capability or calibration store made here holds as known
 * (for the tests; not exported from the package). `undefined` for any other object.
 */
export function marksKnown(store: object): number | undefined {
  return logs.get(store)?.size;
}

/**
 * What this instance did while reads of Redis were on their way: each read opens a set, and every
 * name noted before it closes lands in each set open. Redis may have answered a read before a
 * forget (or a write) made here meanwhile ran there, so what the read brings of those names is from
 * before it: the capability and calibration stores pass over (or read again) what their open set
 * holds, rather than lay stale state back on this instance alone.
 */
export class WhileReading {
  readonly #open = new Set<Set<string>>();

  /** A read begins: the names noted from now until {@link close}. */
  open(): Set<string> {
    const since = new Set<string>();
    this.#open.add(since);
    return since;
  }

  close(since: Set<string>): void {
    this.#open.delete(since);
  }

  /** Something was done here to `name`: every read on its way is told. */
  note(name: string): void {
    for (const since of this.#open) since.add(name);
  }
}
