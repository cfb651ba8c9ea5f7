import { jsonrepair } from "jsonrepair";
import { normalizeAlmostJson } from "./almost-json.js";

/** True for a plain JSON object (not an array, not null). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

interface ScanResult {
  /** Index just past the bracket that closed the first one, or -1 when the text ended first. */
  end: number;
  /** True when the text ended inside a string or with brackets still open. */
  open: boolean;
}

const VALUE_START = new Set(["{", "[", ",", ":"]);

/**
 * Walks JSON-like text from `start` (which should be `{` or `[`), skipping strings in double
 * quotes and — where a value or key can begin — in single quotes, and reports where the first
 * bracket closes. Mismatched closers are tolerated, as the almost-JSON of a local model has them.
 */
export function scanBrackets(text: string, start: number): ScanResult {
  let depth = 0;
  let quote: string | undefined;
  let previous = "";
  for (let i = start; i < text.length; i++) {
    const c = text[i] as string;
    if (quote !== undefined) {
      if (c === "\\") i++;
      else if (c === quote) {
        quote = undefined;
        previous = c;
      }
      continue;
    }
    if (c === '"' || (c === "'" && (VALUE_START.has(previous) || previous === ""))) {
      quote = c;
      continue;
    }
    if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return { end: i + 1, open: false };
    }
    if (!/\s/.test(c)) previous = c;
  }
  return { end: -1, open: quote !== undefined || depth > 0 };
}

/** True when JSON-like text stops inside a string or with a bracket still open: cut off. */
export function isUnterminated(text: string): boolean {
  const start = text.search(/[{[]/);
  if (start < 0) return /^\s*"(?:[^"\\]|\\.)*$/.test(text);
  const { end, open } = scanBrackets(text, start);
  return end < 0 && open;
}

/** Parses strict JSON, answering `undefined` (never throwing) when it is not. */
export function tryParse(text: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

const FENCED = /^```[\w-]*[^\S\n]*\n([\s\S]*?)\n?\s*(?:```\s*)?$/;

/**
 * Repairs almost-JSON (single quotes, Python literals, bare keys, trailing commas, comments,
 * unclosed brackets, a code fence) and parses it. Strings are read token by token first, so what
 * is inside them never changes; only text that reader cannot take goes to `jsonrepair`. Answers
 * `undefined`, never throwing, when even the repaired text is not JSON.
 */
export function repairParse(text: string): { value: unknown } | undefined {
  const fenced = FENCED.exec(text.trim());
  const body = fenced ? (fenced[1] as string) : text;
  if (fenced) {
    const strict = tryParse(body);
    if (strict) return strict;
  }
  const normalized = normalizeAlmostJson(body);
  if (normalized !== undefined) {
    const read = tryParse(normalized);
    if (read) return read;
  }
  try {
    return { value: JSON.parse(jsonrepair(body)) };
  } catch {
    return undefined;
  }
}

/**
 * Reads the JSON value text starts with (`{` or `[`), repaired, stopping where its brackets close
 * so prose after it cannot leak into its last string. `whole` is false when text follows it.
 */
export function repairLeading(text: string): { value: unknown; whole: boolean } | undefined {
  const trimmed = text.trim();
  if (trimmed[0] === "{" || trimmed[0] === "[") {
    const { end } = scanBrackets(trimmed, 0);
    if (end > 0 && end < trimmed.length) {
      const slice = trimmed.slice(0, end);
      const read = tryParse(slice) ?? repairParse(slice);
      if (read) return { value: read.value, whole: false };
    }
  }
  const read = repairParse(trimmed);
  return read ? { value: read.value, whole: true } : undefined;
}
