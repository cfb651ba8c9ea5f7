import type { InexactNumber } from "./exact-numbers.js";
import { ownOption } from "./own.js";

const TOOL_ARGUMENTS_ERROR = Symbol.for("@loopwright/tool-calls.ToolArgumentsError");
const TOOL_CALLS_ERROR = Symbol.for("@loopwright/tool-calls.ToolCallsError");

/**
 * Why a call's arguments could not be read: cut off at the token ceiling, not an object, or
 * holding a number JavaScript cannot hold as written (`"inexact"`).
 */
export type ToolArgumentsErrorKind = "truncated" | "malformed" | "inexact";

function marked(value: unknown, marker: symbol): boolean {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
}

/**
 * Thrown by `parseToolArguments` when a call's arguments are still not a JSON object after every
 * repair, or when they hold a number that would reach the tool as another number. `kind` (also
 * `code`) is `"truncated"` when the turn stopped at the token ceiling, `"inexact"` for such a
 * number (listed in `numbers`, each with its path and digits) and `"malformed"` otherwise; the
 * message is written for the model to read and act on, so it can be sent back as the tool's
 * result as is. `raw` is the text that could not be read.
 */
export class ToolArgumentsError extends Error {
  override readonly name: string = "ToolArgumentsError";
  readonly [TOOL_ARGUMENTS_ERROR] = true;
  /** Why the arguments could not be read. */
  readonly kind: ToolArgumentsErrorKind;
  /** The same as `kind`, under the name every loopwright error uses. */
  readonly code: ToolArgumentsErrorKind;
  /** The arguments exactly as the model wrote them. */
  readonly raw: string;
  /** For `"inexact"`: the numbers refused, each with its path and the digits written. */
  readonly numbers?: readonly InexactNumber[];

  constructor(
    kind: ToolArgumentsErrorKind,
    message: string,
    raw: string,
    options?: { cause?: unknown; numbers?: readonly InexactNumber[] },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.code = kind;
    this.raw = raw;
    if (options?.numbers) this.numbers = options.numbers;
  }

  /** True for a `ToolArgumentsError` from any installed copy of this package. */
  static isInstance(value: unknown): value is ToolArgumentsError {
    return marked(value, TOOL_ARGUMENTS_ERROR);
  }
}

/**
 * What a {@link ToolCallsError} reports: bad input (`"invalid-text"`, `"invalid-tools"`,
 * `"invalid-arguments"` — `toolForArguments` given arguments that are not an object —
 * `"invalid-options"`), or (`"inexact"`) JSON holding a number JavaScript cannot hold as written
 * where `parseJson`'s `takesString` takes no string.
 */
export type ToolCallsErrorCode =
  | "invalid-text"
  | "invalid-tools"
  | "invalid-options"
  | "invalid-arguments"
  | "inexact";

/**
 * Thrown when `recoverToolCalls` or `parseJson` is handed something that is not text, a tool
 * list that is not an array (also `toolForArguments`, and arguments that are not an object), or options (`parseToolArguments`'s, `recoverToolCalls`',
 * `parseJson`'s) that are not an object; and by `parseJson` given `takesString` (`"inexact"`) for
 * a reply holding an integer or out-of-range number it would read as another number, each listed
 * in `numbers`. `code` says which; the message says what was wrong.
 */
export class ToolCallsError extends Error {
  override readonly name: string = "ToolCallsError";
  readonly [TOOL_CALLS_ERROR] = true;
  /** Which input was wrong. */
  readonly code: ToolCallsErrorCode;
  /** For `"inexact"`: the numbers refused, each with its path and the digits written. */
  readonly numbers?: readonly InexactNumber[];

  constructor(
    code: ToolCallsErrorCode,
    message: string,
    options?: { cause?: unknown; numbers?: readonly InexactNumber[] },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    if (options?.numbers) this.numbers = options.numbers;
  }

  /** True for a `ToolCallsError` from any installed copy of this package. */
  static isInstance(value: unknown): value is ToolCallsError {
    return marked(value, TOOL_CALLS_ERROR);
  }
}

/**
 * Names a value's kind for an error message: `undefined`, `null`, `an array`, `a string`, `an
 * object`, `a function`, `a symbol`, or a number, boolean or bigint with its value (`the number 5`).
 */
export function describeValue(value: unknown): string {
  if (value === undefined || value === null) return String(value);
  if (Array.isArray(value)) return "an array";
  const kind = typeof value;
  if (kind === "string") return value === "" ? "an empty string" : "a string";
  if (kind === "number" || kind === "boolean") return `the ${kind} ${String(value)}`;
  if (kind === "bigint") return `the bigint ${String(value)}n`;
  // `a function`, `a symbol`.
  return kind === "object" ? "an object" : `a ${kind}`;
}

/**
 * Reads an options argument once into a plain copy of its text `fields`: `null` or `undefined`
 * options are none, and a field may be a string, `null` or left out. Options that are not an
 * object, cannot be read (a throwing getter, a revoked Proxy) or hold a field of another type are
 * a {@link ToolCallsError} (`"invalid-options"`) naming what was wrong, never a throw from inside.
 */
export function readOptions<K extends string>(
  caller: string,
  given: unknown,
  fields: readonly K[],
): Partial<Record<K, string | null>> {
  const shape = `{ ${fields.map((f) => `${f}?`).join(", ")} }`;
  const refuse = (what: string, cause?: unknown) =>
    new ToolCallsError(
      "invalid-options",
      `${caller}: options must be an object (${shape}) with string fields, and ${what}.`,
      cause === undefined ? undefined : { cause },
    );
  if (given === undefined || given === null) return {};
  // No prototype: a field left out reads as absent, never as a polluted `Object.prototype`'s.
  const read = Object.create(null) as Partial<Record<K, string | null>>;
  let value: unknown;
  let field: K | undefined;
  try {
    if (typeof given !== "object" || Array.isArray(given)) throw refuse(`was given ${describeValue(given)}`);
    for (field of fields) {
      value = ownOption(given, field);
      if (value === undefined) continue;
      if (value !== null && typeof value !== "string")
        throw refuse(`its ${field} was ${describeValue(value)}`);
      read[field] = value;
    }
  } catch (error) {
    if (ToolCallsError.isInstance(error)) throw error;
    throw refuse(field === undefined ? "they could not be read" : `its ${field} could not be read`, error);
  }
  return read;
}
