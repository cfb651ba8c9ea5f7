import { commentEnd, nonJsonNumber } from "./almost-json.js";
import { describeValue, readOptions, ToolArgumentsError, ToolCallsError } from "./errors.js";
import {
  type ArgumentPath,
  echoedPath,
  findInexactNumbers,
  holdsNumber,
  type InexactNumber,
  listNumbers,
  SHOWN_CHARS,
  settleNumbers,
} from "./exact-numbers.js";
import {
  cutPlace,
  endsInString,
  isRecord,
  isUnterminated,
  MAX_DEPTH,
  nestsDeeper,
  type OpenedEmpty,
  openedEmpty,
  type Parsed,
  repairLeading,
  repairParse,
  scanBrackets,
  tryParse,
  unfinishedValue,
  withinDepth,
} from "./json-text.js";
import {
  argumentsBracket,
  jsonNumbers,
  type NumberAsText,
  quoteNumbersAsText,
  type RewrittenNumber,
} from "./number-text.js";
import { ownOption } from "./own.js";

/**
 * The longest argument text `parseToolArguments` will repair (1 MiB). Valid JSON of any length
 * takes the fast path; text past this that still needs repair is answered with a `malformed`
 * error instead of minutes of work.
 */
export const MAX_REPAIR_ARGUMENT_CHARS = 1024 * 1024;

/** Options for {@link parseToolArguments}. */
export interface ParseToolArgumentsOptions {
  /**
   * The turn's finish reason. `"length"` means the turn stopped at the token ceiling, so arguments
   * that end mid-JSON are reported as truncated rather than closed up and run.
   */
  finishReason?: string | null | undefined;
  /** The tool's name, for the error message the model reads. */
  name?: string | undefined;
  /**
   * Asked, for each number in the arguments that JavaScript cannot hold as the model wrote it
   * (an integer past ±(2^53 − 1), a number past a double's range, a decimal of more than about
   * 17 significant digits), whether the tool takes a string at its place — `path` holds the keys
   * and array indexes from the root. `true`: the model's digits are handed over exactly, as a
   * string (an id written unquoted). Otherwise an integer or out-of-range number is refused (a
   * {@link ToolArgumentsError} of kind `"inexact"`) rather than handed over as another number,
   * and a long decimal is rounded to the nearest double. Absent, every such place is "no".
   * `takesStringAt` from `@loopwright/schema-compat` answers it from a tool's schema.
   */
  takesString?: ((path: ArgumentPath) => boolean) | undefined;
  /**
   * Asked, for each number token the model wrote in the arguments (`02134`, `1.10`, `1e3`, and
   * `+5`, `.5` or Python's `0x10`, which JSON refuses), whether the tool takes a string at its place and no number
   * — `path` as for `takesString`. `true`: a token a number would not write back as written
   * reaches the tool as the text written (`"02134"`, `"1.10"`), listed in `inexact` with kind
   * `"text"`, never as a number that drops a leading zero or the form the model wrote; one it
   * writes back the same (`7`) stays a number, for the tool's validation — "writes back" as
   * `String(Number(token))` does, so `1e21` and `0.0000001` are text while `1e+21` and `1e-7`, as
   * JavaScript prints them, stay numbers. Otherwise the number is read as it is without
   * this option (a leading-zero integer as the number, `+5` as 5, `.5` as 0.5). Absent, every place is
   * "no". `takesOnlyStringAt` from `@loopwright/schema-compat` answers it from a tool's schema.
   */
  takesOnlyString?: ((path: ArgumentPath) => boolean) | undefined;
}

