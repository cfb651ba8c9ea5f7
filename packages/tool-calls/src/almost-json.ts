/**
 * A reader for the almost-JSON local models write — single-quoted strings, Python `True`,
 * `False` and `None`, bare keys, trailing commas, comments, brackets left open at the end — that
 * reads every string token exactly as written, so nothing inside a string can change. It answers
 * `undefined` for anything else — a string that never closes among it, as its end is unknown —
 * and the caller falls back to a general repair.
 */

const SIMPLE_ESCAPES: Record<string, string> = {
  '"': '"',
  "'": "'",
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

const WORDS: Record<string, string> = {
  true: "true",
  True: "true",
  false: "false",
  False: "false",
  null: "null",
  None: "null",
  undefined: "null",
};

const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/;
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const IDENTIFIER = /^[A-Za-z_$][\w$-]*/;

interface StringToken {
  value: string;
  end: number;
  closed: boolean;
}

function readString(text: string, start: number): StringToken | undefined {
  const quote = text[start] as string;
  // A Python triple-quoted string ("""…""" or '''…''') runs to the same three quotes: read as
  // three strings, {"a": """x"""} was {"a": "", "x": ""}.
  const closer = text.startsWith(quote.repeat(3), start) ? quote.repeat(3) : quote;
  let value = "";
  for (let i = start + closer.length; i < text.length; i++) {
    const c = text[i] as string;
    if (c === quote && text.startsWith(closer, i) && (closer !== "'" || endsSingleQuoted(text, i + 1))) {
      return { value, end: i + closer.length, closed: true };
    }
    if (c !== "\\") {
      value += c;
      continue;
    }
    const next = text[i + 1];
    if (next === undefined) return { value, end: text.length, closed: false };
    const simple = SIMPLE_ESCAPES[next];
    if (simple !== undefined) {
      value += simple;
      i++;
    } else if (next === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
      value += String.fromCharCode(Number.parseInt(text.slice(i + 2, i + 6), 16));
      i += 5;
    } else if (next === "x" && /^[0-9a-fA-F]{2}$/.test(text.slice(i + 2, i + 4))) {
      value += String.fromCharCode(Number.parseInt(text.slice(i + 2, i + 4), 16));
      i += 3;
    } else if (next === "\n") {
      i++; // a line continuation
    } else {
      // An escape JSON does not know keeps its backslash, as Python reads it.
      value += `\\${next}`;
      i++;
    }
  }
  return { value, end: text.length, closed: false };
}

/**
 * Index just past the string that opens with the quote at `start`, read as {@link normalizeAlmostJson}
 * reads it (escapes, triple quotes, an apostrophe inside single quotes), or -1 when it never closes.
 */
export function quotedEnd(text: string, start: number): number {
  const token = readString(text, start);
  return token?.closed ? token.end : -1;
}

/**
 * Whether a `'` inside a single-quoted string ends it: only where what follows could follow a
 * value (a comma, a bracket, a colon, another string after a space, a comment, the end). Followed
 * by a letter or a word, it is an apostrophe the model wrote (`'it's fine'`, `'the users' files'`),
 * and kept; followed at once by another `'`, it is a quote inside the text (SQL's `'bob'` as the
 * last thing in `'… name = 'bob''`).
 */
function endsSingleQuoted(text: string, after: number): boolean {
  // Two together (`'bob''` closing SQL's 'bob'): the first is the text's, the second may end it.
  if (text[after] === "'") return false;
  let i = after;
  while (i < text.length && /\s/.test(text[i] as string)) i++;
  return i >= text.length || /[,:}\])'"#/]/.test(text[i] as string);
}

/** Index of the end of the comment starting at `i` (`//`, `/* *\/` or `#`), or -1 when none starts there. */
export function commentEnd(text: string, i: number): number {
  const c = text[i];
  if (c === "#" || (c === "/" && text[i + 1] === "/")) {
    const nl = text.indexOf("\n", i);
    return nl < 0 ? text.length : nl + 1;
  }
  if (c === "/" && text[i + 1] === "*") {
    const close = text.indexOf("*/", i + 2);
    return close < 0 ? text.length : close + 2;
  }
  return -1;
}

/** The first character from `from` that is neither space nor inside a comment. */
function nextNonSpace(text: string, from: number): string | undefined {
  for (let i = from; i < text.length; i++) {
    const c = text[i] as string;
    if (/\s/.test(c)) continue;
    const end = commentEnd(text, i);
    if (end < 0) return c;
    i = end - 1;
  }
  return undefined;
}

/** The bare words (and signed forms) of numbers JSON cannot write: NaN and the infinities. */
const NON_JSON_NUMBER = /[-+]?(?:NaN|Infinity|nan|inf)(?![\w$])/y;
const BEFORE_VALUE = new Set([":", "[", ",", ""]);
/** A string (to its end, or the text's), a comment, a run of space, or one other character. */
const SKIPPED =
  /"(?:[^"\\]|\\[\s\S])*"?|'(?:[^'\\]|\\[\s\S])*'?|\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$)|#[^\n]*|\s+|[\s\S]/y;

