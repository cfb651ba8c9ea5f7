const SIDE_TASK_ERROR = Symbol.for("@loopwright/side-task.SideTaskError");

/**
 * What went wrong in a side task.
 *
 * - `invalid-input`: an argument was not what the function takes (an empty model name, a user turn
 *   that is neither text nor content parts, a schema that is not an object…). Fix the call.
 * - `request-failed`: the server answered with an error nothing here could work around.
 * - `timeout`: the side task ran past its time bound.
 * - `aborted`: the caller's signal fired.
 * - `no-reply`: the server answered without a message to read.
 * - `inexact-number`: `askJson`'s answer holds a number JavaScript cannot hold as written (an
 *   integer past ±(2^53 − 1), a number past a double's range) where the schema takes no string; the
 *   message names its path and digits, and `cause` (a `ToolCallsError`) lists them in `numbers`.
 */
export type SideTaskErrorCode =
  | "invalid-input"
  | "request-failed"
  | "timeout"
  | "aborted"
  | "no-reply"
  | "inexact-number";

/**
 * The error of this package: a side task that could not be done, or a bad argument.
 *
 * Thrown by `ask`, `askReply` and `askJson` when the side task could not be done, and for bad
 * arguments anywhere in this package. `code` says which; `cause` is the underlying failure (the
 * SDK's `APIError`, a timeout) where there is one.
 */
export class SideTaskError extends Error {
  override readonly name: string = "SideTaskError";
  readonly [SIDE_TASK_ERROR] = true;
  /** Which kind of failure. */
  readonly code: SideTaskErrorCode;

  constructor(code: SideTaskErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for a `SideTaskError` from any installed copy of this package. */
  static isInstance(value: unknown): value is SideTaskError {
    return (
      typeof value === "object" &&
      value !== null &&
      (value as Record<symbol, unknown>)[SIDE_TASK_ERROR] === true
    );
  }
}

/** Names a value's kind for an error message. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return value === "" ? "an empty string" : "a string";
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}

/** A caught unknown as text for a notice. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** True for a plain object (not null, not an array); deliberately not a type guard, so a typed argument keeps its type. */
export function isPlainObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