/** Arguments read by {@link parseToolArguments}. */
export interface ParsedToolArguments {
  /** The arguments as an object. */
  value: Record<string, unknown>;
  /**
   * The same as compact JSON text — what the transcript keeps, and what two calls are compared
   * by, so `{'a': 1}` and `{"a": 1}` read the same.
   */
  json: string;
  /** True when the text needed repair (or unwrapping) to be read. */
  repaired: boolean;
  /**
   * The numbers JavaScript could not hold as written that the arguments still carry: those handed
   * over as the model's digits in a string (`as: "string"`) and decimals rounded to the nearest
   * double (`as: "number"`); and, given `takesOnlyString`, every number token handed over as its
   * text (kind `"text"`). Usually empty.
   */
  inexact: readonly InexactNumber[];
}

/**
 * What reading the text found, before `takesString` settles its inexact numbers; `quoted`: the
 * number tokens `takesOnlyString` had read as text.
 */
type Read = Omit<ParsedToolArguments, "inexact"> & {
  found: Omit<InexactNumber, "as">[];
  quoted?: NumberAsText[];
};

const EMPTY: Read = Object.freeze({
  value: {},
  json: "{}",
  repaired: false,
  found: [],
}) as unknown as Read;

function kindOfValue(value: unknown): string {
  if (Array.isArray(value)) return "a JSON array";
  if (value === null) return "null";
  return `a JSON ${typeof value}`;
}

/**
 * Where cut-off text stops, as a refusal says it: in a string (naming whose value), after a key
 * with no value, inside a number or literal, or inside an object or list opened and not closed —
 * read by {@link cutPlace}, never "in the middle of a string" said of text that is in none.
 */
function whereCut(text: string): string {
  const cut = cutPlace(text);
  if (!cut) return "";
  const at = echoedPath(cut.path, "the top level");
  switch (cut.place) {
    case "key":
      return `in the middle of a key${cut.path.length > 0 ? ` inside ${at}` : ""}`;
    case "string":
      return `in the middle of the string value at ${at}`;
    case "no value":
      return `after the key ${at} with no value written for it`;
    case "token":
      return `inside the number or literal at ${at}`;
    default:
      return `inside the ${cut.object ? "object" : "list"} at ${at}, opened and not closed`;
  }
}

function truncated(raw: string, name: string | undefined, atLimit: boolean, text = raw): ToolArgumentsError {
  const place = whereCut(text.trim());
  const where = atLimit ? `at the output token limit${place ? ` (${place})` : ""}` : place || "partway";
  return new ToolArgumentsError(
    "truncated",
    `The arguments for ${name ? `the ${name} call` : "this call"} were cut off ${where} ` +
      "before the JSON was complete, so the call was not run. Call it again with shorter arguments, " +
      "splitting large content across several calls.",
    raw,
  );
}

/** A value's text for an error's `raw`, never throwing (a Proxy or a null-prototype object may). */
function safeText(value: unknown): string {
  try {
    return typeof value === "symbol" ? value.toString() : String(value);
  } catch {
    return "(a value that cannot be shown)";
  }
}

