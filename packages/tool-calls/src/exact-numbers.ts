import { escapeControls } from "./echo.js";
import { dataField } from "./own.js";
/**
 * Numbers JavaScript cannot hold as the model wrote them. Node 20's `JSON.parse` gives no access
 * to a number's source text, so the JSON text that was parsed is read again here, token by token,
 * for the few numbers that lose something on the way into a double.
 */

/** Where a value sits inside the arguments: keys and array indexes from the root object. */
export type ArgumentPath = readonly (string | number)[];

/**
 * Why a number could not be held as written:
 * - `"integer"`: an integer written without a point or exponent that JavaScript holds as another
 *   integer (past ±(2^53 − 1) a double skips integers: `12345678901234567891` is handed on as
 *   `12345678901234567000`, `9007199254740993` as `9007199254740992`);
 * - `"range"`: a number past what a double holds at all (`1e400` reads as `Infinity`, which JSON
 *   writes as `null`; `1e-400` reads as `0`);
 * - `"precision"`: a decimal with more significant digits than a double keeps (about 17); it reads
 *   as the nearest double, as every JSON reader's does;
 * - `"text"`: any number token written where the tool takes a string and no number (the
 *   `takesOnlyString` option): a number would drop what the model wrote (`02134`'s leading zero,
 *   `1.10`'s trailing zero, `1e3`'s form, `+5`, `.5`, or just that it is text), so it is handed
 *   over as the token's text.
 */
export type InexactNumberKind = "integer" | "range" | "precision" | "text";

/** A number in the arguments text that JavaScript cannot hold as written, or that is handed over as its text. */
export interface InexactNumber {
  /** Where it sits in the arguments. */
  path: ArgumentPath;
  /** The number exactly as the model wrote it. */
  digits: string;
  /** What would be lost. */
  kind: InexactNumberKind;
  /**
   * How the tool is handed it: `"string"` — the digits, as text (the tool takes a string there;
   * always for `"text"`) — or `"number"`: the nearest double (only for `"precision"`).
   */
  as: "string" | "number";
}

/**
 * A number that may not read back as written: 16 or more digits (with a point among them) in a
 * row, or an exponent of three digits or more. Any number with 15 significant digits or fewer and
 * an exponent below 100 reads back exactly. (JSON writes an exponent right after a digit, so both
 * alternatives begin with one.)
 */
const MAY_HOLD = /\d(?:[\d.]{15}|[eE][+-]?\d{3})/;

/**
 * Cheap test for strict JSON text that may hold such a number: {@link MAY_HOLD} outside its
 * strings. Strings are skipped by searching for their closing quotes, so a long file write costs
 * a few searches rather than a pattern run over every character of its content.
 */
function mayHold(text: string): boolean {
  let at = 0;
  while (at < text.length) {
    const open = text.indexOf('"', at);
    const end = open < 0 ? text.length : open;
    if (end - at > 3 && MAY_HOLD.test(text.slice(at, end))) return true;
    if (open < 0) return false;
    // The closing quote: the next one not escaped (preceded by an even run of backslashes).
    let close = text.indexOf('"', open + 1);
    while (close >= 0) {
      let slashes = 0;
      while (text.charCodeAt(close - 1 - slashes) === 92) slashes++;
      if (slashes % 2 === 0) break;
      close = text.indexOf('"', close + 1);
    }
    if (close < 0) return false;
    at = close + 1;
  }
  return false;
}

const NUMBER_TOKEN = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** `(sign, digits without leading or trailing zeros, power of ten)` of a decimal numeral; zero is `["", "", 0]`. */
function decimalOf(numeral: string): [string, string, number] {
  const match = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(numeral) as RegExpExecArray;
  const whole = match[2] ?? "";
  const fraction = match[3] ?? "";
  let digits = `${whole}${fraction}`;
  let power = Number(match[4] ?? "0") - fraction.length;
  digits = digits.replace(/^0+/, "");
  const trailing = digits.length - digits.replace(/0+$/, "").length;
  digits = digits.slice(0, digits.length - trailing);
  power += trailing;
  if (digits === "") return ["", "", 0];
  return [match[1] ?? "", digits, power];
}

