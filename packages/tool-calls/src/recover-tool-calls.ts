import { quotedEnd } from "./almost-json.js";
import { describeValue, readOptions, ToolCallsError } from "./errors.js";
import { digitsAt, exactJson, rememberDigits, rememberDigitsAt } from "./exact-numbers.js";
import {
  type Fence,
  findFences,
  isRecord,
  isUnterminated,
  type Parsed,
  repairLeading,
  repairParse,
  scanBrackets,
  tildeFences,
  tryParse,
  withinDepth,
} from "./json-text.js";
import { pythonDecimal, rememberWrittenNumbers, withJsonNumbers } from "./number-text.js";
import { dataField, ownKey, ownOption } from "./own.js";
import { readToolArguments } from "./parse-tool-arguments.js";
import type { ToolCallRequest } from "./types.js";

/**
 * A tool the model may call, as `recoverToolCalls` reads it: a bare name, an MCP-style
 * `{ name, inputSchema }`, or an OpenAI function tool. A parameters schema, where given, is used
 * to read Qwen3-Coder's untyped parameter text and to name a Harmony call that names no tool.
 * Another kind of tool (the openai SDK's `ChatCompletionCustomTool`, `{ type: "custom", … }`) may
 * sit in the array, as the SDK's `ChatCompletionTool[]` and `sanitizeTools`' output hold it; it
 * names no function, so no call is recovered for it.
 */
export type ToolNameLike =
  | string
  | {
      name?: unknown | undefined;
      inputSchema?: unknown | undefined;
      parameters?: unknown | undefined;
      function?: { name?: unknown | undefined; parameters?: unknown | undefined } | undefined;
    }
  | { type: string };

/** Options for {@link recoverToolCalls}. */
export interface RecoverToolCallsOptions {
  /**
   * The turn's finish reason. `"length"` (the reply was cut at the token ceiling) leaves in the
   * text a call still open where the reply ends — JSON whose brackets never close, a markup block
   * without its closing tag — as `parseToolArguments` refuses such arguments: they are never
   * closed up and run.
   */
  finishReason?: string | null | undefined;
  /**
   * What each recovered call's id starts with, before its number in the reply (`0`, `1`, …).
   * Default (also for `null`) `"call_recovered_"`. A loop of its own recovers calls afresh from
   * every reply, and the default numbers each from `call_recovered_0`: a prefix unique to the step
   * (`` `call_recovered_${step}_` ``) keeps every id in the transcript apart, so each tool result
   * answers one call (OpenAI, Mistral and chat templates that print ids match results by id).
   */
  idPrefix?: string | null | undefined;
}

/** What {@link recoverToolCalls} found. */
export interface RecoveredToolCalls {
  /** The calls, in the order they were written, with ids `call_recovered_0` onward (`idPrefix` then the number, given one). */
  calls: ToolCallRequest[];
  /** The reply without the recovered calls (the thinking before the scratchpad's `</think>` kept as it was). */
  text: string;
}

interface Known {
  names: Set<string>;
  schemas: Map<string, Record<string, unknown>>;
}

interface Found {
  name: string;
  args: Record<string, unknown>;
  raw: string;
}

interface Span {
  start: number;
  end: number;
  calls: Found[];
  /**
   * Set when calls of the span were still open where the text ended — JSON whose brackets never
   * closed, markup without its closing tag: the span's closed part is its first `calls` calls, up
   * to `end` (none, for a span open from its start). Only that part is recovered from a reply cut
   * at the token ceiling ({@link closedPart}).
   */
  open?: Opening;
}

/** Where a span stops being closed: see {@link Span.open}. */
interface Opening {
  end: number;
  calls: number;
}

/** A span's {@link Span.open}: its own field only (a polluted `Object.prototype.open` is no opening). */
function openOf(span: Pick<Span, "open">): Opening | undefined {
  return Object.hasOwn(span, "open") ? span.open : undefined;
}

/** A span open from its start: nothing of it is closed. */
function openFrom(start: number): Opening {
  return { end: start, calls: 0 };
}

/**
 * The scratchpads the stream takes out of an answer (`ALL_FENCES` of `@loopwright/stream`: its
 * default fences and `<thinking>`, `<reasoning>`), by opener and closer: a call written inside one
 * is reasoning about a call, never one to run. One that never closes runs to the end of the reply,
 * as the stream reads it; the closer of an `implicitOpen` one (`</think>`, Kimi's `◁/think▷`) with
 * no opener before it ends a scratchpad the chat template opened in the prompt. Kept equal to the
 * stream's table by a test that reads both (tool-calls does not depend on stream).
 */
export const SCRATCHPADS: ReadonlyArray<{
  open: string;
  close: string;
  implicitOpen?: true;
  quotable?: true;
  resume?: string;
}> = [
  { open: "<think>", close: "</think>", implicitOpen: true },
  {
    open: "<|channel|>analysis<|message|>",
    close: "<|end|>",
    resume: "<|start|>assistant<|channel|>final<|message|>",
  },
  { open: "◁think▷", close: "◁/think▷", implicitOpen: true },
  { open: "<thinking>", close: "</thinking>", quotable: true },
  { open: "<reasoning>", close: "</reasoning>", quotable: true },
];

/**
 * The markers that tell whether a reply began inside a scratchpad its chat template opened in the
 * prompt: the closers of the `implicitOpen` kinds and the openers a model never writes as answer
 * (the stream's default fences; a `quotable` one, `<thinking>`, `<reasoning>`, outside them, is
 * often reasoning about the tag). The reply began inside one when the first of them is a closer.
 * Internal: parseJson reads with it too.
 */
export const TEMPLATE_MARKERS: ReadonlyArray<{ marker: string; closes: boolean }> = SCRATCHPADS.flatMap(
  (pad) => [
    ...(pad.quotable ? [] : [{ marker: pad.open, closes: false }]),
    ...(pad.implicitOpen ? [{ marker: pad.close, closes: true }] : []),
  ],
);

/** The closers that end a scratchpad opened in the prompt: `</think>`, Kimi's `◁/think▷`. */
const THINK_ENDS: readonly string[] = SCRATCHPADS.flatMap((pad) => (pad.implicitOpen ? [pad.close] : []));

/**
 * The first `closer` in `text` from `from` on that is not written as inline code (`` `</thinking>` ``
 * in reasoning about the tag is reasoning, as the stream reads it); -1 for none. Linear: each
 * quoted one is passed once.
 */
function closerFrom(text: string, closer: string, from: number): number {
  let at = text.indexOf(closer, from);
  while (at > 0 && text[at - 1] === "`" && text[at + closer.length] === "`")
    at = text.indexOf(closer, at + closer.length);
  return at;
}

/**
 * The earliest opener of {@link SCRATCHPADS} in `text` from `from` on, and its kind (`pad`
 * undefined: none). `next` holds where each kind's opener was last found (-1: nowhere, -2: not
 * looked for yet) and is updated: a kind is searched again only once `from` has passed where it was
 * found, so over a left-to-right read each kind's openers are looked for once (linear).
 * parseJson's scratchpad removal reads with it too.
 */
export function earliestOpener(
  text: string,
  from: number,
  next: number[],
): { start: number; pad: (typeof SCRATCHPADS)[number] | undefined } {
  let start = -1;
  let pad: (typeof SCRATCHPADS)[number] | undefined;
  SCRATCHPADS.forEach((kind, i) => {
    let at = next[i] as number;
    if (at !== -1 && at < from) {
      at = text.indexOf(kind.open, from);
      next[i] = at;
    }
    if (at >= 0 && (start < 0 || at < start)) {
      start = at;
      pad = kind;
    }
  });
  return { start, pad };
}

/**
 * The scratchpads in `text` outside the calls at `regions` (sorted, apart), read left to right as
 * the stream reads them: from the earliest opener of {@link SCRATCHPADS} not inside a call nor
 * written as inline code to its closer not inside a call nor written as inline code, or to the end
 * of the text; inside one, another kind's opener is reasoning and opens nothing (a `<think>`
 * mentioned in `<reasoning>` made the rest of the reply a scratchpad, and a call after it was
 * never run).
 * Linear: each kind's opener is looked for from past the last one found, once over the text.
 */
function scratchpadsIn(text: string, regions: ReadonlyArray<[number, number]>): Array<[number, number]> {
  const found: Array<[number, number]> = [];
  // Where each kind's opener is next found from `from` on (-1: nowhere, -2: not looked for yet).
  const next = SCRATCHPADS.map(() => -2);
  let from = 0;
  for (;;) {
    const { start, pad } = earliestOpener(text, from, next);
    if (pad === undefined) break;
    const { open: opener, close: closer } = pad;
    const call = spanAt(start, regions);
    if (call) {
      from = call[1];
      continue;
    }
    // Written between backticks (`` `<thinking>` ``): text about the marker, as the stream reads it.
    if (text[start - 1] === "`" && text[start + opener.length] === "`") {
      from = start + opener.length;
      continue;
    }
    let close = closerFrom(text, closer, start + opener.length);
    for (let call = close < 0 ? undefined : spanAt(close, regions); call; ) {
      close = closerFrom(text, closer, call[1]);
      call = close < 0 ? undefined : spanAt(close, regions);
    }
    const end = close < 0 ? text.length : close + closer.length;
    found.push([start, end]);
    from = end;
  }
  return found;
}

function readTools(tools: readonly ToolNameLike[]): Known {
  const known: Known = { names: new Set(), schemas: new Map() };
  for (const tool of tools) {
    if (typeof tool === "string") {
      known.names.add(tool);
      continue;
    }
    // Read as a plain record: another kind of tool (`{ type: "custom", … }`) names no function.
    const entry: unknown = tool;
    if (!isRecord(entry)) continue;
    // Its fields as the host wrote them (its own, or a class's), never a polluted `Object.prototype`'s.
    const inner = ownOption(entry, "function");
    const fn = isRecord(inner) ? inner : undefined;
    const named = fn && ownOption(fn, "name");
    const plain = ownOption(entry, "name");
    const name = typeof named === "string" ? named : typeof plain === "string" ? plain : undefined;
    if (name === undefined) continue;
    known.names.add(name);
    const schema =
      (fn && ownOption(fn, "parameters")) ??
      ownOption(entry, "parameters") ??
      ownOption(entry, "inputSchema");
    if (isRecord(schema)) known.schemas.set(name, schema);
  }
  return known;
}

/**
 * Reads a call's arguments, which a model writes as an object or as JSON in a string. `raw` keeps
 * the digits of a number JavaScript cannot hold (`parseToolArguments` of it decides what to do).
 */
function readArguments(value: unknown): { args: Record<string, unknown>; raw: string } | undefined {
  if (value === undefined || value === null) return { args: {}, raw: "{}" };
  if (isRecord(value)) return withinDepth(value) ? { args: value, raw: exactJson(value) } : undefined;
  if (typeof value !== "string") return undefined;
  try {
    // `+5` and `.5` read as the numbers they are; `raw`, the text as written, lets the tool's schema decide.
    return { args: readToolArguments(withJsonNumbers(value) ?? value).value, raw: value };
  } catch {
    return undefined;
  }
}

/** Keys a model names the tool under, most common first. */
const NAME_KEYS = ["name", "tool_name", "function_name", "tool", "recipient_name"] as const;
/** Keys a model puts the arguments under, most common first. */
const ARGUMENT_KEYS = ["arguments", "parameters", "args", "input", "tool_input", "params"] as const;

/** One call written as JSON: `{name, arguments}` and the other spellings models use for both. */
function callOf(entry: Record<string, unknown>): Found | undefined {
  // Only the keys the model wrote: a polluted `Object.prototype.arguments` is no call's arguments.
  const field = (key: string) => ownKey(entry, key);
  // A tool's definition (a model listing its tools as JSON) describes it; a call never does. Read
  // as a call, its parameters schema was handed to the tool as the arguments.
  if (typeof field("description") === "string") return undefined;
  const inner = field("function");
  if (field("name") === undefined && isRecord(inner)) return callOf(inner);
  const legacy = field("function_call");
  if (field("name") === undefined && isRecord(legacy)) return callOf(legacy);
  // Indexed loops: leaving a for-of early closes its iterator, calling a polluted `Object.prototype.return`.
  let name: string | undefined;
  for (let i = 0; i < NAME_KEYS.length && name === undefined; i++) {
    const value = field(NAME_KEYS[i] as string);
    if (typeof value === "string" && value.trim() !== "") name = value.trim();
  }
  if (name === undefined && typeof inner === "string") name = inner.trim();
  if (!name) return undefined;
  let value: unknown;
  for (let i = 0; i < ARGUMENT_KEYS.length && value === undefined; i++)
    value = field(ARGUMENT_KEYS[i] as string);
  const read = readArguments(value);
  return read ? { name, ...read } : undefined;
}

/**
 * The calls one JSON value holds: a call, a list of calls, or a wrapper listing them
 * (`{"tool_calls": […]}` as OpenAI's message carries them, `{"tool_uses": […]}` as
 * `multi_tool_use.parallel` writes them).
 */
function callsIn(value: unknown): Found[] | undefined {
  if (isRecord(value) && !NAME_KEYS.some((k) => typeof ownKey(value, k) === "string")) {
    for (const key of ["tool_calls", "tool_uses", "function_calls"]) {
      const listed = ownKey(value, key);
      if (Array.isArray(listed)) return callsIn(listed);
    }
  }
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0) return undefined;
  const calls: Found[] = [];
  for (const entry of list) {
    if (!isRecord(entry)) return undefined;
    const call = callOf(entry);
    if (!call) return undefined;
    calls.push(call);
  }
  return calls;
}

/**
 * Characters the current `recoverToolCalls` call may still hand to the repairer. A repair reads up
 * to the rest of the reply, so a reply with thousands of unclosed openers would otherwise take
 * quadratic time; a real reply repairs a few calls, whose text together is about the reply's.
 */
let repairBudget = Number.POSITIVE_INFINITY;

/** {@link repairParse} within the current call's budget. */
function repair(text: string): Parsed | undefined {
  if (text.length > repairBudget) return undefined;
  repairBudget -= text.length;
  return repairParse(text);
}

/**
 * Reads the model's JSON-like `written` text with `read` (strict JSON, a repair), the number
 * tokens JSON refuses but whose meaning is plain (`+5`, `.5`) read as the numbers they are, and
 * remembers the digits of every number a double would write back otherwise
 * (`12345678901234567891`, `02134`, `1.10`, `1e21`, `+5`), so `exactJson` — the call's `raw` —
 * writes each as the model wrote it, for a reading by the tool's schema to decide. `digits`: the
 * value's own, when it is such a number.
 */
function readWritten<P extends Parsed>(
  written: string,
  read: (text: string) => P | undefined,
): (P & { digits?: string | undefined }) | undefined {
  // Rewritten before the first reading: a repair that has to reach past them reads less kindly
  // (`00.0` beside `.5` came back as the string "00.0").
  const parsed = read(withJsonNumbers(written) ?? written);
  if (!parsed) return undefined;
  const inexact = rememberDigits(parsed.source, parsed.value);
  const repaired = parsed.source !== written;
  return { ...parsed, digits: rememberWrittenNumbers(written, parsed.value, repaired) ?? inexact };
}

/** Strict JSON, else the almost-JSON repair within the current call's budget. */
function strictOrRepaired(text: string): Parsed | undefined {
  return tryParse(text) ?? repair(text);
}

/** Calls one format may hold in one reply; past it, the rest is text (bounds the work on junk). */
const MAX_MATCHES = 256;

