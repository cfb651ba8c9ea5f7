const TOOL_LOADING_ERROR = Symbol.for("@loopwright/tool-loading.ToolLoadingError");

/** What kind of bad input a {@link ToolLoadingError} reports. */
export type ToolLoadingErrorCode =
  /** A catalogue that is not an array of `{ name, tools: [{ name }] }` servers. */
  | "invalid-catalog"
  /** A tool array that is not an array of function tools with names, or a tool named as a meta-tool the mode declares. */
  | "invalid-tools"
  /** `load_tools` arguments that name no tool: no `names`, or names that are not strings. */
  | "invalid-names"
  /** A cap that is not a positive whole number. */
  | "invalid-cap"
  /** A `toolDiscovery` mode other than `"eager"`, `"ondemand"` or `"proxy"`, or a bad routing. */
  | "invalid-mode"
  /** A `call_tool` with no tool name. */
  | "missing-name"
  /**
   * A `call_tool` naming a tool outside the catalogue, or (ondemand and proxy) a direct call to a
   * name that is neither one of the host's tools nor catalogued.
   */
  | "unknown-tool"
  /** A `call_tool` whose `arguments` are neither an object nor JSON text of one. */
  | "invalid-arguments"
  /** A call, a step's input or a run's state that is not the shape `createToolLoading`'s methods read. */
  | "invalid-call"
  /**
   * A `parse` reader that answered something other than the arguments it read: a Promise (a reader
   * runs synchronously), or a reading's result — `{ value, json, repaired, inexact }`, what
   * `parseToolArguments` answers, passed as it is.
   */
  | "invalid-reader";

/**
 * The one error this package throws: `code` says which input was wrong, the message names what was
 * given and what to pass instead (for a model's call, it is written to be read by the model), and
 * `cause` carries the original failure where there was one.
 */
export class ToolLoadingError extends Error {
  override readonly name: string = "ToolLoadingError";
  readonly [TOOL_LOADING_ERROR] = true;
  /** Which kind of bad input this is. */
  readonly code: ToolLoadingErrorCode;

  constructor(code: ToolLoadingErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for a `ToolLoadingError` from any installed copy of this package. */
  static isInstance(value: unknown): value is ToolLoadingError {
    return (
      typeof value === "object" &&
      value !== null &&
      (value as Record<symbol, unknown>)[TOOL_LOADING_ERROR] === true
    );
  }
}

/**
 * Names a value's kind for an error message, and never throws: a string quoted as `quotedText`
 * writes it (a host's 1 MB value is not echoed whole, nor its controls and bidirectional marks raw),
 * a revoked Proxy — whose `Array.isArray` throws — as an object that cannot be read. Reads nothing
 * of an object (no getter, `toString` or `Symbol.toPrimitive` of the host's is called).
 */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "nothing";
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : `the number ${value}`;
  if (typeof value === "string") return value === "" ? "an empty string" : `the string ${quotedText(value)}`;
  if (typeof value !== "object") return String(typeof value);
  try {
    return Array.isArray(value) ? "an array" : "an object";
  } catch {
    return "an object that cannot be read (a revoked Proxy)";
  }
}

/**
 * Text a host or the model wrote, as an error message quotes it: as a JSON string (its quotes and
 * backslashes escaped, so its end is plain), cut at 60 characters with its length said, half a
 * surrogate pair written U+FFFD, and each of `CONTROLS` written `\uXXXX` — the rule
 * `@loopwright/tools` echoes by. A server named with 1 MB made a 1 MB error, and a right-to-left
 * override in a name turned the rest of the message around where a host shows it.
 */
export function quotedText(text: string): string {
  return escapeControls(JSON.stringify(cutName(text.toWellFormed())));
}

/**
 * What a host's value threw while it was read (a getter, a Proxy's trap), for a message: its
 * message, cut and escaped as a name is echoed; "a value that could not be read" where even that
 * throws or is no text. Never throws.
 */
export function thrownText(thrown: unknown): string {
  try {
    if (thrown instanceof Error && typeof thrown.message === "string") return echoName(thrown.message);
  } catch {
    // A revoked Proxy thrown, or a message getter that throws: said below.
  }
  return "a value that could not be read";
}

/** `text` up to `end`, one code unit short where `end` would split a surrogate pair (an emoji). */
export function headOf(text: string, end: number): string {
  const code = text.charCodeAt(end - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? end - 1 : end);
}

/** How much of a name the model wrote is echoed back to it. */
const ECHOED_CHARS = 60;

/** `name` whole up to 60 characters, cut there with its length said past that; otherwise as written. */
export function cutName(name: string): string {
  return name.length <= ECHOED_CHARS ? name : `${headOf(name, ECHOED_CHARS)}… (${name.length} characters)`;
}

/**
 * C0 and C1 controls (line breaks among them, NEL too), DEL, the Unicode line and paragraph
 * separators, and the bidirectional marks, embeddings, overrides and isolates: what `echoName`
 * writes as `\uXXXX` — the set `@loopwright/tools` escapes in what it echoes of a model's text (its
 * `CONTROLS`; `review-r103e.test.ts` holds the two to one set). A copy, as this package does not
 * depend on that one.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/**
 * A name the model wrote, as it is echoed back: whole up to 60 characters, cut there with its
 * length said past that (a made-up name can be any size, and the answer costs tokens every step),
 * half a surrogate pair written U+FFFD, and each control character — a line break, a terminal's
 * escape, a NUL, a right-to-left override or another bidirectional mark — written `\uXXXX`, as
 * `@loopwright/tools` echoes a name. A name written with a line break wrote a line of its own into
 * the answer ("Loaded: …" that loaded nothing); one with U+202E showed the rest of the answer
 * reversed. A name that is empty or blank is shown quoted (`""`), never as nothing.
 */
export function echoName(name: string): string {
  const shown = escapeControls(cutName(name.toWellFormed()));
  return shown.trim() === "" ? `"${shown}"` : shown;
}

/** `text` with each character of `CONTROLS` written `\uXXXX`. */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Names the model wrote, echoed: the first `limit`, each through `echoName`, and a count of the rest. */
export function echoNames(names: readonly string[], limit: number): string {
  const shown = names.slice(0, limit).map(echoName).join(", ");
  return names.length > limit ? `${shown} and ${names.length - limit} more` : shown;
}

/** Throws `invalid-cap` unless `cap` is a whole number of at least 1. */
export function checkCap(cap: unknown, what: string, where: string): number {
  if (typeof cap === "number" && Number.isInteger(cap) && cap >= 1) return cap;
  throw new ToolLoadingError(
    "invalid-cap",
    `${where} needs ${what} as a whole number of at least 1, and was given ${describe(cap)}.`,
  );
}

/** Throws `invalid-names` unless `names` is an array of strings; returns it. */
export function checkNameList(names: unknown, what: string, where: string): readonly string[] {
  if (Array.isArray(names) && names.every((name) => typeof name === "string")) return names;
  throw new ToolLoadingError(
    "invalid-names",
    `${where} needs ${what} as an array of strings, and was given ${describe(names)}.`,
  );
}

/** Throws `invalid-call` unless `value` is an object (not an array); returns it. */
export function checkRecord(value: unknown, what: string, where: string): Record<string, unknown> {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    return value as Record<string, unknown>;
  }
  throw new ToolLoadingError("invalid-call", `${where} needs ${what}, and was given ${describe(value)}.`);
}
