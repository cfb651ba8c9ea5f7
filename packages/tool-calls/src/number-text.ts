import { commentEnd } from "./almost-json.js";
import type { ArgumentPath } from "./exact-numbers.js";
import { MAX_DEPTH } from "./json-text.js";

/**
 * A number token as a model writes one: JSON's, and the forms JSON refuses but the meaning is
 * plain (`02134`, `+5`, `.5`). `1.` and `1e` are not whole and are left for the reader to refuse.
 */
const NUMBER_WORD = /^[+-]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Characters that end a bare token (a number, a literal, a bare key). */
const TOKEN_END = /[\s,:{}[\]"'#/]/;

/** A number written where only a string is taken, quoted so it reaches the tool as written. */
export interface NumberAsText {
  /** Where it sits in the arguments. */
  path: ArgumentPath;
  /** The token exactly as the model wrote it. */
  digits: string;
}

interface Frame {
  object: boolean;
  /** The key (objects) or index (arrays) being read. */
  at: string | number;
  phase: "key" | "colon" | "value" | "after";
}

/** Index just past the string whose quote is at `at` (backslash escapes honoured), or -1 when it never closes. */
function stringEnd(text: string, at: number): number {
  const quote = text[at];
  for (let i = at + 1; i < text.length; i++) {
    const c = text[i];
    if (c === "\\") i++;
    else if (c === quote) return i + 1;
  }
  return -1;
}

/** The key a quoted key names (`"a"`, `'a'`); its inner text where JSON cannot read it. */
function keyOf(quoted: string): string {
  const inner = quoted.slice(1, -1);
  if (quoted[0] === "'") return inner.replace(/\\(['"\\])/g, "$1");
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return inner;
  }
}

/**
 * Quotes each bare number token in the JSON-like arguments `text` whose place `onlyText` says
 * takes a string and no number, and that a number would not write back as written, so a reader
 * keeps the model's text (`02134`, `1.10`, `1e3`, `+5`, `.5`) instead of a number. A token
 * JavaScript writes back the same (`7`, `-3.5`) is left a number, for the tool's validation. Reads the almost-JSON the repair takes — single-quoted strings, bare
 * keys, comments — from the first `{` or `[` to where it closes (a list's first item is the
 * arguments, as the reader takes `[{…}]`); what follows is copied as it is. A token the text ends
 * inside is never quoted (it may be cut short). Linear in the text and the paths of the numbers;
 * asks `onlyText` once per number token. Answers `undefined` when no token was quoted.
 */
export function quoteNumbersAsText(
  text: string,
  onlyText: (path: ArgumentPath) => boolean,
): { text: string; quoted: NumberAsText[] } | undefined {
  const first = text.search(/[{[]/);
  if (first < 0) return undefined;
  const list = text[first] === "[";
  const stack: Frame[] = [];
  const quoted: NumberAsText[] = [];
  const parts: string[] = [];
  let copied = 0;
  let i = first;
  while (i < text.length) {
    const c = text[i] as string;
    const top = stack[stack.length - 1];
    if (c === " " || c === "\n" || c === "\t" || c === "\r") {
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
    if (c === "{" || c === "[") {
      if (top) top.phase = "after";
      stack.push({ object: c === "{", at: c === "{" ? "" : 0, phase: c === "{" ? "key" : "value" });
      if (stack.length > MAX_DEPTH) return undefined;
      i++;
      continue;
    }
    if (c === "}" || c === "]") {
      stack.pop();
      i++;
      if (stack.length === 0) break;
      continue;
    }
    if (!top) break;
    if (c === ",") {
      if (top.object) top.phase = "key";
      else {
        top.phase = "value";
        top.at = (top.at as number) + 1;
      }
      i++;
      continue;
    }
    if (c === ":") {
      if (top.object) top.phase = "value";
      i++;
      continue;
    }
    if (c === '"' || (c === "'" && (top.phase === "key" || top.phase === "value"))) {
      const end = stringEnd(text, i);
      if (end < 0) break;
      if (top.object && top.phase === "key") {
        top.at = keyOf(text.slice(i, end));
        top.phase = "colon";
      } else top.phase = "after";
      i = end;
      continue;
    }
    let j = i + 1;
    while (j < text.length && !TOKEN_END.test(text[j] as string)) j++;
    const token = text.slice(i, j);
    if (top.object && top.phase === "key") {
      top.at = token;
      top.phase = "colon";
    } else {
      // A token JavaScript writes back as it was written (`7`, `-3.5`) loses nothing as a number,
      // and the tool's own validation decides about it; the others would lose the model's text.
      if (
        top.phase === "value" &&
        j < text.length &&
        NUMBER_WORD.test(token) &&
        String(Number(token)) !== token
      ) {
        const path = stack.map((frame) => frame.at);
        // A list's first item is the arguments: its paths are read from inside it.
        const inside = list ? (path[0] === 0 ? path.slice(1) : undefined) : path;
        if (inside !== undefined && inside.length > 0 && onlyText(inside)) {
          parts.push(text.slice(copied, i), JSON.stringify(token));
          copied = j;
          quoted.push({ path: inside, digits: token });
        }
      }
      top.phase = "after";
    }
    i = j;
  }
  if (quoted.length === 0) return undefined;
  parts.push(text.slice(copied));
  return { text: parts.join(""), quoted };
}
