const LEDGER_ERROR = Symbol.for("@loopwright/ledger.LedgerError");

/** What kind of failure a {@link LedgerError} reports. */
export type LedgerErrorCode =
  /** A messages argument that is not an array of message objects. */
  | "invalid-messages"
  /** An option or argument out of its range: a non-positive limit, a negative keepLast, a bad ratio. */
  | "invalid-option"
  /** A `from`/`to` range outside the transcript. */
  | "invalid-range"
  /** A ledger that is not an array of `{ through, prompt, epoch }` entries. */
  | "invalid-ledger"
  /** The summariser passed to `runCompaction` or `compactTranscript` threw; the error is on `cause`. */
  | "summary-failed"
  /**
   * `runCompaction` or `compactTranscript` was handed a signal already aborted (or aborted while the
   * honoured hooks ran, or while the summary was written): no fold was made; the signal's `reason`
   * is on `cause`.
   */
  | "aborted";

/**
 * The one error this package throws: `code` says which input was wrong (or that the summariser
 * failed), the message says what was given and what to pass instead, and `cause` carries the
 * original failure where there was one.
 */
export class LedgerError extends Error {
  override readonly name: string = "LedgerError";
  readonly [LEDGER_ERROR] = true;
  /** Which kind of failure this is. */
  readonly code: LedgerErrorCode;

  constructor(code: LedgerErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for a `LedgerError` from any installed copy of this package. */
  static isInstance(value: unknown): value is LedgerError {
    return (
      typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[LEDGER_ERROR] === true
    );
  }
}

/** A short description of a value's type, for error messages. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : `the number ${value}`;
  if (typeof value === "string") return `the string ${JSON.stringify(value.slice(0, 40))}`;
  return typeof value === "object" ? "an object" : String(typeof value);
}

/** How deep a prototype chain {@link setting} follows: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/**
 * `given[name]` where `given` holds it itself, or a prototype of its own does (a class's getter or
 * method); `undefined` for anything that is not an object, and where only `Object.prototype` holds
 * it: a field some code set on a polluted `Object.prototype` (`forced = true`, which overrode every
 * veto; `previous`, whose text went into every summary) is nobody's option. Throws what `given` throws.
 */
export function setting(given: unknown, name: string): unknown {
  if (typeof given !== "object" || given === null) return undefined;
  let at: object | null = given;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    if (Object.hasOwn(at, name)) return (given as Record<string, unknown>)[name];
    at = Object.getPrototypeOf(at) as object | null;
  }
  return undefined;
}

/**
 * The fields `names` of `given` as {@link setting} reads them, each once, into an object with no
 * prototype (a field left out reads as `undefined`). Options that throw when read (a getter, a
 * revoked Proxy) are `invalid-option`, naming `what`.
 */
export function readSettings<T extends object>(given: T, names: readonly string[], what: string): T {
  const copy = Object.create(null) as Record<string, unknown>;
  try {
    for (const name of names) {
      const value = setting(given, name);
      if (value !== undefined) copy[name] = value;
    }
  } catch (cause) {
    throw new LedgerError("invalid-option", `${what} could not be read (it threw when read).`, { cause });
  }
  return copy as T;
}

/** What {@link checkNumber} takes: a range (`min` open where `exclusiveMin`), and whole numbers only where `integer`. */
interface NumberRule {
  min?: number;
  max?: number;
  exclusiveMin?: boolean;
  integer?: boolean;
}

/** Every field of a {@link NumberRule}, at what a rule leaving it out means. */
const ANY_NUMBER: Required<NumberRule> = {
  min: 0,
  max: Number.POSITIVE_INFINITY,
  exclusiveMin: false,
  integer: false,
};

/** Throws `invalid-option` unless `value` is a finite number inside [min, max] (and > min when open). */
export function checkNumber(value: unknown, name: string, where: string, rule: NumberRule = {}): number {
  // The rule's fields over every default, so none is read from a polluted Object.prototype: a
  // destructuring default (`{ max = Infinity }`) reads an inherited `max`, and
  // `Object.prototype.max = 1` refused every charsPerToken above 1, `.integer` a fractional one.
  const { min, max, exclusiveMin, integer } = { ...ANY_NUMBER, ...rule };
  const ok =
    typeof value === "number" &&
    Number.isFinite(value) &&
    (exclusiveMin ? value > min : value >= min) &&
    value <= max &&
    (!integer || Number.isInteger(value));
  if (!ok) {
    const range = `${exclusiveMin ? "above" : "at least"} ${min}${max === Number.POSITIVE_INFINITY ? "" : ` and at most ${max}`}`;
    throw new LedgerError(
      "invalid-option",
      `${where}: ${name} must be ${integer ? "an integer" : "a finite number"} ${range}, and was ${describe(value)}.`,
    );
  }
  return value as number;
}

/** Throws `invalid-messages` unless `messages` is an array of objects. */
export function checkMessages(messages: unknown, where: string, name = "messages"): void {
  try {
    checkMessageList(messages, where, name);
  } catch (cause) {
    if (LedgerError.isInstance(cause)) throw cause;
    // A revoked Proxy or a throwing getter where a message should be.
    throw new LedgerError("invalid-messages", `${where}: ${name} could not be read (it threw when read).`, {
      cause,
    });
  }
}

function checkMessageList(messages: unknown, where: string, name: string): void {
  if (!Array.isArray(messages)) {
    throw new LedgerError(
      "invalid-messages",
      `${where}: ${name} must be an array of chat messages, and was ${describe(messages)}.`,
    );
  }
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      throw new LedgerError(
        "invalid-messages",
        `${where}: ${name}[${i}] must be a message object ({ role, content }), and was ${describe(message)}.`,
      );
    }
    // Its role and content read once here, so one that throws when read (a getter, a revoked Proxy)
    // is named by its index rather than escaping later as its own error (pruneToolResults,
    // planCompaction and applyCompaction read the role unguarded).
    for (const field of ["role", "content"] as const) {
      try {
        void (message as Record<string, unknown>)[field];
      } catch (cause) {
        throw new LedgerError(
          "invalid-messages",
          `${where}: ${name}[${i}] could not be read (its ${field} threw when read: ${errorText(cause)}).`,
          { cause },
        );
      }
    }
  }
}

/** A thrown value as text; never throws (a message getter that throws, no prototype). */
function errorText(error: unknown): string {
  try {
    return error instanceof Error ? String(error.message).slice(0, 200) : String(error).slice(0, 200);
  } catch {
    return "an error that could not be read";
  }
}
