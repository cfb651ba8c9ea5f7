/**
 * Regular expressions as grammar builders can take them. llama.cpp's converter (and LM Studio,
 * which embeds it) refuses a `pattern` that does not start with `^` and end with `$`, and turns
 * every other construct into grammar rules — so lookarounds, back-references and huge counted
 * repetitions either fail or blow the grammar up. OpenAI takes any ECMAScript-like pattern.
 */

/** The largest repetition count (`{n,m}`, `minItems`, …) kept; larger ones explode a grammar. */
export const REPETITION_LIMIT = 1000;

interface Scan {
  /** The pattern without its outer anchors, rewritten to keep `"` and `\` out (see {@link scan}). */
  inner: string;
  /** `inner` split at each `|` outside any group: the alternatives the anchors bind to one each. */
  alternatives: string[];
  anchoredStart: boolean;
  anchoredEnd: boolean;
}

/** Any character a JSON string's text may hold raw: everything but the quote and the backslash. */
export const STRING_CHAR = '[^"\\\\]';

/**
 * What `.` stands for: any character but a line terminator (as in ECMAScript without the `s`
 * flag), and not the quote or the backslash either.
 */
export const DOT_CHAR = '[^"\\\\\\n\\r\\u2028\\u2029]';

/**
 * `\d`, `\w` and `\s` as the contents of a class, in escapes llama.cpp's grammar parser reads: it
 * knows none of the three (its converter copies them into the grammar as they stand, a 400
 * "failed to parse grammar"). `\s` is all of ECMAScript's white space and line terminators.
 */
const SETS: Record<string, string> = {
  d: "0-9",
  w: "A-Za-z0-9_",
  s: "\\t\\n\\x0B\\x0C\\r \\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF",
};

/** A set escape (`\d`, `\S`, …) outside a class; the negated ones leave out the quote and the backslash too. */
function setClass(letter: string): string {
  const set = SETS[letter.toLowerCase()] as string;
  return letter === letter.toLowerCase() ? `[${set}]` : `[^${set}"\\\\]`;
}

/** The characters that are regex operators outside a class, written escaped (`\.`), which llama.cpp reads. */
const OPERATORS = "^$.[]()|{}*+?";

const hexOf = (code: number, digits: number) => code.toString(16).toUpperCase().padStart(digits, "0");

const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;
const isSurrogate = (code: number) => code >= 0xd800 && code <= 0xdfff;

/**
 * `\x..` for a control character other than tab, line feed and carriage return (`\v`, `\f`, `\0`,
 * `\b`, `\cX` are refused by llama.cpp's grammar parser), `\u....` past ASCII (llama.cpp's
 * converter reads a pattern byte by byte: a raw `é+` repeats the last byte of `é`, a 400), a lone
 * half of a surrogate pair included (raw, it is not text a JSON parser takes: llama.cpp answers a
 * 500); undefined for any other character.
 */
function hexEscape(code: number): string | undefined {
  if (code === 9 || code === 10 || code === 13) return undefined;
  if (code < 0x20 || code === 0x7f) return `\\x${hexOf(code, 2)}`;
  if (code > 0x7f) return `\\u${hexOf(code, 4)}`;
  return undefined;
}

/**
 * One character as a pattern writes it, in a form both ECMAScript and llama.cpp's grammar parser
 * read as that character: `\t`, `\n`, `\r`, `\x..` for another control character (`\v`, `\f`,
 * `\0`, `\b`, `\cJ` are refused there), `\u....` past ASCII (half of a surrogate pair too: the
 * callers write a whole pair raw, see {@link pairAt}), an operator escaped, and anything else as
 * itself (`\-`, `\/`, `\ ` are refused there). In a class `]` and `[` are escaped, and
 * `^` and `-` written as `\x5E` and `\x2D`, so neither can negate the class or make a range.
 */
