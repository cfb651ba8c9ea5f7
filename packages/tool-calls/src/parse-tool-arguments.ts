import { nonJsonNumber } from "./almost-json.js";
import { readOptions, ToolArgumentsError } from "./errors.js";
import {
  endsInString,
  isRecord,
  isUnterminated,
  MAX_DEPTH,
  repairLeading,
  repairParse,
  scanBrackets,
  tryParse,
  unfinishedValue,
  withinDepth,
} from "./json-text.js";

/**
 * The longest argument text `parseToolArguments` will repair (1 MiB). Valid JSON of any length
 * takes the fast path; text past this that still needs repair is answered with a `malformed`
 * error instead of minutes of work.
 */
export const MAX_REPAIR_ARGUMENT_CHARS = 1024 * 1024;

/** Options for {@link parseToolArguments}. */
export interface ParseToolArgumentsOptions {
  /**
   * The turn's finish reason. `"length"` means the turn stopped at the token ceiling, so arguments
   * that end mid-JSON are reported as truncated rather than closed up and run.
   */
  finishReason?: string | null;
  /** The tool's name, for the error message the model reads. */
  name?: string;
}

/** Arguments read by {@link parseToolArguments}. */
export interface ParsedToolArguments {
  /** The arguments as an object. */
  value: Record<string, unknown>;
  /**
   * The same as compact JSON text — what the transcript keeps, and what two calls are compared
   * by, so `{'a': 1}` and `{"a": 1}` read the same.
   */
  json: string;
  /** True when the text needed repair (or unwrapping) to be read. */
  repaired: boolean;
}

const EMPTY: ParsedToolArguments = Object.freeze({
  value: {},
  json: "{}",
  repaired: false,
}) as ParsedToolArguments;

function kindOfValue(value: unknown): string {
  if (Array.isArray(value)) return "a JSON array";
  if (value === null) return "null";
  return `a JSON ${typeof value}`;
}

function truncated(raw: string, name: string | undefined, atLimit: boolean): ToolArgumentsError {
  const where = atLimit ? "at the output token limit" : "in the middle of a string";
  return new ToolArgumentsError(
    "truncated",
    `The arguments for ${name ? `the ${name} call` : "this call"} were cut off ${where} ` +
      "before the JSON was complete, so the call was not run. Call it again with shorter arguments, " +
      "splitting large content across several calls.",
    raw,
  );
}

/** A value's text for an error's `raw`, never throwing (a Proxy or a null-prototype object may). */
function safeText(value: unknown): string {
  try {
    return typeof value === "symbol" ? value.toString() : String(value);
  } catch {
    return "(a value that cannot be shown)";
  }
}

function malformed(
  raw: string,
  name: string | undefined,
  detail: string,
  cause?: unknown,
): ToolArgumentsError {
  return new ToolArgumentsError(
    "malformed",
    `The arguments for ${name ? `the ${name} call` : "this call"} are not a JSON object (${detail}), ` +
      'so the call was not run. Call it again with the arguments as one JSON object, such as {"key": "value"}.',
    raw,
    cause === undefined ? undefined : { cause },
  );
}

function done(
  value: Record<string, unknown>,
  repaired: boolean,
  raw: string,
  name: string | undefined,
): ParsedToolArguments {
  if (!withinDepth(value)) throw malformed(raw, name, `they nest deeper than ${MAX_DEPTH} levels`);
  return { value, json: JSON.stringify(value), repaired };
}

/**
 * Reads a tool call's arguments the way the model meant them. Valid JSON takes a fast path;
 * otherwise JSON held in a string is opened, and the almost-JSON local models write — single
 * quotes, Python `True`/`False`/`None`, bare keys, trailing commas, comments, a code fence,
 * unclosed brackets at a cut, prose around the object — is repaired, never changing what is
 * inside a string. Empty or whitespace arguments, `null` and `undefined` read as `{}`; an object
 * is taken as it is.
 *
 * Returns the object and its compact JSON. Throws a {@link ToolArgumentsError} when the result is
 * still not an object: `kind: "truncated"` when the text stops mid-JSON and either `finishReason`
 * is `"length"` or it stops inside a string (whatever the finish reason: the end of a string is
 * never invented) — those arguments are never closed up and run — `"malformed"` otherwise, with a message
 * for the model. Throws `ToolCallsError` (`"invalid-options"`) for options that are not an
 * object (`null` reads as none). Never mutates its input.
 */
export function parseToolArguments(raw: unknown, given: ParseToolArgumentsOptions = {}): ParsedToolArguments {
  // Null options are none; anything else that is not an object of text fields is named.
  const read = readOptions("parseToolArguments", given, ["finishReason", "name"]);
  const options: ParseToolArgumentsOptions = {
    finishReason: read.finishReason,
    ...(typeof read.name === "string" ? { name: read.name } : {}),
  };
  if (raw === undefined || raw === null) return { ...EMPTY, value: {} };
  if (typeof raw !== "string") return readObject(raw, options.name);
  // Fast path: valid JSON, as almost every server and model sends.
  const strict = tryParse(raw);
  if (strict && isRecord(strict.value)) return done(strict.value, false, raw, options.name);
  return readSlow(raw, raw, options, strict, 0);
}

