import { describeValue, ToolCallsError } from "./errors.js";
import { type ArgumentPath, findInexactNumbers, listNumbers, settleNumbers } from "./exact-numbers.js";
import {
  codeFences,
  isRecord,
  MAX_DEPTH,
  type Parsed,
  repairParse,
  scanAllowance,
  scanCharged,
  tryParse,
  withinDepth,
} from "./json-text.js";
import { withJsonNumbers } from "./number-text.js";
import { readTakesString } from "./parse-tool-arguments.js";
import { earliestOpener, SCRATCHPADS, TEMPLATE_MARKERS } from "./recover-tool-calls.js";

/** Options for {@link parseJson}. */
export interface ParseJsonOptions {
  /**
   * Asked, for each number in the JSON found that JavaScript cannot hold as the model wrote it
   * (an integer past ±(2^53 − 1), a number past a double's range, a decimal of more than about
   * 17 significant digits), whether a string is taken at its place — `path` holds the keys and
   * array indexes from the JSON's root (`[]` for a reply that is one number). `true`: the
   * model's digits are handed back exactly, as a string. Otherwise an integer or out-of-range
   * number is refused (a `ToolCallsError` of code `"inexact"`) rather than read as another number,
   * and a long decimal is its nearest double. Absent, numbers read as `JSON.parse` reads them.
   * `takesStringAt` from `@loopwright/schema-compat` answers it from a JSON Schema.
   */
  takesString?: ((path: ArgumentPath) => boolean) | undefined;
}

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
function structureIn(fragment: string): Parsed | undefined {
  const text = fragment.trim();
  if (text === "") return undefined;
  // A number JSON refuses but whose meaning is plain (`0012`, `+5`, `.5`) is written as JSON writes
  // it first: the general repair would make a string of it (`"0012"`), at a place the reply wrote a number.
  const found =
    tryParse(text) ?? (/^[{[]/.test(text) ? repairParse(withJsonNumbers(text) ?? text) : undefined);
  return found && isStructure(found.value) && withinDepth(found.value) ? found : undefined;
}

/** Objects and arrays that begin at `start` in prose, closed where their brackets close. */
function candidateAt(text: string, start: number, budget: Budget): Parsed | undefined {
  if (budget.chars <= 0) return undefined;
  const opener = text[start];
  if (opener === "[") {
    // "[see below]" in prose is not JSON: an array must open on something a JSON value starts with.
    const next = text.slice(start + 1).trimStart()[0];
    if (next === undefined || !/[{["'\d\-tfn\]]/.test(next)) return undefined;
  } else {
    // Nor is "Note { then" or "use { carefully.": repaired, its words would become keys (and `null`s)
    // the reply never wrote. An object opens on its end, a quoted key, a comment or a bare key's colon.
    OBJECT_OPENING.lastIndex = start + 1;
    if (!OBJECT_OPENING.test(text)) return undefined;
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

/**
 * What an object opens on, past spaces: the end of the text (a reply cut right after its `{`), its
 * own `}`, a quoted key, a comment, or a bare key and its colon (`{path: …}`, Python's `{1: …}`).
 */
const OBJECT_OPENING = /\s*(?:$|[}"'`/#]|[\p{L}\p{N}_$@.-]+\s*:)/uy;

/** An object or array that opens before `at` and is still open there, read as JSON. */
function enclosing(text: string, at: number, budget: Budget): Parsed | undefined {
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
 * The reply after the scratchpad its chat template opened in the prompt: after its first
 * `</think>` (or Kimi's `◁/think▷`) when that comes before any `<think>`, `◁think▷` or gpt-oss
 * analysis opener ({@link TEMPLATE_MARKERS}), as the stream reads a lone closer; the whole text otherwise (its scratchpads are the ones it opens,
 * {@link withoutScratchpads}, and a lone closer after them is text). A marker written as inline
 * code (`` `</think>` ``) or inside a string of a JSON value around it (`{"note": "</think>"}`) is
 * not one. Linear: the markers are read left to right, each looked for once past the last, and
 * the JSON read is charged to one allowance.
 */
function afterTemplateScratchpad(text: string): string {
  const budget: Budget = { unclosed: 0, ...scanAllowance(text) };
  const values = { from: 0 };
  const next = TEMPLATE_MARKERS.map(({ marker }) => text.indexOf(marker));
  for (;;) {
    let k = -1;
    next.forEach((at, i) => {
      if (at >= 0 && (k < 0 || at < (next[k] as number))) k = i;
    });
    if (k < 0) return text;
    const at = next[k] as number;
    const { marker, closes } = TEMPLATE_MARKERS[k] as { marker: string; closes: boolean };
    let past = at + marker.length;
    if (!(text[at - 1] === "`" && text[past] === "`")) {
      const valueEnd = stringValueEnd(text, at, values, budget);
      if (valueEnd === undefined) return closes ? text.slice(past) : text;
      past = Math.max(past, valueEnd);
    }
    next.forEach((found, i) => {
      if (found >= 0 && found < past)
        next[i] = text.indexOf((TEMPLATE_MARKERS[i] as { marker: string }).marker, past);
    });
  }
}

/** Whether `at` lies inside a double-quoted string of the JSON text that opens at `start`. */
function inString(text: string, start: number, at: number): boolean {
  let quoted = false;
  for (let i = start; i < at; i++) {
    const c = text[i];
    if (quoted && c === "\\") i++;
    else if (c === '"') quoted = !quoted;
  }
  return quoted;
}

/**
 * The first `closer` in `text` from `from` on that is not written as inline code (`` `</thinking>` ``
 * in reasoning about the tag is reasoning, as the stream reads it); -1 for none. Linear: each
 * quoted one is passed once.
 */
function closerFrom(text: string, closer: string, from: number): number {
  let at = text.indexOf(closer, from);
  while (at > 0 && text[at - 1] === "`" && text[at + closer.length] === "`")
    at = text.indexOf(closer, at + closer.length);
  return at;
}

/**
 * Where the JSON value holding `at` inside one of its double-quoted strings ends (the end of the
 * text for one that never closes), or `undefined` when no value opening before `at` holds it so.
 * `cursor.from` is where the values are looked for: past each one that closes before `at`, so a
 * caller asking about ever later places reads each value once. What it reads is charged to
 * `budget`; past it, `undefined`.
 */
function stringValueEnd(
  text: string,
  at: number,
  cursor: { from: number; next?: number },
  budget: Budget,
): number | undefined {
  for (let tries = 0; tries < MAX_CANDIDATES && budget.chars > 0; tries++) {
    // The first `{` or `[` from `cursor.from` on, searched again only once passed: a bracket far
    // ahead (the answer after many scratchpads) was searched for from every opener, each search
    // to it (the square of the reply's length).
    let start = cursor.next;
    if (start === undefined || (start >= 0 && start < cursor.from)) {
      OPENER.lastIndex = cursor.from;
      start = OPENER.exec(text)?.index ?? -1;
      cursor.next = start;
    }
    if (start < 0 || start >= at) {
      // No value opens before `at`: none will before a later place either, until `at`.
      budget.chars -= Math.min(at, start < 0 ? text.length : start) - cursor.from;
      cursor.from = Math.max(cursor.from, Math.min(at, start < 0 ? text.length : start));
      return undefined;
    }
    const { end } = scanCharged(text, start, budget);
    if (end >= 0 && end <= at) {
      cursor.from = end;
      continue;
    }
    // Closing after `at`, or never (it runs to the end): `at` is inside it.
    budget.chars -= at - start;
    return inString(text, start, at) ? (end < 0 ? text.length : end) : undefined;
  }
  return undefined;
}

/**
 * `reply` with its scratchpads taken out, as the stream takes them out of an answer (`ALL_FENCES`,
 * which `recoverToolCalls` skips too): from each opener of {@link SCRATCHPADS} to its closer, or to
 * the end where it never closes. An opener or closer written as inline code (`` `<thinking>` ``)
 * is text about the marker, and an opener inside a string of a JSON value around it is that
 * string's text. JSON inside a scratchpad is the model's draft, not its answer. Linear: each
 * search starts past the last scratchpad or JSON value found, and the JSON read is charged to one
 * allowance.
 */
function withoutScratchpads(reply: string): string {
  const budget: Budget = { unclosed: 0, ...scanAllowance(reply) };
  const values = { from: 0 };
  // Where each kind's opener is next found from `from` on (-1: nowhere): each search starts past
  // the last, so each kind's openers are looked for once over the reply.
  const next = SCRATCHPADS.map(() => -2);
  let out = "";
  let kept = 0;
  let from = 0;
  for (;;) {
    // The earliest opener: inside a scratchpad another kind's opener is reasoning, as the stream reads it.
    const { start, pad } = earliestOpener(reply, from, next);
    if (pad === undefined) break;
    const { open: opener, close: closer } = pad;
    if (reply[start - 1] === "`" && reply[start + opener.length] === "`") {
      from = start + opener.length;
      continue;
    }
    const valueEnd = stringValueEnd(reply, start, values, budget);
    if (valueEnd !== undefined) {
      from = Math.max(valueEnd, start + opener.length);
      continue;
    }
    const close = closerFrom(reply, closer, start + opener.length);
    const end = close < 0 ? reply.length : close + closer.length;
    out += reply.slice(kept, start);
    kept = end;
    from = end;
  }
  return kept === 0 ? reply : out + reply.slice(kept);
}

/**
 * Finds the JSON a model put in its reply — the whole reply, a fenced block, or an object or
 * array inside prose (outside every scratchpad `recoverToolCalls` skips and the stream's
 * `ALL_FENCES` take out, closed or not, and after a first `</think>` or Kimi's `◁/think▷` ahead of
 * every opener (the scratchpad the chat template opened); a marker
 * inside the JSON's strings or written as inline code, `` `</think>` ``, is text: JSON in a
 * scratchpad is the model's draft, never its answer) — and reads it, repairing what a local model
 * gets nearly right: single quotes, Python `True`/`None`, bare keys, trailing commas, comments,
 * a bracket left open at the end.
 *
 * Returns the value, or `undefined` when the reply holds none. A whole reply that is valid JSON
 * may be any JSON value; inside prose or a fence only an object or an array counts, and a `{` in
 * prose (`Note { then …`) opens none — an object opens on its `}`, a quoted key, a comment, a bare
 * key and its colon, or the end of a reply cut right after it. The search is
 * bounded: at most 32 candidates, and about four passes over the reply in all, so a reply built of
 * brackets that never close is judged to hold none in linear time. Throws a
 * `ToolCallsError` (`code: "invalid-text"`) when `text` is not a string, and
 * (`"invalid-options"`) for options that are not an object or a `takesString` that is not a
 * function. Given `takesString`, a number JavaScript cannot hold as written is never handed back
 * as another number: the model's digits as a string where it answers `true`, else a
 * `ToolCallsError` (`code: "inexact"`) naming each path and its digits (listed in `numbers`); a
 * decimal of more than about 17 significant digits is its nearest double.
 */
export function parseJson<T = unknown>(text: string, options?: ParseJsonOptions): T | undefined {
  if (typeof text !== "string") {
    throw new ToolCallsError(
      "invalid-text",
      `parseJson needs the reply as a string, and was given ${describeValue(text)}.`,
    );
  }
  if (options !== undefined && options !== null && (typeof options !== "object" || Array.isArray(options))) {
    throw new ToolCallsError(
      "invalid-options",
      `parseJson: options must be an object ({ takesString? }), and was given ${describeValue(options)}.`,
    );
  }
  const takesString = readTakesString("parseJson", options);
  const found = findJson(text);
  if (found === undefined) return undefined;
  if (takesString === undefined) return found.value as T;
  return exact(found, takesString) as T;
}

/** The value read, its numbers JavaScript cannot hold settled by `takesString` (or refused). */
function exact(found: Parsed, takesString: (path: ArgumentPath) => boolean): unknown {
  const numbers = findInexactNumbers(found.source, found.value);
  if (numbers.length === 0) return found.value;
  const { value, refused } = settleNumbers(found.value, numbers, takesString);
  if (refused.length > 0) {
    throw new ToolCallsError(
      "inexact",
      `The reply's JSON holds ${listNumbers(refused, "(the reply)")}, past what a number can carry ` +
        `exactly (integers up to ±${Number.MAX_SAFE_INTEGER}, about 17 significant digits), where no string ` +
        "is taken; it was not read as a different number.",
      { numbers: refused },
    );
  }
  return value;
}

/** The JSON a reply holds, with the strict text it was read from; `undefined` for none. */
function findJson(text: string): Parsed | undefined {
  // The whole reply first: a `</think>` written in one of its strings is that string's text.
  const all = tryParse(text.trim());
  if (all) return withinDepth(all.value) ? all : undefined;
  const reply = withoutScratchpads(afterTemplateScratchpad(text)).trim();
  if (reply === "") return undefined;
  const whole = tryParse(reply);
  if (whole) return withinDepth(whole.value) ? whole : undefined;

  const budget: Budget = { unclosed: 4, ...scanAllowance(reply) };
  const fences = codeFences(reply, MAX_CANDIDATES);
  if (fences.length > 0) {
    // A fence written inside a JSON value's string is part of that value, not a block of its own.
    const outer = enclosing(reply, (fences[0] as { start: number }).start, budget);
    if (outer) return outer;
  }
  for (const fence of fences) {
    const found = structureIn(fence.body);
    if (found) return found;
  }

  for (const opener of ["{", "["]) {
    let from = 0;
    for (let tries = 0; tries < MAX_CANDIDATES && budget.chars > 0; tries++) {
      const start = reply.indexOf(opener, from);
      if (start < 0) break;
      const found = candidateAt(reply, start, budget);
      if (found) return found;
      from = start + 1;
    }
  }
  return undefined;
}