/** The first {@link MAX_MATCHES} matches of a global pattern. */
function matches(text: string, pattern: RegExp): RegExpExecArray[] {
  const found: RegExpExecArray[] = [];
  for (const match of text.matchAll(pattern)) {
    found.push(match);
    if (found.length >= MAX_MATCHES) break;
  }
  return found;
}

/**
 * Characters the current `recoverToolCalls` call may still walk looking for where a JSON value
 * closes. A junk reply of thousands of unclosed openers would walk to its end from each; a real
 * reply walks each call once, about its own length.
 */
let scanBudget = Number.POSITIVE_INFINITY;

/**
 * True while the current `recoverToolCalls` call reads a reply cut at the token ceiling: a call
 * still open where the reply ends is not recovered. Read in one place, {@link closedPart}; the
 * readers of each format only say what was open.
 */
let cutAtLimit = false;

/** What a recovered call's id starts with when the caller names no `idPrefix`. */
const DEFAULT_ID_PREFIX = "call_recovered_";
/** What this reading's recovered ids start with (`recoverToolCalls`' `idPrefix`). */
let idPrefix = DEFAULT_ID_PREFIX;

/**
 * The part of a span a reply may have recovered: all of it, or — the reply cut at the token ceiling
 * — only its calls closed before the text ended (`undefined` when none was).
 */
function closedPart(span: Span | undefined): Span | undefined {
  const open = span && openOf(span);
  if (!span || !open || !cutAtLimit) return span;
  const { end, calls } = open;
  return calls === 0 ? undefined : { start: span.start, end, calls: span.calls.slice(0, calls) };
}

/** The JSON value that begins at `start`, closed up when its brackets never close (`open`). */
function jsonAt(text: string, start: number): { value: unknown; end: number; open: boolean } | undefined {
  if (scanBudget <= 0) return undefined;
  const { end } = scanBrackets(text, start);
  scanBudget -= (end < 0 ? text.length : end) - start;
  const stop = end < 0 ? text.length : end;
  const slice = text.slice(start, stop);
  const parsed = readWritten(slice, strictOrRepaired);
  return parsed ? { value: parsed.value, end: stop, open: end < 0 } : undefined;
}

function skipSpace(text: string, index: number): number {
  let i = index;
  while (i < text.length && /\s/.test(text[i] as string)) i++;
  return i;
}

/** Calls written as JSON values one after another from `at` (apart by space, `;` or `,`). */
function jsonCallsAt(text: string, at: number): { calls: Found[]; end: number; open?: Opening } | undefined {
  const calls: Found[] = [];
  let end = at;
  let i = at;
  let open: Opening | undefined;
  while (text[i] === "{" || text[i] === "[") {
    const json = jsonAt(text, i);
    const found = json ? callsIn(json.value) : undefined;
    if (!json || !found) break;
    // Open brackets run to the end of the text: this is the last value, and what came before it is closed.
    if (json.open) open = { end, calls: calls.length };
    calls.push(...found);
    end = json.end;
    i = skipSpace(text, end);
    if (text[i] === ";" || text[i] === ",") i = skipSpace(text, i + 1);
  }
  return calls.length > 0 ? { calls, end, ...(open ? { open } : {}) } : undefined;
}

/** Arguments written as JSON from `at` (after a name, a separator, a fence), or none at all. */
function jsonArgumentsAt(
  text: string,
  at: number,
): { found: { args: Record<string, unknown>; raw: string }; end: number; open: boolean } | undefined {
  const i = skipSpace(text, at);
  if (text[i] !== "{") return undefined;
  const json = jsonAt(text, i);
  const read = json ? readArguments(json.value) : undefined;
  if (!json || !read) return undefined;
  return { found: { args: read.args, raw: text.slice(i, json.end) }, end: json.end, open: json.open };
}

/**
 * The JSON types one parameter takes, read through what schema writers put round a type:
 * `anyOf`/`oneOf` (pydantic's `Optional[str]`), a local `$ref` (a named type), `allOf` (pydantic
 * v1's wrapper), `enum`/`const` (a `Literal`), `nullable`. Empty for a parameter that takes any
 * value or is not described.
 */
function propertyType(
  schema: Record<string, unknown> | undefined,
  key: string,
  seen: TypeReads,
): { types: string[]; listed: unknown[] } {
  const props = isRecord(schema?.properties) ? schema.properties : undefined;
  if (!props || !Object.hasOwn(props, key)) return { types: [], listed: [] };
  const read = typesTaken(props[key], schema, 0, seen);
  return { types: read.types ?? [], listed: read.listed };
}

/** How deep `typesTaken` follows unions and references before it reads a schema as any value. */
const TYPE_READ_DEPTH = 64;

/** What `typesTaken` read of one schema: its types, and the values it lists (`enum`, `const`). */
interface TypeRead {
  /** `[]` for any value, `undefined` for none (`not: {}`, `false`: zod's way of writing "left out"). */
  types: string[] | undefined;
  listed: unknown[];
}

const ANY_TYPE: TypeRead = { types: [], listed: [] };

/** What one call has read of its tool's schemas, for {@link typesTaken}. */
interface TypeReads {
  /** Readings that are final. */
  done: Map<unknown, TypeRead>;
  /** The schemas being read, from the parameter's down: each with its reading's id. */
  path: Array<{ schema: unknown; id: number }>;
  /** Where on `path` each schema being read stands. */
  at: Map<unknown, number>;
  /**
   * Readings made while a schema further up `path` was still being read (a cycle back to it), so
   * without what that schema adds: reused only while that same reading of it is still under way.
   */
  partial: Map<unknown, { read: TypeRead; low: number; id: number }>;
  /** The lowest place on `path` the reading under way leaned on before it was finished. */
  low: number;
  /** Ids handed to readings. */
  ids: number;
}

/** A fresh {@link TypeReads}: nothing read yet. */
function typeReads(): TypeReads {
  return { done: new Map(), path: [], at: new Map(), partial: new Map(), low: Infinity, ids: 0 };
}

/** A schema met again while it is still being read: it adds nothing its first reading will not. */
const CYCLE: TypeRead = { types: undefined, listed: [] };

/**
 * The types a schema takes and the values it lists. Each schema object is read once per call
 * (`reads`), so references that fan out (a union of eight references to a union of eight,
 * sixteen deep) cost the schema's size, not the paths through it. One being read adds nothing
 * where a cycle leads back to it (its other branches are read anyway), and a reading made
 * meanwhile is kept only for that cycle, never for the call: read from elsewhere, the schema is
 * read again with the whole cycle. {@link TYPE_READ_DEPTH} bounds the nesting.
 */
function typesTaken(schema: unknown, root: unknown, depth: number, reads: TypeReads): TypeRead {
  if (schema === false) return { types: undefined, listed: [] };
  if (!isRecord(schema) || depth > TYPE_READ_DEPTH) return ANY_TYPE;
  const known = reads.done.get(schema);
  if (known) return known;
  const reading = reads.at.get(schema);
  if (reading !== undefined) {
    reads.low = Math.min(reads.low, reading);
    return CYCLE;
  }
  const partial = reads.partial.get(schema);
  if (partial && reads.path[partial.low]?.id === partial.id) {
    reads.low = Math.min(reads.low, partial.low);
    return partial.read;
  }
  const place = reads.path.length;
  const outerLow = reads.low;
  reads.low = Infinity;
  reads.path.push({ schema, id: reads.ids++ });
  reads.at.set(schema, place);
  let answer = readSchemaTypes(schema, root, depth, reads);
  reads.path.pop();
  reads.at.delete(schema);
  if (reads.low >= place) {
    // Final: the cycles through it are closed. One that only refers to itself constrains nothing.
    if (answer === CYCLE) answer = ANY_TYPE;
    reads.done.set(schema, answer);
  } else {
    const low = reads.path[reads.low] as { id: number };
    reads.partial.set(schema, { read: answer, low: reads.low, id: low.id });
  }
  reads.low = Math.min(outerLow, reads.low);
  return answer;
}

/** {@link typesTaken} of one schema object, its own keywords read. */
function readSchemaTypes(
  schema: Record<string, unknown>,
  root: unknown,
  depth: number,
  reads: TypeReads,
): TypeRead {
  const not = schema.not;
  if (not === true || (isRecord(not) && Object.keys(not).length === 0))
    return { types: undefined, listed: [] };
  let types: string[] = [];
  const listed: unknown[] = [];
  const narrow = (other: string[] | undefined) => {
    if (other === undefined || other.length === 0) return;
    if (types.length === 0) {
      types = other;
      return;
    }
    const both = types.filter(
      (t) =>
        other.includes(t) ||
        (t === "integer" && other.includes("number")) ||
        (t === "number" && other.includes("integer")),
    );
    if (both.length > 0) types = both;
  };
  // Whether every part read led back into a cycle: then this schema, a wrapper round those
  // references, adds nothing either (read as any value, it made the union round it any value).
  let onlyCycles: boolean | undefined;
  const read = (sub: unknown) => {
    const inner = typesTaken(sub, root, depth + 1, reads);
    onlyCycles = inner === CYCLE && onlyCycles !== false;
    // One at a time: spread into push, an enum of a few hundred thousand values overflows the stack.
    for (const value of inner.listed) listed.push(value);
    return inner.types;
  };
  if (typeof schema.type === "string") narrow([schema.type]);
  else if (Array.isArray(schema.type)) narrow(schema.type.filter((t): t is string => typeof t === "string"));
  const values = Object.hasOwn(schema, "const") ? [schema.const] : schema.enum;
  if (Array.isArray(values) && values.length > 0) {
    narrow([...new Set(values.map(valueType))]);
    for (const value of values) listed.push(value);
  }
  if (typeof schema.$ref === "string") narrow(read(localRef(root, schema.$ref)));
  if (Array.isArray(schema.allOf)) for (const part of schema.allOf) narrow(read(part));
  for (const union of [schema.anyOf, schema.oneOf]) {
    if (!Array.isArray(union) || union.length === 0) continue;
    const taken = union.map(read).filter((t) => t !== undefined);
    // A branch that takes any value makes the union take any value.
    if (taken.length > 0 && taken.every((t) => t.length > 0)) narrow([...new Set(taken.flat())]);
  }
  if (schema.nullable === true && types.length > 0 && !types.includes("null")) types = [...types, "null"];
  if (onlyCycles && types.length === 0 && listed.length === 0) return CYCLE;
  return { types, listed: [...new Set(listed)] };
}

function valueType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value === "object" ? "object" : typeof value;
}

/** A local JSON pointer (`#/$defs/Name`) read in the tool's schema; undefined for any other. */
function localRef(root: unknown, ref: string): unknown {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node = root;
  for (const raw of ref.slice(2).split("/")) {
    const token = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isRecord(node) || !Object.hasOwn(node, token)) return undefined;
    node = node[token];
  }
  return node;
}

/**
 * A Qwen3-Coder value without the line break the markup puts on each side of it (`\n`, or `\r\n`
 * from a model or server writing CRLF): the format's, not the value's.
 */
function unframed(text: string): string {
  return text.replace(/^\r?\n/, "").replace(/\r?\n$/, "");
}

/**
 * Reads one parameter's text the way its schema types it (text is a string unless typed
 * otherwise). `framed`: the markup puts the value on its own line, so one newline each side is
 * the format's, not the value's (Qwen3-Coder).
 */
function parameterValue(
  text: string,
  types: readonly string[],
  framed: boolean,
): { value: unknown; digits?: string | undefined } {
  const value = framed ? unframed(text) : text;
  if (types.includes("string") || (types.length > 0 && !types.some((t) => t !== "null" && t !== "string"))) {
    if (types.includes("null") && value.trim() === "null") return { value: null };
    return { value };
  }
  const parsed = tryParse(value.trim()) ?? (types.length > 0 ? repairParse(value.trim()) : undefined);
  if (!parsed) return { value };
  return { value: parsed.value, digits: rememberDigits(parsed.source, parsed.value) };
}

/**
 * The enum (or const) value a parameter's text spells, where the schema lists values: the string
 * written, or the number, boolean or null its text is (`2` for `[1, 2, "auto"]`, `1.10` for
 * `["1.10", 2]`). Undefined where it spells none of them.
 */
function listedValue(
  text: string,
  listed: readonly unknown[],
  framed: boolean,
): { value: unknown; digits?: string } | undefined {
  if (listed.length === 0) return undefined;
  const value = (framed ? unframed(text) : text).trim();
  if (listed.includes(value)) return { value };
  const parsed = tryParse(value);
  if (parsed && typeof parsed.value !== "object" && listed.includes(parsed.value))
    return { value: parsed.value };
  if (parsed?.value === null && listed.includes(null)) return { value: null };
  return undefined;
}

function setArg(args: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(args, key, dataField(value));
}