/**
 * What a number token loses as a double, or `undefined` when it reads back as written: when
 * JavaScript writes the double back (as `JSON.stringify` does for the tool) with the same value.
 * So `0.1` and `12345678901234567000` are held (each is the shortest text of its double), and
 * `9007199254740993` (read as …992) and `0.12345678901234567891` are not.
 */
export function inexactKind(token: string): InexactNumberKind | undefined {
  const value = Number(token);
  const written = decimalOf(token);
  if (!Number.isFinite(value) || (value === 0 && written[1] !== "")) return "range";
  const read = decimalOf(String(value));
  if (written[0] === read[0] && written[1] === read[1] && written[2] === read[2]) return undefined;
  return /^-?\d+$/.test(token) ? "integer" : "precision";
}

/** Index just past the JSON string whose opening quote is at `at`. */
function stringEnd(text: string, at: number): number {
  for (let i = at + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 92) i++;
    else if (c === 34) return i + 1;
  }
  return text.length;
}

interface Frame {
  /** The key being read (objects) or the index (arrays). */
  at: string | number;
  object: boolean;
  /**
   * An object's keys read so far, each with the numbers recorded under it (their path keys in
   * `found`), so a key written again forgets exactly those, without a search.
   */
  keys: Map<string, string[] | undefined> | undefined;
}

/** True when a parsed value holds a number anywhere (most arguments hold only text). Iterative. */
export function holdsNumber(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "number") return true;
    if (typeof item === "object" && item !== null) {
      for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push(child);
    }
  }
  return false;
}

/**
 * The numbers in strict JSON `text` (parsed as `value`) that JavaScript cannot hold as written,
 * with their paths, in the order written (a key written twice: the last). A value holding no
 * number, or text that cannot hold one (see {@link mayHold}), is not scanned; otherwise linear in
 * the text and the paths of the numbers found, keys written again included (each object lists the
 * numbers under each of its keys, so a repeat forgets those alone). Answers `[]` for text that is
 * not JSON.
 */
export function findInexactNumbers(text: string, value: unknown): Omit<InexactNumber, "as">[] {
  if (!holdsNumber(value) || !mayHold(text)) return [];
  const found = new Map<string, Omit<InexactNumber, "as">>();
  const stack: Frame[] = [];
  let expectingKey = false;
  for (let i = 0; i < text.length; ) {
    const c = text[i] as string;
    const top = stack[stack.length - 1];
    if (c === '"') {
      const end = stringEnd(text, i);
      if (top?.object && expectingKey) {
        try {
          top.at = JSON.parse(text.slice(i, end)) as string;
        } catch {
          return [];
        }
        expectingKey = false;
        // A key written again replaces what was read under it before: the numbers recorded under
        // it are forgotten (each list is read once, so repeats cost what the numbers did).
        const key = top.at as string;
        top.keys ??= new Map();
        for (const earlier of top.keys.get(key) ?? []) found.delete(earlier);
        top.keys.set(key, undefined);
      }
      i = end;
      continue;
    }
    if (c === "{" || c === "[") {
      stack.push({ at: c === "{" ? "" : 0, object: c === "{", keys: undefined });
      expectingKey = c === "{";
      i++;
      continue;
    }
    if (c === "}" || c === "]") {
      stack.pop();
      i++;
      continue;
    }
    if (c === ",") {
      if (top?.object) expectingKey = true;
      else if (top) top.at = (top.at as number) + 1;
      i++;
      continue;
    }
    if (c === "-" || (c >= "0" && c <= "9")) {
      NUMBER_TOKEN.lastIndex = i;
      const token = NUMBER_TOKEN.exec(text)?.[0] ?? c;
      // Most tokens (0, 7, 3.5) are too short to lose anything (see MAY_HOLD): only the rest are weighed.
      const kind = MAY_HOLD.test(token) ? inexactKind(token) : undefined;
      if (kind) {
        const path = stack.map((frame) => frame.at);
        const key = JSON.stringify(path);
        found.set(key, { path, digits: token, kind });
        // Listed under the key it sits beneath in every enclosing object (as long as the path).
        for (const frame of stack) {
          if (!frame.keys) continue;
          const under = frame.keys.get(frame.at as string);
          if (under) under.push(key);
          else frame.keys.set(frame.at as string, [key]);
        }
      }
      i += token.length;
      continue;
    }
    i++;
  }
  return [...found.values()];
}

