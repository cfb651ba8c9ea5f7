import { cutTo, oneLine, wellFormed } from "./text.js";

const HOOKS_ERROR = Symbol.for("@loopwright/hooks.HooksError");

/** What kind of caller mistake a {@link HooksError} reports. */
export type HooksErrorCode =
  /** A runner that is not a function. */
  | "invalid-runner"
  /** An event name that is not one of the six, or one that cannot be used where it was given. */
  | "invalid-event"
  /** A messages argument that is not an array of message objects (one with a hole included). */
  | "invalid-messages"
  /** An index outside the transcript, or one that does not point at a question. */
  | "invalid-index"
  /** Text that is not a string: the context for `withContext`, the text or source for `untrusted`. */
  | "invalid-text"
  /** An option of the wrong type: a session id that is not a string, an offset below zero, a signal that is not one, `untrusted`'s options that are not an object. */
  | "invalid-option";

/**
 * The one error this package throws, and only for a caller's mistake: `code` says which argument was
 * wrong, the message says what was given and what to pass instead. A hook that fails never becomes
 * one of these: it becomes a note.
 */
export class HooksError extends Error {
  override readonly name: string = "HooksError";
  readonly [HOOKS_ERROR] = true;
  /** Which argument was wrong. */
  readonly code: HooksErrorCode;

  constructor(code: HooksErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for a `HooksError` from any installed copy of this package. */
  static isInstance(value: unknown): value is HooksError {
    return (
      typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[HOOKS_ERROR] === true
    );
  }
}

/** A short description of a value's type, for error messages and notes. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (arrayOrRevoked(value) === undefined) return "a revoked Proxy";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : `the number ${value}`;
  if (typeof value === "string") return `the string ${JSON.stringify(value.slice(0, 40))}`;
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/**
 * `Array.isArray(value)`, or `undefined` for a revoked Proxy, where `Array.isArray` throws a bare
 * TypeError: the caller then throws its own `HooksError` naming the argument.
 */
export function arrayOrRevoked(value: unknown): boolean | undefined {
  try {
    return Array.isArray(value);
  } catch {
    return undefined;
  }
}

/** How much of a hook's or runner's error a note quotes. */
const MAX_ERROR_CHARS = 300;

/**
 * The text of a thrown value, for a note: on one line (each run of line breaks and other control
 * characters a space, so a hook's error cannot forge a line of its own in a host's log), at most
 * `MAX_ERROR_CHARS` characters (ending in `…` when cut, never inside a character). Never throws, whatever was thrown — an Error whose message throws when read, an object with
 * no prototype and a toJSON that throws — so a runner's failure stays a note, never a rejection.
 */
export function errorText(error: unknown): string {
  let text: string;
  try {
    text = readError(error);
  } catch {
    text = "an error that could not be read";
  }
  // On one line (a note is one), never cut inside a character, and no half of one left alone.
  const flat = oneLine(wellFormed(text));
  return flat.length > MAX_ERROR_CHARS ? `${cutTo(flat, MAX_ERROR_CHARS)}…` : flat;
}

function readError(error: unknown): string {
  if (error instanceof Error) return String(error.message || error.name);
  if (typeof error === "string") return error;
  try {
    const json = JSON.stringify(error);
    if (typeof json === "string") return json;
  } catch {
    // Not JSON: its own string, below.
  }
  return String(error);
}
