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
  const quote = text[start];
  let value = "";
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i] as string;
    if (c === quote) return { value, end: i + 1, closed: true };
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

/** Rewrites almost-JSON into strict JSON text, or answers `undefined` when it is something else. */
export function normalizeAlmostJson(text: string): string | undefined {
  const out: string[] = [];
  const stack: string[] = [];
  let started = false;
  const last = () => out[out.length - 1];
  const dropTrailingComma = () => {
    if (last() === ",") out.pop();
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
      out.push(JSON.stringify(token.value));
      i = token.end;
      if (stack.length === 0) started = true;
      continue;
    }
    if (c === "{" || c === "[") {
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
      if (JSON_NUMBER.test(token)) out.push(token);
      else {
        const value = Number(token);
        if (!Number.isFinite(value)) return undefined;
        out.push(JSON.stringify(value));
      }
      i += token.length;
      if (stack.length === 0) started = true;
      continue;
    }
    const word = IDENTIFIER.exec(rest);
    if (!word) return undefined;
    const name = word[0];
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