/** Takes a quoted name's quotes off. */
function unquote(name: string): string {
  return name.trim().replace(/^(["'])(.*)\1$/, "$2");
}

/** One argument of a markup call: its key, its text, and a `string="true|false"` flag if written. */
type Pair = [key: string, value: string, flag?: string];

/** Arguments written as key/value markup, each value typed by the flag or the tool's schema. */
function pairArguments(pairs: Iterable<Pair>, known: Known, name: string, framed = false): Found {
  const schema = known.schemas.get(name);
  // What each schema object types, read once for all of the call's parameters.
  const seen = typeReads();
  const args: Record<string, unknown> = {};
  for (const pair of pairs) {
    // By index, not destructured: never a polluted `Object.prototype.return` called.
    const rawKey = pair[0];
    const text = pair[1];
    const flag = pair[2];
    const key = unquote(rawKey);
    const { types, listed } =
      flag === "true" || flag === "false"
        ? { types: [flag === "true" ? "string" : "object"], listed: [] }
        : propertyType(schema, key, seen);
    const { value, digits } = listedValue(text, listed, framed) ?? parameterValue(text, types, framed);
    setArg(args, key, value);
    if (digits !== undefined) rememberDigitsAt(args, key, digits);
  }
  return { name, args, raw: exactJson(args) };
}

/**
 * True when the last value of key/value markup runs to the end of `body` with no closing tag
 * (`closer`), or a key opened there has no value: where `body` is also where the reply ends, that
 * value's end was never written (the turn was cut), so the call is not recovered — its text
 * could have gone on (`Chapter one, the begi`), as a JSON string cut short is never run.
 */
function lastValueOpen(body: string, opener: string, closer: string): boolean {
  const at = body.lastIndexOf(opener);
  return at >= 0 && body.indexOf(closer, at) < 0;
}

interface Block {
  start: number;
  end: number;
  call: Found;
  /** Still open where the text ended: JSON whose brackets never closed, or no `</function>`. */
  open: boolean;
}

// Names are bounded: an unbounded run would be read again from every `<function=` in junk.
const FUNCTION_OPEN = /<function=([^>\n]{1,256})>/g;
const FUNCTION_CLOSE = "</function>";
const FUNCTION_START = /<function=([^>\n]{1,256})>/y;
const PARAMETER_OPEN = /<parameter=([^>\n]{1,256})>/y;
const PARAMETER_CLOSE = "</parameter>";

/** Qwen3-Coder parameters read from a block's body: see {@link readParameters}. */
interface Parameters {
  pairs: Pair[];
  /** Index of the block's `</function>`, or -1 when the body ran to `limit`. */
  close: number;
  /** True when the last value met no closing tag (it ran to `</function>`, the next parameter or `limit`). */
  lastOpen: boolean;
  /** Where the body ends: its `</function>`, the next block's opener read as markup, or `limit`. */
  stop: number;
  /**
   * Set where the body can be read two ways (a value left open before a block, or holding it):
   * no call is read from it, nor from a block inside it.
   */
  unsure?: true;
}

/**
 * `(from) => text.indexOf(needle, from)` for `from` that never decreases, each search starting
 * where the last one stopped: a needle that is not there is looked for once, not from every
 * value of a long run of them.
 */
function finder(text: string, needle: string): (from: number) => number {
  let found = -2;
  return (from) => {
    if (found === -1 || found >= from) return found;
    found = text.indexOf(needle, from);
    return found;
  };
}

/**
 * Qwen3-Coder's `<parameter=key>value</parameter>` markup from `at` to `limit` (the next block),
 * read as markup is written: a value ends at the first `</parameter>` the markup goes on from —
 * another `<parameter=`, the block's `</function>` or its end — so a file whose text holds
 * `</parameter>` or `</function>` is read whole, never cut there with the rest dropped (or a
 * parameter after it lost). A value with no closing tag runs to the next `<parameter=` or
 * `</function>`. `undefined` when the body is not such markup or cannot be read one way only:
 * text outside every parameter, or a `</parameter>` followed by text that is no markup where no
 * later one ends the value. Linear: each value's closing tags are looked at once.
 */
function readParameters(whole: string, at: number, limit: number): Parameters | undefined {
  // Searches stop at `limit` (a slice is a view, not a copy): each block reads its own text only.
  const text = whole.slice(0, limit);
  const closeAfter = finder(text, PARAMETER_CLOSE);
  const parameterAfter = finder(text, "<parameter=");
  const functionCloseAfter = finder(text, FUNCTION_CLOSE);
  const functionOpenAfter = finder(text, "<function=");
  const pairs: Pair[] = [];
  let lastOpen = false;
  let noneAfter = false;
  for (let i = skipSpace(text, at); ; i = skipSpace(text, i)) {
    if (i >= limit) return { pairs, close: -1, lastOpen, stop: limit };
    if (text.startsWith(FUNCTION_CLOSE, i)) return { pairs, close: i, lastOpen, stop: i };
    // The next block, the one before it never closed: read where its opener is markup only.
    if (i > at && text.startsWith("<function=", i)) return { pairs, close: -1, lastOpen, stop: i };
    PARAMETER_OPEN.lastIndex = i;
    const open = PARAMETER_OPEN.exec(text);
    if (!open) return undefined;
    const valueAt = i + open[0].length;
    let end = -1;
    // Once a search found no closing tag the markup goes on from, none lies further on either.
    const first = closeAfter(valueAt);
    let close = noneAfter ? -1 : first;
    noneAfter = true;
    for (; close >= 0 && close < limit; close = text.indexOf(PARAMETER_CLOSE, close + 1)) {
      const k = skipSpace(text, close + PARAMETER_CLOSE.length);
      if (
        k >= limit ||
        text.startsWith("<parameter=", k) ||
        text.startsWith(FUNCTION_CLOSE, k) ||
        text.startsWith("<function=", k)
      ) {
        noneAfter = false;
        end = close;
        break;
      }
    }
    if (end >= 0) {
      pairs.push([open[1] as string, text.slice(valueAt, end)]);
      lastOpen = false;
      i = end + PARAMETER_CLOSE.length;
      continue;
    }
    // No closing tag: the value runs to the next parameter or the block's end.
    const nextParameter = parameterAfter(valueAt);
    const blockClose = functionCloseAfter(valueAt);
    const nextBlock = functionOpenAfter(valueAt);
    end = Math.min(
      nextParameter >= 0 ? nextParameter : limit,
      blockClose >= 0 ? blockClose : limit,
      nextBlock >= 0 ? nextBlock : limit,
    );
    // A closing tag inside it with other text after it: where the value ends cannot be told.
    if (first >= 0 && first < end) return undefined;
    pairs.push([open[1] as string, text.slice(valueAt, end)]);
    lastOpen = true;
    i = end;
  }
}

/**
 * The parameters of the Qwen3-Coder block whose body starts at `bodyAt`, `next` the next
 * `<function=` after it and `limit` the end of the text it may read. Read first up to `next`;
 * where that read fails, or its last value runs open into `next`, the opener at `next` may be
 * text of a value (a file about the format: `Use <function=name> to call`), and the body is read
 * on past it to its `</function>` or an opener the markup goes on to. A value left open up to a
 * block that reads, where reading on reads as well, can be either: that reading, `unsure`. Reading
 * on is charged to {@link scanBudget}; once that is spent the first read stands.
 */
function parametersOf(text: string, bodyAt: number, next: number, limit: number): Parameters | undefined {
  const read = readParameters(text, bodyAt, next);
  if (next >= limit || scanBudget <= 0) return read;
  if (read && !read.lastOpen) return read;
  scanBudget -= limit - bodyAt;
  const on = readParameters(text, bodyAt, limit);
  if (!read) return on;
  if (!on) return read;
  // A block that reads at `next`: the model may have left the value open before it.
  FUNCTION_START.lastIndex = next;
  const opener = FUNCTION_START.exec(text);
  const after = text.slice(0, limit).indexOf("<function=", next + 1);
  const block = opener && readParameters(text, next + opener[0].length, after >= 0 ? after : limit);
  return block && (block.pairs.length > 0 || block.close >= 0) ? { ...on, unsure: true } : on;
}

/**
 * `<function=name>…</function>` blocks: Qwen3-Coder's `<parameter=key>value</parameter>` markup
 * inside, or a JSON object (Llama 3.1's custom tool format, Functionary v3.1).
 */
function functionBlocks(text: string, known: Known, endsReply = true): Block[] {
  const blocks: Block[] = [];
  const opens = matches(text, FUNCTION_OPEN);
  /** Blocks whose last value ran open to the opener of the next (start → that opener). */
  const leadsTo = new Map<number, number>();
  /** Markup blocks that ended at a `</function>`. */
  const closed = new Set<number>();
  let from = 0;
  opens.forEach((open, n) => {
    // An opener inside the block before it (in a string argument) is that block's text.
    if (open.index < from) return;
    const name = unquote(open[1] as string);
    const bodyAt = open.index + open[0].length;
    const next = opens.slice(n + 1).find((o) => o.index >= bodyAt)?.index ?? text.length;
    const json = jsonArgumentsAt(text, bodyAt);
    if (json) {
      const after = skipSpace(text, json.end);
      const end = text.startsWith(FUNCTION_CLOSE, after) ? after + FUNCTION_CLOSE.length : json.end;
      blocks.push({ start: open.index, end, call: { name, ...json.found }, open: json.open });
      from = end;
      return;
    }
    const read = parametersOf(text, bodyAt, next, text.length);
    if (!read) return;
    const bodyEnd = read.close >= 0 ? read.close : read.stop;
    const end = read.close >= 0 ? read.close + FUNCTION_CLOSE.length : read.stop;
    if (Object.hasOwn(read, "unsure")) {
      from = end;
      return;
    }
    const unclosed = endsReply && bodyEnd === text.length;
    // Cut inside the last value (or its key): its end was never written.
    if (unclosed && read.lastOpen) return;
    // A `</parameter>` after the block's end, before the next block: the block ended at a
    // `</function>` written in a value's text, and what followed it would be dropped.
    // (Looked for up to the next block kept, below.)
    if (read.close >= 0) closed.add(open.index);
    const call = pairArguments(read.pairs, known, name, true);
    blocks.push({ start: open.index, end, call, open: unclosed });
    // A last value left open up to the next block's opener (or a block of no parameters that runs
    // into it) is read as ending there only if that block is one; where it is not, the opener was
    // text of a value and where the value ends is unknown.
    if (read.close < 0 && (read.lastOpen || read.pairs.length === 0) && end < text.length) {
      leadsTo.set(open.index, end);
    }
    from = end;
  });
  const kept = new Set<number>();
  let nextKept = text.length;
  for (let k = blocks.length - 1; k >= 0; k--) {
    const block = blocks[k] as Block;
    const to = leadsTo.get(block.start);
    if (to !== undefined && !kept.has(to)) continue;
    if (closed.has(block.start) && text.slice(0, nextKept).includes(PARAMETER_CLOSE, block.end)) continue;
    kept.add(block.start);
    nextKept = block.start;
  }
  return blocks.filter((block) => kept.has(block.start));
}

/**
 * Index just past the `</function>` of the Qwen3-Coder block that opens at `at` (read as
 * {@link functionBlocks} reads it, up to `limit`), or -1 when none opens there or it never closes.
 */
function functionEnd(text: string, at: number, limit: number): number {
  FUNCTION_START.lastIndex = at;
  const open = FUNCTION_START.exec(text);
  if (!open) return -1;
  const bodyAt = at + open[0].length;
  const next = text.slice(0, limit).indexOf("<function=", bodyAt);
  const read = parametersOf(text, bodyAt, next >= 0 ? next : limit, limit);
  return read && read.close >= 0 ? read.close + FUNCTION_CLOSE.length : -1;
}

/** The optional `｜DSML｜` tag prefix DeepSeek V3.2 writes its markup with. */
const DSML = "(?:[|｜]DSML[|｜])?";
const INVOKE = new RegExp(
  `<${DSML}invoke\\s+name\\s*=\\s*["']?([^"'>]{1,256})["']?\\s*>([\\s\\S]*?)(?:</${DSML}invoke>|(?=<${DSML}invoke\\b)|$)`,
  "g",
);
const INVOKE_PARAMETER = new RegExp(
  `<${DSML}parameter\\s+name\\s*=\\s*["']?([^"'>\\s]{1,256})["']?(?:\\s+string\\s*=\\s*["']?(true|false)["']?)?\\s*>`,
  "g",
);
const INVOKE_PARAMETER_CLOSE = new RegExp(`</${DSML}parameter>`, "g");

const INVOKE_PARAMETER_OPEN = new RegExp(`<${DSML}parameter\\s+name\\b`, "g");

/**
 * The parameters of an `<invoke>` body, each value ending at the first `</parameter>` the markup
 * goes on from — the next parameter's opening tag or the body's end — so a value whose text holds
 * `</parameter>` (or a parameter's opening tag) is read whole. `undefined` when a parameter has
 * no such end (cut, its tag left out, or a `</parameter>` followed by text no later tag ends):
 * running the call without it, or with its text cut, would not be what the model wrote. Linear:
 * each tag is looked at once.
 */
function invokeParameters(body: string): Pair[] | undefined {
  const opens = [...body.matchAll(INVOKE_PARAMETER)];
  const starts = new Set(opens.map((m) => m.index));
  const closes = [...body.matchAll(INVOKE_PARAMETER_CLOSE)];
  // Every opening tag is read as one, or as a value's text: none is left unread.
  if ((body.match(INVOKE_PARAMETER_OPEN) ?? []).length !== opens.length) return undefined;
  const pairs: Pair[] = [];
  let c = 0;
  for (let o = 0; o < opens.length; ) {
    const open = opens[o] as RegExpExecArray;
    const valueAt = open.index + open[0].length;
    while (c < closes.length && (closes[c] as RegExpExecArray).index < valueAt) c++;
    let end = -1;
    for (; c < closes.length; c++) {
      const close = closes[c] as RegExpExecArray;
      const next = skipSpace(body, close.index + close[0].length);
      if (next >= body.length || starts.has(next)) {
        end = close.index;
        break;
      }
    }
    if (end < 0) return undefined;
    pairs.push([open[1] as string, body.slice(valueAt, end), open[2]]);
    const after = (closes[c] as RegExpExecArray).index + (closes[c] as RegExpExecArray)[0].length;
    while (o < opens.length && (opens[o] as RegExpExecArray).index < after) o++;
  }
  return pairs;
}

/**
 * `<invoke name="x"><parameter name="k">v</parameter></invoke>`: the markup MiniMax-M2,
 * DeepSeek V3.2 (with `｜DSML｜` tags; `string="true"` marks a text value) and Claude-style
 * prompts write calls in.
 */
function invokeBlocks(text: string, known: Known): Block[] {
  const blocks: Block[] = [];
  for (const match of matches(text, INVOKE)) {
    const name = unquote(match[1] as string);
    const body = match[2] as string;
    // A parameter opened and never closed (the reply cut inside it, or its tag left out) would be
    // dropped and the call run without it: the block is not a call that can be read.
    const pairs = invokeParameters(body);
    if (!pairs) continue;
    const end = match.index + match[0].length;
    const open = end === text.length && !/invoke>$/.test(match[0]);
    blocks.push({ start: match.index, end, call: pairArguments(pairs, known, name), open });
  }
  return blocks;
}

// A value ends at the first `</arg_value>` the markup goes on from (the next `<arg_key>` or the
// body's end): one written in the value's text is the text's (group 3 marks a value so closed).
const GLM_PAIR =
  /<arg_key>([\s\S]*?)<\/arg_key>\s*<arg_value>([\s\S]*?)(?:(<\/arg_value>)(?=\s*(?:<arg_key>|$))|(?=<arg_key>)|$)/g;

/**
 * Index of the first `closer` after `from` in `text` that follows a `</arg_value>` and blank
 * space only, or -1. Linear: each `</arg_value>` is looked at once.
 */
function glmClose(text: string, from: number, closer: string): number {
  for (let at = text.indexOf("</arg_value>", from); at >= 0; at = text.indexOf("</arg_value>", at + 1)) {
    const next = skipSpace(text, at + "</arg_value>".length);
    if (text.startsWith(closer, next)) return next;
  }
  return -1;
}

/**
 * Where a GLM call whose wrapper never closed ends when text follows its last value: just past the
 * `</arg_value>` that closes that value, when it is the only one after the value's `<arg_value>`
 * and what follows it (a `<think>` block, prose) is more than blank space and end-of-turn tokens
 * and holds no `<arg_key>`. -1 otherwise: nothing follows (the usual reading), or two closers leave
 * where the value ends untold. Read so, the call is whole; read the other way (the value holding
 * the closer and running on), it never ended and no call would run.
 */
function glmTrailing(body: string): number {
  if (body.includes("<function=") || new RegExp(`<${DSML}invoke\\b`).test(body)) return -1;
  const value = body.lastIndexOf("<arg_value>");
  if (value < 0 || body.lastIndexOf("<arg_key>") > value) return -1;
  const close = body.indexOf("</arg_value>", value);
  if (close < 0 || body.indexOf("</arg_value>", close + 1) >= 0) return -1;
  const end = close + "</arg_value>".length;
  return blank(body.slice(end)) ? -1 : end;
}

/** GLM-4.5/4.6/4.7: `name` then `<arg_key>k</arg_key><arg_value>v</arg_value>` pairs. */
function glmCall(body: string, known: Known, endsReply: boolean): Found | undefined {
  const keyAt = body.indexOf("<arg_key>");
  const name = (keyAt < 0 ? body : body.slice(0, keyAt)).trim();
  if (!/^[^\s<>{}[\]"'`]+$/.test(name)) return undefined;
  if (endsReply && keyAt >= 0) {
    // A key with no value yet, or a value with no end, where the reply ends: cut off.
    const lastKey = body.lastIndexOf("<arg_key>");
    if (body.indexOf("<arg_value>", lastKey) < 0 || lastValueOpen(body, "<arg_value>", "</arg_value>"))
      return undefined;
  }
  const matched = keyAt < 0 ? [] : [...body.slice(keyAt).matchAll(GLM_PAIR)];
  // A value holding `</arg_value>` that no later closing tag ends: where it ends cannot be told.
  if (matched.some((m) => m[3] === undefined && (m[2] as string).includes("</arg_value>"))) return undefined;
  return pairArguments(
    matched.map((m): Pair => [m[1] as string, m[2] as string]),
    known,
    name,
  );
}

/** Index just past the `)` closing the `(` at `open`, skipping quoted text; -1 when it never closes. */
function closeParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '"' || c === "'") {
      // A string is read as its value will be (an apostrophe inside single quotes is text).
      const end = quotedEnd(text, i);
      if (end < 0) return -1;
      i = end - 1;
    } else if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      depth--;
      if (depth === 0) return c === ")" ? i + 1 : -1;
    }
  }
  return -1;
}

/** Splits `a=1, b="x, y", c=[1, 2]` at its top-level commas. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '"' || c === "'") {
      const end = quotedEnd(text, i);
      if (end < 0) break;
      i = end - 1;
    } else if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") depth--;
    else if (c === "," && depth === 0) {
      parts.push(text.slice(from, i));
      from = i + 1;
    }
  }
  parts.push(text.slice(from));
  return parts.filter((p) => p.trim() !== "");
}

/** One Python literal (string in either quotes, number, True/False/None, list, dict) as JSON. */
function pythonValue(text: string): { value: unknown; digits?: string | undefined } | undefined {
  const trimmed = text.trim();
  // A bare name or an expression is code, not a value the model means literally.
  if (!/^(?:["'[{\d.+-]|(?:True|False|None|true|false|null)$)/.test(trimmed)) return undefined;
  const number = pythonNumber(trimmed);
  if (number !== undefined) return number;
  const strict = readWritten(trimmed, tryParse);
  if (strict) return { value: strict.value, digits: strict.digits };
  const wrapped = readWritten(`{"v": ${trimmed}}`, repair);
  if (!wrapped || !isRecord(wrapped.value) || !Object.hasOwn(wrapped.value, "v")) return undefined;
  return { value: wrapped.value.v, digits: digitsAt(wrapped.value, "v") };
}

/**
 * A Python number literal JSON cannot read (`0x10`, `0o17`, `0b101`, `1_000`) as the number Python
 * reads it as, through the decimal digits it stands for (so one past what a double holds exactly is
 * recorded as such, as the same number written in decimal is); `undefined` for any other text.
 */
function pythonNumber(text: string): { value: unknown; digits?: string | undefined } | undefined {
  const decimal = pythonDecimal(text);
  if (decimal === undefined) return undefined;
  const read = readWritten(decimal.replace(/^\+/, ""), tryParse);
  return read ? { value: read.value, digits: read.digits } : undefined;
}

/**
 * Pythonic calls — `[get_weather(city="Paris", days=3), add(a=1)]` or one bare `name(k=v)` — as
 * Llama 3.2/4 and other small models write them (vLLM's `pythonic` format). Keyword arguments
 * only; anything else (a positional argument, an expression) is not read as a call.
 */
function pythonicCalls(body: string): Found[] | undefined {
  // End-of-turn tokens a server printing special tokens leaves after the calls (`<|eot_id|>`,
  // `<|im_end|>`, `</s>`, `<end_of_turn>` …): the list is the calls before them.
  const text = withoutEndTokens(body.trim()).trimEnd();
  const calls: Found[] = [];
  let i = 0;
  for (;;) {
    // Calls are apart by commas, whitespace and the brackets of their lists, and nothing else.
    while (i < text.length && /[\s,[\]]/.test(text[i] as string)) i++;
    if (i >= text.length) break;
    // More than MAX_MATCHES calls (junk, or a loop): not read, the list stays in the text. Stopping
    // there and answering the calls read took the rest out of the text unread, never run.
    if (calls.length >= MAX_MATCHES) return undefined;
    const head = /^([A-Za-z_][\w.-]*)\s*\(/.exec(text.slice(i));
    if (!head) return undefined;
    const open = i + head[0].length - 1;
    const close = closeParen(text, open);
    if (close < 0) return undefined;
    const args: Record<string, unknown> = {};
    for (const part of splitTopLevel(text.slice(open + 1, close - 1))) {
      const kv = /^\s*([A-Za-z_]\w*)\s*=([\s\S]*)$/.exec(part);
      const value = kv ? pythonValue(kv[2] as string) : undefined;
      if (!kv || !value) return undefined;
      setArg(args, kv[1] as string, value.value);
      if (value.digits !== undefined) rememberDigitsAt(args, kv[1] as string, value.digits);
    }
    calls.push({ name: head[1] as string, args, raw: exactJson(args) });
    i = close;
  }
  return calls.length > 0 ? calls : undefined;
}

/** A list of pythonic calls opening: `[name(`. */
const PYTHONIC_LIST = /^\[\s*[A-Za-z_][\w.-]*\s*\(/;

/**
 * Characters the current `recoverToolCalls` call may still walk looking for where pythonic calls in
 * a tag end ({@link pythonicEnd}). A real reply walks each call once; a junk reply of calls whose
 * strings never close (`<tool_call>[f(a='x ` repeated) would walk to its end from each, so about
 * twice its length, then the tags are read as before, up to the next one.
 */
let pythonicBudget = Number.POSITIVE_INFINITY;

/** Pythonic calls opening, one or a list: `name(`, `[name(`. */
const PYTHONIC_START = /^\s*(?:\[\s*)?[A-Za-z_][\w.-]*\s*\(/;

/**
 * Where the pythonic calls written from `at` end: just past the last `)` (and the list's `]`) of
 * calls apart by commas and blank space, each call's strings skipped as its value reads them, so a
 * `</tool_call>` or `<|python_tag|>` written in a string argument is that string's text; -1 when
 * the first call never closes. Within {@link pythonicBudget}, so linear.
 */
function pythonicEnd(text: string, at: number): number {
  let end = -1;
  let i = at;
  for (let seen = 0; seen < MAX_MATCHES && pythonicBudget > 0; seen++) {
    while (i < text.length && /[\s,[]/.test(text[i] as string)) i++;
    const head = /^[A-Za-z_][\w.-]*\s*\(/.exec(text.slice(i, i + 300));
    if (!head) break;
    const open = i + head[0].length - 1;
    const close = closeParen(text, open);
    pythonicBudget -= (close < 0 ? text.length : close) - i;
    if (close < 0) break;
    end = close;
    i = close;
  }
  if (end < 0) return -1;
  const after = skipSpace(text, end);
  return text[after] === "]" ? after + 1 : end;
}

/** The calls a tag's markup body holds, in whichever markup it is written; `open` when one was still open. */
function markupCalls(
  body: string,
  known: Known,
  endsReply: boolean,
): { calls: Found[]; open: boolean } | undefined {
  if (/^\s*(?:\[\s*)?[A-Za-z_][\w.-]*\s*\(/.test(body)) {
    const pythonic = pythonicCalls(body);
    if (pythonic) return { calls: pythonic, open: false };
  }
  const ofBlocks = (blocks: Block[]) =>
    blocks.length > 0 ? { calls: blocks.map((b) => b.call), open: blocks.some((b) => b.open) } : undefined;
  if (body.includes("<function=")) {
    const blocks = functionBlocks(body, known, endsReply);
    // Text after the last block's `</function>` inside the wrapper: that block ended early, at a
    // tag written in its value's text, and what the model wrote after it would be dropped.
    const last = blocks[blocks.length - 1];
    if (last && body.slice(last.end).trim() !== "") return undefined;
    return ofBlocks(blocks);
  }
  if (new RegExp(`<${DSML}invoke\\b`).test(body)) return ofBlocks(invokeBlocks(body, known));
  const glm = glmCall(body, known, endsReply);
  return glm ? { calls: [glm], open: false } : undefined;
}

/**
 * Tags a call is wrapped in: Hermes/Qwen `<tool_call>`, Granite `<|tool_call|>`, LM Studio's
 * `[TOOL_REQUEST]`, Llama 3 `<|python_tag|>`, Phi-4/FireFunction `functools[…]`, the
 * `<function_call>`/`<functioncall>` of function-calling fine-tunes, MiniMax-M2
 * `<minimax:tool_call>`, and `<function_calls>` (DeepSeek V3.2 spells it `<｜DSML｜function_calls>`).
 */
const OPEN_TAG = new RegExp(
  [
    "<tool_calls?>",
    "<\\|tool_calls?\\|>",
    "<function_?calls?>",
    "<tools>",
    "<minimax:tool_call>",
    `<${DSML}function_calls>`,
    "\\[TOOL_REQUEST\\]",
    "<\\|python_tag\\|>",
    "functools(?=\\s*\\[)",
  ].join("|"),
  "g",
);
const CLOSE_TAG = new RegExp(
  `^\\s*(?:</tool_calls?>|<\\|/tool_calls?\\|>|</function_?calls?>|</tools>|</minimax:tool_call>|</${DSML}function_calls>|\\[END_TOOL_REQUEST\\]|<\\|(?:eom_id|eot_id|end_of_text|im_end)\\|>)`,
);

/** The end of a markup body whose last call closed itself: `</function>`, `</invoke>`, a pythonic `)`. */
const CALL_ENDED = new RegExp(`(?:</function>|</${DSML}invoke>|\\)\\s*\\]?)$`);

/** The tag that closes a wrapper: `</x>` for `<x>`, `[END_TOOL_REQUEST]`; none for `<|x|>` tokens. */
function closerOf(open: string): string | undefined {
  if (open === "[TOOL_REQUEST]") return "[END_TOOL_REQUEST]";
  if (open.startsWith("<|") || !open.startsWith("<")) return undefined;
  return `</${open.slice(1)}`;
}

/** Where a needle occurs in a text, in order: found once, then searched by {@link nextAt}. */
type Occurrences = readonly number[];

function occurrences(text: string, needle: string): Occurrences {
  const found: number[] = [];
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) found.push(at);
  return found;
}

/** The first of `list` at or after `from`, or -1 (a binary search). */
function nextAt(list: Occurrences, from: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((list[mid] as number) < from) lo = mid + 1;
    else hi = mid;
  }
  return lo < list.length ? (list[lo] as number) : -1;
}

/** The tags a markup value is made of, each found once per reply ({@link valueHolder}). */
interface ValueTags {
  parameter: Occurrences;
  parameterClose: Occurrences;
  argKey: Occurrences;
  argValue: Occurrences;
  argValueClose: Occurrences;
}

function valueTags(text: string): ValueTags {
  return {
    parameter: occurrences(text, "<parameter"),
    parameterClose: occurrences(text, PARAMETER_CLOSE),
    argKey: occurrences(text, "<arg_key>"),
    argValue: occurrences(text, "<arg_value>"),
    argValueClose: occurrences(text, "</arg_value>"),
  };
}

/**
 * For positions that never decrease, from `from` on: the end of the markup value (`<parameter=k>`,
 * `<parameter name="k">`, GLM's `<arg_value>`) holding that position — opened before it, its
 * closer after it, and no other key or value opening between the two, so the value plainly holds
 * what lies between — or -1. The walk goes on from where it stopped, each step a binary search.
 */
function valueHolder(tags: ValueTags, from: number): (at: number) => number {
  let i = from;
  return (at) => {
    for (;;) {
      const p = nextAt(tags.parameter, i);
      const a = nextAt(tags.argValue, i);
      const open = p < 0 ? a : a < 0 ? p : Math.min(p, a);
      if (open < 0 || open >= at) return -1;
      const glm = open === a;
      const inner = open + (glm ? "<arg_value>" : "<parameter").length;
      const closer = glm ? "</arg_value>" : PARAMETER_CLOSE;
      const close = nextAt(glm ? tags.argValueClose : tags.parameterClose, inner);
      if (close < 0) return -1;
      const inside = [nextAt(tags.parameter, inner), nextAt(tags.argValue, inner), nextAt(tags.argKey, open)];
      const clean = inside.every((other) => other < 0 || other > close);
      if (close > at) return clean ? close + closer.length : -1;
      i = close + closer.length;
    }
  };
}

function tagSpans(text: string, known: Known): Span[] {
  const spans: Span[] = [];
  const opens = matches(text, OPEN_TAG);
  const tags = valueTags(text);
  let from = 0;
  opens.forEach((open, n) => {
    const start = open.index;
    if (start < from) return;
    const bodyAt = skipSpace(text, start + open[0].length);
    // Pythonic calls end at their own `)`: a tag written in one's string argument is its text.
    const pythonic = PYTHONIC_START.test(text.slice(bodyAt, bodyAt + 300)) ? pythonicEnd(text, bodyAt) : -1;
    const bodyEnd = Math.max(bodyAt, pythonic);
    // A wrapper's opener written inside a markup value (`<parameter=text>put <tool_call> in
    // </parameter>`) is that value's text, not the next block.
    const held = valueHolder(tags, bodyEnd);
    let nextOpen = text.length;
    for (let k = n + 1; k < opens.length; k++) {
      const at = (opens[k] as RegExpExecArray).index;
      if (at >= bodyEnd && held(at) < 0) {
        nextOpen = at;
        break;
      }
    }
    let calls: Found[] | undefined;
    let end: number;
    let opening: Opening | undefined;
    // A list of pythonic calls (`<tool_call>[ls(path='x')]`, `<|python_tag|>[ls(…)]`) is markup, not JSON.
    if (
      text[bodyAt] === "{" ||
      (text[bodyAt] === "[" && !PYTHONIC_LIST.test(text.slice(bodyAt, bodyAt + 300)))
    ) {
      const json = jsonCallsAt(text, bodyAt);
      calls = json?.calls;
      end = json ? json.end : bodyAt;
      opening = json && openOf(json);
    } else {
      const closer = closerOf(open[0]);
      let close = closer === undefined ? -1 : text.indexOf(closer, bodyEnd);
      // So is its closing tag (`<parameter name="text">put </minimax:tool_call> in</parameter>`).
      const closeHeld = valueHolder(tags, bodyEnd);
      for (let past = close < 0 ? -1 : closeHeld(close); past >= 0 && close >= 0 && close < nextOpen; ) {
        close = text.indexOf(closer as string, past);
        past = close < 0 ? -1 : closeHeld(close);
      }
      // Qwen3-Coder markup closes its wrapper after the block's own `</function>`, read as the block
      // reads its values: a closing tag before that is written in a value's text (a file about it).
      if (close >= 0 && closer !== undefined) {
        const block = functionEnd(text, bodyAt, nextOpen);
        if (block > close) close = text.indexOf(closer, block);
        else if (lastValueOpen(text.slice(bodyAt, close), "<arg_value>", "</arg_value>")) {
          // GLM's last value left open where the wrapper closes, and its own `</arg_value>` right
          // before a later closing tag: the first closing tag was written in the value's text.
          const later = glmClose(text.slice(0, nextOpen), close, closer);
          if (later > close) close = later;
        }
      }
      end = close >= 0 && close < nextOpen ? close : nextOpen;
      // The end-of-turn tokens a reply ends with are not the body's (`…</arg_value><|im_end|>`
      // read as the last value's text left GLM's call with no end).
      let body = end === text.length ? withoutEndTokens(text.slice(bodyAt, end)) : text.slice(bodyAt, end);
      // A reply cut inside the wrapper's closing tag (`</function></tool_ca`): the calls end before
      // the piece of tag, which goes with the span.
      if (end === text.length) {
        const kept = withoutCloserPiece(body);
        if (kept !== body && CALL_ENDED.test(withoutEndTokens(kept).trimEnd().slice(-64))) body = kept;
      }
      // GLM's wrapper never closed, and text follows its last `</arg_value>` (`<think>…`, prose):
      // the call ends there, and the text after it is the reply's.
      let trailing = false;
      if (!(close >= 0 && close < nextOpen)) {
        const cut = glmTrailing(body);
        if (cut >= 0) {
          trailing = end === text.length;
          body = body.slice(0, cut);
          end = bodyAt + cut;
        }
      }
      const markup = markupCalls(body, known, end === text.length);
      calls = markup?.calls;
      // A `</parameter>` after the wrapper, before the next: the wrapper closed at a tag written in
      // a value's text (`c</function></tool_call>…`), and what followed would be dropped.
      if (body.includes("<function=") && text.slice(0, nextOpen).includes(PARAMETER_CLOSE, end))
        calls = undefined;
      // A body that runs to the end of the reply never met its closing tag: open, unless its last
      // call met its own end (`</function>`, `</invoke>`, a pythonic call's `)`). Then only the
      // wrapper's closing tag is missing, which is optional, as after a JSON call.
      const ended = end === text.length && CALL_ENDED.test(withoutEndTokens(body).trimEnd().slice(-64));
      // Where the reply ends after that text, the value may as well have held it and not ended
      // (`Use </arg_value> to close one, like th`): a reply cut at the ceiling does not run it.
      if (markup && (markup.open || trailing || (end === text.length && !ended))) opening = openFrom(start);
    }
    if (!calls) return;
    const tail = CLOSE_TAG.exec(text.slice(end));
    if (tail) end += tail[0].length;
    spans.push({ start, end, calls, ...(opening ? { open: opening } : {}) });
    from = end;
  });
  return spans;
}

/** `<function=…>` and `<invoke name=…>` blocks written without a wrapping tag. */
function bareBlockSpans(text: string, known: Known): Span[] {
  return [...functionBlocks(text, known), ...invokeBlocks(text, known)].map((b) => ({
    start: b.start,
    end: b.end,
    calls: [b.call],
    ...(b.open ? { open: openFrom(b.start) } : {}),
  }));
}

/** Mistral's `[TOOL_CALLS] [{…}]` and its newer `[TOOL_CALLS]name[ARGS]{…}` spelling. */
function mistralSpans(text: string): Span[] {
  const spans: Span[] = [];
  const MARK = "[TOOL_CALLS]";
  let from = 0;
  for (let seen = 0; seen < MAX_MATCHES; seen++) {
    const start = text.indexOf(MARK, from);
    if (start < 0) break;
    const at = skipSpace(text, start + MARK.length);
    let span: Span | undefined;
    if (text[at] === "[" || text[at] === "{") {
      const json = jsonCallsAt(text, at);
      if (json)
        span = { start, end: json.end, calls: json.calls, ...(openOf(json) ? { open: openOf(json) } : {}) };
    } else {
      const named = /^([^\s[\]{]+)\s*(?:\[CALL_ID\][^[]*)?\[ARGS\]/.exec(text.slice(at));
      const json = named ? jsonArgumentsAt(text, at + named[0].length) : undefined;
      if (named && json)
        span = {
          start,
          end: json.end,
          calls: [{ name: named[1] as string, ...json.found }],
          ...(json.open ? { open: openFrom(start) } : {}),
        };
    }
    if (span) spans.push(span);
    from = span ? span.end : start + MARK.length;
  }
  return spans;
}

/** The string quotes Gemma writes arguments with: Gemma 4's `<|"|>` token, FunctionGemma's `<escape>`. */
const GEMMA_QUOTES = ['<|"|>', "<escape>"];
const GEMMA_CLOSE = /^\s*(?:<tool_call\|>|<end_function_call>)/;

/** What opens a Gemma call: written outside a string inside arguments, the arguments never closed. */
const GEMMA_OPENERS = ["<|tool_call>", "<start_function_call>"];
/** An opener, then `call:name` before its `{` (`|` is the one pattern character the openers hold). */
const GEMMA_CALL = new RegExp(
  `(?:${GEMMA_OPENERS.map((opener) => opener.replaceAll("|", "\\|")).join("|")})\\s*call:\\s*([A-Za-z_][\\w.-]*)\\s*(?=\\{)`,
  "g",
);

/**
 * Gemma's argument object from the `{` at `open` as JSON text: its quoted strings re-quoted,
 * its bare keys left for the almost-JSON reader. Undefined when it never closes — at the end of
 * the text, or where another call opens outside its strings (a call's arguments never hold an
 * opener but inside a string, so a looping reply of openers is walked once, not once per opener).
 * Charged to {@link scanBudget}, as every scan for where JSON closes is.
 */
function gemmaArguments(text: string, open: number): { json: string; end: number } | undefined {
  if (scanBudget <= 0) return undefined;
  const read = walkGemmaArguments(text, open);
  scanBudget -= read.reached - open;
  return read.json === undefined ? undefined : { json: read.json, end: read.reached };
}

/** The walk under {@link gemmaArguments}: the JSON where the object closed, and how far it read. */
function walkGemmaArguments(text: string, open: number): { json?: string; reached: number } {
  let depth = 0;
  let out = "";
  let i = open;
  while (i < text.length) {
    const quote = GEMMA_QUOTES.find((q) => text.startsWith(q, i));
    if (quote) {
      const close = text.indexOf(quote, i + quote.length);
      if (close < 0) return { reached: text.length };
      out += JSON.stringify(text.slice(i + quote.length, close));
      i = close + quote.length;
      continue;
    }
    const c = text[i] as string;
    if (c === '"') {
      const string = /^"(?:[^"\\]|\\.)*"/.exec(text.slice(i));
      if (!string) return { reached: text.length };
      out += string[0];
      i += string[0].length;
      continue;
    }
    if (c === "<" && i > open && GEMMA_OPENERS.some((opener) => text.startsWith(opener, i)))
      return { reached: i };
    if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") depth--;
    out += c;
    i++;
    if (depth === 0) return { json: out, reached: i };
  }
  return { reached: i };
}

/**
 * Gemma 4's `<|tool_call>call:name{key:<|"|>text<|"|>,n:3}<tool_call|>` and FunctionGemma's
 * `<start_function_call>call:name{key:<escape>text<escape>}<end_function_call>`.
 */
function gemmaSpans(text: string): Span[] {
  const spans: Span[] = [];
  for (const match of matches(text, GEMMA_CALL)) {
    const body = gemmaArguments(text, match.index + match[0].length);
    const parsed = body ? readWritten(body.json, strictOrRepaired) : undefined;
    if (!body || !parsed || !isRecord(parsed.value)) continue;
    const tail = GEMMA_CLOSE.exec(text.slice(body.end));
    spans.push({
      start: match.index,
      end: body.end + (tail ? tail[0].length : 0),
      calls: [{ name: match[1] as string, args: parsed.value, raw: exactJson(parsed.value) }],
    });
  }
  return spans;
}

/** A DeepSeek special token, in its full-width spelling or the ASCII one some servers print. */
function deepseekToken(word: string): string {
  return `<[|｜]${word.replace(/_/g, "[▁_]")}[|｜]>`;
}
const DS_CALL_BEGIN = new RegExp(deepseekToken("tool_call_begin"), "g");
const DS_CALL_END = new RegExp(deepseekToken("tool_call_end"));
const DS_SEP = new RegExp(deepseekToken("tool_sep"));
const DS_BEFORE = new RegExp(`${deepseekToken("tool_calls_begin")}$`);
const DS_AFTER = new RegExp(
  `^\\s*${deepseekToken("tool_calls_end")}(?:\\s*${deepseekToken("end_of_sentence")})?`,
);

/**
 * DeepSeek's token markup: V3/R1 `<｜tool▁call▁begin｜>function<｜tool▁sep｜>name` then a ```json
 * fence, V3.1 `<｜tool▁call▁begin｜>name<｜tool▁sep｜>{…}`, each closed by `<｜tool▁call▁end｜>`
 * inside `<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>`.
 */
function deepseekSpans(text: string): Span[] {
  const spans: Span[] = [];
  const begins = matches(text, DS_CALL_BEGIN);
  let from = 0;
  begins.forEach((begin, n) => {
    // A marker inside the call before it (in a string argument) is that call's text.
    if (begin.index < from) return;
    const bodyAt = begin.index + begin[0].length;
    let limit = begins[n + 1]?.index ?? text.length;
    const region = text.slice(bodyAt, limit);
    const sep = DS_SEP.exec(region);
    if (!sep) return;
    const left = region.slice(0, sep.index).trim();
    let name = left;
    let argsAt = bodyAt + sep.index + sep[0].length;
    if (left === "function" || left === "") {
      const named = /^\s*([^\s`{<]+)\s*(?:```[\w-]*\s*)?/.exec(text.slice(argsAt, limit));
      if (!named) return;
      name = named[1] as string;
      argsAt += named[0].length;
    }
    if (!name || /\s/.test(name)) return;
    let found: { args: Record<string, unknown>; raw: string } = { args: {}, raw: "{}" };
    let end = argsAt;
    const json = jsonArgumentsAt(text, argsAt);
    // Open: its JSON never closed, or the reply ends right after the name, before any arguments.
    const open = json ? json.open : limit === text.length && text.slice(argsAt).trim() === "";
    if (json) {
      found = json.found;
      end = json.end;
      // Arguments that ran past the next marker held it in a string.
      if (end > limit) limit = text.length;
      const fence = /^\s*```/.exec(text.slice(end));
      if (fence) end += fence[0].length;
    } else if (!/^\s*(?:$|<)/.test(text.slice(argsAt, limit))) {
      return;
    }
    const close = DS_CALL_END.exec(text.slice(end, limit));
    if (close && text.slice(end, end + close.index).trim() === "") end += close.index + close[0].length;
    const start = openerBefore(text, begin.index, DS_BEFORE);
    const after = DS_AFTER.exec(text.slice(end));
    if (after) end += after[0].length;
    spans.push({ start, end, calls: [{ name, ...found }], ...(open ? { open: openFrom(start) } : {}) });
    from = end;
  });
  return spans;
}

/**
 * Where a call at `start` begins once the section opener written before it (`opener`, anchored at
 * its end) is counted in: at that opener when only blank space stands between them, however much
 * (a model may put any number of blank lines there), else `start`. Linear: the space is stepped
 * over once and the opener looked for in the few characters before it.
 */
function openerBefore(text: string, start: number, opener: RegExp): number {
  let at = start;
  while (at > 0 && /\s/.test(text[at - 1] as string)) at--;
  const lead = Math.max(0, at - 48);
  const found = opener.exec(text.slice(lead, at));
  return found ? lead + found.index : start;
}

// One bounded run for the name, trimmed after: `\s*` on both sides of a lazy run was cubic on spaces.
const KIMI_CALL = /<\|tool_call_begin\|>([^<]{0,256}?)<\|tool_call_argument_begin\|>/g;
const KIMI_BEFORE = /<\|tool_calls_section_begin\|>$/;
const KIMI_AFTER = /^\s*<\|tool_call_end\|>(?:\s*<\|tool_calls_section_end\|>)?/;

/** Kimi K2's `<|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>{…}<|tool_call_end|>`. */
function kimiSpans(text: string): Span[] {
  const spans: Span[] = [];
  for (const match of matches(text, KIMI_CALL)) {
    const id = /^(?:functions\.)?(.+?)(?::\d+)?$/.exec((match[1] as string).trim());
    const json = jsonArgumentsAt(text, match.index + match[0].length);
    if (!id || !json) continue;
    const start = openerBefore(text, match.index, KIMI_BEFORE);
    let end = json.end;
    const after = KIMI_AFTER.exec(text.slice(end));
    if (after) end += after[0].length;
    else {
      const sectionEnd = /^\s*<\|tool_calls_section_end\|>/.exec(text.slice(end));
      if (sectionEnd) end += sectionEnd[0].length;
    }
    spans.push({
      start,
      end,
      calls: [{ name: id[1] as string, ...json.found }],
      ...(json.open ? { open: openFrom(start) } : {}),
    });
  }
  return spans;
}

/** The tool whose parameters alone account for every key given, when exactly one does. */
function inferTool(args: Record<string, unknown>, known: Known): string | undefined {
  const keys = Object.keys(args);
  let match: string | undefined;
  for (const name of known.schemas.keys()) {
    const schema = known.schemas.get(name) as Record<string, unknown>;
    const props = isRecord(schema.properties) ? schema.properties : {};
    const required = Array.isArray(schema.required) ? schema.required : [];
    const fits =
      keys.every((k) => Object.hasOwn(props, k)) && required.every((k) => keys.includes(k as string));
    if (!fits) continue;
    if (match !== undefined) return undefined;
    match = name;
  }
  return match;
}

/** gpt-oss Harmony tokens served raw: `<|channel|>commentary to=functions.x …<|message|>{…}<|call|>`. */
/** Skips back over at most 64 characters of blank space before `at`. */
function spaceBefore(text: string, at: number): number {
  let i = at;
  while (i > 0 && at - i < 64 && /\s/.test(text[i - 1] as string)) i--;
  return i;
}

/**
 * What a Harmony header writes before its `<|channel|>`: `<|start|>assistant` and a
 * `to=recipient`, both optional. Read backwards from the channel token, so junk of many `to=`
 * costs nothing until a channel token is found.
 */
function harmonyLead(text: string, at: number): { start: number; to: string } {
  let start = at;
  let to = "";
  const end = spaceBefore(text, at);
  const from = text.lastIndexOf("to=", end - 1);
  if (from >= 0 && end - from <= 259 && end > from + 3 && !/[\s<]/.test(text.slice(from + 3, end))) {
    to = text.slice(from, end);
    start = from;
  }
  const lead = spaceBefore(text, start);
  if (text.startsWith(HARMONY_START, lead - HARMONY_START.length)) start = lead - HARMONY_START.length;
  return { start, to };
}

const HARMONY_START = "<|start|>assistant";
const HARMONY_HEADER = /<\|channel\|>commentary([^<]{0,256}?)(?:<\|constrain\|>[^<]{0,64})?<\|message\|>/g;
/**
 * gpt-oss's header of its answer, the final channel's: `<|channel|>final<|message|>`, with the
 * `<|start|>assistant` a message after another opens with. Markup, never the answer's text.
 */
const HARMONY_FINAL =
  /(?:<\|start\|>assistant[^\S\n]*)?<\|channel\|>final\b[^<]{0,64}(?:<\|constrain\|>[^<]{0,64})?<\|message\|>/y;
/** A Harmony call's end, and the final channel's header when the answer follows it in the reply. */
const HARMONY_TAIL =
  /^\s*<\|(?:call|end)\|>(?:\s*(?:<\|start\|>assistant[^\S\n]*)?<\|channel\|>final\b[^<]{0,64}(?:<\|constrain\|>[^<]{0,64})?<\|message\|>)?/;

function harmonySpans(text: string, known: Known): Span[] {
  const spans: Span[] = [];
  const headers = matches(text, HARMONY_HEADER);
  // Commentary messages with no recipient and no call: a preamble each, if a call comes next.
  const preambles: Array<{ start: number; message: number; end: number }> = [];
  headers.forEach((match, i) => {
    const message = match.index + match[0].length;
    const json = jsonArgumentsAt(text, message);
    const lead = harmonyLead(text, match.index);
    const recipient = /to=(?:functions\.)?([^\s<]+)/.exec(`${lead.to} ${match[1] ?? ""}`);
    const name =
      json && (recipient ? harmonyName(recipient[1] as string, known) : inferTool(json.found.args, known));
    if (!json || name === undefined) {
      if (!recipient) preambleAt(text, lead.start, message, headers[i + 1]?.index ?? text.length, preambles);
      return;
    }
    const tail = HARMONY_TAIL.exec(text.slice(json.end, json.end + 400));
    spans.push({
      start: lead.start,
      end: json.end + (tail ? tail[0].length : 0),
      calls: [{ name, ...json.found }],
      ...(json.open ? { open: openFrom(lead.start) } : {}),
    });
  });
  return withPreambles(
    spans,
    preambles.map((p) => ({ start: p.start, header: p.message, end: p.end, next: skipSpace(text, p.end) })),
    known,
  );
}

/**
 * A gpt-oss preamble's place, when the commentary message whose header runs from `start` to
 * `message` holds text and no Harmony token up to its `<|end|>` (looked for before `limit`, the
 * next header: each stretch is read once).
 */
function preambleAt(
  text: string,
  start: number,
  message: number,
  limit: number,
  found: Array<{ start: number; message: number; end: number }>,
): void {
  const body = text.slice(message, limit);
  const end = body.indexOf("<|end|>");
  if (end <= 0 || body.slice(0, end).includes("<|") || body.slice(0, end).trim() === "") return;
  found.push({ start, message, end: message + end + "<|end|>".length });
}

/**
 * `calls` with the markup of the gpt-oss preambles written just before one of them: a message on
 * the commentary channel with no recipient, words to the user before the call (Harmony's
 * "preamble", shown to the user, unlike the analysis channel's reasoning). Its header
 * (`start`…`header`) and the end token before the call (`header`'s message ends at `end`) are
 * markup spans with no call; its words stay in the text. Only before a call to a tool in `tools`
 * (`next`: where the call after the preamble must start), so with no call recovered the reply's
 * text stays as written.
 */
function withPreambles(
  calls: Span[],
  preambles: ReadonlyArray<{ start: number; header: number; end: number; next: number }>,
  known: Known,
): Span[] {
  if (preambles.length === 0) return calls;
  const starts = new Set(
    calls
      .filter((span) => span.calls.every((call) => known.names.has(knownName(call.name, known))))
      .map((s) => s.start),
  );
  const markup = preambles
    .filter((p) => starts.has(p.next))
    .flatMap((p): Span[] => [
      { start: p.start, end: p.header, calls: [] },
      ...(p.end > p.header ? [{ start: p.end - "<|end|>".length, end: p.end, calls: [] }] : []),
    ]);
  return markup.length === 0 ? calls : [...calls, ...markup].sort((a, b) => a.start - b.start);
}

/**
 * Harmony with its special tokens stripped (a server decoding with `skip_special_tokens`):
 * `commentary to=functions.name json{…}`, or only `to=functions.name` before the arguments.
 */
const HARMONY_PLAIN =
  /(?:assistant\s*)?(?:commentary\s*)?\bto=functions\.([\w.-]+)(?:\s*(?:<\|channel\|>\s*)?commentary)?\s*(?:<\|constrain\|>\s*)?(?:json\b)?\s*(?:<\|message\|>)?/g;

function plainHarmonySpans(text: string, known: Known): Span[] {
  const spans: Span[] = [];
  const preambles: Array<{ start: number; header: number; end: number; next: number }> = [];
  let from = 0;
  for (const match of matches(text, HARMONY_PLAIN)) {
    const json = jsonArgumentsAt(text, match.index + match[0].length);
    if (!json) continue;
    const tail = /^\s*(?:<\|(?:call|end)\|>|\bcall\b)?/.exec(text.slice(json.end));
    // A preamble before the call, stripped of its tokens: `assistantcommentary` then its words
    // (`commentary` alone where the reply opens with it), from the last call on.
    const before = text.slice(from, match.index);
    const glued = before.lastIndexOf("assistantcommentary");
    const header =
      glued >= 0
        ? { start: from + glued, end: from + glued + "assistantcommentary".length }
        : from === 0 && before.trimStart().startsWith("commentary")
          ? { start: skipSpace(text, 0), end: skipSpace(text, 0) + "commentary".length }
          : undefined;
    if (header && text.slice(header.end, match.index).trim() !== "")
      preambles.push({ start: header.start, header: header.end, end: header.end, next: match.index });
    from = json.end;
    spans.push({
      start: match.index,
      end: json.end + (tail ? tail[0].length : 0),
      calls: [{ name: harmonyName(match[1] as string, known), ...json.found }],
      ...(json.open ? { open: openFrom(match.index) } : {}),
    });
  }
  return withPreambles(spans, preambles, known);
}

/**
 * Functionary: v3 `>>>name\n{…}` (the first call may come without `>>>`, `>>>all\n` opening plain
 * text), and v2 `<|recipient|>name\n<|content|>{…}`.
 */
function functionarySpans(text: string, known: Known): Span[] {
  const calls: Span[] = [];
  const markers: Span[] = [];
  const HEADER =
    /(?:^\s*|>>>\s*|(?:<\|from\|>\s*assistant\s*)?<\|recipient\|>\s*)([\w.-]+)[^\S\n]*(\n?)(?:\s*<\|content\|>)?/g;
  for (const match of matches(text, HEADER)) {
    const name = match[1] as string;
    const marked = match[0].includes(">>>") || match[0].includes("<|recipient|>");
    if (name === "all") {
      if (marked) markers.push({ start: match.index, end: match.index + match[0].length, calls: [] });
      continue;
    }
    // Unmarked, only the reply's first line naming a tool, with the arguments on the next.
    if (!marked && (!known.names.has(name) || match[2] !== "\n")) continue;
    const json = jsonArgumentsAt(text, match.index + match[0].length);
    if (!json) continue;
    const tail = /^\s*<\|stop\|>/.exec(text.slice(json.end));
    calls.push({
      start: match.index,
      end: json.end + (tail ? tail[0].length : 0),
      calls: [{ name, ...json.found }],
      ...(json.open ? { open: openFrom(match.index) } : {}),
    });
  }
  const recovered = calls.filter((s) => s.calls.every((c) => known.names.has(c.name)));
  if (recovered.length === 0) return calls;
  // The `>>>all` markers go with the calls: with a cut reply, only if a closed call is recovered.
  const closed = recovered.some((s) => !openOf(s));
  return [...calls, ...markers.map((m) => (closed ? m : { ...m, open: openFrom(m.start) }))];
}

/**
 * End-of-turn tokens a server may leave after a reply: Llama 3 (`<|eot_id|>`, `<|eom_id|>`) and 4
 * (`<|eot|>`, `<|eom|>`), ChatML, Phi, gpt-oss, Mistral, Gemma (`<end_of_turn>`, `<eos>`), DeepSeek,
 * GLM (`<|observation|>`, after its calls), Command R. Matches one token whole.
 */
const END_TOKENS =
  /^(?:<\|(?:eot_id|eom_id|eot|eom|im_end|end|endoftext|end_of_text|return|observation|END_OF_TURN_TOKEN)\|>|<\/s>|<end_of_turn>|<eos>|<[|｜]end[▁_]of[▁_]sentence[|｜]>)$/;

/**
 * A reply that is nothing but a call, a list of calls, or several calls one after another (Llama
 * 3.x writes `{…}; {…}`) in JSON — an end-of-turn token after them allowed.
 */
function wholeReplySpan(text: string): Span | undefined {
  const trimmed = withoutEndTokens(text.trim());
  if (!/^[{[]/.test(trimmed)) return undefined;
  const strict = tryParse(trimmed);
  // The reply is the calls only as a whole: one of them still open leaves none of it recovered.
  let open = !strict && isUnterminated(trimmed);
  const parsed = strict
    ? readWritten(trimmed, () => ({ ...strict, whole: true }))
    : readWritten(trimmed, repairLeading);
  let calls = parsed?.whole ? callsIn(parsed.value) : undefined;
  if (!calls && parsed && !parsed.whole) {
    const sequence = jsonCallsAt(trimmed, 0);
    if (sequence && trimmed.slice(sequence.end).trim() === "") {
      calls = sequence.calls;
      open ||= openOf(sequence) !== undefined;
    }
  }
  return calls ? { start: 0, end: text.length, calls, ...(open ? { open: openFrom(0) } : {}) } : undefined;
}

/** A reply that is nothing but pythonic calls: `[name(k=v), …]`. */
function pythonicSpan(text: string): Span | undefined {
  const calls = /^\s*(?:\[\s*)?[A-Za-z_][\w.-]*\s*\(/.test(text) ? pythonicCalls(text) : undefined;
  return calls ? { start: 0, end: text.length, calls } : undefined;
}

/** The one fenced block of a reply, when it holds a JSON call (or a `tool_calls` list) or a Python call. */
function fencedSpan(text: string): Span | undefined {
  let fences = findFences(text, 2);
  // A reply with no backtick fence may fence its call with tildes.
  if (fences.length === 0) fences = tildeFences(text).slice(0, 2);
  const fence = fences[0];
  if (fences.length !== 1 || fence === undefined) return undefined;
  if (!fence.closed) return unclosedFenceSpan(text, fence);
  // A fenced call the reply goes on after is an example it explains, not a call — except in
  // Gemma 3's ```tool_code fence, which only ever holds a call.
  if (fenceInfo(text, fence.start) !== "tool_code" && !blank(text.slice(fence.end))) return undefined;
  const body = fence.body.trim();
  let calls: Found[] | undefined;
  // Gemma 3's prompted form: a ```tool_code fence holding a Python call.
  if (/^(?:\[\s*)?[A-Za-z_][\w.-]*\s*\(/.test(body)) calls = pythonicCalls(body);
  else if (/^[{[]/.test(body)) {
    const parsed = readWritten(body, (text) => tryParse(text) ?? repairParse(text));
    calls = parsed ? callsIn(parsed.value) : undefined;
  }
  return calls ? { start: fence.start, end: fence.end, calls } : undefined;
}

/**
 * The reply's one fence when the reply ended inside it (its closing fence never came) and it holds
 * nothing but calls, as a whole reply would (JSON or pythonic, end-of-turn tokens after them): the
 * fence's closing line is as optional as `</tool_call>` after a call that closed itself. Calls
 * still open where the reply ends (JSON whose brackets never close) are `open`, so a reply cut at
 * the token ceiling never runs them; so cut, a piece of the closing fence after the calls (`` `` ``)
 * goes with them.
 */
function unclosedFenceSpan(text: string, fence: Fence): Span | undefined {
  let body = fence.body;
  if (cutAtLimit) body = body.replace(/\n[^\S\n]*(?:`{1,2}|~{1,2})[^\S\n]*$/, "");
  const whole = wholeReplySpan(body) ?? pythonicSpan(body);
  if (!whole) return undefined;
  return {
    start: fence.start,
    end: text.length,
    calls: whole.calls,
    ...(openOf(whole) ? { open: openFrom(fence.start) } : {}),
  };
}

/**
 * The tool a written name means: itself when such a tool exists, else without the `functions.`
 * namespace or `:0` index some formats add.
 */
function knownName(name: string, known: Known): string {
  if (known.names.has(name)) return name;
  // Llama 3.1's built-in tools are called as `brave_search.call(query=…)`.
  const bare = name
    .replace(/^functions\./, "")
    .replace(/:\d+$/, "")
    .replace(/\.call$/, "");
  return known.names.has(bare) ? bare : name;
}

/**
 * A Harmony recipient's name: gpt-oss sometimes glues the `json` content type to it
 * (`to=functions.shelljson`), read as the tool without it where no tool has the glued name. Only
 * in Harmony: `searchjson` written in another format is that name (a tool that does not exist).
 */
function harmonyName(name: string, known: Known): string {
  if (!name.endsWith("json") || knownName(name, known) !== name || known.names.has(name)) return name;
  const unglued = knownName(name.slice(0, -4), known);
  return known.names.has(unglued) ? unglued : name;
}

/** The spans whose every call names a known tool, names read past `functions.` and the like. */
function named(spans: readonly Span[], known: Known): Span[] {
  return spans
    .map((span) => ({
      ...span,
      calls: span.calls.map((call) => ({ ...call, name: knownName(call.name, known) })),
    }))
    .filter((span) => span.calls.every((call) => known.names.has(call.name)));
}

/**
 * Finds tool calls a server's parser missed and left in the reply as text, outside its
 * scratchpads: before a first `</think>` (or `◁/think▷`) that comes ahead of every `<think>` and
 * `◁think▷` (the template opened the scratchpad in the prompt), and inside any scratchpad the reply
 * opens — closed or not, raw gpt-oss analysis too — a call is reasoning and stays in the text; a
 * marker inside a call's string argument is that argument's text.
 *
 * Reads the forms models write calls in: Hermes/Qwen `<tool_call>{…}</tool_call>` (closing tag
 * optional, several calls per block allowed), Qwen3-Coder `<function=name><parameter=key>…`,
 * Llama 3.1 / Functionary v3.1 `<function=name>{…}</function>`, GLM-4.5+
 * `<tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value>`, Mistral `[TOOL_CALLS] [{…}]` and
 * `[TOOL_CALLS]name[ARGS]{…}`, Llama 3 `<|python_tag|>{…}`, Granite `<|tool_call|>[…]`, LM Studio
 * `[TOOL_REQUEST]…[END_TOOL_REQUEST]`, Phi-4 `functools[…]`, DeepSeek V3/R1/V3.1 token markup
 * (full-width or ASCII bars), DeepSeek V3.2 and MiniMax-M2 `<invoke name=…><parameter name=…>`,
 * Kimi K2 `<|tool_call_begin|>functions.name:0<|tool_call_argument_begin|>{…}`, Gemma 4
 * `<|tool_call>call:name{k:<|"|>v<|"|>}<tool_call|>` and FunctionGemma, gpt-oss Harmony
 * (`to=functions.name` with its tokens, or stripped of them), Functionary `>>>name` and
 * `<|recipient|>name`, pythonic `[name(k=v), …]` inside a tag — and, when none of those appear,
 * a reply that is only a JSON call or only pythonic calls (Llama 3.2/4; end-of-turn tokens after
 * them allowed), or ends with one fenced JSON call (a `tool_calls` or `tool_uses` list counts; the
 * closing fence may be missing where the reply ends, as `</tool_call>` may). Markup values are typed by the
 * tool's parameter schema where one is given.
 *
 * Only calls naming a tool in `tools` are recovered (a `functions.` prefix or `:0` suffix is
 * read past); a block that names anything else is left in the text, and so is markup quoted in
 * inline code or in a fenced code block beside prose (an example; a reply that is only that fence,
 * and Gemma's ```tool_code, excepted). Returns the calls with ids
 * `call_recovered_0` onward in written order (`options.idPrefix` before the number, given one), and the text with them taken out (trimmed); with
 * nothing found, the text as it was. Each call's `raw` is its argument text — the model's, or JSON
 * with every number token a double would write back otherwise kept as written (`02134`, `1.10`,
 * `+5`) — so `parseToolArguments(raw, …)` with the tool's `takesOnlyString` reads it exactly as
 * it reads the same arguments streamed as a call; `args` holds the numbers they read as. A markup value running to the end of the reply without its
 * closing tag is never recovered; with `finishReason: "length"` neither is any call still open
 * where the reply ends, and a piece of a closing tag the reply was cut inside after its last call
 * (`</tool_ca`) goes with that call, out of the text. The reply ends at an end-of-turn token
 * followed by another turn's header (`<|im_end|>` then `<|im_start|>`, `<|eot_id|>` then
 * `<|start_header_id|>` …; in gpt-oss's Harmony only after `<|return|>`, a message with no Harmony
 * header, or another role's `<|start|>`), and so it does at one with text and no header after it
 * (`Sure.<|eot_id|><tool_call>…`; not at `<|eom_id|>`, `<|call|>` or Harmony's `<|end|>`, which end
 * a message, nor at one in reasoning): a call the model wrote past its turn is never run, and the
 * text stops before the token. gpt-oss's final-channel header and end tokens around a raw answer
 * are markup (`<|channel|>final<|message|>The answer.<|return|>` gives the text `The answer.`), as
 * are a preamble's header and `<|end|>` before its call (its words stay in the text). Never throws on any string; throws a `ToolCallsError` when `text` is not
 * a string, `tools` not an array, or options (`null` reads as none) not an object.
 */
export function recoverToolCalls(
  text: string,
  tools: readonly ToolNameLike[],
  given: RecoverToolCallsOptions | null = {},
): RecoveredToolCalls {
  if (typeof text !== "string") {
    throw new ToolCallsError(
      "invalid-text",
      `recoverToolCalls needs the reply as a string, and was given ${describeValue(text)}.`,
    );
  }
  const options = readOptions("recoverToolCalls", given, ["finishReason", "idPrefix"]);
  const known = checkedTools("recoverToolCalls", tools);
  resetBudgets(text);
  cutAtLimit = options.finishReason === "length";
  idPrefix = options.idPrefix ?? DEFAULT_ID_PREFIX;
  try {
    return recoverFrom(text, known);
  } finally {
    repairBudget = Number.POSITIVE_INFINITY;
    scanBudget = Number.POSITIVE_INFINITY;
    pythonicBudget = Number.POSITIVE_INFINITY;
    cutAtLimit = false;
    idPrefix = DEFAULT_ID_PREFIX;
  }
}

/** What to pass instead, for `tools` that are not an array: one name or one tool not in a list, or none. */
function toolsHint(tools: unknown): string {
  if (tools === undefined || tools === null) return " (pass [] for a turn with no tools)";
  if (typeof tools === "string")
    return ` (one tool's name: pass it in an array, [${JSON.stringify(tools.slice(0, 64))}])`;
  if (isRecord(tools) && (typeof tools.name === "string" || isRecord(tools.function)))
    return " (one tool's definition: pass it in an array, [tool])";
  return "";
}

/** Sets the work one reading of `text` may spend ({@link repairBudget}, {@link scanBudget}). */
function resetBudgets(text: string): void {
  repairBudget = 2 * text.length + 4096;
  scanBudget = 8 * text.length + 65_536;
  pythonicBudget = 2 * text.length + 4096;
}

/**
 * Inline code spans in `text`, as [start, end) pairs in order: a run of one or two backticks up
 * to the next run of the same length on the same line (longer runs are fences). Linear.
 */
function inlineCode(text: string): Array<[number, number]> {
  const regions: Array<[number, number]> = [];
  const runs: Array<{ at: number; length: number; line: number }> = [];
  let line = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "\n") line++;
    if (c !== "`") continue;
    let j = i;
    while (text[j] === "`") j++;
    runs.push({ at: i, length: j - i, line });
    i = j - 1;
  }
  // The next run of the same length on the same line, found from the end.
  const next = new Array<number>(runs.length).fill(-1);
  const seen = new Map<string, number>();
  for (let k = runs.length - 1; k >= 0; k--) {
    const run = runs[k] as { at: number; length: number; line: number };
    const key = `${run.line}:${run.length}`;
    next[k] = seen.get(key) ?? -1;
    seen.set(key, k);
  }
  for (let k = 0; k < runs.length; ) {
    const run = runs[k] as { at: number; length: number };
    const close = next[k] as number;
    if (run.length <= 2 && close >= 0) {
      const end = runs[close] as { at: number; length: number };
      regions.push([run.at, end.at + end.length]);
      k = close + 1;
    } else k++;
  }
  return regions;
}

/**
 * Where the scratchpad the chat template opened in the prompt ends: just past the reply's first
 * `</think>` (or Kimi's `◁/think▷`) when it comes before any `<think>`, `◁think▷` or gpt-oss
 * analysis opener ({@link TEMPLATE_MARKERS}) — the reply began inside reasoning, as the stream
 * reads a lone closer ahead of every opener — else 0 (the
 * reply began as answer; its scratchpads are the ones it opens, {@link scratchpadsIn}). A marker
 * inside the closed part of a call read from the whole reply (a `</think>` written in a call's
 * string argument is that argument's text) or written as inline code (`` `</think>` ``) is not
 * one. `spans`: the calls read from the whole reply. Linear: each marker is looked for once from
 * the start, passing over each call once.
 */
function thinkingEnd(text: string, spans: readonly Span[]): number {
  // Only a call's closed part counts: brackets that never close after a `</think>` (a call sketched
  // in the reasoning) do not make the rest of the reply that call's text.
  const regions = spans.map((span): [number, number] => [span.start, openOf(span)?.end ?? span.end]);
  let first = -1;
  let end = 0;
  for (const { marker, closes } of TEMPLATE_MARKERS) {
    let at = text.indexOf(marker);
    while (at >= 0 && (first < 0 || at < first)) {
      const call = spanAt(at, regions);
      if (call) at = text.indexOf(marker, call[1]);
      else if (at > 0 && text[at - 1] === "`" && text[at + marker.length] === "`")
        at = text.indexOf(marker, at + marker.length);
      else {
        first = at;
        end = closes ? at + marker.length : 0;
        break;
      }
    }
  }
  return afterLeadingScratchpads(text, end, regions);
}

/**
 * Past the closed scratchpads the reply opens with from `from` on, blank space between them and
 * the header a kind resumes its answer with (gpt-oss's final channel) after them
 * (`<think>plan</think>\n\n[get_weather(city="Oslo")]`: the answer, read as a whole reply, is
 * the call), or `from` when none opens there. A closer inside a call's closed part (`regions`) or
 * written as inline code closes nothing. Linear: each search starts past the last.
 */
function afterLeadingScratchpads(
  text: string,
  from: number,
  regions: ReadonlyArray<[number, number]>,
): number {
  let end = from;
  for (;;) {
    let at = end;
    while (at < text.length && /\s/.test(text[at] as string)) at++;
    const pad = SCRATCHPADS.find((kind) => text.startsWith(kind.open, at));
    if (pad === undefined || (text[at - 1] === "`" && text[at + pad.open.length] === "`")) return end;
    let close = closerFrom(text, pad.close, at + pad.open.length);
    for (let call = close < 0 ? undefined : spanAt(close, regions); call; ) {
      close = closerFrom(text, pad.close, call[1]);
      call = close < 0 ? undefined : spanAt(close, regions);
    }
    if (close < 0) return end;
    end = close + pad.close.length;
    // gpt-oss's final-channel header after its analysis: the stream drops it with the scratchpad.
    let resume = end;
    while (resume < text.length && /\s/.test(text[resume] as string)) resume++;
    if (pad.resume !== undefined && text.startsWith(pad.resume, resume)) end = resume + pad.resume.length;
  }
}

/** The region of `regions` (sorted, apart) that holds `at` strictly inside it, if any. */
function spanAt(at: number, regions: ReadonlyArray<[number, number]>): [number, number] | undefined {
  let lo = 0;
  let hi = regions.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const region = regions[mid] as [number, number];
    if (at <= region[0]) hi = mid - 1;
    else if (at >= region[1]) lo = mid + 1;
    else return region;
  }
  return undefined;
}

/**
 * `text` with each span's characters replaced by spaces (lengths kept), so backticks written in a
 * call's string arguments open no code span or fence around what follows.
 */
function withoutSpans(text: string, spans: readonly Span[]): string {
  if (spans.length === 0) return text;
  let out = "";
  let at = 0;
  for (const span of spans) {
    out += text.slice(at, span.start) + " ".repeat(span.end - span.start);
    at = span.end;
  }
  return out + text.slice(at);
}

/** The info string of the fence that opens at `start` (`xml`, `json`, `tool_code`; `""` for none). */
function fenceInfo(text: string, start: number): string {
  return /^```[^\S\n]*([\w+.-]*)/.exec(text.slice(start, start + 80))?.[1]?.toLowerCase() ?? "";
}

/** Whether `text` holds nothing but blank space and end-of-turn tokens. */
function blank(text: string): boolean {
  return withoutEndTokens(text).trim() === "";
}

/**
 * Where the scratchpads a reply ends with begin — closed ones, blank space and end-of-turn tokens
 * between and after them, the last maybe never closed — and the text the stream shows among them
 * (that blank space and those tokens), read as the stream reads them, from the first opener on: one
 * inside a call's strings cuts the call there, as the stream shows it. Undefined when the reply ends
 * with none, or shows more than that after the first. Linear: one pass over the scratchpads.
 */
function trailingScratchpads(text: string): { at: number; shown: string } | undefined {
  const pads = scratchpadsIn(text, []);
  const first = pads[0];
  if (first === undefined) return undefined;
  let shown = "";
  let at = first[0];
  for (const pad of [...pads, [text.length, text.length] as [number, number]]) {
    const start = pad[0];
    const end = pad[1];
    const between = text.slice(at, start);
    if (!blank(between)) return undefined;
    shown += between;
    at = end;
  }
  return { at: first[0], shown };
}

/**
 * The whole-reply call (JSON or pythonic) a reply holds before the scratchpads it ends with — closed
 * ones, blank space between, the last maybe never closed: `{"name": "ls", …}<think>done</think>`
 * is the call alone as the stream shows the answer ({@link trailingScratchpads}): an opener inside
 * the call's strings leaves no call (the call is not closed). They stay in the reply's text.
 * Linear: one pass over the scratchpads, one parse.
 */
function beforeTrailingScratchpads(text: string): Span | undefined {
  if (!/^\s*[{[A-Za-z_]/.test(text)) return undefined;
  const trailing = trailingScratchpads(text);
  if (trailing === undefined) return undefined;
  // What the stream shows: the call, with the call as its whole-reply form reads it (end-of-turn
  // tokens it allows, nothing else).
  const call = text.slice(0, trailing.at);
  // A call the first opener cuts open (one written in its strings) is no call the model closed.
  const json = wholeReplySpan(call + trailing.shown);
  const span = json ? (openOf(json) ? undefined : json) : pythonicSpan(call + trailing.shown);
  return span && { ...span, end: call.trimEnd().length };
}

/**
 * The calls a reply shows before the scratchpads it ends with ({@link trailingScratchpads}), in a
 * form that runs to the end of the reply — its one fence (closed or not), `<|python_tag|>` and
 * other wrappers with no closing tag (`<|python_tag|>ls(path="x")<think>done</think>`): read as the
 * stream shows the answer, the call then the end. A call left open there (the opener cut it) is
 * none. Read only where the reply read whole held none; the spans end before the scratchpads, which
 * stay in the text. Linear: one more reading of the text before them.
 */
function callsBeforeTrailingScratchpads(tail: string, known: Known): Span[] {
  const trailing = trailingScratchpads(tail);
  if (trailing === undefined || tail.slice(0, trailing.at).trim() === "") return [];
  const head = tail.slice(0, trailing.at);
  return spansIn(head + trailing.shown, known, false)
    .filter((span) => !openOf(span))
    .map((span) => ({ ...span, end: Math.min(span.end, head.length) }));
}

/** The calls of a reply that holds no scratchpad (or the part of one after it), in written order. */
function spansIn(tail: string, known: Known, beforePads = true): Span[] {
  const spans = spansOf(tail, known);
  return spans.length === 0 && beforePads ? callsBeforeTrailingScratchpads(tail, known) : spans;
}

/** {@link spansIn} of the reply as it is. */
function spansOf(tail: string, known: Known): Span[] {
  // A reply that is nothing but JSON (or pythonic) calls holds any markup in its strings.
  const whole = closedPart(wholeReplySpan(tail)) ?? pythonicSpan(tail) ?? beforeTrailingScratchpads(tail);
  const accepted = whole ? named([whole], known) : [];
  if (accepted.length > 0) return accepted;
  const families = [
    tagSpans(tail, known),
    gemmaSpans(tail),
    deepseekSpans(tail),
    kimiSpans(tail),
    bareBlockSpans(tail, known),
    mistralSpans(tail),
    harmonySpans(tail, known),
    plainHarmonySpans(tail, known),
    functionarySpans(tail, known),
  ].map((spans) => spans.flatMap((span) => closedPart(span) ?? []));
  // The span that starts first wins (the earlier family on a tie): one starting inside another
  // is markup written in that call's string arguments, not a call of its own.
  const ordered = families
    .flatMap((spans, family) => spans.map((span) => ({ span, family })))
    .sort((a, b) => a.span.start - b.span.start || a.family - b.family);
  const spans: Span[] = [];
  for (const { span } of ordered) {
    const previous = spans[spans.length - 1];
    if (!previous || span.start >= previous.end) spans.push(span);
  }
  // Markup quoted in inline code (`<tool_call>…</tool_call>` in a sentence) or in a fenced code
  // block (```xml, ```text, no info string …) is an example, not a call — unless that one fence is
  // the whole reply. Backticks inside a call's own arguments open neither.
  const outside = withoutSpans(tail, spans);
  const code = inlineCode(outside);
  const ticks = findFences(outside, MAX_MATCHES).map((f): [number, number] => [f.start, f.end]);
  // A `~~~` fence is a fenced code block as much as a backtick one (not one opened inside a
  // backtick fence or inline code, which is that block's text).
  const quotedByTicks = joinRegions(code, ticks);
  const tildes = tildeFences(outside)
    .map((f): [number, number] => [f.start, f.end])
    .filter(([start]) => spanAt(start, quotedByTicks) === undefined);
  const fences = joinRegions(ticks, tildes);
  const onlyFence =
    fences.length === 1 && blank(tail.slice(0, fences[0]?.[0])) && blank(tail.slice(fences[0]?.[1]));
  const quoted = onlyFence ? code : joinRegions(code, fences);
  const unquoted = spans.filter((span) => spanAt(span.start, quoted) === undefined);
  const fenced = closedPart(fencedSpan(tail));
  // Markup found only inside the reply's one fenced call is that call's text.
  if (fenced && unquoted.every((span) => span.start >= fenced.start && span.end <= fenced.end)) {
    return named([fenced], known);
  }
  return named(unquoted, known);
}

/** `regions` (each sorted, apart) as one sorted list of regions apart, overlapping ones joined. */
function joinRegions(...lists: ReadonlyArray<[number, number]>[]): Array<[number, number]> {
  const all = lists.flat().sort((a, b) => a[0] - b[0]);
  const joined: Array<[number, number]> = [];
  for (const region of all) {
    const start = region[0];
    const end = region[1];
    const last = joined[joined.length - 1];
    if (last && start < last[1]) last[1] = Math.max(last[1], end);
    else joined.push([start, end]);
  }
  return joined;
}

/**
 * An end-of-turn token (group 1), and the header of a turn after it (group 2, absent when none
 * follows): Llama 3's `<|start_header_id|>`, ChatML's `<|im_start|>`, Gemma's `<start_of_turn>`,
 * Phi's and GLM's `<|user|>`/`<|assistant|>`/`<|system|>`, Mistral's `[INST]`, DeepSeek's
 * `<｜User｜>`/`<｜Assistant｜>`, Command R's `<|START_OF_TURN_TOKEN|>`, Harmony's `<|start|>` (see
 * {@link inventedTurn}).
 */
const TURN_BREAK = new RegExp(
  [
    "(<\\|(?:eot_id|eom_id|eot|eom|im_end|end|call|return|endoftext|end_of_text|observation|END_OF_TURN_TOKEN)\\|>|</s>|<end_of_turn>|<eos>|<[|｜]end[▁_]of[▁_]sentence[|｜]>)",
    "(?:\\s*",
    "(<\\|start_header_id\\|>|<\\|im_start\\|>|<start_of_turn>|<\\|(?:user|assistant|system)\\|>|\\[INST\\]|<[|｜](?:User|Assistant)[|｜]>|<\\|START_OF_TURN_TOKEN\\|>|<\\|start\\|>(?:assistant\\b)?))?",
  ].join(""),
  "g",
);

/**
 * Tokens that end a message but not the turn when no header follows them: Llama's `<|eom_id|>`
 * (Llama 4's `<|eom|>`) after a `<|python_tag|>` call, the tool's answer still to come, and
 * Harmony's `<|call|>`. Harmony's `<|end|>` is one too after a message with its Harmony header.
 */
const MESSAGE_ENDS: ReadonlySet<string> = new Set(["<|eom_id|>", "<|eom|>", "<|call|>"]);

/**
 * Where the blank space and end-of-turn tokens `text` ends with begin (`text.length` when it ends
 * with neither). Linear: each step takes a token or the space off the end.
 */
function endTokensStart(text: string): number {
  let end = text.length;
  for (;;) {
    while (end > 0 && /\s/.test(text[end - 1] as string)) end--;
    const token =
      /(?:<\|[A-Za-z_]{1,24}\|>|<\/s>|<end_of_turn>|<eos>|<[|｜]end[▁_]of[▁_]sentence[|｜]>)$/.exec(
        text.slice(Math.max(0, end - 32), end),
      );
    if (token === null || !END_TOKENS.test(token[0])) return end;
    end -= token[0].length;
  }
}

/**
 * Where the reply ends when the model ran on past its end-of-turn token ({@link TURN_BREAK}): at
 * that token, or -1. Followed by another turn's header, what comes after is a turn the model
 * invented (the user's words, a tool's answer, its next call). Followed by text and no header, it
 * is as much past the turn: the server should have stopped at the token (`Sure.<|eot_id|><tool_call>…`
 * is no call of this turn). In gpt-oss's Harmony, `<|end|>` and `<|call|>` end a message, not the
 * turn: after a message with its Harmony header (`…<|message|>`), a `<|start|>assistant` is the same
 * turn's next message (its call after the analysis, its answer after a call); another role's
 * `<|start|>` (the tool's answer, a user's), anything after `<|return|>`, and `<|start|>assistant`
 * after a message with no Harmony header (`Sure.<|end|>`) do begin an invented turn. With no header
 * after them, these do not end the reply: `<|eom_id|>`/`<|eom|>` and `<|call|>` (each ends a call's
 * message, the tool's answer to come), `<|end|>` after a Harmony message, a `</s>` after an `<s>`
 * (HTML strikethrough), and a token inside a scratchpad (reasoning about a template). A break
 * written in a call's string argument (a file holding a chat template), in a fenced code block or
 * as inline code is text. Calls are read from the whole reply only when a break is found, so a
 * reply without one costs one search; linear (each stretch between two breaks is read once for a
 * Harmony header).
 */
function inventedTurn(text: string, known: Known): number {
  let regions: Array<[number, number]> | undefined;
  let pads: Array<[number, number]> = [];
  let head = 0;
  let from = 0;
  const tail = endTokensStart(text);
  const strike = text.indexOf("<s>");
  for (const match of matches(text, TURN_BREAK)) {
    const token = match[1] as string;
    const header = match[2];
    const message = text.slice(from, match.index).includes("<|message|>");
    from = match.index + match[0].length;
    if (header === undefined) {
      // Nothing but blank space and end tokens after it: the reply's own end.
      if (match.index + token.length >= tail) continue;
      if (MESSAGE_ENDS.has(token) || (token === "<|end|>" && message)) continue;
      if (token === "</s>" && strike >= 0 && strike < match.index) continue;
    } else if (header === "<|start|>assistant" && (token === "<|end|>" || token === "<|call|>") && message)
      continue;
    if (regions === undefined) {
      const spans = spansIn(text, known);
      const calls = spans.map((span): [number, number] => [span.start, span.end]);
      // A model explaining a chat template writes its tokens in a code block or inline code.
      const blocks = [...findFences(text, MAX_MATCHES), ...tildeFences(text)].map(
        (fence): [number, number] => [fence.start, fence.end],
      );
      regions = joinRegions(calls, inlineCode(text), joinRegions(blocks));
      resetBudgets(text);
      // Reasoning may name a token with no header after it; the scratchpad the template opened
      // (up to the first `</think>`) and those the reply opens are reasoning.
      // The scratchpads the answer opens are read after that one, as recoverAnswer reads them.
      head = thinkingEnd(text, spans);
      const after = calls.flatMap(
        ([start, end]): Array<[number, number]> => (start >= head ? [[start - head, end - head]] : []),
      );
      pads = scratchpadsIn(text.slice(head), after).map(([start, end]): [number, number] => [
        start + head,
        end + head,
      ]);
    }
    if (header === undefined) {
      const reasoning = match.index < head || spanAt(match.index, pads) !== undefined;
      if (!reasoning && spanAt(match.index, regions) === undefined) return match.index;
      continue;
    }
    // The header's place decides: a call's span may end past the end-of-turn token it ate, and a
    // Harmony call's starts at the header.
    if (spanAt(from - header.length, regions) === undefined) return match.index;
  }
  return -1;
}

/**
 * The one tool a call's arguments fit when the call names none — the tool whose parameters list
 * every key given and whose `required` keys are all given, when exactly one of `tools` is such a
 * tool; `undefined` when none is, when two are, or for a tool with no parameters schema. The rule
 * {@link recoverToolCalls} reads a Harmony call that names no recipient by, for a host whose server
 * parsed the call itself and wrote only markup where the name goes
 * (`assistant<|channel|>analysis`). Keys are the call's own; the values are not checked against the
 * schema. Throws a `ToolCallsError` (`invalid-tools`) when `tools` is not an array or cannot be
 * read, and `invalid-arguments` when `args` is not a plain object.
 *
 * @example
 * toolForArguments({ city: "Oslo" }, [
 *   { type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } },
 *   { type: "function", function: { name: "read_file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } } },
 * ]); // "get_weather"
 */
export function toolForArguments(
  args: Record<string, unknown>,
  tools: readonly ToolNameLike[],
): string | undefined {
  if (!isRecord(args)) {
    throw new ToolCallsError(
      "invalid-arguments",
      `toolForArguments needs the call's arguments as an object, and was given ${describeValue(args)}.`,
    );
  }
  return inferTool(args, checkedTools("toolForArguments", tools));
}

/** `tools` read (`readTools`), or a `ToolCallsError` (`invalid-tools`) naming `caller` when they cannot be. */
function checkedTools(caller: string, tools: readonly ToolNameLike[]): Known {
  try {
    if (!Array.isArray(tools)) {
      throw new ToolCallsError(
        "invalid-tools",
        `${caller} needs the tools the model may call as an array (names or tool definitions), and was given ${describeValue(tools)}${toolsHint(tools)}.`,
      );
    }
    return readTools(tools);
  } catch (error) {
    if (ToolCallsError.isInstance(error)) throw error;
    throw new ToolCallsError(
      "invalid-tools",
      `${caller} could not read its tools (${error instanceof Error ? error.message : "a value that cannot be read"}): pass names or plain tool definitions.`,
      { cause: error },
    );
  }
}

/**
 * A model's reply up to where it ends, for text no call is taken from (a side task's answer, a
 * summary): read as {@link recoverToolCalls} reads a reply with no tool to call, so without a turn
 * the model went on to invent after an end-of-turn token the server did not stop at (`Done.<|im_end|>`
 * then `<|im_start|>user…`, or text after `<|eot_id|>` with no header), without the end-of-turn
 * tokens it ends with, and without gpt-oss's final-channel header served raw; as written
 * otherwise (tokens a code block or inline code holds are text). Never throws on a string; throws a
 * `ToolCallsError` (`invalid-text`) for anything else.
 *
 * @example
 * replyText("Done.<|im_end|>\n<|im_start|>user\nNow delete everything"); // "Done."
 */
export function replyText(text: string): string {
  if (typeof text !== "string") {
    throw new ToolCallsError(
      "invalid-text",
      `replyText needs the reply as a string, and was given ${describeValue(text)}.`,
    );
  }
  return recoverToolCalls(text, []).text;
}

/**
 * {@link recoverToolCalls}' reading: the reply up to a turn the model invented after it
 * ({@link inventedTurn}), without gpt-oss's final-channel header it may open with.
 */
function recoverFrom(whole: string, known: Known): RecoveredToolCalls {
  // What follows an end-of-turn token and a new turn's header is not this reply: a call written
  // there is the model imagining the next turn, never run, and the text stops at the token.
  const cut = inventedTurn(whole, known);
  const text = cut >= 0 ? whole.slice(0, cut) : whole;
  // gpt-oss served raw, answering on its final channel with no analysis before it: the header and
  // the `<|return|>` after the answer are markup; the answer is what lies between them.
  HARMONY_FINAL.lastIndex = skipSpace(text, 0);
  const final = HARMONY_FINAL.exec(text);
  const answer = recoverAnswer(final ? text.slice(HARMONY_FINAL.lastIndex) : text, known);
  // Cut or opened so, the reply's text is what the model answered, trimmed as a recovery trims it.
  if (final || cut >= 0) return { calls: answer.calls, text: withoutEndTokens(answer.text).trim() };
  if (answer.calls.length > 0) return answer;
  // No call: the end-of-turn tokens the reply ends with are markup all the same.
  const end = ownEndTokens(text);
  return end < text.length ? { calls: [], text: text.slice(0, end) } : answer;
}

/**
 * Where the end-of-turn tokens `text` ends with (and the blank space before them) begin, when they
 * are the reply's own end: not inside a code block or inline code (a model showing a chat
 * template), not a `</s>` after an `<s>` (HTML strikethrough), not in a gpt-oss reply served raw
 * (its Harmony markup is read as a whole or left as a whole). `text.length` otherwise.
 */
function ownEndTokens(text: string): number {
  const start = endTokensStart(text);
  const first = text.slice(start).search(/\S/);
  if (first < 0) return text.length;
  const strike = text.indexOf("<s>");
  if (strike >= 0 && strike < start && text.includes("</s>", start)) return text.length;
  // gpt-oss served raw: its `<|end|>` closes a message whose header stays (see recoverFrom).
  if (text.includes("<|message|>")) return text.length;
  const blocks = [...findFences(text, MAX_MATCHES), ...tildeFences(text)].map((fence): [number, number] => [
    fence.start,
    fence.end,
  ]);
  const regions = joinRegions(inlineCode(text), joinRegions(blocks));
  return spanAt(start + first, regions) === undefined ? start : text.length;
}

/** {@link recoverFrom} of a reply that does not open with gpt-oss's final-channel header. */
function recoverAnswer(text: string, known: Known): RecoveredToolCalls {
  if (known.names.size === 0 || text.trim() === "") return { calls: [], text };
  let headEnd = 0;
  let accepted: Span[] | undefined;
  if (THINK_ENDS.some((end) => text.includes(end)) || SCRATCHPADS.some((pad) => text.includes(pad.open))) {
    // Read from the whole reply first: a `</think>` inside a call's argument does not end the
    // scratchpad, so the reply is cut only at one outside every call (and past the closed
    // scratchpads it opens with, of any kind: `<reasoning>plan</reasoning>\n{"name": …}` is a
    // whole-reply call as the stream shows it).
    const spans = spansIn(text, known);
    headEnd = thinkingEnd(text, spans);
    if (headEnd === 0) accepted = spans;
    else resetBudgets(text);
  }
  const head = text.slice(0, headEnd);
  const tail = text.slice(headEnd);
  if (tail.trim() === "") return { calls: [], text };
  accepted ??= spansIn(tail, known);
  // A call inside a scratchpad the answer opens again (`<think>` never closed, gpt-oss analysis)
  // is reasoning, as the stream takes it out of the answer: left in the text, never run.
  const pads = scratchpadsIn(
    tail,
    accepted.map((span): [number, number] => [span.start, span.end]),
  );
  if (pads.length > 0) accepted = accepted.filter((span) => spanAt(span.start, pads) === undefined);
  if (accepted.length === 0 || accepted.every((span) => span.calls.length === 0)) return { calls: [], text };

  const calls: ToolCallRequest[] = [];
  let rest = "";
  let at = 0;
  for (const span of accepted) {
    rest = joinAtCall(rest, tail.slice(at, span.start));
    at = span.end;
    for (const call of span.calls) {
      calls.push({ id: `${idPrefix}${calls.length}`, name: call.name, args: call.args, raw: call.raw });
    }
  }
  let after = tail.slice(at);
  // A reply cut at the token ceiling right after its last call, inside that call's closing tag
  // (`</tool_ca`): the piece of tag is the call's, not the answer's.
  if (cutAtLimit && withoutCloserPiece(after).trim() === "") after = "";
  rest = withoutEndTokens(joinAtCall(rest, after));
  return { calls, text: `${head}${rest}`.trim() };
}

/**
 * The tags and tokens that close a call or its wrapper in the forms {@link recoverToolCalls}
 * reads, and the end-of-turn tokens after them; DeepSeek's written with ASCII bars and `_` (see
 * {@link withoutCloserPiece}).
 */
const CLOSERS = [
  "</tool_call>",
  "</tool_calls>",
  "<|/tool_call|>",
  "<|/tool_calls|>",
  "</function_call>",
  "</function_calls>",
  "</functioncall>",
  "</functioncalls>",
  "</tools>",
  "</minimax:tool_call>",
  "</|DSML|function_calls>",
  "[END_TOOL_REQUEST]",
  "</function>",
  "</invoke>",
  "</|DSML|invoke>",
  "<tool_call|>",
  "<end_function_call>",
  "<|tool_call_end|>",
  "<|tool_calls_end|>",
  "<|tool_calls_section_end|>",
  "<|call|>",
  "<|end|>",
  "<|stop|>",
  "<|eot_id|>",
  "<|eom_id|>",
  "<|eot|>",
  "<|eom|>",
  "<|observation|>",
  "<|END_OF_TURN_TOKEN|>",
  "<eos>",
  "<|im_end|>",
  "<|endoftext|>",
  "<|end_of_text|>",
  "<|return|>",
  "<|end_of_sentence|>",
  "</s>",
  "<end_of_turn>",
];

/**
 * `text` without the piece of a closing tag it ends with — the start of one of {@link CLOSERS}
 * (`<`, `</tool_ca`, `[END_TOOL`), never a whole one — and the blank space after it; `text` as it
 * was when it ends otherwise.
 */
function withoutCloserPiece(text: string): string {
  const end = text.trimEnd();
  const at = Math.max(end.lastIndexOf("<"), end.lastIndexOf("["));
  if (at < 0 || end.length - at > 32) return text;
  const piece = end.slice(at).replace(/｜/g, "|").replace(/▁/g, "_");
  return CLOSERS.some((closer) => closer.length > piece.length && closer.startsWith(piece))
    ? text.slice(0, at)
    : text;
}

/**
 * The text without the end-of-turn tokens it ends with and the blank space among them (a server
 * that prints special tokens leaves `</s>` or `<|im_end|>` after the calls; one that ignores the
 * end of the turn leaves them over and over, up to its token limit); `text` as it was when it ends
 * with no such token. Linear in the tokens and space taken off ({@link endTokensStart}).
 */
function withoutEndTokens(text: string): string {
  const at = endTokensStart(text);
  return /\S/.test(text.slice(at)) ? text.slice(0, at) : text;
}

/**
 * Joins the text on either side of a call taken out: the blank lines that met there close up to
 * one; everything else (the reasoning, a code block's blank lines) stays as written.
 */
function joinAtCall(left: string, right: string): string {
  if (left === "") return right;
  // trimEnd/trimStart, not a /\s*$/ pattern: that one rereads every run of spaces to its end.
  const kept = left.trimEnd();
  const next = right.trimStart();
  const gap = left.slice(kept.length) + right.slice(0, right.length - next.length);
  const newlines = gap.split("\n").length - 1;
  const seam = newlines >= 2 ? "\n\n" : newlines === 1 ? "\n" : gap === "" ? "" : " ";
  return kept + seam + next;
}