function writeChar(code: number, inClass: boolean): string {
  const hex = hexEscape(code);
  // Outside a class llama.cpp's converter reads `\x..` and `\u....` as literal text, so a count
  // after one repeats its last digit (`\u00E9+`: a 400); as a class of one it is one atom.
  if (hex !== undefined) return inClass ? hex : `[${hex}]`;
  if (code === 9) return "\\t";
  if (code === 10) return "\\n";
  if (code === 13) return "\\r";
  const c = String.fromCharCode(code);
  if (!inClass) return OPERATORS.includes(c) ? `\\${c}` : c;
  if (c === "]" || c === "[" || c === "\\") return `\\${c}`;
  if (c === "^" || c === "-") return `\\x${hexOf(code, 2)}`;
  return c;
}

/**
 * What one escape stands for: a single character (`code`), or a set of them (`\d`, `\w`, `\s`
 * and their negations: `code` undefined).
 */
interface Escape {
  code: number | undefined;
  /** The escape's length in the pattern, backslash included. */
  length: number;
}

/** The code points of the one-letter escapes that stand for a control character. */
const CONTROL_ESCAPES: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13 };

/**
 * What the escape at `i` stands for, inside or outside a class (`\b`, the backspace, is only
 * asked about inside one: outside, it is a word boundary and refused before). Answers undefined
 * for an escape that cannot be read as one character or a set: an octal or back-reference digit,
 * `\0` before a digit, `\c` without a letter, a malformed `\x` or `\u`, `\u{…}`, `\p`, `\P`
 * and `\k`, which engines read differently with and without the `u` flag. The caller then moves
 * the pattern into the description rather than guess what it admits.
 */