/**
 * The first NaN or Infinity (JavaScript's or Python's spelling, signed or not) written as a bare
 * value outside strings and comments, or `undefined`. A repair would hand the tool the string
 * `"NaN"` (or `null`) for it, a value the model never wrote, so callers refuse such text instead.
 * Single quotes open a string where a value can begin, as in the other scanners. Linear.
 */
export function nonJsonNumber(text: string): string | undefined {
  let previous = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === "'" && !BEFORE_VALUE.has(previous)) {
      previous = c; // an apostrophe in a bare word, not a string
      i++;
      continue;
    }
    if (previous !== "" && BEFORE_VALUE.has(previous)) {
      NON_JSON_NUMBER.lastIndex = i;
      const word = NON_JSON_NUMBER.exec(text);
      // A bare key spelt so (`{inf: 1}`) is a key.
      if (word && nextNonSpace(text, i + word[0].length) !== ":") return word[0];
    }
    SKIPPED.lastIndex = i;
    const skipped = SKIPPED.exec(text) as RegExpExecArray;
    const token = skipped[0];
    if (!/^(?:\s|\/\/|\/\*|#)/.test(token)) previous = token[token.length - 1] as string;
    i += token.length;
  }
  return undefined;
}

/**
 * A number token JSON refuses (`007`, `.5`, `1.`, `012345678901234567891`) written as JSON writes
 * the same number, digit for digit: leading zeros dropped, a `0` before a bare point, a bare point
 * at the end dropped. Never through a double, which would round an integer past 2^53 and make
 * `00.5e400` Infinity before the caller could see the digits the model wrote.
 */
function jsonNumeral(token: string): string {
  // By index, not destructured (see `withinDepth`): never a polluted `Object.prototype.return` called.
  const parts = /^(-?)(\d*)(?:\.(\d*))?(.*)$/.exec(token) as RegExpExecArray;
  const sign = parts[1];
  const whole = parts[2];
  const fraction = parts[3];
  const exponent = parts[4];
  const digits = (whole as string).replace(/^0+(?=\d)/, "") || "0";
  return `${sign}${digits}${fraction ? `.${fraction}` : ""}${exponent}`;
}

/** Rewrites almost-JSON into strict JSON text, or answers `undefined` when it is something else. */
export function normalizeAlmostJson(text: string): string | undefined {
  const out: string[] = [];
  const stack: string[] = [];
  let started = false;
  const last = () => out[out.length - 1];
  const dropTrailingComma = () => {
    if (last() === ",") out.pop();
  };
  // A value written right after another with no comma between (`[1 2]`, `{"a": 1 "b": 2}`): the
  // comma is put in, never the two joined (`[1 2]` was read as [12]).
  const separate = () => {
    const prev = last();
    if (prev !== undefined && prev !== "," && prev !== ":" && prev !== "{" && prev !== "[") out.push(",");
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (stack.length === 0 && started) return undefined; // a second top-level value
    const comment = commentEnd(text, i);
    if (comment >= 0) {
      i = comment;
      continue;
    }
    if (c === '"' || c === "'") {
      const token = readString(text, i);
      if (!token) return undefined;
      // A string whose end was never written: its value is unknown, so this is not almost-JSON.
      if (!token.closed) return undefined;
      if (stack.length > 0) separate();
      out.push(JSON.stringify(token.value));
      i = token.end;
      if (stack.length === 0) started = true;
      continue;
    }
    if (c === "{" || c === "[") {
      if (stack.length > 0) separate();
      stack.push(c === "{" ? "}" : "]");
      out.push(c);
      started = true;
      i++;
      continue;
    }
    if (c === "}" || c === "]") {
      if (stack.pop() !== c) return undefined;
      dropTrailingComma();
      out.push(c);
      i++;
      continue;
    }
    if (c === ",") {
      const prev = last();
      if (prev !== "," && prev !== "{" && prev !== "[" && prev !== undefined) out.push(",");
      i++;
      continue;
    }
    if (c === ":") {
      out.push(":");
      i++;
      continue;
    }
    const rest = text.slice(i, i + 400);
    const number = NUMBER.exec(rest);
    if (number) {
      const token = number[0];
      if (stack.length > 0) separate();
      out.push(JSON_NUMBER.test(token) ? token : jsonNumeral(token));
      i += token.length;
      if (stack.length === 0) started = true;
      continue;
    }
    const word = IDENTIFIER.exec(rest);
    if (!word) return undefined;
    const name = word[0];
    if (stack.length > 0) separate();
    if (stack[stack.length - 1] === "}" && nextNonSpace(text, i + name.length) === ":") {
      out.push(JSON.stringify(name));
    } else {
      const literal = WORDS[name];
      if (literal === undefined) return undefined;
      out.push(literal);
    }
    i += name.length;
    if (stack.length === 0) started = true;
  }
  // Brackets left open at the end: close them, as the text was plainly one value.
  if (last() === ":") return undefined;
  dropTrailingComma();
  while (stack.length > 0) out.push(stack.pop() as string);
  return out.length > 0 ? out.join("") : undefined;
}