/** Arguments handed over as an object: a JSON copy of it, which must itself be an object. */
function readObject(raw: unknown, name: string | undefined): ParsedToolArguments {
  let copy: unknown;
  let object = false;
  try {
    object = typeof raw === "object" && !Array.isArray(raw);
    if (object) copy = JSON.parse(JSON.stringify(raw));
  } catch (error) {
    // A cycle, a BigInt, a throwing getter or a revoked Proxy.
    throw malformed(safeText(raw), name, "an object JSON cannot hold", error);
  }
  if (!object) throw malformed(safeText(raw), name, `${kindOfValue(raw)} was given`);
  // A Date, or an object whose toJSON answers something else, is not an arguments object.
  if (!isRecord(copy)) throw malformed(safeText(raw), name, `an object that is ${kindOfValue(copy)} in JSON`);
  return done(copy, false, safeText(raw), name);
}

function readSlow(
  text: string,
  raw: string,
  options: ParseToolArgumentsOptions,
  strict: { value: unknown } | undefined,
  layer: number,
): ParsedToolArguments {
  const { name, finishReason } = options;
  const trimmed = text.trim();
  if (trimmed === "") return { ...EMPTY, value: {} };
  let parsed = strict;
  if (!parsed) {
    // Text ending inside a string lost its end, whatever the finish reason: never closed up and run.
    if (endsInString(trimmed)) throw truncated(raw, name, finishReason === "length");
    // So did text that stops where a value had begun or was still to come: closing it up would
    // invent the value (`{"a":` as null, `{"a": tru` as "tru"). A number left unfinished inside
    // the text, or a key with no colon, is not repaired either (`-` would be read as -0).
    const unfinished = unfinishedValue(trimmed);
    if (unfinished === "cut") throw truncated(raw, name, finishReason === "length");
    if (unfinished === "broken") {
      if (nonJsonNumber(trimmed) !== undefined) throw nonNumber(raw, name, trimmed);
      throw malformed(
        raw,
        name,
        "a value in them is unfinished (a number cut short, a key without its colon, or a colon with no value after it)",
      );
    }
    if (finishReason === "length" && isUnterminated(trimmed)) throw truncated(raw, name, true);
    if (trimmed.length > MAX_REPAIR_ARGUMENT_CHARS) {
      throw malformed(
        raw,
        name,
        `they are not valid JSON, and past ${MAX_REPAIR_ARGUMENT_CHARS} characters they are not repaired`,
      );
    }
    parsed = repairLeading(trimmed);
  }
  if (parsed) {
    const { value } = parsed;
    if (isRecord(value)) {
      if (secondObjectAfter(trimmed, 0)) throw twoObjects(raw, name);
      return done(value, true, raw, name);
    }
    if (value === null) return { ...EMPTY, value: {}, repaired: true };
    // JSON held in a string: open it (a model that double-encodes does it once, rarely twice).
    if (typeof value === "string" && layer < 2 && value.trim() !== trimmed) {
      const inner = readSlow(value, raw, options, tryParse(value), layer + 1);
      return { ...inner, repaired: true };
    }
    // A list of argument objects: one is the call's arguments; more are several calls in one,
    // and running the first alone would drop the others.
    // (Only a list the text is: prose a repair read as a list still has its object looked for.)
    if (Array.isArray(value) && trimmed.startsWith("[")) {
      if (value.length === 1 && isRecord(value[0])) return done(value[0], true, raw, name);
      throw malformed(raw, name, `they are a JSON array of ${value.length} values; a call takes one object`);
    }
  }
  // An object with prose around it: take the object.
  const open = trimmed.indexOf("{");
  if (open > 0) {
    const { end } = scanBrackets(trimmed, open);
    const candidate = trimmed.slice(open, end < 0 ? undefined : end);
    const found = tryParse(candidate) ?? repairParse(candidate);
    if (found && isRecord(found.value)) {
      if (secondObjectAfter(trimmed, open)) throw twoObjects(raw, name);
      return done(found.value, true, raw, name);
    }
  }
  if (finishReason === "length") throw truncated(raw, name, true);
  if (!parsed && nonJsonNumber(trimmed) !== undefined) throw nonNumber(raw, name, trimmed);
  throw malformed(
    raw,
    name,
    parsed ? `they are ${kindOfValue(parsed.value)}` : "they could not be read as JSON",
  );
}

function nonNumber(raw: string, name: string | undefined, text: string): ToolArgumentsError {
  const word = nonJsonNumber(text) as string;
  return malformed(
    raw,
    name,
    `they hold ${word}, and JSON has no NaN or Infinity: write the number, or a string if text was meant`,
  );
}

function twoObjects(raw: string, name: string | undefined): ToolArgumentsError {
  return malformed(
    raw,
    name,
    "they hold more than one JSON object; a call takes one, so make one call for each",
  );
}

/**
 * True when the object whose `{` is at `open` is followed (past spaces, a comma or a semicolon)
 * by another object that reads: two calls' arguments run together (`{…}{…}`, `{…},\n{…}`).
 * Prose or a closing tag after the object is not another object.
 */
function secondObjectAfter(text: string, open: number): boolean {
  const { end } = scanBrackets(text, open);
  if (end < 0) return false;
  const rest = /^[\s,;]*/.exec(text.slice(end)) as RegExpExecArray;
  const next = end + rest[0].length;
  if (text[next] !== "{") return false;
  const second = scanBrackets(text, next);
  const candidate = text.slice(next, second.end < 0 ? undefined : second.end);
  const found = tryParse(candidate) ?? repairParse(candidate);
  return found !== undefined && isRecord(found.value);
}
