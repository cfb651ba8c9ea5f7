const REDIS_STORE_ERROR = Symbol.for("@loopwright/redis.RedisStoreError");

/** What kind of failure a {@link RedisStoreError} reports. */
export type RedisStoreErrorCode = "invalid-option" | "connect" | "closed" | "refused";

/**
 * The error a Redis-backed store throws: bad options, an unreachable server, or use after `close()`;
 * and, through `onError` only, a write Redis refused.
 *
 * `code` is `invalid-option` for options it cannot use, `connect` when it cannot reach
 * its server when it is made, or the server does not answer within `connectTimeoutMs` (as it starts, or a bus's
 * `readHistory`; the client's error on `cause`; through `onError`, also a write left unanswered or events dropped while Redis was away), `closed` when used after `close()`, `refused` (told to `onError`; thrown only by the capability store's `sync()`, for latch writes Redis answered with an error) when Redis answered
 * that it will not store a run's events, such as a key that already holds another type (or, through
 * `onError`, not for now: out of memory, loading, read-only; the events are kept and sent again), or a reload
 * passed over a tenant key it could not read (another type, or an id no instance writes). The message names the option or the URL (its password as `***`) and says what to do.
 */
export class RedisStoreError extends Error {
  override readonly name: string = "RedisStoreError";
  readonly [REDIS_STORE_ERROR] = true;
  /** Which kind of failure this is. */
  readonly code: RedisStoreErrorCode;

  constructor(code: RedisStoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for a `RedisStoreError` from any installed copy of this package. */
  static isInstance(value: unknown): value is RedisStoreError {
    return (
      typeof value === "object" &&
      value !== null &&
      (value as Record<symbol, unknown>)[REDIS_STORE_ERROR] === true
    );
  }
}