function escapedChar(pattern: string, i: number): Escape | undefined {
  const next = pattern[i + 1] as string;
  const after = pattern[i + 2] ?? "";
  const hex = (digits: number) => {
    const text = pattern.slice(i + 2, i + 2 + digits);
    return new RegExp(`^[0-9a-fA-F]{${digits}}$`).test(text)
      ? { code: Number.parseInt(text, 16), length: 2 + digits }
      : undefined;
  };
  if (next === "x") return hex(2);
  if (next === "u") return hex(4);
  if (/[dDwWsS]/.test(next)) return { code: undefined, length: 2 };
  const control = CONTROL_ESCAPES[next];
  if (control !== undefined) return { code: control, length: 2 };
  if (next === "b") return { code: 8, length: 2 };
  if (next === "0") return /[0-9]/.test(after) ? undefined : { code: 0, length: 2 };
  if (next === "c") return /[A-Za-z]/.test(after) ? { code: after.charCodeAt(0) % 32, length: 3 } : undefined;
  if (/[1-9kpP]/.test(next)) return undefined;
  // Without the `u` flag an identity escape is of one UTF-16 unit (the high half of an emoji).
  return { code: next.charCodeAt(0), length: 2 };
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The one UTF-16 unit the atom at `i` stands for (a raw character, or an escape of one), if it is one. */
function unitAt(pattern: string, i: number): { code: number; length: number } | undefined {
  const c = pattern[i];
  if (c === undefined) return undefined;
  if (c !== "\\") return { code: c.charCodeAt(0), length: 1 };
  const escaped = pattern[i + 1] === undefined ? undefined : escapedChar(pattern, i);
  return escaped?.code === undefined ? undefined : { code: escaped.code, length: escaped.length };
}

/**
 * Where the atom at `start`, a high surrogate, is followed by a low one (raw `😀`, `\😀`, or
 * `\uD83D\uDE00`): both as one character, written raw, and where the pair ends. A lone half is
 * never written raw (see {@link hexEscape}).
 */
function pairAt(pattern: string, high: number, end: number): { text: string; end: number } | undefined {
  if (!isHigh(high)) return undefined;
  const low = unitAt(pattern, end);
  if (low === undefined || !isLow(low.code)) return undefined;
  return { text: String.fromCharCode(high, low.code), end: end + low.length };
}

/** A repetition count at the start of the text. */
const COUNT = /^\{(\d+)(?:,(\d*))?\}/;

/** A quantifier (`*`, `+`, `?`, or a count `{n}`, `{n,}`, `{n,m}`) starts at `i`. */
function quantifierAt(pattern: string, i: number): boolean {
  const c = pattern[i];
  return c === "*" || c === "+" || c === "?" || (c === "{" && COUNT.test(pattern.slice(i, i + 24)));
}

/**
 * Reads one character class from the `[` at `start`. A negated class gets `"` and `\` added to
 * what it leaves out (where it does not already); a positive class that could admit either —
 * by naming it, by a range across it, or by `\S`, `\W`, `\D` — answers undefined, as no grammar
 * server could keep the string closed under it.
 */
function readClass(pattern: string, start: number): { text: string; end: number } | undefined {
  let i = start + 1;
  const negated = pattern[i] === "^";
  if (negated) i++;
  let body = "";
  let excludesQuote = false;
  let excludesBackslash = false;
  let previous: number | undefined;
  let rangeFrom: number | undefined;
  /** The atom before was a set (`\d`, `\w`, `\s`, …). */
  let afterSet = false;
  for (; i < pattern.length; i++) {
    const c = pattern[i] as string;
    // ECMAScript has no "a `]` first is literal" rule: `[]` matches nothing and `[^]` anything.
    if (c === "]") break;
    let code: number | undefined;
    let text = c;
    if (c === "\\") {
      const next = pattern[i + 1];
      if (next === undefined) return undefined;
      const escaped = escapedChar(pattern, i);
      if (!escaped) return undefined;
      // `[^\S]`, `[\Wa]`: no grammar class says "not this set" beside other atoms.
      if (/[SWD]/.test(next)) return undefined;
      code = escaped.code;
      text = code === undefined ? (SETS[next] as string) : writeChar(code, true);
      // `[a-\d]`: a set cannot end a range. Without the `u` flag ECMAScript reads it as a, `-` and
      // the set, with it it refuses the pattern; other engines differ again. Not guessed at.
      if (code === undefined && rangeFrom !== undefined) return undefined;
      i += escaped.length - 1;
    } else if (c === "-" && previous !== undefined && pattern[i + 1] !== "]") {
      // The `-` of a range `a-b`: the next atom is its end.
      rangeFrom = previous;
      previous = undefined;
      body += c;
      continue;
    } else {
      // `[\s-a]`, a set starting a range, is the same riddle (`[\s-a-z]` is \s, a, `-` and z there).
      if (c === "-" && afterSet && pattern[i + 1] !== "]") return undefined;
      code = c.charCodeAt(0);
      // A literal `-` is written as `\x2D`, so what is appended after it can never form a range.
      text = writeChar(code, true);
    }
    const endsRange = rangeFrom !== undefined;
    if (code !== undefined && !endsRange) {
      // An emoji's two halves, raw or escaped, written together as one character, unless the low
      // half starts a range (`[\uD83D\uDE00-\uDE4F]`, see below).
      const pair = pairAt(pattern, code, i + 1);
      if (pair && !(pattern[pair.end] === "-" && pattern[pair.end + 1] !== "]")) {
        body += pair.text;
        i = pair.end - 1;
        previous = undefined;
        afterSet = false;
        continue;
      }
    }
    const low = rangeFrom ?? code;
    const high = code;
    rangeFrom = undefined;
    if (low !== undefined && high !== undefined) {
      // A range with half of a surrogate pair at an end (`[\uD83C-\uDBFF]`, `[^\uD800-\uDFFF]`) is
      // of UTF-16 units in ECMAScript without the `u` flag, of code points in a grammar, where no
      // text holds a lone half: the two cannot be read the same way.
      if (endsRange && (isSurrogate(low) || isSurrogate(high))) return undefined;
      const covers = (x: number) => low <= x && x <= high;
      if (covers(QUOTE)) {
        if (!negated) return undefined;
        excludesQuote = true;
      }
      if (covers(BACKSLASH)) {
        if (!negated) return undefined;
        excludesBackslash = true;
      }
    }
    // An atom that ended a range starts none: `[a-a-z]` is a, `-` and z, as `[a-c-z]` is.
    previous = endsRange ? undefined : code;
    afterSet = code === undefined;
    body += text;
  }
  if (i >= pattern.length) return undefined;
  // `[]`: no character, in ECMAScript. llama.cpp's converter reads it as the empty string
  // (`^[]$` lets the model write `""`, `^(a|[])$` too) or, quantified (`[]?`), refuses the whole
  // grammar; no grammar says "no character", so the pattern is not sent.
  if (!negated && body === "") return undefined;
  const extra = negated ? `${excludesQuote ? "" : '"'}${excludesBackslash ? "" : "\\\\"}` : "";
  return { text: `[${negated ? "^" : ""}${body}${extra}]`, end: i };
}

/**
 * Splits off one leading `^` and one trailing unescaped `$`, and answers undefined for a
 * construct a grammar builder cannot express: any `(?…)` group other than `(?:`, a
 * back-reference, a Unicode property escape, a word boundary, an anchor in the middle, or a
 * repetition count above {@link REPETITION_LIMIT}.
 *
 * Grammar servers (llama.cpp) match a pattern against the string's raw text, so whatever can
 * match `"` lets the model walk out of the string mid-value. The rewrite keeps them out: `.` is
 * {@link DOT_CHAR}, `\S`/`\W`/`\D` and negated classes leave out `"` and `\` as well, and a
 * pattern that names either outright is not expressed. Every escape is written in a form
 * llama.cpp's grammar parser reads (see {@link writeChar}; `\d`, `\w`, `\s` as classes).
 */
function scan(pattern: string): Scan | undefined {
  let i = 0;
  let anchoredStart = false;
  if (pattern.startsWith("^")) {
    anchoredStart = true;
    i = 1;
  }
  // The rewrite in pieces, joined once at the end: slicing a string built by `+=` at every `|`
  // flattened it each time, quadratic in a pattern of many alternatives.
  const out: string[] = [];
  let anchoredEnd = false;
  let groups = 0;
  /** Where each top-level alternative starts in `out`. */
  const alternativeStarts = [0];
  /** The atom before was a quantifier, so a `?` now makes it lazy. */
  let quantified = false;
  /**
   * A character at `i` of `length` pattern characters. Past ASCII, it is written as `\u....`, or
   * with the low half after it as a raw pair (an emoji); undefined for a pair under a quantifier.
   */
  const literal = (code: number, length: number): boolean => {
    const pair = pairAt(pattern, code, i + length);
    if (pair) {
      // Without the `u` flag `😀+` repeats the low half alone: no text a model can write past one
      // repeat, and a grammar server reads it as the whole character repeated.
      if (quantifierAt(pattern, pair.end)) return false;
      out.push(pair.text);
      i = pair.end - 1;
      return true;
    }
    out.push(writeChar(code, false));
    i += length - 1;
    return true;
  };
  for (; i < pattern.length; i++) {
    const c = pattern[i] as string;
    const lazy = quantified && c === "?";
    quantified = false;
    // `a+?` admits the strings `a+` admits (the laziness only orders the tries); a grammar server
    // reads it as `(a+)?`, the empty string too.
    if (lazy) continue;
    if (c === "(") groups++;
    else if (c === ")") groups = Math.max(0, groups - 1);
    else if (c === "|" && groups === 0) {
      out.push(c);
      alternativeStarts.push(out.length);
      continue;
    }
    if (c === "\\") {
      const next = pattern[i + 1];
      if (next === undefined) return undefined;
      if (next === "b" || next === "B") return undefined;
      if (/[1-9]/.test(next) || next === "k" || next === "p" || next === "P") return undefined;
      const escaped = escapedChar(pattern, i);
      if (!escaped || escaped.code === QUOTE || escaped.code === BACKSLASH) return undefined;
      if (escaped.code !== undefined) {
        if (!literal(escaped.code, escaped.length)) return undefined;
        continue;
      }
      out.push(setClass(next));
      i += escaped.length - 1;
      continue;
    }
    if (c === '"') return undefined;
    if (c === ".") {
      out.push(DOT_CHAR);
      continue;
    }
    if (c === "[") {
      const cls = readClass(pattern, i);
      if (!cls) return undefined;
      out.push(cls.text);
      i = cls.end;
      continue;
    }
    if (c === "(" && pattern[i + 1] === "?") {
      if (pattern[i + 2] !== ":") return undefined;
      // A non-capturing group matches what a plain group matches; converters only know `(`.
      out.push("(");
      i += 2;
      continue;
    }
    if (c === "{") {
      const m = COUNT.exec(pattern.slice(i, i + 24));
      if (m) {
        const low = Number(m[1]);
        const high = m[2] ? Number(m[2]) : 0;
        if (low > REPETITION_LIMIT || high > REPETITION_LIMIT) return undefined;
        out.push(m[0]);
        i += m[0].length - 1;
        quantified = true;
        continue;
      }
    }
    if (c === "$") {
      if (i === pattern.length - 1) {
        anchoredEnd = true;
        continue;
      }
      return undefined;
    }
    if (c === "^") return undefined;
    // A `{` or `}` that is no repetition count is a literal brace in ECMAScript; llama.cpp
    // refuses it bare ("Unbalanced curly brackets") and reads it escaped.
    if (c === "{" || c === "}") out.push(`\\${c}`);
    else if (c.charCodeAt(0) > 0x7f) {
      if (!literal(c.charCodeAt(0), 1)) return undefined;
    } else {
      out.push(c);
      quantified = c === "*" || c === "+" || c === "?";
    }
  }
  alternativeStarts.push(out.length + 1);
  const alternatives = alternativeStarts
    .slice(1)
    .map((end, n) => out.slice(alternativeStarts[n], end - 1).join(""));
  return { inner: out.join(""), alternatives, anchoredStart, anchoredEnd };
}

function compiles(pattern: string): boolean {
  try {
    new RegExp(pattern);
    return true;
  } catch {
    return false;
  }
}

/**
 * Rewrites a pattern into the anchored form grammar builders accept, keeping what it matches in
 * text without a quote or a backslash: `abc` (which matches anywhere) becomes
 * `^[^"\\]*(abc)[^"\\]*$`, never `.` that would let a grammar server admit a raw `"`. Answers `""` for a pattern that
 * constrains nothing, and undefined for one that cannot be expressed safely (the caller then
 * moves it into the description).
 */
export function anchorPattern(pattern: string): string | undefined {
  if (!compiles(pattern)) return undefined;
  const parts = scan(pattern);
  if (!parts) return undefined;
  const { inner, alternatives, anchoredStart, anchoredEnd } = parts;
  const any = `${STRING_CHAR}*`;
  // Only `.*` (or nothing) constrains nothing; `[^"]*` written out still says "no quote", and
  // `^.*$` says "no line break".
  if (inner === "" || (/^\^?(?:\.\*)?\$?$/.test(pattern) && !(anchoredStart && anchoredEnd)))
    return anchoredStart && anchoredEnd && inner === "" ? "^$" : "";
  if (alternatives.length > 1 && (anchoredStart || anchoredEnd)) {
    // `^a|b$` is "starts with a, or ends with b": the anchors bind to the first and the last
    // alternative alone, where a grammar server would read `a` or `b` whole. Each is anchored
    // on its own inside one group, which both read the same way.
    const last = alternatives.length - 1;
    const each = alternatives.map(
      (alt, n) => `${n === 0 && anchoredStart ? "" : any}${alt}${n === last && anchoredEnd ? "" : any}`,
    );
    const result = `^(${each.join("|")})$`;
    return compiles(result) ? result : undefined;
  }
  const open = anchoredStart && anchoredEnd;
  const body = open ? inner : `(${inner})`;
  const result = `^${anchoredStart ? "" : any}${body}${anchoredEnd ? "" : any}$`;
  return compiles(result) ? result : undefined;
}

/** True when a pattern is already in the form {@link anchorPattern} produces. */
export function isGrammarSafePattern(pattern: string): boolean {
  return anchorPattern(pattern) === pattern;
}
