const REDIS_STORE_ERROR = Symbol.for("@loopwright/redis.RedisStoreError");

/** What kind of failure a {@link RedisStoreError} reports. */
export type RedisStoreErrorCode = "invalid-option" | "connect" | "closed";

/**
 * Thrown when a Redis-backed store is given options it cannot use (`invalid-option`), cannot reach
 * its server when it is made (`connect`, the client's error on `cause`), or is used after `close()`
 * (`closed`). The message names the option or the URL and says what to do.
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
