import { ownDescriptor } from "./protoless.js";

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
    try {
      return (
        typeof value === "object" &&
        value !== null &&
        (value as Record<symbol, unknown>)[SIDE_TASK_ERROR] === true
      );
    } catch {
      // A revoked Proxy, a Proxy whose `get` throws: no error of ours.
      return false;
    }
  }
}

/**
 * Names a value's kind for an error message. Never throws: a host's value may be a revoked Proxy
 * (which `Array.isArray` throws on) or a function whose `toString` throws.
 */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "string") return value === "" ? "an empty string" : "a string";
  if (typeof value === "object") {
    try {
      return Array.isArray(value) ? "an array" : "an object";
    } catch {
      return "a revoked Proxy";
    }
  }
  if (typeof value === "function") return "a function";
  // A number, a boolean, a BigInt or a symbol: `String` writes each of them and never throws.
  return `${typeof value} ${String(value)}`;
}

/** How much of a thrown value's own words {@link errorText} gives. */
const ERROR_TEXT_CHARS = 2000;

/**
 * A caught unknown as text for a notice or a message: an `Error`'s message, any other value as
 * `String` writes it. Never throws, whatever a host's code threw — a revoked Proxy, an error whose
 * `message` getter throws, an object whose `toString` throws or that has none
 * (`Object.create(null)`): then the text says which, and what reading it threw.
 */
export function errorText(error: unknown): string {
  let isError: boolean;
  try {
    isError = error instanceof Error;
  } catch (reading) {
    return `${describeValue(error)} that could not be read (${readingFailure(reading)})`;
  }
  if (isError) {
    let message: unknown;
    try {
      message = (error as Error).message;
    } catch (reading) {
      return `an error whose message could not be read (${readingFailure(reading)})`;
    }
    if (typeof message === "string") return message;
  }
  try {
    const text: unknown = String(error);
    if (typeof text === "string") return text;
  } catch (reading) {
    return `${describeValue(error)} that could not be written as text (${readingFailure(reading)})`;
  }
  return describeValue(error);
}

/**
 * What reading a hostile value threw, in words that are safe to read: a plain `Error`'s (or a
 * `TypeError`'s) own string `message`, else its kind alone; never reads anything that can throw again.
 */
function readingFailure(thrown: unknown): string {
  try {
    const own = typeof thrown === "object" && thrown !== null ? ownDescriptor(thrown, "message") : undefined;
    if (own && "value" in own && typeof own.value === "string") {
      const name = thrown instanceof TypeError ? "TypeError" : "it threw";
      const words =
        own.value.length <= ERROR_TEXT_CHARS ? own.value : `${own.value.slice(0, ERROR_TEXT_CHARS)}…`;
      return `${name}: ${words}`;
    }
  } catch {
    // A revoked Proxy thrown while reading: said below by its kind.
  }
  return `it threw ${describeValue(thrown)}`;
}

/** True for a plain object (not null, not an array); deliberately not a type guard, so a typed argument keeps its type. */
export function isPlainObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
