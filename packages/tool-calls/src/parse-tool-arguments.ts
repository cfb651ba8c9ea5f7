import { ToolArgumentsError } from "./errors.js";
import { isRecord, isUnterminated, repairLeading, repairParse, scanBrackets, tryParse } from "./json-text.js";

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

function truncated(raw: string, name: string | undefined, atCeiling: boolean): ToolArgumentsError {
  const where = atCeiling ? "at the output token limit" : "inside a string";
  return new ToolArgumentsError(
    "truncated",
    `The arguments for ${name ? `the ${name} call` : "this call"} were cut off ${where} ` +
      "before the JSON was complete, so the call was not run. Call it again with shorter arguments, " +
      "splitting large content across several calls.",
    raw,
  );
}

/**
 * True when JSON-like text stops inside a double-quoted string: its end was never written, and
 * closing it would invent the value (`"/tmp/build` of `"/tmp/build-cache"`).
 */
function endsInsideString(text: string): boolean {
  let inside = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inside && c === "\\") i++;
    else if (c === '"') inside = !inside;
  }
  return inside;
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

function done(value: Record<string, unknown>, repaired: boolean): ParsedToolArguments {
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
 * for the model. Never mutates its input.
 */
export function parseToolArguments(
  raw: unknown,
  options: ParseToolArgumentsOptions = {},
): ParsedToolArguments {
  if (raw === undefined || raw === null) return { ...EMPTY, value: {} };
  if (typeof raw !== "string") {
    if (isRecord(raw)) {
      try {
        return done(JSON.parse(JSON.stringify(raw)) as Record<string, unknown>, false);
      } catch (error) {
        throw malformed(String(raw), options.name, "an object JSON cannot hold", error);
      }
    }
    throw malformed(String(raw), options.name, `${kindOfValue(raw)} was given`);
  }
  // Fast path: valid JSON, as almost every server and model sends.
  const strict = tryParse(raw);
  if (strict && isRecord(strict.value)) return done(strict.value, false);
  return readSlow(raw, raw, options, strict, 0);
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
    if (isUnterminated(trimmed) && (finishReason === "length" || endsInsideString(trimmed))) {
      throw truncated(raw, name, finishReason === "length");
    }
    parsed = repairLeading(trimmed);
  }
  if (parsed) {
    const { value } = parsed;
    if (isRecord(value)) return done(value, true);
    if (value === null) return { ...EMPTY, value: {}, repaired: true };
    // JSON held in a string: open it (a model that double-encodes does it once, rarely twice).
    if (typeof value === "string" && layer < 2 && value.trim() !== trimmed) {
      const inner = readSlow(value, raw, options, tryParse(value), layer + 1);
      return { ...inner, repaired: true };
    }
  }
  // An object with prose around it: take the object.
  const open = trimmed.indexOf("{");
  if (open > 0) {
    const { end } = scanBrackets(trimmed, open);
    const candidate = trimmed.slice(open, end < 0 ? undefined : end);
    const found = tryParse(candidate) ?? repairParse(candidate);
    if (found && isRecord(found.value)) return done(found.value, true);
  }
  if (finishReason === "length") throw truncated(raw, name, true);
  throw malformed(
    raw,
    name,
    parsed ? `they are ${kindOfValue(parsed.value)}` : "they could not be read as JSON",
  );
}
