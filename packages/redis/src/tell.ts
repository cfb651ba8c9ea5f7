import { ErrorReply, TimeoutError } from "@redis/client";
import { type Resolved, refusedForGood, shownUrl } from "./connection.js";
import { RedisStoreError } from "./errors.js";

/**
 * What a store tells `onError` of the Redis commands it sends on its own (writes, renewals, reloads
 * after a reconnect), none of which a caller awaits: each failure as `RedisStoreError` naming the
 * URL (its password as `***`) and what failed, the client's error on `cause`; and a failure of the
 * same kind as the last one told (the same error reply, `OOM`, `LOADING`, …, or the same connection
 * error) not told again until Redis takes a kind of command that failed so ({@link Teller.ok};
 * any command, after a lost connection) or fails otherwise. A retry every second while Redis is out of memory for an hour is
 * told once, not 3 600 times — also while another kind of command (an expiry renewal, which Redis
 * takes out of memory) goes through between the retries.
 */
export interface Teller {
  /**
   * Tells `onError` that `what` (a phrase: "write a tenant's latches") failed with `error`. `once`:
   * a kind of command that is not tried again until something else brings it back (the reload after
   * a reconnect), so its going through may never come to say the failure passed.
   */
  fail(error: unknown, what: string, once?: boolean): void;
  /**
   * Tells `error` (already this package's), unless its kind (`kindOf(cause)`) is the one last told;
   * `what` names the kind of command, as {@link Teller.ok} is given it; `once` as for {@link Teller.fail}.
   */
  tell(error: RedisStoreError, cause: unknown, what: string, once?: boolean): void;
  /**
   * Redis took a `what` command: when that kind of command failed with the failure last told (or
   * that failure was a lost connection, or only kinds that run once failed so), the next failure is
   * told, whatever it is.
   */
  ok(what: string): void;
}

/** The kind of failure `error` is, for telling a repeat from a change: the reply's first word, or the error's name. */
export function kindOf(error: unknown): string {
  if (error instanceof ErrorReply)
    return `reply:${error.message.match(/^[A-Z]+/)?.[0] ?? error.message.slice(0, 40)}`;
  if (error instanceof TimeoutError) return "timeout";
  if (error instanceof Error) return `error:${error.name}:${error.constructor.name}`;
  return `other:${String(error).slice(0, 40)}`;
}

/** The client's error as a message quotes it: its first 500 characters. */
export function quoted(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  if (text.length <= 500) return text.toWellFormed();
  // Never cut inside a character: a high surrogate at the cut goes with the rest.
  const end = /[\uD800-\uDBFF]/.test(text[499]!) ? 499 : 500;
  return `${text.slice(0, end)}… (${text.length - end} more characters)`.toWellFormed();
}

/** The typed error for `what` failing with the client's `error` (passed through when already typed). */
export function storeFailure(resolved: Resolved, error: unknown, what: string, who: string): RedisStoreError {
  if (RedisStoreError.isInstance(error)) return error;
  const at = `Redis at ${shownUrl(resolved.url)}`;
  if (error instanceof ErrorReply) {
    return new RedisStoreError(
      "refused",
      refusedForGood(error)
        ? `${who} could not ${what}: ${at} refused it (${quoted(error)}).`
        : `${who} could not ${what} for now: ${at} answered ${quoted(error)}. It is tried again; ` +
            "told once while the same refusal lasts.",
      { cause: error },
    );
  }
  return new RedisStoreError(
    "connect",
    `${who} could not ${what}: ${at} ${
      error instanceof TimeoutError
        ? "did not answer in time"
        : "could not be reached or the connection failed"
    } (${quoted(error)}). It is tried again once Redis is back; told once while the same failure lasts.`,
    { cause: error },
  );
}

/** A {@link Teller} for one store (`who`, as messages name it: "The capability store"). */
export function teller(resolved: Resolved, who: string): Teller {
  let last: string | undefined;
  /** The kinds of command that failed with `last` and have not gone through since. */
  const failing = new Set<string>();
  /** Those of `failing` that run once (`once`): not tried again, they would hold `last` for good. */
  const once = new Set<string>();
  const tell = (error: RedisStoreError, cause: unknown, what: string, runsOnce = false): void => {
    const kind = `${error.code}|${kindOf(cause)}`;
    if (kind !== last) {
      last = kind;
      failing.clear();
      once.clear();
      resolved.report(error);
    }
    failing.add(what);
    if (runsOnce) once.add(what);
  };
  return {
    tell,
    fail(error, what, runsOnce) {
      // Already this package's (a drop past the bound, a write after close): told as it is, always.
      if (RedisStoreError.isInstance(error)) {
        resolved.report(error);
        return;
      }
      tell(storeFailure(resolved, error, what, who), error, what, runsOnce);
    },
    ok(what) {
      // Another kind of command going through (a renewal while writes are refused) says nothing of
      // the failure told: before, it let the same refusal be told again at every retry.
      // A kind of command that failed so went through (or, after a lost connection, any command):
      // the failure passed.
      if (last === undefined) return;
      if (!(failing.has(what) || last.startsWith("connect|error:"))) {
        // A kind that runs once is not tried again to say the failure passed (a reload after a
        // reconnect refused): before, its failure was held as told for good, and a later, separate
        // failure of the same kind (of a write, hours on) was never told. Once only such kinds failed
        // so, another kind going through says Redis takes commands again.
        for (const kind of once) failing.delete(kind);
        once.clear();
        if (failing.size > 0) return;
      }
      last = undefined;
      failing.clear();
      once.clear();
    },
  };
}
