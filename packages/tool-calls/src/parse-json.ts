import { describeValue, ToolCallsError } from "./errors.js";
import {
  findFences,
  isRecord,
  MAX_DEPTH,
  repairParse,
  scanAllowance,
  scanCharged,
  tryParse,
  withinDepth,
} from "./json-text.js";

const THINK_END = "</think>";
const MAX_CANDIDATES = 32;

/**
 * What one reading of a reply may spend looking for candidates: unclosed ones repaired (each runs
 * to the end of the reply), and characters read for brackets over all candidates
 * ({@link scanAllowance}). Past it the reply is judged to hold no JSON.
 */
interface Budget {
  unclosed: number;
  chars: number;
}

function isStructure(value: unknown): boolean {
  return isRecord(value) || Array.isArray(value);
}

/** Reads a fragment as JSON, repairing it when it is close; only objects and arrays count. */
function structureIn(fragment: string): { value: unknown } | undefined {
  const text = fragment.trim();
  if (text === "") return undefined;
  const found = tryParse(text) ?? (/^[{[]/.test(text) ? repairParse(text) : undefined);
  return found && isStructure(found.value) && withinDepth(found.value) ? found : undefined;
}

/** Objects and arrays that begin at `start` in prose, closed where their brackets close. */
function candidateAt(text: string, start: number, budget: Budget): { value: unknown } | undefined {
  if (budget.chars <= 0) return undefined;
  const opener = text[start];
  if (opener === "[") {
    // "[see below]" in prose is not JSON: an array must open on something a JSON value starts with.
    const next = text.slice(start + 1).trimStart()[0];
    if (next === undefined || !/[{["'\d\-tfn\]]/.test(next)) return undefined;
  }
  const { end, depth } = scanCharged(text, start, budget);
  if (end < 0) {
    // An unclosed candidate runs to the end of the reply; repairing each of many such would take
    // quadratic time, and only the first few can be the JSON a cut reply ends with.
    if (budget.unclosed <= 0) return undefined;
    budget.unclosed--;
    // Closing what is left open would nest it that deep: refused for its depth without the repair.
    if (depth > MAX_DEPTH) return undefined;
  }
  return structureIn(text.slice(start, end < 0 ? undefined : end));
}

const OPENER = /[{[]/g;

/** An object or array that opens before `at` and is still open there, read as JSON. */
function enclosing(text: string, at: number, budget: Budget): { value: unknown } | undefined {
  let from = 0;
  for (let tries = 0; tries < MAX_CANDIDATES && budget.chars > 0; tries++) {
    OPENER.lastIndex = from;
    const start = OPENER.exec(text)?.index ?? -1;
    if (start < 0 || start >= at) return undefined;
    const { end } = scanCharged(text, start, budget);
    if (end < 0 || end > at) {
      const found = candidateAt(text, start, budget);
      if (found) return found;
      from = start + 1;
    } else {
      from = end;
    }
  }
  return undefined;
}

/**
 * Finds the JSON a model put in its reply — the whole reply, a fenced block, or an object or
 * array inside prose (after the last `</think>`) — and reads it, repairing what a local model
 * gets nearly right: single quotes, Python `True`/`None`, bare keys, trailing commas, comments,
 * a bracket left open at the end.
 *
 * Returns the value, or `undefined` when the reply holds none. A whole reply that is valid JSON
 * may be any JSON value; inside prose or a fence only an object or an array counts. The search is
 * bounded: at most 32 candidates, and about four passes over the reply in all, so a reply built of
 * brackets that never close is judged to hold none in linear time. Throws a
 * `ToolCallsError` (`code: "invalid-text"`) when `text` is not a string.
 */
export function parseJson<T = unknown>(text: string): T | undefined {
  if (typeof text !== "string") {
    throw new ToolCallsError(
      "invalid-text",
      `parseJson needs the reply as a string, and was given ${describeValue(text)}.`,
    );
  }
  const cut = text.lastIndexOf(THINK_END);
  const reply = (cut >= 0 ? text.slice(cut + THINK_END.length) : text).trim();
  if (reply === "") return undefined;
  const whole = tryParse(reply);
  if (whole) return withinDepth(whole.value) ? (whole.value as T) : undefined;

  const budget: Budget = { unclosed: 4, ...scanAllowance(reply) };
  const fences = findFences(reply, MAX_CANDIDATES);
  if (fences.length > 0) {
    // A fence written inside a JSON value's string is part of that value, not a block of its own.
    const outer = enclosing(reply, (fences[0] as { start: number }).start, budget);
    if (outer) return outer.value as T;
  }
  for (const fence of fences) {
    const found = structureIn(fence.body);
    if (found) return found.value as T;
  }

  for (const opener of ["{", "["]) {
    let from = 0;
    for (let tries = 0; tries < MAX_CANDIDATES && budget.chars > 0; tries++) {
      const start = reply.indexOf(opener, from);
      if (start < 0) break;
      const found = candidateAt(reply, start, budget);
      if (found) return found.value as T;
      from = start + 1;
    }
  }
  return undefined;
}