function malformed(
  raw: string,
  name: string | undefined,
  detail: string,
  cause?: unknown,
): ToolArgumentsError {
  return new ToolArgumentsError(
    "malformed",
    `The arguments for ${name ? `the ${name} call` : "this call"} are not a JSON object (${detail}), ` +
      'so the call was not run. Call it again with the arguments as one JSON object, such as {"key": "value"}.',
    raw,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * The arguments object read from `source` (the strict JSON text parsed; none for an object handed
 * over), found at `within` inside it (`[0]` for a list of one object).
 */
function done(
  value: Record<string, unknown>,
  repaired: boolean,
  raw: string,
  name: string | undefined,
  source?: string,
  within: ArgumentPath = [],
): Read {
  if (!withinDepth(value)) throw malformed(raw, name, `they nest deeper than ${MAX_DEPTH} levels`);
  const found =
    source === undefined
      ? []
      : findInexactNumbers(source, value)
          .filter((n) => within.every((step, i) => n.path[i] === step) && n.path.length > within.length)
          .map((n) => ({ ...n, path: n.path.slice(within.length) }));
  return { value, json: JSON.stringify(value), repaired, found };
}

function inexact(raw: string, name: string | undefined, numbers: InexactNumber[]): ToolArgumentsError {
  const list = listNumbers(numbers);
  const first = numbers[0] as InexactNumber;
  return new ToolArgumentsError(
    "inexact",
    `The arguments for ${name ? `the ${name} call` : "this call"} hold ${list}, past what a number can carry ` +
      `exactly here (integers up to ±${Number.MAX_SAFE_INTEGER}, about 17 significant digits), so the call was not ` +
      `run with a different number. Write the value as a string (${first.digits.length <= SHOWN_CHARS ? JSON.stringify(first.digits) : "its digits in quotes"}) if the tool takes ` +
      "text there; otherwise give a number within that range.",
    raw,
    { numbers },
  );
}

/**
 * Settles the numbers JavaScript could not hold: the digits as a string where `takesString` says
 * the tool takes one, a long decimal rounded, and otherwise the call refused.
 */
function settle(read: Read, raw: string, options: ParseToolArgumentsOptions): ParsedToolArguments {
  const { value, json, repaired, found } = read;
  const texts = asText(value, quotedOf(read));
  if (found.length === 0) return { value, json, repaired, inexact: texts };
  // The arguments' root is an object, never a number: only paths inside it are settled.
  const { kept, refused, changed } = settleNumbers(
    value,
    found.filter((n) => n.path.length > 0),
    options.takesString,
  );
  if (refused.length > 0) throw inexact(raw, options.name, refused);
  return { value, json: changed ? JSON.stringify(value) : json, repaired, inexact: [...texts, ...kept] };
}

/** The number tokens a read took as text: its own field only (never a polluted `Object.prototype.quoted`). */
function quotedOf(read: Read): readonly NumberAsText[] {
  return (Object.hasOwn(read, "quoted") && read.quoted) || [];
}

/** The tokens read as text that the arguments still hold there (a key written twice keeps its last). */
function asText(value: unknown, quoted: readonly NumberAsText[]): InexactNumber[] {
  const kept: InexactNumber[] = [];
  for (const token of quoted) {
    let node = value;
    for (const step of token.path) {
      node =
        typeof node === "object" && node !== null && Object.hasOwn(node, step)
          ? (node as Record<string | number, unknown>)[step]
          : undefined;
    }
    if (node === token.digits)
      kept.push({ path: token.path, digits: token.digits, kind: "text", as: "string" });
  }
  return kept;
}

/** Reads `takesString` from options (absent or `null`: none); anything but a function is named. */
export function readTakesString(caller: string, given: unknown): ParseToolArgumentsOptions["takesString"] {
  return readPathQuestion(caller, given, "takesString");
}

/** Reads a `(path) => boolean` option by its key (absent or `null`: none); anything but a function is named. */
function readPathQuestion(
  caller: string,
  given: unknown,
  key: "takesString" | "takesOnlyString",
): ((path: ArgumentPath) => boolean) | undefined {
  if (typeof given !== "object" || given === null) return undefined;
  let value: unknown;
  try {
    value = ownOption(given, key);
  } catch (error) {
    throw new ToolCallsError("invalid-options", `${caller}: its options' ${key} could not be read.`, {
      cause: error,
    });
  }
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "function") {
    throw new ToolCallsError(
      "invalid-options",
      `${caller}: options.${key} must be a function (path) => boolean, and was ${describeValue(value)}.`,
    );
  }
  return value as (path: ArgumentPath) => boolean;
}

/**
 * Reads a tool call's arguments the way the model meant them. Valid JSON takes a fast path;
 * otherwise JSON held in a string is opened, and the almost-JSON local models write — single
 * quotes, Python `True`/`False`/`None`, bare keys, trailing commas, comments, a code fence,
 * unclosed brackets at a cut, prose around the object — is repaired, never changing what is
 * inside a string. Empty or whitespace arguments, `null` and `undefined` read as `{}`, but a repair
 * never stands in for arguments the model did not write: text holding no key and value that never
 * wrote an empty object (a lone `{` or `[`, prose with a stray `{`, `null]`) is `"malformed"`, and
 * so is an object or list opened and cut off before its first member (`{"a": {`, which closed up
 * would run as `{"a": {}}`), its message naming where the arguments stop. An object
 * is taken as it is (as JSON writes it: one holding NaN or ±Infinity, which JSON would write as
 * `null`, is `"malformed"`).
 *
 * Returns the object and its compact JSON. Throws a {@link ToolArgumentsError} when the result is
 * still not an object: `kind: "truncated"` when the text stops mid-JSON and either `finishReason`
 * is `"length"` or it stops inside a string (whatever the finish reason: the end of a string is
 * never invented) — those arguments are never closed up and run — `"malformed"` otherwise, with a message
 * for the model. A number JavaScript cannot hold as written (`12345678901234567891`, `1e400`) is
 * never handed over as another number: the model's digits as a string where `takesString` says the
 * tool takes one, else `kind: "inexact"`, naming its path and digits (a decimal of more than about
 * 17 significant digits is rounded instead, and listed in `inexact`). Throws `ToolCallsError`
 * (`"invalid-options"`) for options that are not an object (`null` reads as none). Never mutates
 * its input.
 */
export function parseToolArguments(raw: unknown, given: ParseToolArgumentsOptions = {}): ParsedToolArguments {
  const options = readArgumentOptions("parseToolArguments", given);
  return settle(readToolArguments(raw, options), typeof raw === "string" ? raw : "", options);
}

/** The options of {@link parseToolArguments}, read once into a plain copy. */
function readArgumentOptions(caller: string, given: unknown): ParseToolArgumentsOptions {
  // Null options are none; anything else that is not an object of text fields is named.
  const read = readOptions(caller, given, ["finishReason", "name"]);
  const takesString = readTakesString(caller, given);
  const takesOnlyString = readPathQuestion(caller, given, "takesOnlyString");
  // Every field its own (undefined where left out), never read through a polluted `Object.prototype`.
  return {
    finishReason: read.finishReason,
    name: typeof read.name === "string" ? read.name : undefined,
    takesString,
    takesOnlyString,
  };
}

/**
 * {@link parseToolArguments} before the numbers JavaScript cannot hold are settled: they are
 * reported in `found` (paths from the arguments' root), never refused, and `value` holds their
 * nearest doubles. For `recoverToolCalls`, which hands on the model's text as `raw`.
 */
export function readToolArguments(raw: unknown, options: ParseToolArgumentsOptions = {}): Read {
  if (raw === undefined || raw === null) return { ...EMPTY, value: {} };
  if (typeof raw !== "string") return readObject(raw, options.name);
  const given = tryParse(raw);
  // Valid JSON holding no number (a file write, a search) has no token to read as text: not walked.
  const quoting =
    options.takesOnlyString && !(given && isRecord(given.value) && !holdsNumber(given.value))
      ? quoteNumbersAsText(raw, options.takesOnlyString)
      : undefined;
  const text = quoting?.text ?? raw;
  // Fast path: valid JSON, as almost every server and model sends.
  const strict = quoting ? tryParse(text) : given;
  const read =
    strict && isRecord(strict.value)
      ? done(strict.value, false, raw, options.name, text)
      : readSlow(text, raw, options, strict, 0);
  // A repair may close what the model began, never stand in for what it did not write.
  if (read.repaired && Object.keys(read.value).length === 0) {
    const refusal = nothingWritten(raw, options.name);
    if (refusal) throw refusal;
  }
  return quoting ? { ...read, quoted: [...quoting.quoted, ...quotedOf(read)] } : read;
}

/** Arguments handed over as an object: a JSON copy of it, which must itself be an object. */
function readObject(raw: unknown, name: string | undefined): Read {
  let copy: unknown;
  let object = false;
  // NaN and ±Infinity, which JSON writes as null: the tool would be handed null for the number.
  let nonFinite: { key: string; value: number } | undefined;
  const noteNonFinite = (key: string, value: unknown): unknown => {
    if (typeof value === "number" && !Number.isFinite(value)) nonFinite ??= { key, value };
    return value;
  };
  try {
    object = typeof raw === "object" && !Array.isArray(raw);
    if (object) copy = JSON.parse(JSON.stringify(raw, noteNonFinite));
  } catch (error) {
    // A cycle, a BigInt, a throwing getter or a revoked Proxy.
    throw malformed(safeText(raw), name, "an object JSON cannot hold", error);
  }
  if (!object) throw malformed(safeText(raw), name, `${kindOfValue(raw)} was given`);
  if (nonFinite) {
    throw malformed(
      safeText(raw),
      name,
      `they hold ${nonFinite.value} at ${JSON.stringify(nonFinite.key)}, and JSON has no NaN or Infinity: ` +
        "write the number, or a string if text was meant",
    );
  }
  // A Date, or an object whose toJSON answers something else, is not an arguments object.
  if (!isRecord(copy)) throw malformed(safeText(raw), name, `an object that is ${kindOfValue(copy)} in JSON`);
  return done(copy, false, safeText(raw), name);
}

function readSlow(
  text: string,
  raw: string,
  options: ParseToolArgumentsOptions,
  strict: Parsed | undefined,
  layer: number,
): Read {
  const { name, finishReason } = options;
  const trimmed = text.trim();
  if (trimmed === "") return { ...EMPTY, value: {} };
  let parsed = strict;
  if (!parsed) {
    // `+5`, `.5`, `-.5`, Python's `0x10` where a number is taken read as the numbers they are, as a recovered call's
    // do (a string-only place was quoted before). Once: the rewritten text holds none of them.
    // After a fence or prose, from the object's bracket (never from inside a string the text begins with).
    // From the brace the object is taken from: a bracket in the prose before it is not walked.
    const bracket = argumentsBracket(trimmed);
    const rewrite = bracket < 0 ? undefined : jsonNumbers(trimmed.slice(bracket));
    if (rewrite !== undefined) {
      const plain = trimmed.slice(0, bracket) + rewrite.text;
      const read = readSlow(plain, raw, options, tryParse(plain), layer);
      // What is reported names the token as the model wrote it (`.5e400`, not `0.5e400`).
      const list = trimmed[bracket] === "[";
      return { ...read, repaired: true, found: asWritten(read.found, rewrite.rewritten, list) };
    }
    // Text ending inside a string lost its end, whatever the finish reason: never closed up and run.
    if (endsInString(trimmed)) throw truncated(raw, name, finishReason === "length", trimmed);
    // So did text that stops where a value had begun or was still to come: closing it up would
    // invent the value (`{"a":` as null, `{"a": tru` as "tru"). A number left unfinished inside
    // the text, or a key with no colon, is not repaired either (`-` would be read as -0).
    const unfinished = unfinishedValue(trimmed);
    if (unfinished === "cut") throw truncated(raw, name, finishReason === "length", trimmed);
    if (unfinished === "broken") {
      if (nonJsonNumber(trimmed) !== undefined) throw nonNumber(raw, name, trimmed);
      throw malformed(
        raw,
        name,
        "a value in them is unfinished (a number cut short, a key without its colon, or a colon with no value after it)",
      );
    }
    // An object or list opened and cut before its first member: closing it up would hand the tool
    // an empty one the model never wrote (`{"a": {` run as `{"a": {}}`).
    const empty = openedEmpty(trimmed);
    if (empty) {
      if (finishReason === "length") throw truncated(raw, name, true);
      const refusal = openedAndCut(raw, name, trimmed, empty);
      if (refusal) throw refusal;
    }
    if (finishReason === "length" && isUnterminated(trimmed)) throw truncated(raw, name, true);
    if (trimmed.length > MAX_REPAIR_ARGUMENT_CHARS) {
      throw malformed(
        raw,
        name,
        `they are not valid JSON, and past ${MAX_REPAIR_ARGUMENT_CHARS} characters they are not repaired`,
      );
    }
    parsed = repairLeading(trimmed);
  }
  if (parsed) {
    const { value, source } = parsed;
    if (isRecord(value)) {
      if (secondObjectAfter(trimmed, 0)) {
        const sole = soleObject(trimmed, 0);
        if (sole === undefined) throw twoObjects(raw, name);
        return done(sole.value as Record<string, unknown>, true, raw, name, sole.source);
      }
      return done(value, true, raw, name, source);
    }
    if (value === null) return { ...EMPTY, value: {}, repaired: true };
    // JSON held in a string: open it (a model that double-encodes does it once, rarely twice).
    if (typeof value === "string" && layer < 2 && value.trim() !== trimmed) {
      // Held in a string, its numbers were out of sight: read as text here where only a string is taken.
      const quoting = options.takesOnlyString
        ? quoteNumbersAsText(value, options.takesOnlyString)
        : undefined;
      const held = quoting?.text ?? value;
      const inner = readSlow(held, raw, options, tryParse(held), layer + 1);
      return { ...inner, repaired: true, quoted: [...(quoting?.quoted ?? []), ...quotedOf(inner)] };
    }
    // A list of argument objects: one is the call's arguments; more are several calls in one,
    // and running the first alone would drop the others.
    // (Only a list the text is: prose a repair read as a list still has its object looked for.)
    if (Array.isArray(value) && trimmed.startsWith("[")) {
      if (value.length === 1 && isRecord(value[0])) return done(value[0], true, raw, name, source, [0]);
      throw malformed(raw, name, `they are a JSON array of ${value.length} values; a call takes one object`);
    }
  }
  // An object with prose around it: take the object.
  const open = trimmed.indexOf("{");
  if (open > 0) {
    const { end } = scanBrackets(trimmed, open);
    const candidate = trimmed.slice(open, end < 0 ? undefined : end);
    const found = tryParse(candidate) ?? repairParse(candidate);
    if (found && isRecord(found.value)) {
      if (secondObjectAfter(trimmed, open)) {
        const sole = soleObject(trimmed, open);
        if (sole === undefined) throw twoObjects(raw, name);
        return done(sole.value as Record<string, unknown>, true, raw, name, sole.source);
      }
      return done(found.value, true, raw, name, found.source);
    }
  }
  if (finishReason === "length") throw truncated(raw, name, true);
  if (!parsed && nonJsonNumber(trimmed) !== undefined) throw nonNumber(raw, name, trimmed);
  // Not read for its depth (valid JSON 600 levels deep included): said so, or the model, told it
  // wrote no JSON, sends the same again.
  if (!parsed && nestsDeeper(trimmed, MAX_DEPTH)) {
    throw malformed(raw, name, `they nest deeper than ${MAX_DEPTH} levels`);
  }
  throw malformed(
    raw,
    name,
    parsed ? kindOfText(parsed.value, raw, strict) : "they could not be read as JSON",
  );
}

/**
 * What text read as `value`, a JSON value that is no object, is, for the model: a repair reads
 * words with no quotes around them (`add 1 and 2`) as a string, but the model wrote plain text,
 * and told of a JSON string it would not recognise what it wrote. `raw`: the model's text.
 */
function kindOfText(value: unknown, raw: string, strict: Parsed | undefined): string {
  // Written in quotes (`"add 1 and 2"`, opened and read again), it is the string the model wrote.
  if (typeof value === "string" && !strict && !/^["']/.test(unfenced(raw))) {
    return "they are plain text, not JSON";
  }
  return `they are ${kindOfValue(value)}`;
}

/**
 * `found` with the digits of each number that was rewritten for the reader (`.5e400` read as
 * `0.5e400`) as the model wrote them. `list`: the rewritten paths are from a list whose first item
 * is the arguments.
 */
function asWritten<N extends { path: ArgumentPath; digits: string }>(
  found: N[],
  rewritten: readonly RewrittenNumber[],
  list: boolean,
): N[] {
  if (rewritten.length === 0 || found.length === 0) return found;
  const written = new Map<string, RewrittenNumber>();
  for (const number of rewritten) {
    if (list && number.path[0] !== 0) continue;
    written.set(JSON.stringify(list ? number.path.slice(1) : number.path), number);
  }
  return found.map((n) => {
    const number = written.get(JSON.stringify(n.path));
    return number?.json === n.digits ? { ...n, digits: number.token } : n;
  });
}

/** Text without the code fence it may be wrapped in (its closing fence optional), trimmed. */
function unfenced(text: string): string {
  return text
    .trim()
    .replace(/^`{3,}[\w-]*\s*/, "")
    .replace(/`{3,}$/, "")
    .trim();
}

/**
 * For text a repair read as no arguments: the refusal when the model never wrote them empty, or
 * `undefined` when it did — `null` or Python's `None`, an empty string, either perhaps quoted or
 * fenced, or an object written closed with nothing in it but spaces and comments (`{}`,
 * `{ /* none *\/ }`, fenced or after prose). Refused: a `{` that never closes (`{`, `{,`, `[{`,
 * prose ending in a stray `{`), one closed by `]`, one holding what the repair dropped (`{,}`), and
 * junk read as null or as an empty string (`null]`, a lone backtick). The model wrote no key and
 * value a tool could use, and running the call with none would hide that from it.
 */
function nothingWritten(raw: string, name: string | undefined): ToolArgumentsError | undefined {
  const text = unfenced(raw);
  const bare = text.replace(/^[\s"'\\]+|[\s"'\\]+$/g, "");
  if (bare === "" || bare === "null" || bare === "None") return undefined;
  const open = text.indexOf("{");
  let detail: string;
  if (open < 0) {
    detail = /^(?:null|None)\b/.test(bare)
      ? "they are null with stray text beside it, and no key and value"
      : "they are plain text with no key and value in it";
  } else {
    const { end } = scanBrackets(text, open);
    if (end > 0 && text[end - 1] === "}" && onlySpace(text, open + 1, end - 1)) return undefined;
    detail = /^[\s"'[]*$/.test(text.slice(0, open))
      ? `they hold no key and value, only ${end < 0 ? 'a "{" that never closes' : "an object a repair would empty"}`
      : 'they are plain text with a stray "{" and no key and value in it';
  }
  return malformed(raw, name, `${detail}; a call that takes no arguments is sent as {}`);
}

/**
 * The refusal for arguments that stop inside an object or list opened before its first member
 * (`empty`, found in `text`), naming where: `{"a": {` stops inside `a`, and closing it would invent
 * an empty object for it. The arguments themselves opened and cut empty are the "no key and value"
 * refusal: a lone `[` (or `[[`) here, written first; a lone `{` (`[{`) is {@link nothingWritten}'s,
 * and so is a bracket after prose, which this leaves (`undefined`) to what reads it after.
 */
function openedAndCut(
  raw: string,
  name: string | undefined,
  text: string,
  empty: OpenedEmpty,
): ToolArgumentsError | undefined {
  // A list's first item is the arguments (a list of one object is read as them).
  const path = empty.inList && empty.path[0] === 0 ? empty.path.slice(1) : empty.path;
  if (path.length === 0) {
    if (empty.object || !unfenced(text).startsWith("[")) return undefined;
    return malformed(
      raw,
      name,
      'they hold no key and value, only a "[" that never closes; a call that takes no arguments is sent as {}',
    );
  }
  const what = empty.object ? "an object" : "a list";
  return malformed(
    raw,
    name,
    `they stop inside ${echoedPath(path)}, ${what} opened and cut off before its first ` +
      `${empty.object ? "key" : "value"}; closing it would make up ${what} left empty that was never written`,
  );
}

/** True when `text` from `from` to `to` holds only spaces and comments. */
function onlySpace(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const comment = commentEnd(text, i);
    if (comment >= 0) i = comment - 1;
    else if (!/\s/.test(text[i] as string)) return false;
  }
  return true;
}

function nonNumber(raw: string, name: string | undefined, text: string): ToolArgumentsError {
  const word = nonJsonNumber(text) as string;
  return malformed(
    raw,
    name,
    `they hold ${word}, and JSON has no NaN or Infinity: write the number, or a string if text was meant`,
  );
}

function twoObjects(raw: string, name: string | undefined): ToolArgumentsError {
  return malformed(
    raw,
    name,
    "they hold more than one JSON object; a call takes one, so make one call for each",
  );
}

/**
 * The one call's arguments a run of objects from the `{` at `open` to the end of `text` stands for
 * (set apart by nothing, spaces, commas or semicolons), or `undefined` where it stands for more
 * than one: the object sent again, once or more (a server or proxy that streams the whole object
 * again after its pieces, `{"a":1}{"a":1}`), and an empty object before it (a proxy that writes the
 * `{}` a tool call opens with, then the arguments, `{}{"a":1}`). The same object: the same value,
 * its keys in any order. Linear: each object is scanned once.
 */
function soleObject(text: string, open: number): Parsed | undefined {
  let sole: { parsed: Parsed; canonical: string } | undefined;
  let at = open;
  for (;;) {
    const next = text[at] === "{" ? objectAt(text, at) : undefined;
    if (next === undefined) return undefined;
    // Empty objects before the first that holds something stand for nothing; after it, for a call.
    if (sole === undefined || (sole.canonical === "{}" && next.canonical !== "{}")) sole = next;
    else if (next.canonical !== sole.canonical) return undefined;
    at = next.end + (/^[\s,;]*/.exec(text.slice(next.end)) as RegExpExecArray)[0].length;
    if (at >= text.length) return sole.parsed;
  }
}

/** The object whose `{` is at `open`: where it ends, as read, and its value with its keys in order. */
function objectAt(
  text: string,
  open: number,
): { end: number; parsed: Parsed; canonical: string } | undefined {
  const { end } = scanBrackets(text, open);
  if (end < 0) return undefined;
  const candidate = text.slice(open, end);
  const parsed = tryParse(candidate) ?? repairParse(candidate);
  if (parsed === undefined || !isRecord(parsed.value)) return undefined;
  // Numbers JavaScript cannot hold compare by their digits as written, not by the double they read as.
  const digits = findInexactNumbers(parsed.source, parsed.value)
    .map((n) => `${JSON.stringify(n.path)}=${n.digits}`)
    .sort();
  return {
    end,
    parsed,
    canonical: `${canonical(parsed.value)}${digits.length > 0 ? ` ${digits.join(" ")}` : ""}`,
  };
}

/** A JSON value as text with every object's keys in order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(",")}}`;
  }
  return String(JSON.stringify(value));
}

/**
 * True when the object whose `{` is at `open` is followed (past spaces, a comma or a semicolon)
 * by another object that reads: two calls' arguments run together (`{…}{…}`, `{…},\n{…}`).
 * Prose or a closing tag after the object is not another object.
 */
function secondObjectAfter(text: string, open: number): boolean {
  const { end } = scanBrackets(text, open);
  if (end < 0) return false;
  const rest = /^[\s,;]*/.exec(text.slice(end)) as RegExpExecArray;
  const next = end + rest[0].length;
  if (text[next] !== "{") return false;
  const second = scanBrackets(text, next);
  const candidate = text.slice(next, second.end < 0 ? undefined : second.end);
  const found = tryParse(candidate) ?? repairParse(candidate);
  return found !== undefined && isRecord(found.value);
}
