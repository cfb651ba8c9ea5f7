/**
 * Regular expressions as grammar builders can take them. llama.cpp's converter (and LM Studio,
 * which embeds it) refuses a `pattern` that does not start with `^` and end with `$`, and turns
 * every other construct into grammar rules — so lookarounds, back-references and huge counted
 * repetitions either fail or blow the grammar up. OpenAI takes any ECMAScript-like pattern.
 */

/** The largest repetition count (`{n,m}`, `minItems`, …) kept; larger ones explode a grammar. */
export const REPETITION_LIMIT = 1000;

interface Scan {
  /** The pattern without its outer anchors. */
  inner: string;
  anchoredStart: boolean;
  anchoredEnd: boolean;
}

/**
 * Splits off one leading `^` and one trailing unescaped `$`, and answers undefined for a
 * construct a grammar builder cannot express: any `(?…)` group other than `(?:`, a
 * back-reference, a Unicode property escape, a word boundary, an anchor in the middle, or a
 * repetition count above {@link REPETITION_LIMIT}.
 */
function scan(pattern: string): Scan | undefined {
  let i = 0;
  let anchoredStart = false;
  if (pattern.startsWith("^")) {
    anchoredStart = true;
    i = 1;
  }
  let out = "";
  let inClass = false;
  let anchoredEnd = false;
  for (; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "\\") {
      const next = pattern[i + 1];
      if (next === undefined) return undefined;
      if (!inClass && (next === "b" || next === "B")) return undefined;
      if (/[1-9]/.test(next) || next === "k" || next === "p" || next === "P") return undefined;
      out += c + next;
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      out += c;
      continue;
    }
    if (c === "[") {
      inClass = true;
      out += c;
      // A leading `]` or `^]` inside a class is literal.
      if (pattern[i + 1] === "^") {
        out += "^";
        i++;
      }
      if (pattern[i + 1] === "]") {
        out += "]";
        i++;
      }
      continue;
    }
    if (c === "(" && pattern[i + 1] === "?") {
      if (pattern[i + 2] !== ":") return undefined;
      // A non-capturing group matches what a plain group matches; converters only know `(`.
      out += "(";
      i += 2;
      continue;
    }
    if (c === "{") {
      const m = /^\{(\d+)(?:,(\d*))?\}/.exec(pattern.slice(i));
      if (m) {
        const low = Number(m[1]);
        const high = m[2] ? Number(m[2]) : 0;
        if (low > REPETITION_LIMIT || high > REPETITION_LIMIT) return undefined;
        out += m[0];
        i += m[0].length - 1;
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
    out += c;
  }
  if (inClass) return undefined;
  return { inner: out, anchoredStart, anchoredEnd };
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
 * Rewrites a pattern into the anchored form grammar builders accept, keeping what it matches:
 * `abc` (which matches anywhere) becomes `^.*(abc).*$`. Answers `""` for a pattern that
 * constrains nothing, and undefined for one that cannot be expressed safely (the caller then
 * moves it into the description).
 */
export function anchorPattern(pattern: string): string | undefined {
  if (!compiles(pattern)) return undefined;
  const parts = scan(pattern);
  if (!parts) return undefined;
  const { inner, anchoredStart, anchoredEnd } = parts;
  if (inner === "" || inner === ".*") return anchoredStart && anchoredEnd && inner === "" ? "^$" : "";
  const open = anchoredStart && anchoredEnd;
  const body = open ? inner : `(${inner})`;
  const result = `^${anchoredStart ? "" : ".*"}${body}${anchoredEnd ? "" : ".*"}$`;
  return compiles(result) ? result : undefined;
}

/** True when a pattern is already in the form {@link anchorPattern} produces. */
export function isGrammarSafePattern(pattern: string): boolean {
  return anchorPattern(pattern) === pattern;
}
