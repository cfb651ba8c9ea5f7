import { type FunctionToolLike, takesOnlyStringAt } from "@loopwright/schema-compat";
import type { CatalogServer } from "./catalog.js";
import { catalogMemo, definitionsOf } from "./catalog-readers.js";
import { describe, echoName, quotedText, ToolLoadingError } from "./errors.js";
import { type ToolResolver, toolResolver } from "./names.js";
import { ownView } from "./own.js";

/** The inner call a `call_tool` stands for: the tool it names and its arguments as an object. */
export interface ProxiedCall {
  /** The catalogued tool's name. */
  name: string;
  /** Its arguments, read into an object (`{}` where none were given). */
  args: Record<string, unknown>;
  /** The arguments as text: what the model wrote where it wrote a string, the JSON of the object otherwise. */
  raw: string;
}

/**
 * What `ProxiedCallOptions.parse` is handed beside the text: the options of `parseToolArguments`
 * (from `@loopwright/tool-calls`) that the tool named decides. That reader answers an object
 * (`{ value, json, repaired, inexact }`), not the arguments: pass
 * `(text, o) => parseToolArguments(text, o).value`, as the loop does.
 */
export interface ProxiedParseOptions {
  /**
   * Where the text is the inner tool's arguments and its definition is known: true at a place its
   * parameters take a string and no number (`takesOnlyStringAt` from `@loopwright/schema-compat`),
   * so a number token written there (`02134`, `+5`, `.5`) is read as the text written, as when the
   * tool is called directly. Absent for the whole call given as text, or a tool with no definition.
   */
  takesOnlyString?: ((path: readonly (string | number)[]) => boolean) | undefined;
}

/**
 * Any other option a reader may declare. None is ever passed: declared so a reader whose second
 * parameter takes something else (`JSON.parse`'s reviver) is still accepted as `parse`.
 */
export interface OtherReaderOptions {
  // biome-ignore lint/suspicious/noExplicitAny: only `any` lets a function (a reviver) be read as this options object
  readonly [other: string]: any;
}

/** What a reading such as `parseToolArguments` answers: the arguments are its `value`. */
interface ReadingResult {
  value: unknown;
  json: string;
  repaired: boolean;
  inexact: readonly unknown[];
}

/**
 * Nothing more, unless `R` — what a `parse` answers — is a reading's result holding the arguments
 * as `value` (`parseToolArguments` passed as it is, whose answer would reach the tool as its
 * arguments): then a `parse` no function is, whose type names the fix, so that does not compile.
 */
export type ReaderAnswersArguments<R> = 0 extends 1 & R
  ? unknown
  : [R] extends [ReadingResult]
    ? {
        parse: "parse answers the arguments, not a reading of them: pass (text, o) => parseToolArguments(text, o).value";
      }
    : unknown;

/**
 * Options for {@link proxiedCall}; `R` is what `parse` answers (inferred; a reading's result
 * holding the arguments as `value` is refused by {@link ReaderAnswersArguments}, and, where the
 * types cannot see it, when the call is read).
 */
export interface ProxiedCallOptions<R = unknown> {
  /**
   * Reads arguments given as text — the call's own, or the whole `{ name, arguments }` given as
   * text — handed {@link ProxiedParseOptions} as well. `JSON.parse` unless given; the loop passes
   * its lenient reader (`parseToolArguments` from `@loopwright/tool-calls`) so almost-JSON is
   * repaired, and a number token where the tool takes only a string stays text — as
   * `(text, o) => parseToolArguments(text, o).value`, since that reader answers an object holding
   * the arguments as `value`. Whatever it throws becomes the `cause` of an `invalid-arguments` error.
   *
   * Declared as a method, its options optional and open, so a reader whose second parameter is
   * something else still type-checks: `JSON.parse` (a reviver, which ignores the options object),
   * `parseJson` from `@loopwright/tool-calls`, or a one-argument function.
   */
  parse?(text: string, options?: ProxiedParseOptions & OtherReaderOptions): R;
  /**
   * The catalogued tools' definitions (`{ type: "function", function: { name, parameters } }`):
   * where the tool named has one, `parse` is handed its `takesOnlyString` for the inner
   * arguments. `createToolLoading` passes its own. None unless given; anything but an array of
   * named function tools throws `invalid-tools`.
   */
  tools?: readonly FunctionToolLike[] | undefined;
}