/**
 * `id`, `items[2].id`, `["a key"]`: a path as the model would write it to reach the value; `root`
 * names the empty path.
 */
export function formatPath(path: ArgumentPath, root = "(the arguments)"): string {
  let out = "";
  for (const step of path) {
    if (typeof step === "number") out += `[${step}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(step)) out += out === "" ? step : `.${step}`;
    else out += `[${JSON.stringify(step)}]`;
  }
  return out === "" ? root : out;
}

/**
 * A path into the arguments as a refusal echoes it (`a`, `items[2]`, `["a key"]`; the empty path
 * called `root`): written as {@link formatPath} writes it, cut as {@link shownText} cuts it (a key
 * of 100,000 characters is not repeated whole), and each control character — a terminal's escape,
 * a line break, a right-to-left override the model put in a key — written `\uXXXX`. A refusal is a
 * tool result the model is sent again on every later step, and a host may log it or show it in a
 * terminal.
 */
export function echoedPath(path: ArgumentPath, root?: string): string {
  return escapeControls(shownText(formatPath(path, root)));
}

/** The most numbers one refusal names; the rest are counted. */
const NAMED_NUMBERS = 5;

/** The most of one number's digits, or of its path, a refusal's message shows. */
export const SHOWN_CHARS = 40;

/** `text` as a message shows it: whole up to {@link SHOWN_CHARS} characters, else its start, `…` and its length. */
export function shownText(text: string): string {
  if (text.length <= SHOWN_CHARS) return text;
  let end = SHOWN_CHARS - 8;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${text.slice(0, end)}… (${text.length} characters)`;
}

/**
 * `"1 at a, 2 at b and 3 more"`: the numbers a refusal names (the empty path called `root`), each
 * number shown as {@link shownText} shows it and each path as {@link echoedPath} echoes it (five
 * numbers of 5,000 digits, or a key of 100,000 characters, made a message of that size, handed to
 * the model and kept in the transcript; a right-to-left override in a key turned the rest of the
 * line round); the whole digits and paths stay on the error's `numbers`.
 */
export function listNumbers(numbers: readonly InexactNumber[], root?: string): string {
  const named = numbers
    .slice(0, NAMED_NUMBERS)
    .map((n) => `${shownText(n.digits)} at ${echoedPath(n.path, root)}`);
  const more = numbers.length - named.length;
  if (more > 0) return `${named.join(", ")} and ${more} more`;
  return named.length > 1
    ? `${named.slice(0, -1).join(", ")} and ${named[named.length - 1]}`
    : (named[0] ?? "");
}

/** What {@link settleNumbers} made of the numbers found. */
export interface Settlement {
  /** The value with the numbers handed over as strings put in (a new value only at the root). */
  value: unknown;
  /** Those handed over as strings, and decimals rounded. */
  kept: InexactNumber[];
  /** Integers and out-of-range numbers no string was taken for: the caller refuses. */
  refused: InexactNumber[];
  /** True when a string was put in. */
  changed: boolean;
}

/**
 * Settles the numbers JavaScript could not hold (`found` in `value`): the digits as a string where
 * `takesString` says a string is taken there, a long decimal left as its nearest double, and the
 * rest listed as refused. Mutates `value` where it puts a string in.
 */
export function settleNumbers(
  value: unknown,
  found: readonly Omit<InexactNumber, "as">[],
  takesString: ((path: ArgumentPath) => boolean) | undefined,
): Settlement {
  let settled = value;
  const kept: InexactNumber[] = [];
  const refused: InexactNumber[] = [];
  let changed = false;
  for (const number of found) {
    let placed = false;
    if (takesString?.(number.path) === true) {
      if (number.path.length === 0) {
        settled = number.digits;
        placed = true;
      } else placed = setAt(settled, number.path, number.digits);
    }
    if (placed) {
      kept.push({ ...number, as: "string" });
      changed = true;
    } else if (number.kind === "precision") kept.push({ ...number, as: "number" });
    else refused.push({ ...number, as: "number" });
  }
  return { value: settled, kept, refused, changed };
}

/** Sets the value at `path` inside `root` (own data property, safe for `__proto__`); false when the path is not there. */
export function setAt(root: unknown, path: ArgumentPath, value: unknown): boolean {
  let node = root;
  for (let i = 0; i < path.length - 1; i++) {
    if (typeof node !== "object" || node === null) return false;
    node = (node as Record<string | number, unknown>)[path[i] as string | number];
  }
  const last = path[path.length - 1];
  if (last === undefined || typeof node !== "object" || node === null) return false;
  if (!Object.hasOwn(node, last)) return false;
  Object.defineProperty(node, last, dataField(value));
  return true;
}

/**
 * Per object or array read from text: its keys (or indexes) whose number JavaScript could not
 * hold or would write back otherwise, with the digits written. Kept beside the values, never on them, so a value
 * stays plain data; read by {@link exactJson} wherever the value travels.
 */
const WRITTEN = new WeakMap<object, Map<string | number, string>>();

/**
 * Records, for `value` just parsed from the JSON text `source`, the digits of every number in it
 * JavaScript could not hold as written, so {@link exactJson} writes them back. Cheap when the text
 * holds none (one pattern test). Answers the digits when `value` itself is such a number.
 */
export function rememberDigits(source: string, value: unknown): string | undefined {
  let whole: string | undefined;
  for (const number of findInexactNumbers(source, value)) {
    let node = value;
    const { path } = number;
    if (path.length === 0) whole = number.digits;
    for (let i = 0; i < path.length - 1 && typeof node === "object" && node !== null; i++) {
      node = (node as Record<string | number, unknown>)[path[i] as string | number];
    }
    const last = path[path.length - 1];
    if (last === undefined || typeof node !== "object" || node === null) continue;
    let keys = WRITTEN.get(node);
    if (!keys) {
      keys = new Map();
      WRITTEN.set(node, keys);
    }
    keys.set(last, number.digits);
  }
  return whole;
}

/** The digits recorded for `container[key]`, if its number was one JavaScript could not hold. */
export function digitsAt(container: object, key: string | number): string | undefined {
  return WRITTEN.get(container)?.get(key);
}

/** Records that `container[key]` holds the number written as `digits`. */
export function rememberDigitsAt(container: object, key: string | number, digits: string): void {
  let keys = WRITTEN.get(container);
  if (!keys) {
    keys = new Map();
    WRITTEN.set(container, keys);
  }
  keys.set(key, digits);
}

/**
 * JSON text of `value` in which each number read from text (see {@link rememberDigits}, and
 * `rememberWrittenNumbers` for a token a double writes back otherwise: `02134`, `1.10`, `+5`) is
 * written with the model's digits instead of its nearest double (or instead of the string a repair
 * made of such a token), so text handed on carries what was written — almost-JSON where the model wrote a number JSON refuses, which `parseToolArguments`
 * reads. `JSON.stringify` of it otherwise.
 */
export function exactJson(value: unknown): string {
  // The digits recorded for a number, or for a string that is exactly the token a repair quoted.
  const written = (item: unknown, digits: string | undefined): string | undefined =>
    digits !== undefined && (typeof item === "number" || item === digits) ? digits : undefined;
  const write = (node: unknown): string => {
    if (Array.isArray(node)) {
      const keys = WRITTEN.get(node);
      return `[${node.map((item, i) => written(item, keys?.get(i)) ?? write(item)).join(",")}]`;
    }
    if (typeof node === "object" && node !== null) {
      const keys = WRITTEN.get(node);
      const parts: string[] = [];
      for (const key of Object.keys(node)) {
        const item = (node as Record<string, unknown>)[key];
        if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
        parts.push(`${JSON.stringify(key)}:${written(item, keys?.get(key)) ?? write(item)}`);
      }
      return `{${parts.join(",")}}`;
    }
    return JSON.stringify(node) ?? "null";
  };
  return write(value);
}
