import { jsonrepair } from "jsonrepair";
import { commentEnd, nonJsonNumber, normalizeAlmostJson, quotedEnd } from "./almost-json.js";

/** True for a plain JSON object (not an array, not null). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

interface ScanResult {
  /** Index just past the bracket that closed the first one, or -1 when the text ended first. */
  end: number;
  /** True when the text ended inside a string or with brackets still open. */
  open: boolean;
  /** True when the text ended inside a string: its end was cut off, and no repair can know it. */
  inString: boolean;
  /** How many brackets were still open when the text ended (0 when the first one closed). */
  depth: number;
}

const VALUE_START = new Set(["{", "[", ",", ":"]);

/**
 * Walks JSON-like text from `start` (which should be `{` or `[`), skipping strings in double
 * quotes and — where a value or key can begin — in single quotes, and comments (`//`, `/* *\/`,
 * `#`) between tokens, and reports where the first bracket closes. Mismatched closers are
 * tolerated, as the almost-JSON of a local model has them. Linear in the text read.
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
    if (depth > 0 && (c === "#" || c === "/")) {
      const end = commentEnd(text, i);
      if (end >= 0) {
        i = end - 1;
        continue;
      }
    }
    if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return { end: i + 1, open: false, inString: false, depth: 0 };
    }
    if (c !== " " && c !== "\n" && c !== "\t" && c !== "\r") previous = c;
  }
  return { end: -1, open: quote !== undefined || depth > 0, inString: quote !== undefined, depth };
}

/**
 * What a search may spend reading one text for brackets over all its tries: about four passes over
 * it, plus 64 KiB. A search that stops when it is spent stays linear however many candidates the
 * text offers (a megabyte of `[` would otherwise be read to the end once per candidate).
 */
export function scanAllowance(text: string): { chars: number } {
  return { chars: 4 * text.length + 64 * 1024 };
}

/** {@link scanBrackets}, charging the characters it reads to `allowance`. */
export function scanCharged(text: string, start: number, allowance: { chars: number }): ScanResult {
  const scan = scanBrackets(text, start);
  allowance.chars -= (scan.end < 0 ? text.length : scan.end) - start;
  return scan;
}

/** A bare token that is whole: a literal (JSON's or Python's) or a complete JSON number. */
const WHOLE_TOKEN = /^(?:true|false|null|True|False|None|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)$/;