/** What `readProxiedCall` reads beyond the call: the reader, and each tool's parameters by name. */
interface ReadOptions {
  parse?: ProxiedCallOptions["parse"] | undefined;
  parametersOf?: ((name: string) => unknown) | undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Reads a `call_tool` call's arguments — `{ name, arguments }` — into the call it stands for. The
 * arguments may be an object or JSON text of one; absent, `null` (or the text `null`) or empty means `{}`, and with no
 * `arguments` key at all, the keys written beside the name are the arguments. The name must name
 * one catalogued tool: its own name, `functions.tool`, `server.tool` (or `/`, `:`, `__`), or a
 * name differing only in case from exactly one tool — never a server's name or a pattern.
 *
 * Arguments given as text are read by `options.parse`, handed — where `options.tools` defines the
 * tool named — the places its parameters take only a string (`takesOnlyString`), so a number
 * token written there (`02134`, `+5`) can reach the tool as written, as when it is called directly.
 *
 * Throws a `ToolLoadingError` whose message is written for the model: `missing-name` when no tool
 * is named, `unknown-tool` for a name outside the catalogue, `invalid-arguments` for arguments that
 * are not an object, and `invalid-catalog` for a malformed catalogue (`invalid-tools` for `tools`
 * that are not named function tools); `invalid-reader` when `parse` answers a Promise or exactly
 * a reading's result (`{ value, json, repaired, inexact }` — `parseToolArguments` passed as it is
 * where the types could not see it), naming the fix. Never runs anything. The catalogue (and
 * `tools`) is checked and indexed on the first call and kept while it holds the same entries, so
 * a host calling this for every `call_tool` does not pay for it again.
 */
export function proxiedCall<R = unknown>(
  args: unknown,
  catalog: readonly CatalogServer[],
  given?: ProxiedCallOptions<R> & ReaderAnswersArguments<R>,
): ProxiedCall {
  // Read as the host wrote them: never a `parse` or `tools` only a polluted Object.prototype holds.
  const options: ProxiedCallOptions<R> = ownView(given ?? {});
  // Checked and indexed once per catalogue (and tool array), again only when one changes: called on
  // its own, each call built the name lookups anew (half a second at 10^5 tools).
  const resolve = catalogMemo(catalog, "proxiedCall", "resolver", toolResolver);
  const definitions = options.tools === undefined ? undefined : definitionsOf(options.tools, "proxiedCall");
  return readProxiedCall(args, resolve, {
    ...(options.parse ? { parse: options.parse } : {}),
    ...(definitions ? { parametersOf: (name: string) => definitions.get(name)?.function.parameters } : {}),
  });
}

/** The keys of a reading's result (`parseToolArguments`' answer), which holds the arguments as `value`. */
const READING_KEYS = ["inexact", "json", "repaired", "value"];

/**
 * `read`, what the `parse` reader answered, unless it cannot be the text's value: a Promise, or
 * exactly a reading's result (`{ value, json, repaired, inexact }`) — then a `ToolLoadingError`
 * (`invalid-reader`) naming the fix, rather than the result handed to the tool as its arguments.
 */
function readerAnswer(read: unknown): unknown {
  if (typeof (read as { then?: unknown } | null)?.then === "function") {
    // Its rejection is not left unhandled: the error below is what the caller sees.
    Promise.resolve(read).catch(() => undefined);
    throw new ToolLoadingError(
      "invalid-reader",
      "The parse option answered a Promise; it must read the text synchronously and answer the value it holds.",
    );
  }
  if (
    isRecord(read) &&
    Object.keys(read).sort().join() === READING_KEYS.join() &&
    typeof read.json === "string" &&
    typeof read.repaired === "boolean" &&
    Array.isArray(read.inexact)
  ) {
    throw new ToolLoadingError(
      "invalid-reader",
      "The parse option answered a reading's result ({ value, json, repaired, inexact }), not the arguments: " +
        "pass (text, o) => parseToolArguments(text, o).value rather than parseToolArguments itself.",
    );
  }
  return read;
}

