import { type ArgumentPath, holdsNumber, rememberDigitsAt } from "./exact-numbers.js";
import { type JsonPlace, walkJsonLike } from "./json-text.js";

/**
 * A number token as a model writes one: JSON's, and the forms JSON refuses but the meaning is
 * plain (`02134`, `+5`, `.5`). `1.` and `1e` are not whole and are left for the reader to refuse.
 */
const NUMBER_WORD = /^[+-]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** Python's integer literals JSON has no spelling of: hex, octal, binary (`_` between digits allowed). */
const PYTHON_BASED = /^([+-]?)(0[xX](?:_?[\da-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+)$/;
/** Past this a based literal is too long to be a number a model means: left as written. */
const MAX_BASED_CHARS = 400;
/** A decimal with `_` between digits, as Python writes `1_000_000` or `0.000_1`. */
const PYTHON_GROUPED = /^[+-]?\d+(?:_\d+)*(?:\.\d+(?:_\d+)*)?(?:[eE][+-]?\d+(?:_\d+)*)?$/;

/**
 * The decimal spelling of a Python number literal JSON cannot read (`0x10` is `16`, `-0o17` is
 * `-15`, `0b101` is `5`, `1_000` is `1000`, `+0x1` is `+1`); `undefined` for any other text, and for a
 * based literal past 400 characters (too long to be a number a model means).
 */
export function pythonDecimal(text: string): string | undefined {
  const based = PYTHON_BASED.exec(text);
  if (based) {
    if (text.length > MAX_BASED_CHARS) return undefined;
    return `${based[1]}${BigInt((based[2] as string).replaceAll("_", "")).toString()}`;
  }
  return text.includes("_") && PYTHON_GROUPED.test(text) ? text.replaceAll("_", "") : undefined;
}

/** A number token JSON's reader is given, written as JSON writes it: see {@link jsonNumbers}. */
const asJsonNumber = (token: string): boolean =>
  NUMBER_WORD.test(token) ||
  (PYTHON_BASED.test(token) && token.length <= MAX_BASED_CHARS) ||
  (token.includes("_") && PYTHON_GROUPED.test(token));

/** A number written where only a string is taken, quoted so it reaches the tool as written. */
export interface NumberAsText {
  /** Where it sits in the arguments. */
  path: ArgumentPath;
  /** The token exactly as the model wrote it. */
  digits: string;
}

/** The key a quoted key names (`"a"`, `'a'`); its inner text where JSON cannot read it. A bare key as written. */
function keyOf(written: string): string {
  if (written[0] !== '"' && written[0] !== "'") return written;
  const inner = written.slice(1, -1);
  if (written[0] === "'") return inner.replace(/\\(['"\\])/g, "$1");
  try {
    return JSON.parse(written) as string;
  } catch {
    return inner;
  }
}

/** A bare number token met in almost-JSON text. */
export interface NumberToken {
  /** Keys and indexes from the outermost bracket (a list's first item is `0`), read when asked. */
  path(): (string | number)[];
  /** The token as written. */
  token: string;
  /** Where it starts in the text. */
  start: number;
  /** Index just past it. */
  end: number;
}

/**
 * Hands `visit` each bare token of JSON-like `text` — read as `walkJsonLike` reads it: single-quoted
 * strings, bare keys, comments, from the first `{` or `[` to where it closes — that sits in a
 * value's place and is a whole number as a model writes one (JSON's, and `02134`, `+5`, `.5`). A
 * token the text ends inside is not handed over (it may be cut short). Answers false when the text
 * nests deeper than `MAX_DEPTH` (the walk stops there). Linear in the text and the paths of the
 * numbers asked for (each key is decoded once, however many tokens' paths it is part of).
 */
export function forEachNumberToken(
  text: string,
  visit: (token: NumberToken) => void,
  isNumber: (token: string) => boolean = (token) => NUMBER_WORD.test(token),
): boolean {
  // Each place's key as last decoded, with the text it was decoded from (the same string while
  // the walk stands at that key, so the check costs nothing).
  const decoded = new WeakMap<JsonPlace, { written: string; key: string }>();
  const keyAt = (place: JsonPlace, written: string): string => {
    const known = decoded.get(place);
    if (known?.written === written) return known.key;
    const key = keyOf(written);
    decoded.set(place, { written, key });
    return key;
  };
  const walk = walkJsonLike(text, (step, stack) => {
    const top = stack[stack.length - 1];
    if (step.kind === "token" && top?.phase === "value" && step.end < text.length && isNumber(step.text)) {
      // Keys are read only for the tokens a caller asks about (most numbers write back as written),
      // and each key once: a long key over many such tokens is not decoded again for each.
      const path = () =>
        stack.map((place) => (typeof place.at === "number" ? place.at : keyAt(place, place.at)));
      visit({ path, token: step.text, start: step.start, end: step.end });
    }
    return undefined;
  });
  return !("end" in walk) || walk.end !== "deep";
}

/** True when JavaScript writes the number `token` reads as back as `token` (`7`, `-3.5`; not `07`, `1e21`). */
export function writesBack(token: string): boolean {
  return String(Number(token)) === token;
}

/**
 * `text` with each number token `replace` answers text for written as that text instead; answers
 * `undefined` when none was replaced, or when the text nests deeper than `MAX_DEPTH`.
 */
function rewriteNumberTokens(
  text: string,
  replace: (token: NumberToken) => string | undefined,
): string | undefined {
  const parts: string[] = [];
  let copied = 0;
  const whole = forEachNumberToken(
    text,
    (token) => {
      const written = replace(token);
      if (written === undefined) return;
      parts.push(text.slice(copied, token.start), written);
      copied = token.end;
    },
    asJsonNumber,
  );
  if (!whole || parts.length === 0) return undefined;
  parts.push(text.slice(copied));
  return parts.join("");
}

/**
 * Quotes each bare number token in the JSON-like arguments `text` whose place `onlyText` says
 * takes a string and no number, and that a number would not write back as written, so a reader
 * keeps the model's text (`02134`, `1.10`, `1e3`, `1e21`, `+5`, `.5`, Python's `0x10`, `1_000`) instead
 * of a number. A token
 * JavaScript writes back the same (`7`, `-3.5`, `1e+21`) is left a number, for the tool's
 * validation. Reads the text as {@link forEachNumberToken} does, from {@link argumentsBracket} (a
 * list's first item is the arguments, as the reader takes `[{…}]`; after prose, the `{` the reader
 * takes the object from); what precedes and follows it is copied as it is. Asks `onlyText`
 * once per such token. Answers `undefined` when no token was quoted.
 */
export function quoteNumbersAsText(
  text: string,
  onlyText: (path: ArgumentPath) => boolean,
): { text: string; quoted: NumberAsText[] } | undefined {
  const bracket = argumentsBracket(text);
  if (bracket < 0) return undefined;
  const list = text[bracket] === "[";
  const quoted: NumberAsText[] = [];
  const rewritten = rewriteNumberTokens(text.slice(bracket), ({ token, ...at }) => {
    // A token JavaScript writes back as it was written (`7`, `-3.5`) loses nothing as a number,
    // and the tool's own validation decides about it; the others would lose the model's text.
    if (writesBack(token)) return undefined;
    const path = at.path();
    // A list's first item is the arguments: its paths are read from inside it.
    const inside = list ? (path[0] === 0 ? path.slice(1) : undefined) : path;
    if (inside === undefined || inside.length === 0 || !onlyText(inside)) return undefined;
    quoted.push({ path: inside, digits: token });
    return JSON.stringify(token);
  });
  return rewritten === undefined ? undefined : { text: text.slice(0, bracket) + rewritten, quoted };
}

/**
 * Where the arguments' own bracket is in JSON-like `text`: its first character when that is a
 * `{` or `[`; after a fence or prose, the first `{` — the object the reader takes from them, so a
 * bracket in the prose (`Step [1/2] {…}`) is not read as the arguments; -1 when there is no `{`,
 * or when the text begins with a string (a bracket in its text is not the arguments').
 */
export function argumentsBracket(text: string): number {
  const first = text.search(/\S/);
  if (first < 0) return -1;
  const c = text[first] as string;
  if (c === "{" || c === "[") return first;
  if (/["'`]/.test(c) && !text.startsWith("```", first)) return -1;
  return text.indexOf("{", first);
}

/**
 * JSON-like `text` that begins with its `{` or `[` with each number token JSON refuses but whose
 * meaning is plain (`+5`, `.5`, `-.5`, `+007`, and Python's `0x10`, `0o17`, `0b11`, `1_000`) written
 * as JSON writes it (`5`, `0.5`, `-0.5`, `7`, `16`, `15`, `3`, `1000`), for a reader that refuses them; `undefined` when there is none, or when the text begins
 * with anything else (a string whose text holds a bracket is not walked from inside it).
 */
export function withJsonNumbers(text: string): string | undefined {
  return jsonNumbers(text)?.text;
}

/** A token {@link jsonNumbers} wrote as JSON writes it. */
export interface RewrittenNumber {
  /** Keys and indexes from the text's outermost bracket. */
  path: (string | number)[];
  /** The token as the model wrote it (`.5e400`). */
  token: string;
  /** As it was rewritten (`0.5e400`). */
  json: string;
}

/**
 * {@link withJsonNumbers}, with each token it rewrote: where it sits, as the model wrote it and as
 * rewritten, so what is reported about a number names the model's token.
 */
export function jsonNumbers(text: string): { text: string; rewritten: RewrittenNumber[] } | undefined {
  if (!/^\s*[{[]/.test(text)) return undefined;
  const rewritten: RewrittenNumber[] = [];
  const result = rewriteNumberTokens(text, ({ token, path }) => {
    // Python's `0x10`, `0o17`, `0b11`, `1_000` as the decimal numbers Python reads them as, as a
    // pythonic call's are: a repair would make strings of them, the strict reader refuses them.
    const python = pythonDecimal(token);
    // By index, not destructured: never a polluted `Object.prototype.return` called.
    const parts = /^([+-]?)(\d*)(.*)$/.exec(python ?? token) as RegExpExecArray;
    const sign = parts[1];
    const whole = parts[2];
    const rest = parts[3];
    // `02134` too: a repair would make the string "02134" of it, or round `012345678901234567891`
    // through a double before its digits were weighed.
    if (python === undefined && sign !== "+" && whole !== "" && !/^0\d/.test(whole as string))
      return undefined;
    // The whole part as JSON writes it: no leading zeros (`+007` is 7), `0` before a bare point.
    const json = `${sign === "-" ? "-" : ""}${(whole as string).replace(/^0+(?=\d)/, "") || "0"}${rest}`;
    rewritten.push({ path: path(), token, json });
    return json;
  });
  return result === undefined ? undefined : { text: result, rewritten };
}

/**
 * Records, for `value` just read from the model's JSON-like `written` text, each number token
 * JavaScript would write back otherwise (`02134`, `1.10`, `1e21`, `+5`, `.5`) where `value` holds
 * that number (or the token as a string, where a repair quoted it), so `exactJson` writes it as the model wrote it and a later reading by the tool's
 * schema (`takesOnlyString`) sees what the model wrote. Answers the token when `written` is itself
 * such a number and `value` that number. Walks the text only when `value` holds a number or was
 * `repaired` (read from other text than `written`).
 */
export function rememberWrittenNumbers(
  written: string,
  value: unknown,
  repaired: boolean,
): string | undefined {
  if (typeof value === "number") {
    const token = written.trim();
    return NUMBER_WORD.test(token) && !writesBack(token) && Number(token) === value ? token : undefined;
  }
  // Read only from the text's own bracket, never from one inside a string it begins with.
  if (!(repaired || holdsNumber(value)) || !/^\s*[{[]/.test(written)) return undefined;
  forEachNumberToken(written, ({ token, ...at }) => {
    if (writesBack(token)) return;
    const path = at.path();
    let node: unknown = value;
    for (let k = 0; k < path.length - 1 && typeof node === "object" && node !== null; k++) {
      node = Object.hasOwn(node, path[k] as string | number)
        ? (node as Record<string | number, unknown>)[path[k] as string | number]
        : undefined;
    }
    const last = path[path.length - 1];
    if (last === undefined || typeof node !== "object" || node === null || !Object.hasOwn(node, last)) return;
    const read = (node as Record<string | number, unknown>)[last];
    // The number it reads as, or the token as a string (a repair that quoted `00.0` rather than
    // read it): either way the model wrote this token there.
    if (read === Number(token) || read === token) rememberDigitsAt(node, last, token);
  });
  return undefined;
}