/** Characters that end a bare token (a number, a literal, a bare key or word). */
const TOKEN_END = /[\s,:{}[\]"#/]/;

/** One open bracket as {@link walkJsonLike} stands in it. */
export interface JsonPlace {
  object: boolean;
  /** The key being read (objects: its text as written, quotes and all) or the index (arrays). */
  at: string | number;
  /** What comes next. In an object "key" → "colon" → "value" → "after"; in an array "value" → "after". */
  phase: "key" | "colon" | "value" | "after";
}

/**
 * One thing {@link walkJsonLike} meets: a bracket, a comma, a colon, a string (`end` just past its
 * closing quote, or -1 when it never closes) or a bare token (a literal, a number, a bare key or
 * word; `end` just past it).
 */
export type JsonStep =
  | { kind: "open" | "close" | "comma" | "colon"; start: number }
  | { kind: "string"; start: number; end: number }
  | { kind: "token"; start: number; end: number; text: string };

/** How a {@link walkJsonLike} ended: where its first bracket closed, at the end of the text, in a
 * string that never closes, past {@link MAX_DEPTH}; or stopped by its visitor with `stopped`. */
export type JsonWalk<R> =
  | { stopped: R }
  | { end: "closed" | "text" | "string" | "deep" | "none"; stack: readonly JsonPlace[] };

function isSpace(c: string): boolean {
  return c === " " || c === "\n" || c === "\t" || c === "\r" || /\s/.test(c);
}

/**
 * Walks JSON-like text — the almost-JSON the repair takes: single-quoted strings (a `'` opens one
 * only where a key or a value can begin, as in {@link scanBrackets}), bare keys and words,
 * comments (`//`, `/* *\/`, `#`) between tokens — from its first `{` or `[` to where that closes,
 * handing `visit` each step with the brackets open before it is taken (`stack`; the walk updates
 * them after). A visitor answering anything but `undefined` stops the walk with that answer. The
 * one reader of this text's structure for {@link unfinishedValue} and the number-token readers.
 * Linear in the text.
 */
export function walkJsonLike<R>(
  text: string,
  visit: (step: JsonStep, stack: readonly JsonPlace[]) => R | undefined,
): JsonWalk<R> {
  const stack: JsonPlace[] = [];
  let i = text.search(/[{[]/);
  if (i < 0) return { end: "none", stack };
  while (i < text.length) {
    const c = text[i] as string;
    const top = stack[stack.length - 1];
    if (isSpace(c)) {
      i++;
      continue;
    }
    if (stack.length > 0 && (c === "#" || c === "/")) {
      const end = commentEnd(text, i);
      if (end >= 0) {
        i = end;
        continue;
      }
    }
    let step: JsonStep;
    if (c === "{" || c === "[") step = { kind: "open", start: i };
    else if (c === "}" || c === "]") step = { kind: "close", start: i };
    else if (!top) break;
    else if (c === ",") step = { kind: "comma", start: i };
    else if (c === ":") step = { kind: "colon", start: i };
    else if (c === '"' || (c === "'" && (top.phase === "key" || top.phase === "value"))) {
      const close = closingQuote(text, i);
      step = { kind: "string", start: i, end: close < 0 ? -1 : close + 1 };
    } else {
      let j = i;
      while (j < text.length && !TOKEN_END.test(text[j] as string)) j++;
      if (j === i) j++; // a stray character (a `/` or `#` that opens no comment) the repair will judge
      step = { kind: "token", start: i, end: j, text: text.slice(i, j) };
    }
    const answer = visit(step, stack);
    if (answer !== undefined) return { stopped: answer };
    switch (step.kind) {
      case "open":
        if (top) top.phase = "after";
        stack.push({ object: c === "{", at: c === "{" ? "" : 0, phase: c === "{" ? "key" : "value" });
        // Deeper than any value is read: the readers refuse it for its depth.
        if (stack.length > MAX_DEPTH) return { end: "deep", stack };
        i++;
        break;
      case "close":
        stack.pop();
        i++;
        if (stack.length === 0) return { end: "closed", stack };
        break;
      case "comma":
        if (!top) break;
        if (top.object) top.phase = "key";
        else {
          top.phase = "value";
          top.at = (top.at as number) + 1;
        }
        i++;
        break;
      case "colon":
        if (top?.object) top.phase = "value";
        i++;
        break;
      case "string":
      case "token":
        if (step.end < 0) return { end: "string", stack };
        if (!top) break;
        if (top.object && top.phase === "key") {
          top.at = text.slice(step.start, step.end);
          top.phase = "colon";
        } else top.phase = "after";
        i = step.end;
        break;
    }
  }
  return { end: "text", stack };
}

/** Where {@link unfinishedValue} finds a value the text never finished. */
export type UnfinishedValue = "cut" | "broken";

/**
 * Finds a value a repair would have to invent. `"cut"`: the text stops where a value had begun or
 * was still to come — after a key, after a colon, or inside a bare token that is not whole (`tru`,
 * `nul`, `-`, `1.`, `1e+`, a bare word). `"broken"`: a number begun and not finished before the
 * next bracket or comma (`[-{`), a key followed by something other than its colon, or a colon
 * followed by no value (`{"a": }`, which a repair reads as null). Closing
 * such text up reads `{"a":` as `{"a": null}`, `{"a": tru` as `"tru"` and `-` as `-0`, so the
 * caller refuses it instead. A trailing comma, or a bracket left open after a whole value, is
 * neither: closing those invents nothing. Reads the text as {@link walkJsonLike} does; answers
 * `undefined` when nothing is missing. Linear.
 */
export function unfinishedValue(text: string): UnfinishedValue | undefined {
  const walk = walkJsonLike<UnfinishedValue>(text, (step, stack) => {
    const top = stack[stack.length - 1];
    if (top?.phase === "colon" && step.kind !== "colon") return "broken";
    // A key whose colon is followed by no value (`{"a": }`, `{"a": , "b": 1}`): a repair reads null.
    if ((step.kind === "close" || step.kind === "comma") && top?.object && top.phase === "value")
      return "broken";
    if (step.kind !== "token" || !top) return undefined;
    const key = top.object && top.phase === "key";
    // Text ends inside this token: a key with no value, or a value that may not be whole. (A whole
    // one ends the walk with its place read.)
    if (step.end >= text.length) return key || !WHOLE_TOKEN.test(step.text) ? "cut" : undefined;
    if (!key && /^[-+.\d]/.test(step.text) && !WHOLE_TOKEN.test(step.text)) return "broken";
    return undefined;
  });
  if ("stopped" in walk) return walk.stopped;
  // A string that runs to the end is endsInString's case, not this one; past MAX_DEPTH the repair
  // refuses the text for its depth, so nothing is invented.
  if (walk.end !== "text") return undefined;
  const top = walk.stack[walk.stack.length - 1];
  return top?.object && (top.phase === "colon" || top.phase === "value") ? "cut" : undefined;
}

/** An object or list the text opened and stops inside before writing its first member. */
export interface OpenedEmpty {
  /** An object (cut before its first key) or a list (before its first value). */
  object: boolean;
  /** Where it sits: each enclosing object's key (as the model wrote it, unquoted) or list's index. */
  path: (string | number)[];
  /** The outermost bracket is a list's (then the path starts at its index). */
  inList: boolean;
}

/**
 * Finds an object or list the text opened and stops inside before its first member (`{"a": {`,
 * `{"a": [`, `[`, a `{` followed only by spaces, comments or commas): closing it up reads an
 * empty one the model never wrote (it opened it to fill it), so a repair would invent it — as it
 * would invent the value of `{"a":`, which {@link unfinishedValue} finds. A bracket left open after
 * a whole member (`{"a": [1`, `{"a": {"b": 1`) is not this: closing it keeps what was written.
 * Only the innermost open bracket is looked at (the ones around it hold it); `undefined` when the
 * text closes, or stops anywhere else. Reads the text as {@link walkJsonLike} does. Linear.
 */
export function openedEmpty(text: string): OpenedEmpty | undefined {
  const walk = walkJsonLike<never>(text, () => undefined);
  if ("stopped" in walk || walk.end !== "text") return undefined;
  const top = walk.stack[walk.stack.length - 1];
  if (!top) return undefined;
  const empty = top.object ? top.at === "" && top.phase === "key" : top.at === 0 && top.phase === "value";
  if (!empty) return undefined;
  const path = placesPath(walk.stack.slice(0, -1));
  return { object: top.object, path, inList: walk.stack[0]?.object === false };
}

/** The path the open places `stack` make: each object's key (unquoted, see {@link writtenKey}) or list's index. */
function placesPath(stack: readonly JsonPlace[]): (string | number)[] {
  return stack.map((place) => (place.object ? writtenKey(place.at as string) : place.at));
}

/** A key as {@link walkJsonLike} holds it (its text as written, quotes and all), as a key: unquoted. */
function writtenKey(written: string): string {
  const quote = written[0];
  if (quote === '"') {
    try {
      const key: unknown = JSON.parse(written);
      if (typeof key === "string") return key;
    } catch {
      // An escape JSON does not take (`\'`): read between the quotes as written.
    }
    return written.slice(1, -1);
  }
  return quote === "'" ? written.slice(1, -1).replace(/\\(['\\])/g, "$1") : written;
}

/** Index of the quote that closes the string opened at `at` (backslash escapes honoured), or -1. */
function closingQuote(text: string, at: number): number {
  const quote = text[at];
  for (let i = at + 1; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === quote) return i;
  }
  return -1;
}

/** True when JSON-like text stops inside a string or with a bracket still open: cut off. */
export function isUnterminated(text: string): boolean {
  const start = text.search(/[{[]/);
  if (start < 0) return endsInString(text);
  const { end, open } = scanBrackets(text, start);
  return end < 0 && open;
}

/**
 * True when JSON-like text stops inside a string — a value whose end was never written, which
 * no repair may invent (`{"cmd": "rm -rf /tmp/build` might have gone on `-cache`).
 */
export function endsInString(text: string): boolean {
  const trimmed = text.trimStart();
  if (trimmed[0] === '"' || trimmed[0] === "'") return scanBrackets(`[${trimmed}`, 0).inString;
  const start = trimmed.search(/[{[]/);
  if (start < 0) return false;
  const { end, inString } = scanBrackets(trimmed, start);
  return end < 0 && inString;
}

/** A value read from text, with the strict JSON text it was parsed from (the repaired text, after a repair). */
export interface Parsed {
  value: unknown;
  source: string;
}

/**
 * Parses strict JSON, answering `undefined` (never throwing) when it is not, or when it nests
 * deeper than {@link MAX_DEPTH} (what could not be written back as JSON is not read).
 */
export function tryParse(text: string): Parsed | undefined {
  // Exact for JSON text (its strings are double-quoted), and far cheaper than building a value
  // thousands of levels deep only to refuse it: a megabyte of "[" took seconds that way.
  if (nestsDeeper(text, MAX_DEPTH)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return withinDepth(value) ? { value, source: text } : undefined;
}

/**
 * The longest text handed to `jsonrepair`, the general repair of last resort (64 KiB). Its work
 * grows faster than the text on some junk; arguments and replies longer than this are read only
 * by the linear almost-JSON reader.
 */
export const MAX_REPAIR_CHARS = 64 * 1024;

/**
 * The deepest nesting of objects and arrays a repaired value may have (512 levels). Deeper values
 * cannot be written back as JSON (`JSON.stringify` runs out of stack near 5,000), so they are
 * treated as unreadable rather than handed on.
 */
export const MAX_DEPTH = 512;

/** True when no object or array in `value` lies deeper than {@link MAX_DEPTH}. Iterative. */
export function withinDepth(value: unknown, max = MAX_DEPTH): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    // Read by index, not destructured: destructuring closes the pair's iterator, calling a polluted
    // `Object.prototype.return`.
    const pair = stack.pop() as [unknown, number];
    const item = pair[0];
    const depth = pair[1];
    if (typeof item !== "object" || item === null) continue;
    if (depth >= max) return false;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
  return true;
}

/** True when brackets outside double-quoted strings open deeper than `max` somewhere in `text`. */
export function nestsDeeper(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++;
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if ((c === 125 || c === 93) && depth > 0) depth--;
  }
  return false;
}

/** The body of a fence the text is wrapped in (` ```json\n…``` `, the closing fence optional), else the text. */
function unfence(text: string): { body: string; fenced: boolean } {
  const trimmed = text.trim();
  if (!trimmed.startsWith("```")) return { body: text, fenced: false };
  const info = /^```[\w-]{0,64}[^\S\n]{0,64}\n/.exec(trimmed.slice(0, 160));
  if (!info) return { body: text, fenced: false };
  let body = trimmed.slice(info[0].length);
  if (body.endsWith("```")) body = body.slice(0, -3);
  return { body, fenced: true };
}

/**
 * Repairs almost-JSON (single quotes, Python literals, bare keys, trailing commas, comments,
 * unclosed brackets after a complete value, a code fence) and parses it. Strings are read token
 * by token first, so what is inside them never changes; only text that reader cannot take goes to
 * `jsonrepair`, and only up to {@link MAX_REPAIR_CHARS}. Text that stops inside a string is never
 * repaired (its end is unknown), nor text holding a bare NaN or Infinity (JSON has no such
 * number). Answers `undefined`, never throwing, when even the repaired text
 * is not JSON or nests deeper than {@link MAX_DEPTH}.
 */
export function repairParse(text: string): Parsed | undefined {
  const { body, fenced } = unfence(text);
  const read = repairBody(body, fenced);
  return read && withinDepth(read.value) ? read : undefined;
}

function repairBody(body: string, fenced: boolean): Parsed | undefined {
  if (fenced) {
    const strict = tryParse(body);
    if (strict) return strict;
  }
  if (endsInString(body)) return undefined;
  // NaN or Infinity would come back as the string "NaN" (or null): not what the model wrote.
  if (nonJsonNumber(body) !== undefined) return undefined;
  const normalized = normalizeAlmostJson(body);
  if (normalized !== undefined) {
    const read = tryParse(normalized);
    if (read) return read;
  }
  // Past these, jsonrepair's recursion costs far more than the text (and the value would be
  // refused for its depth anyway).
  if (body.length > MAX_REPAIR_CHARS || nestsDeeper(body, MAX_DEPTH)) return undefined;
  // A single-quoted string whose end was never written is a value no repair may finish, and
  // jsonrepair re-reads the rest of the text from each such quote (a looping `f(a='x f(a='x …`
  // of 28 KB took 19 s).
  if (unclosedQuote(body)) return undefined;
  try {
    const source = jsonrepair(body);
    return { value: JSON.parse(source), source };
  } catch {
    return undefined;
  }
}

/**
 * True when a single-quoted string outside double-quoted strings and comments never closes, read
 * as the almost-JSON reader reads it (escapes, triple quotes, an apostrophe inside the string).
 * Linear: each string is read once, and the first that never closes ends the walk.
 */
function unclosedQuote(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '"') {
      while (++i < text.length && text[i] !== '"') if (text[i] === "\\") i++;
    } else if (c === "'") {
      const end = quotedEnd(text, i);
      if (end < 0) return true;
      i = end - 1;
    } else {
      const end = commentEnd(text, i);
      if (end >= 0) i = end - 1;
    }
  }
  return false;
}

/**
 * Reads the JSON value text starts with (`{` or `[`), repaired, stopping where its brackets close
 * so prose after it cannot leak into its last string. `whole` is false when text follows it.
 */
export function repairLeading(text: string): (Parsed & { whole: boolean }) | undefined {
  const trimmed = text.trim();
  if (trimmed[0] === "{" || trimmed[0] === "[") {
    const { end } = scanBrackets(trimmed, 0);
    if (end > 0 && end < trimmed.length) {
      const slice = trimmed.slice(0, end);
      const read = tryParse(slice) ?? repairParse(slice);
      if (read) return { ...read, whole: false };
    }
  }
  const read = repairParse(trimmed);
  return read ? { ...read, whole: true } : undefined;
}

/** One code fence in a reply: where it starts and ends, and its body. */
export interface Fence {
  /** Index of the opening backticks. */
  start: number;
  /** Index just past the closing backticks (the text's length when it never closes). */
  end: number;
  /** What the fence holds. */
  body: string;
  /** False when the text ended before a closing fence. */
  closed: boolean;
}

const FENCE_OPEN = /^(`{3,})[\w-]{0,64}[^\S\n]{0,64}\n?/;

/**
 * Where the backticks at `at` end, when they close a fence opened with `width` of them: a run of at
 * least as many with no info string after it (CommonMark: a closing fence has none, so a
 * ```` ```json ```` or ```` ``` python ```` line inside a block is that block's text); -1 otherwise.
 * An end-of-turn token right after it (```` ```<end_of_turn> ````) is no info string. Only the
 * blank space after the run is read.
 */
function closerEnd(text: string, at: number, width: number): number {
  let end = at;
  while (text[end] === "`") end++;
  if (end - at < width) return -1;
  let i = end;
  while (text[i] === " " || text[i] === "\t") i++;
  return INFO_START.test(text[i] ?? "") ? -1 : end;
}

/** The first character of an info string (a language name). */
const INFO_START = /^[\w-]$/;

/** The first fence closer (see `closerEnd`) from `from` on: where it starts and ends, or undefined. */
function nextCloser(text: string, from: number, width: number): { at: number; end: number } | undefined {
  for (let at = text.indexOf("```", from); at >= 0; ) {
    const end = closerEnd(text, at, width);
    if (end >= 0) return { at, end };
    let past = at;
    while (text[past] === "`") past++;
    at = text.indexOf("```", past);
  }
  return undefined;
}

/**
 * The first `max` code fences in `text`, in order. A fence opened with three or more backticks
 * closes at a run of at least as many with no info string after it (`` }``` `` closes one; a
 * ```` ```json ```` line, which opens a block in CommonMark but never closes one, does not). A
 * fence whose body begins with `{` or `[` closes after that value's brackets close, so a fence
 * written inside one of its strings (a README in a `write_file` call) cannot end it early. Linear
 * in the text for each fence read.
 */
export function findFences(text: string, max: number): Fence[] {
  const fences: Fence[] = [];
  let from = 0;
  // Reading a body's brackets passes over a fence written inside one of its strings; once the
  // allowance is spent, a body ends at the next fence.
  const allowance = scanAllowance(text);
  while (fences.length < max) {
    const start = text.indexOf("```", from);
    if (start < 0) break;
    const info = FENCE_OPEN.exec(text.slice(start, start + 160)) as RegExpExecArray;
    const width = (info[1] as string).length;
    const bodyAt = start + info[0].length;
    let close: { at: number; end: number } | undefined;
    let i = bodyAt;
    while (i < text.length && /\s/.test(text[i] as string)) i++;
    if (allowance.chars > 0 && (text[i] === "{" || text[i] === "[")) {
      const { end } = scanCharged(text, i, allowance);
      if (end > 0) {
        let j = end;
        while (j < text.length && /\s/.test(text[j] as string)) j++;
        const closed = text.startsWith("```", j) ? closerEnd(text, j, width) : -1;
        if (closed >= 0) close = { at: j, end: closed };
        // The text ends after the value (the reply stopped before the closing fence): a fence
        // written in one of its strings does not close it.
        else if (j === text.length) {
          fences.push({ start, end: text.length, body: text.slice(bodyAt), closed: false });
          break;
        }
      }
    }
    close ??= nextCloser(text, bodyAt, width);
    if (close === undefined) {
      fences.push({ start, end: text.length, body: text.slice(bodyAt), closed: false });
      break;
    }
    fences.push({ start, end: close.end, body: text.slice(bodyAt, close.at), closed: true });
    from = close.end;
  }
  return fences;
}

/**
 * Fenced code blocks written with tildes (`~~~`, `~~~xml`), in order: a line
 * of three or more `~` (after at most three spaces) to the next line of at least as many `~` and
 * no info string (an end-of-turn token after them, `~~~<|end|>`, is none, as after backticks), or
 * to the end of the text when none closes it. Linear: each line is read once.
 */
export function tildeFences(text: string): Fence[] {
  const regions: Fence[] = [];
  if (!text.includes("~~~")) return regions;
  let open = -1;
  let bodyAt = 0;
  let width = 0;
  for (let line = 0; line < text.length; ) {
    let next = text.indexOf("\n", line);
    if (next < 0) next = text.length;
    let i = line;
    while (i < next && i - line < 3 && text[i] === " ") i++;
    const tildesAt = i;
    while (i < next && text[i] === "~") i++;
    const run = i - tildesAt;
    if (open < 0 && run >= 3) {
      open = line;
      bodyAt = next + 1;
      width = run;
    } else if (open >= 0 && run >= width && !INFO_START.test(text.slice(i, next).trimStart()[0] ?? "")) {
      regions.push({ start: open, end: next, body: text.slice(bodyAt, line), closed: true });
      open = -1;
    }
    line = next + 1;
  }
  if (open >= 0) regions.push({ start: open, end: text.length, body: text.slice(bodyAt), closed: false });
  return regions;
}

/**
 * The first `max` fenced code blocks in `text`, backtick (`findFences`) and tilde (`tildeFences`)
 * alike, in order; a fence of one kind opened inside one of the other is that block's text.
 */
export function codeFences(text: string, max: number): Fence[] {
  const all = [...findFences(text, max), ...tildeFences(text)].sort((a, b) => a.start - b.start);
  const fences: Fence[] = [];
  for (const fence of all) {
    if (fences.length >= max) break;
    const last = fences[fences.length - 1];
    if (!last || fence.start >= last.end) fences.push(fence);
  }
  return fences;
}

/**
 * Where text cut off before its JSON was complete stops, read by {@link walkJsonLike}: `"key"` in
 * the middle of a key's string, `"string"` in the middle of the string value at `path`,
 * `"no value"` after the key at `path` (its colon written or not) with no value begun, `"token"`
 * inside the number or literal at `path` (`tru`), `"open"` inside the object or list at `path`
 * opened and not closed (`object` says which); undefined when the walk does not end in the text.
 */
export interface CutPlace {
  place: "key" | "string" | "no value" | "token" | "open";
  path: (string | number)[];
  object: boolean;
}

/** Where `text`, cut off, stops: see {@link CutPlace}. */
export function cutPlace(text: string): CutPlace | undefined {
  let last: JsonStep | undefined;
  const walk = walkJsonLike<never>(text, (step) => {
    last = step;
    return undefined;
  });
  if ("stopped" in walk || (walk.end !== "text" && walk.end !== "string")) return undefined;
  const top = walk.stack[walk.stack.length - 1];
  if (!top) return undefined;
  const path = placesPath(walk.stack);
  if (walk.end === "string") {
    if (top.object && top.phase === "key") return { place: "key", path: path.slice(0, -1), object: true };
    return { place: "string", path, object: top.object };
  }
  const step = last as JsonStep | undefined;
  if (step?.kind === "token" && step.end === text.trimEnd().length && top.phase === "after") {
    return { place: "token", path, object: top.object };
  }
  if (top.object && (top.phase === "colon" || top.phase === "value")) {
    return { place: "no value", path, object: true };
  }
  return { place: "open", path: path.slice(0, -1), object: top.object };
}