/** `JSON.parse` of the text alone (its second argument is a reviver, never the options). */
const jsonParse = (text: string): unknown => JSON.parse(text);

/** `proxiedCall` against a catalogue already checked, its names resolved by `resolve`. */
export function readProxiedCall(
  args: unknown,
  resolve: ToolResolver,
  readGiven: ReadOptions = {},
): ProxiedCall {
  // Built without a `parse` where none was given: never the one a polluted Object.prototype holds.
  const options = ownView(readGiven);
  const parse = options.parse ?? jsonParse;
  let outer = args;
  if (typeof outer === "string") {
    let read: unknown;
    try {
      read = parse(outer, {});
    } catch (cause) {
      throw new ToolLoadingError(
        "invalid-arguments",
        'call_tool takes { "name": "<tool>", "arguments": { ... } }, and its arguments were not JSON.',
        { cause },
      );
    }
    outer = readerAnswer(read);
  }
  // The keys the model wrote (or a class of the host's holds): never a polluted Object.prototype's `name`.
  const record: Record<string, unknown> = isRecord(outer) ? ownView(outer) : Object.create(null);
  const given = record.name ?? record.tool ?? record.tool_name;
  if (typeof given !== "string" || given.trim() === "") {
    throw new ToolLoadingError(
      "missing-name",
      `call_tool needs the name of the tool to run, as { "name": "<tool>", "arguments": { ... } }, and was given ${describe(given)} as its name.`,
    );
  }
  const name = resolveOne(given.trim(), resolve);
  const inner = ARGUMENT_KEYS.some((key) => key in record)
    ? (record.arguments ?? record.args ?? record.parameters ?? record.input)
    : beside(record);
  if (inner === undefined || inner === null || (typeof inner === "string" && inner.trim() === "")) {
    return { name, args: {}, raw: typeof inner === "string" ? inner : "{}" };
  }
  if (isRecord(inner)) return { name, args: inner, raw: JSON.stringify(inner) };
  if (typeof inner === "string") {
    let parsed: unknown;
    const parameters = options.parametersOf?.(name);
    try {
      parsed = parse(
        inner,
        parameters === undefined ? {} : { takesOnlyString: (path) => takesOnlyStringAt(parameters, path) },
      );
    } catch (cause) {
      throw new ToolLoadingError(
        "invalid-arguments",
        `call_tool for ${quotedText(name)}: its arguments are not a JSON object (${cause instanceof Error ? cause.message : String(cause)}). Give them as an object.`,
        { cause },
      );
    }
    parsed = readerAnswer(parsed);
    if (isRecord(parsed)) return { name, args: parsed, raw: inner };
    // The text `null` is the JSON of no arguments, as a real `null` is (and as the loop's lenient
    // reader already reads it): refused, a model that wrote it was told its arguments were wrong.
    if (parsed === null) return { name, args: {}, raw: inner };
    throw new ToolLoadingError(
      "invalid-arguments",
      `call_tool for ${quotedText(name)}: its arguments must be a JSON object, and the text given reads as ${describe(parsed)}.`,
    );
  }
  throw new ToolLoadingError(
    "invalid-arguments",
    `call_tool for ${quotedText(name)}: its arguments must be an object, and were given ${describe(inner)}.`,
  );
}

const NAME_KEYS = ["name", "tool", "tool_name"];
const ARGUMENT_KEYS = ["arguments", "args", "parameters", "input"];

/** The arguments a model wrote beside the name instead of under `arguments`; undefined for none. */
function beside(record: Record<string, unknown>): Record<string, unknown> | undefined {
  const rest = Object.entries(record).filter(([key]) => !NAME_KEYS.includes(key));
  return rest.length > 0 ? Object.fromEntries(rest) : undefined;
}

function resolveOne(name: string, resolve: ToolResolver): string {
  const tool = resolve(name);
  if (tool !== undefined) return tool;
  throw new ToolLoadingError(
    "unknown-tool",
    `call_tool: "${echoName(name)}" is not in the catalogue. Call one of the tools the catalogue lists, loaded with load_tools.`,
  );
}
