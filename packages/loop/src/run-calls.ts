import { isCredentialParam, REDACTED } from "@loopwright/client";
import {
  isPlainPrototype,
  restoreArguments,
  takesOnlyStringAt,
  takesStringAt,
} from "@loopwright/schema-compat";
import { listenForAbort } from "@loopwright/stream";
import {
  type ArgumentPath,
  parseToolArguments,
  ToolArgumentsError,
  type ToolCallRequest,
  type ToolCallResult,
  type ToolCallSource,
} from "@loopwright/tool-calls";
import type { AssistantToolCall, ChatMessage, DedupePolicy, ToolDefinition } from "./config.js";
import { protoless } from "./protoless.js";

export type { DedupePolicy };

import { errorMessage, isError, readErrorMessage, UNREADABLE_ERROR } from "./errors.js";
import { hasOwnKey, ownView } from "./own.js";
import { tell } from "./tell.js";

/** A tool call as `dispatch` is handed it: arguments repaired and parsed, the model's own text as `raw`. */
export type DispatchRequest = ToolCallRequest;

/**
 * Runs one tool call; what it returns (a string, or anything JSON can hold) is what the model reads
 * — nothing (`undefined`, blank text) as `(the tool returned no output)`.
 */
export type Dispatch = (request: DispatchRequest, signal?: AbortSignal) => unknown;

/** One call's outcome as the transcript and a watcher see it. */
export interface CallResult extends ToolCallResult {
  /** How the answer came about: the tool ran, a repeat shared its answer, or the call was refused. */
  source: ToolCallSource;
  /** How long the tool ran, in milliseconds; absent for a call that was not dispatched. */
  ms?: number;
}

/** What `runCalls` reads. */
export interface RunCallsOptions {
  dispatch: Dispatch;
  signal?: AbortSignal | undefined;
  /**
   * How long one call may run, in ms, before it is stopped (the signal `dispatch` got aborts with a
   * `TimeoutError`) and answered with an error saying so; the run carries on. Absent:
   * `DEFAULT_TOOL_TIMEOUT_MS` (300 000). `0` lets a call run for ever.
   */
  timeoutMs?: number | undefined;
  /**
   * The turn's finish reason: arguments cut off at the ceiling (`"length"`) are reported as
   * truncated, and `""` — the stream ended without one after the calls began — means every call
   * may be cut off: none is run, each is answered so.
   */
  finishReason?: string | undefined;
  /**
   * The tools as the host declared them (the names `dispatch` is handed): a `null` the model wrote
   * for a parameter a tool's own schema left optional is dropped before dispatch (strict schemas
   * make optional parameters required-but-nullable, and the tool would refuse the `null`).
   */
  tools?: readonly ToolDefinition[] | undefined;
  /** Run the step's calls together rather than one after another (default false). */
  parallel?: boolean | undefined;
  /** Share one answer between identical calls of the step (default true). */
  dedupe?: DedupePolicy | undefined;
  /** Told of every call the model made, before it runs (empty args where they could not be read). What it throws is ignored. */
  onToolCall?: ((request: DispatchRequest) => void) | undefined;
  /** Told of every call's result as it lands: in transcript order, or in finishing order when parallel. What it throws is ignored. */
  onToolResult?: ((result: CallResult) => void) | undefined;
  /**
   * Asked of each readable call, in order, before any watcher is told of it: `undefined` runs it as
   * written; `{ dispatch }` runs another call in its place under the same id (a proxied
   * `call_tool`'s inner tool), which is what watchers and the dedupe see; `{ answer }` answers it
   * without dispatching (`source: "loop"`). `onRun` is called when the call's turn comes and it is
   * not stopped first. Handed plain JSON only: a call holding a number JS cannot hold that its own
   * schema refuses is answered with that refusal and never asked about.
   */
  route?: ((request: DispatchRequest) => CallRouting | undefined) | undefined;
  /**
   * Applied to the host's words in every error a dispatched call is answered with — a thrown
   * Error's message (with its status and cause), a rejected value that is no Error, an Error
   * returned as the result, and each Error inside a returned result (its `<name>: <message>`) —
   * before the answer reaches the results, the outcomes or `onToolResult`. The loop passes the
   * run's redactor (the endpoint's `apiKey` and `headers` values). Not applied to what a tool
   * returned successfully (its own output), nor to the loop's own words (a timeout, a stop, a
   * refusal of unreadable arguments). Where it throws or answers anything but a string, the error
   * text is withheld ({@link WITHHELD}) rather than sent as it was. Absent (or `null`): the error
   * text goes as the tool wrote it.
   */
  redact?: ((text: string) => string) | null | undefined;
}

/** What `RunCallsOptions.route` decides for one call. */
export type CallRouting =
  | { dispatch: DispatchRequest; onRun?: (() => void) | undefined }
  | { answer: { ok: boolean; content: string }; onRun?: (() => void) | undefined };

/** What a step's calls leave behind. */
export interface RunCallsResult {
  /** The assistant's calls with their arguments repaired, as the transcript should replay them. */
  calls: AssistantToolCall[];
  /** One tool message per call, in the calls' order. */
  results: ChatMessage[];
  /** The same, as outcomes. */
  outcomes: CallResult[];
  /**
   * The signal's reason where it stopped the step (every call is still answered); `undefined`,
   * still present, where nothing stopped it.
   */
  stopped?: unknown;
}

/** How long a tool call may run when `timeoutMs` (the loop's `toolTimeoutSeconds`) is absent: five minutes. */
export const DEFAULT_TOOL_TIMEOUT_MS = 300_000;

/** The longest delay a Node timer takes; longer ones fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/** What a call the signal interrupted is answered with. */
export const STOPPED_DURING = "Stopped before this call finished.";
/** What a call the run never reached is answered with. */
export const NOT_RUN = "Not run: the run stopped first.";
/**
 * What a call whose tool returned nothing (`undefined`, `""`, blank text) is answered with: an empty
 * tool message is refused by MiniMax ("chat content is empty"), GLM on Z.ai, and Anthropic models
 * behind OpenAI-compatible gateways.
 */
const NO_OUTPUT = "(the tool returned no output)";
/** What stands for a tool's error text when `RunCallsOptions.redact` threw on it or answered no string. */
export const WITHHELD =
  "(the tool's error message was withheld: the redact option could not be applied to it)";

/** How a call's error text is made fit to send: the `redact` option, made safe; the text as it is without one. */
type Clean = (text: string) => string;

const AS_IS: Clean = (text) => text;

/** The `redact` option checked and made safe: never throws, always a string (`WITHHELD` when it failed). */
function cleanerOf(redact: unknown): Clean {
  if (redact === undefined || redact === null) return AS_IS;
  if (typeof redact !== "function") {
    throw new TypeError(`runCalls: redact must be a function (text) => text, got ${kindOf(redact)}.`);
  }
  return (text) => {
    try {
      const out: unknown = redact(text);
      if (typeof out === "string") return out;
    } catch {
      // Withheld below: the text is never sent unredacted.
    }
    return WITHHELD;
  };
}

function kindOf(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  const kind = typeof value;
  return kind === "object" || kind === "undefined" ? `an ${kind}` : `a ${kind}`;
}

type Outcome = { ok: boolean; content: string; source: ToolCallSource; ms?: number };

// Every field is always written, `undefined` where absent: a field a Prepared left out would be
// read through `Object.prototype`, where a polluted `answer` answered every call unrun, with nothing.
interface Prepared {
  call: AssistantToolCall;
  request: DispatchRequest;
  json: string;
  unreadable: string | undefined;
  answer: { ok: boolean; content: string } | undefined;
  onRun: (() => void) | undefined;
  /**
   * Where the call's own schema refused a number JS cannot hold and a `route` may hand the call to
   * another tool: that refusal (what the call is answered with if it reaches no other tool), and
   * the numbers held in `request.args` meanwhile.
   */
  held: { refusal: string; numbers: readonly HeldNumber[] } | undefined;
}

/** A {@link Prepared} with the fields `fields` leaves out written as `undefined`. */
function made(
  fields: Pick<Prepared, "call" | "request" | "json"> & Partial<Omit<Prepared, "call" | "request" | "json">>,
): Prepared {
  return { unreadable: undefined, answer: undefined, onRun: undefined, held: undefined, ...fields };
}

/** The routes that take a routed call's held numbers: the loop's own, never a host's. */
const HOLDING_ROUTES = new WeakSet<NonNullable<RunCallsOptions["route"]>>();

/**
 * Marks `route` as the loop's own, handed a call's {@link HeldNumber}s to settle by the tool the
 * call reaches. A host's `route` is never marked: a number its call's own schema refuses is refused
 * before the route is asked, so it sees plain JSON only.
 */
export function holdingNumbers<R extends NonNullable<RunCallsOptions["route"]>>(route: R): R {
  HOLDING_ROUTES.add(route);
  return route;
}

/**
 * For the loop's own routes: the answer a call gets for its name alone, whatever its arguments say
 * (a name outside a loading mode's catalogue), asked of a call whose arguments cannot be read. Asked
 * without the route itself, which plans the step's loads as it answers.
 */
const NAME_ANSWERS = new WeakMap<
  NonNullable<RunCallsOptions["route"]>,
  (request: DispatchRequest) => { answer: { ok: boolean; content: string }; onRun?: () => void } | undefined
>();

/**
 * Gives `route` (the loop's own) `byName`: what a call is answered for its name alone. A call whose
 * arguments cannot be read is answered so where `byName` says anything, not told to write its
 * arguments again for a tool that does not exist.
 */
export function answeringNames<R extends NonNullable<RunCallsOptions["route"]>>(
  route: R,
  byName: (
    request: DispatchRequest,
  ) => { answer: { ok: boolean; content: string }; onRun?: () => void } | undefined,
): R {
  NAME_ANSWERS.set(route, byName);
  return route;
}

/** Gives `to` the name answers {@link answeringNames} gave `from` (a route wrapping another). */
export function sameNameAnswers<R extends NonNullable<RunCallsOptions["route"]>>(
  to: R,
  from: NonNullable<RunCallsOptions["route"]>,
): R {
  const byName = NAME_ANSWERS.get(from);
  return byName ? answeringNames(to, byName) : to;
}

/** True when `route` is one {@link holdingNumbers} marked. */
function holds(route: RunCallsOptions["route"]): boolean {
  return route !== undefined && HOLDING_ROUTES.has(route);
}

/**
 * A number JS cannot hold, kept in a routed call's arguments in place of its value until the tool
 * the call reaches is known (a `call_tool`'s inner tool, a catalogued tool called by another
 * spelling): that tool's own schema then settles it, as if it had been called directly.
 */
export class HeldNumber {
  constructor(
    /** The number exactly as the model wrote it. */
    readonly digits: string,
  ) {}
}

/**
 * Reads arguments as `parseToolArguments` does, except that a number JS cannot hold is never
 * refused or turned into text: it is left in place as a {@link HeldNumber}, for
 * {@link settleHeld} to settle once the tool is known. Given `takesOnlyString` (a `call_tool`'s
 * inner tool known), a number token where that tool takes only a string is read as its text.
 * Throws what `parseToolArguments` throws for arguments that cannot be read.
 */
export function readHolding(
  raw: unknown,
  options: {
    finishReason?: string | undefined;
    name?: string;
    takesOnlyString?: ((path: ArgumentPath) => boolean) | undefined;
  } = {},
): { value: Record<string, unknown>; held: HeldNumber[] } {
  const parsed = parseToolArguments(raw, { ...options, takesString: () => true });
  const held: HeldNumber[] = [];
  for (const number of parsed.inexact) {
    // Read as the text written where the tool takes only a string: settled, nothing to hold.
    if (number.kind === "text") continue;
    const kept = new HeldNumber(number.digits);
    if (placeAt(parsed.value, number.path, kept)) held.push(kept);
  }
  return { value: parsed.value, held };
}

/** Sets `root` at `path` to `value` (an own data property, safe for `__proto__`); false when the path is not there. */
function placeAt(root: unknown, path: ArgumentPath, value: unknown): boolean {
  let node = root;
  for (const step of path.slice(0, -1)) {
    if (typeof node !== "object" || node === null) return false;
    node = (node as Record<string | number, unknown>)[step];
  }
  const last = path[path.length - 1];
  if (last === undefined || typeof node !== "object" || node === null || !Object.hasOwn(node, last))
    return false;
  Object.defineProperty(
    node,
    last,
    protoless({ value, enumerable: true, writable: true, configurable: true }),
  );
  return true;
}

/** True when `value` holds a {@link HeldNumber} anywhere (plain data; iterative, stops at the first). */
export function holdsHeld(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (item instanceof HeldNumber) return true;
    if (typeof item === "object" && item !== null) {
      for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push(child);
    }
  }
  return false;
}

/** JSON text of `value` with each held number written as the model's digits. */
export function exactArgumentsText(value: unknown): string {
  if (value instanceof HeldNumber) return value.digits;
  if (Array.isArray(value)) return `[${value.map((item) => exactArgumentsText(item ?? null)).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const parts: string[] = [];
    for (const [key, item] of Object.entries(value)) {
      if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
      parts.push(`${JSON.stringify(key)}:${exactArgumentsText(item)}`);
    }
    return `{${parts.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The value at `path` inside `root`, if there is one. */
function valueAt(root: unknown, path: ArgumentPath): unknown {
  let node = root;
  for (const step of path) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<string | number, unknown>)[step];
  }
  return node;
}

/** Where each held number sits inside `value` (the first place met). */
function heldPaths(value: unknown): Map<HeldNumber, ArgumentPath> {
  const paths = new Map<HeldNumber, ArgumentPath>();
  const walk = (node: unknown, path: (string | number)[]): void => {
    if (node instanceof HeldNumber) {
      if (!paths.has(node)) paths.set(node, [...path]);
    } else if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) walk(node[i], [...path, i]);
    } else if (typeof node === "object" && node !== null) {
      for (const [key, item] of Object.entries(node)) walk(item, [...path, key]);
    }
  };
  walk(value, []);
  return paths;
}

/**
 * True when `outer` holds a {@link HeldNumber} that `reached` (what settling the arguments the call
 * hands on gave) does not: a number outside what reaches the tool, for which the call is refused
 * as its own schema refused it.
 */
export function heldOutside(outer: unknown, reached: ReadonlyMap<HeldNumber, unknown>): boolean {
  for (const held of heldPaths(outer).keys()) if (!reached.has(held)) return true;
  return false;
}

/** A held call settled: its arguments as the tool takes them, or the refusal it is answered with. */
export type Settled =
  | { request: DispatchRequest; values: ReadonlyMap<HeldNumber, unknown> }
  | { refusal: string };

/**
 * Settles the numbers held in `request.args` by the schema of the tool it names, among `tools`,
 * exactly as a direct call of that tool is: its arguments are read again from their text with
 * the model's digits (`parseToolArguments` with `takesString` from that schema), so each number
 * becomes the digits as a string where the tool takes one, a long decimal its nearest double, and
 * anything else a refusal naming the path inside the tool's own arguments. `values` says what
 * each held number became. A request holding none is returned as it is.
 */
export function settleHeld(
  request: DispatchRequest,
  tools: Schemas | readonly ToolDefinition[] | undefined,
  said: string = request.name,
): Settled {
  if (!holdsHeld(request.args)) return { request, values: new Map() };
  const paths = heldPaths(request.args);
  const schemas = tools instanceof Map ? tools : schemasOf(tools as readonly ToolDefinition[] | undefined);
  const schema = schemas.get(request.name);
  try {
    const parsed = parseToolArguments(exactArgumentsText(request.args), {
      name: said,
      ...(schema === undefined ? {} : { takesString: (path: ArgumentPath) => takesStringAt(schema, path) }),
    });
    const values = new Map<HeldNumber, unknown>();
    for (const [held, path] of paths) values.set(held, valueAt(parsed.value, path));
    return { request: { ...request, args: parsed.value }, values };
  } catch (error) {
    if (!ToolArgumentsError.isInstance(error)) throw error;
    return { refusal: error.message };
  }
}

/** What kind of value JSON would lose without a word: `{}` for a Map or Set, dropped or source text for the rest. */
function unheldKind(value: unknown): string | undefined {
  if (typeof value === "function") return "function";
  if (typeof value === "symbol") return "symbol";
  if (typeof value === "bigint") return "bigint";
  if (value instanceof Map) return "Map";
  if (value instanceof Set) return "Set";
  if (value instanceof WeakMap) return "WeakMap";
  if (value instanceof WeakSet) return "WeakSet";
  return undefined;
}

function cannotHold(name: string, why: string): TypeError {
  return new TypeError(`the ${name} tool returned ${why}; return a string or plain data.`);
}

/**
 * What the model reads of a tool's result: a string as it is, anything else as JSON (nothing, as
 * `""`, which the call is then answered with `NO_OUTPUT` for). Throws (so the call is answered as
 * failed, with the reason) for a value JSON cannot hold — a circular object, a BigInt, a function,
 * a symbol, or a Map or Set anywhere inside (which JSON would write `{}`, its data lost) — rather
 * than answering `[object Object]`, `{}` or a function's source as a success. A returned Error is
 * thrown as it is, so it is answered as a thrown one (`Error: <message>`); one inside the result (a
 * `{ ok: false, error }`, an `allSettled` entry) is written as the text `<name>: <message>`, or
 * with fields of its own as `{ name, message, …fields }` (`nestedError`), passed through `clean`
 * (the `redact` option), the rest of the result as it was — an Error so even when it has a
 * `toJSON` of its own (axios's `AxiosError` returns its request's `config`, headers and all), as
 * JSON would otherwise write what that returns; any other object's `toJSON` is what it says.
 */
function asContent(value: unknown, name: string, clean: Clean = AS_IS): string {
  if (typeof value === "string") return value;
  if (value === undefined) return "";
  if (value instanceof Error) throw value;
  const kind = unheldKind(value);
  if (kind !== undefined) throw cannotHold(name, `a ${kind}, which JSON cannot hold`);
  const writing: Writing = { name, clean, within: new Set() };
  let json: string | undefined;
  try {
    json = JSON.stringify(jsonReady(value, "", writing));
  } catch (error) {
    if (error === writing.inside) throw error;
    throw cannotHold(name, `a value JSON cannot hold (${errorMessage(error)})`);
  }
  return json ?? String(value);
}

/** What `jsonReady` carries down a result. */
interface Writing {
  name: string;
  clean: Clean;
  /** The objects and lists being written, outermost first: one met again inside itself is a cycle. */
  within: Set<object>;
  /** The error thrown for a Map or Set inside the result, thrown on as it is. */
  inside?: TypeError | undefined;
}

/** `JSON.rawJSON`'s test (Node 21 and later), where there is one. */
const isRawJSON = (JSON as { isRawJSON?: (value: unknown) => boolean }).isRawJSON;

/**
 * `value` (found under `key`) as `JSON.stringify` would see it, made ready for it: each Error, read
 * before JSON would ask for its `toJSON`, written by `nestedError`; any other value's `toJSON` called
 * as JSON calls it (the Error it may return written so too); a Map or Set refused; each list and
 * object copied with its items made ready, which JSON then writes as it would have written the
 * original (a function or symbol dropped, or `null` in a list). Every field is read once. Throws,
 * as JSON would, for a cycle, and for what reading the value throws.
 */
function jsonReady(value: unknown, key: string, writing: Writing): unknown {
  if (isError(value)) return nestedError(value, writing.clean);
  let item = value;
  if ((typeof item === "object" && item !== null) || typeof item === "function" || typeof item === "bigint") {
    const toJSON = (item as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === "function") {
      item = toJSON.call(item, key);
      if (isError(item)) return nestedError(item, writing.clean);
    }
  }
  if (typeof item === "function" || typeof item === "symbol") return undefined;
  if (typeof item !== "object" || item === null) return item;
  if (item instanceof Map || item instanceof Set) {
    writing.inside = cannotHold(
      writing.name,
      `a ${unheldKind(item)}, which JSON cannot hold, inside its result`,
    );
    throw writing.inside;
  }
  if (item instanceof Number) return Number(item);
  if (item instanceof String) return String(item);
  if (item instanceof Boolean || item instanceof BigInt) return item.valueOf();
  if (isRawJSON?.(item)) return item;
  if (writing.within.has(item))
    throw new TypeError("circular: a value in it refers back to one that holds it");
  writing.within.add(item);
  try {
    if (Array.isArray(item)) {
      const list: unknown[] = [];
      for (let at = 0; at < item.length; at++) list.push(jsonReady(item[at], String(at), writing));
      return list;
    }
    const copy: Record<string, unknown> = {};
    for (const field of Object.keys(item)) {
      const ready = jsonReady((item as Record<string, unknown>)[field], field, writing);
      if (ready === undefined) continue;
      if (field === "__proto__") {
        Object.defineProperty(
          copy,
          field,
          protoless({
            value: ready,
            enumerable: true,
            writable: true,
            configurable: true,
          }),
        );
      } else copy[field] = ready;
    }
    return copy;
  } finally {
    writing.within.delete(item);
  }
}

/** An Error's own fields its text (`errorMessage`) already says, or that JSON has no use for. */
const SAID_FIELDS = new Set(["name", "message", "stack", "cause"]);
/**
 * Fields an HTTP client's error carries (axios, got, undici): the request that was sent (with the
 * tool's own credentials in its headers), the response, sockets. Never the model's business.
 */
const TRANSPORT_FIELDS = new Set(["config", "request", "response", "headers", "socket", "agent", "options"]);
/** How deep, and how many values in all, an error's own fields are written before one is left out. */
const MAX_FIELD_DEPTH = 6;
const MAX_FIELD_VALUES = 500;
/** What `plainData` answers for a value it leaves out. */
const LEFT_OUT: unique symbol = Symbol("left out");

/**
 * An Error inside a tool's result as the model reads it: `<name>: <message>`, the message said as a
 * thrown error's is (`errorMessage`: its status, its cause's code) rather than JSON's `{}`. An
 * error with fields of its own besides those (a validation error's `issues`, a system error's
 * `code` and `path`) is written `{ name, message, …fields }` instead, so the details the model needs
 * to correct its call are kept. Only plain data is written (text, numbers, booleans, null, and
 * lists and plain objects of them, Dates as ISO times, to a bounded depth and size): a field
 * holding anything else (a request object, a socket, a cycle) or whose reading throws is left out
 * rather than failing the result, an HTTP client's `config`, `request`, `response` and `headers`
 * always are, a value under a name that reads as a credential's (`authorization`, `apiKey`,
 * `token`), at any depth, is `[redacted]`, and every string goes through `clean` as the message does.
 */
function nestedError(error: Error, clean: Clean): string | Record<string, unknown> {
  const said = errorMessage(error);
  const named = readField(error, "name");
  const name = typeof named === "string" && named !== "" ? named : "Error";
  const text = wellFormed(clean(said === name ? name : `${name}: ${said}`));
  const fields: Record<string, unknown> = {};
  const budget = { left: MAX_FIELD_VALUES };
  let keys: string[];
  try {
    keys = Object.keys(error);
  } catch {
    return text; // a Proxy whose ownKeys trap throws: its message is all that can be said
  }
  for (const key of keys) {
    if (SAID_FIELDS.has(key) || TRANSPORT_FIELDS.has(key)) continue;
    const value = readField(error, key);
    if (value === LEFT_OUT || (key === "status" && typeof value === "number")) continue;
    const data = credentialName(key) ? hidden(value) : plainData(value, clean, 0, budget, new Set());
    if (data !== LEFT_OUT) fields[key] = data;
  }
  if (Object.keys(fields).length === 0) return text;
  return { name, message: wellFormed(clean(said)), ...fields };
}

/** A field's value, or `LEFT_OUT` where reading it throws (a getter, a Proxy's trap). */
function readField(holder: object, key: string | number): unknown {
  try {
    return (holder as Record<string | number, unknown>)[key];
  } catch {
    return LEFT_OUT;
  }
}

/** True for a field name that reads as a credential's (`authorization`, `apiKey`, `token`); an error's `code` is none. */
function credentialName(key: string): boolean {
  return key !== "code" && isCredentialParam(key);
}

/** What stands for a credential's value: `[redacted]`, or an empty one as it was. */
function hidden(value: unknown): unknown {
  return value === null || value === undefined || value === "" ? value : REDACTED;
}

/**
 * `value` as plain data for the model (strings through `clean`, an Error as its text, a Date as its
 * ISO time, a value under a credential's name `[redacted]`), or `LEFT_OUT` for anything that is not
 * plain data: a class instance, a function, a cycle's way back, a value past the depth bound, or one
 * whose reading throws. A list or object loses only what is left out of it; past the size bound a
 * list ends with "… N more" and an object with a "…" entry saying how many fields were left.
 */
function plainData(
  value: unknown,
  clean: Clean,
  depth: number,
  budget: { left: number },
  within: Set<object>,
): unknown {
  budget.left--;
  if (typeof value === "string") return wellFormed(clean(value));
  if (typeof value === "boolean" || value === null) return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : LEFT_OUT;
  if (typeof value !== "object" || depth >= MAX_FIELD_DEPTH || within.has(value)) return LEFT_OUT;
  within.add(value);
  try {
    if (value instanceof Error) {
      const said = errorMessage(value);
      const named = readField(value, "name");
      const name = typeof named === "string" && named !== "" ? named : "Error";
      return wellFormed(clean(said === name ? said : `${name}: ${said}`));
    }
    if (value instanceof Date) return Number.isNaN(value.getTime()) ? LEFT_OUT : value.toISOString();
    if (Array.isArray(value)) {
      const items: unknown[] = [];
      for (let at = 0; at < value.length; at++) {
        if (budget.left <= 0) {
          items.push(`… ${value.length - at} more`);
          break;
        }
        const item = plainData(readField(value, at), clean, depth + 1, budget, within);
        if (item !== LEFT_OUT) items.push(item);
      }
      return items;
    }
    // Plain data: no prototype, any realm's `Object.prototype` (an object a `node:vm` sandbox
    // made), or the prototype `@loopwright/tools` and `@loopwright/agent` give arguments declaring
    // an inherited name such as `constructor` (`isPlainPrototype`); any other is a class instance's.
    if (!isPlainPrototype(Object.getPrototypeOf(value))) return LEFT_OUT;
    const out: Record<string, unknown> = {};
    const keys = Object.keys(value);
    for (let at = 0; at < keys.length; at++) {
      const key = keys[at] as string;
      if (budget.left <= 0) {
        out["…"] = `${keys.length - at} more fields`;
        break;
      }
      const item = readField(value, key);
      if (item === LEFT_OUT) continue;
      const data = credentialName(key) ? hidden(item) : plainData(item, clean, depth + 1, budget, within);
      if (data !== LEFT_OUT) out[key] = data;
    }
    return out;
  } catch {
    // A Proxy whose traps throw: nothing of it can be read.
    return LEFT_OUT;
  } finally {
    within.delete(value);
  }
}

/**
 * `text` with each lone surrogate (a host's output cap that cut an emoji in half) written U+FFFD:
 * JSON.stringify sends one as an escape that llama.cpp's JSON reader refuses (a 500 on every later
 * request of the run), as do other strict readers.
 */
function wellFormed(text: string): string {
  return text.toWellFormed();
}

function cutOff(name: string): string {
  return (
    `The turn ended before the server said it was finished (no finish reason), so the arguments for the ${name} ` +
    "call may be cut off, and the call was not run. Call it again if it is still needed."
  );
}

type Schemas = ReadonlyMap<string, unknown>;

/** Both fields own, so a `refusal` only `Object.prototype` holds is never read as one. */
interface Restored<T> {
  args: T;
  refusal: string | undefined;
}

/**
 * `args` restored for the tool (`restoreArguments`), and — where a value the sanitized schema asked
 * for as JSON text came back as text that is not what the tool's own schema takes there — the
 * answer that refuses the call (never run: the tool would be handed a string where it takes an
 * object or an array).
 */
function restored<T>(name: string, args: T, schema: unknown): Restored<T> {
  const unread: string[] = [];
  const out = restoreArguments(args, schema, { onUnread: (path) => unread.push(path) });
  if (unread.length === 0) return { args: out, refusal: undefined };
  const places = [...new Set(unread)].map((path) => JSON.stringify(path)).join(", ");
  return {
    args: out,
    refusal:
      `The ${name} call was not run: ${unread.length === 1 ? "the argument" : "the arguments"} ${places} must be ` +
      "JSON text of the object or array the tool takes there, and what was written does not read as one. " +
      "Call it again with that value written as JSON text.",
  };
}

function schemasOf(tools: readonly ToolDefinition[] | undefined): Schemas {
  const schemas = new Map<string, unknown>();
  for (const tool of tools ?? []) {
    if (tool?.function?.parameters !== undefined) schemas.set(tool.function.name, tool.function.parameters);
  }
  return schemas;
}

/**
 * The name a call that named no tool is replayed under: OpenAI refuses an empty `function.name`
 * in the history ("Expected a string with minimum length 1").
 */
const UNNAMED = "unnamed_tool";

/** Harmony's role and channel words: what comes before the markup in a name that names no tool. */
const HARMONY_WORDS = new Set(["assistant", "analysis", "commentary", "final", "functions"]);

/**
 * The tool name a call's name holds when only gpt-oss's Harmony markup is around it: `""` for a
 * name that is markup alone or a Harmony role or channel word before it (`assistant<|channel|>analysis`,
 * which Ollama has handed over as a call's name: the model's reasoning read as a call), the part
 * before the markup otherwise; the name as written when it holds no markup.
 */
export function harmonyHead(name: string): string {
  const trimmed = name.trim();
  const markup = trimmed.indexOf("<|");
  if (markup < 0) return trimmed;
  const head = trimmed
    .slice(0, markup)
    .trim()
    .replace(/^functions\.?/, "");
  return HARMONY_WORDS.has(head.toLowerCase()) ? "" : head;
}

/** A name that holds no tool's name: blank, or Harmony markup with no tool's name before it. */
function namesNoTool(name: string, schemas: Schemas): boolean {
  return !schemas.has(name) && harmonyHead(name) === "";
}

function unnamed(name: string): string {
  return (
    `This call named no tool${name === "" ? "" : ` (only ${quotedName(name)})`}, so nothing was run. ` +
    "Call one of the declared tools by its name."
  );
}

/** How much of a tool's name the loop's own words echo: one the model made up can be any size. */
const ECHOED_NAME_CHARS = 60;

/**
 * C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the bidirectional marks,
 * embeddings, overrides and isolates: what an echoed name writes as `\uXXXX` (the set
 * `@loopwright/tools` escapes in an unknown tool's name, and `@loopwright/tools-mcp` in its errors).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const ECHO_ESCAPED = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
/** `ECHO_ESCAPED` without its global flag: a test that keeps no `lastIndex` between names. */
const ECHO_FOUND = new RegExp(ECHO_ESCAPED.source);

/**
 * A name the model wrote as a JSON string (its quotes and backslashes escaped, so its end is plain),
 * cut to 60 characters with its length said, half a surrogate pair written U+FFFD, and each of
 * `ECHO_ESCAPED` written `\uXXXX`: a 10 MB name is not sent back whole on every later request, and
 * a right-to-left override or a terminal's escape in it does not turn the loop's words around it
 * where a host shows them.
 */
function quotedName(name: string): string {
  const sound = name.toWellFormed();
  const last = sound.charCodeAt(ECHOED_NAME_CHARS - 1);
  const cut =
    sound.length <= ECHOED_NAME_CHARS
      ? sound
      : `${sound.slice(0, last >= 0xd800 && last <= 0xdbff ? ECHOED_NAME_CHARS - 1 : ECHOED_NAME_CHARS)}… (${name.length} characters)`;
  return JSON.stringify(cut).replace(
    ECHO_ESCAPED,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * A tool's name as the loop's own words to the model say it ("the add tool did not finish…"): as it
 * is where a tool could be named so (60 characters at most, nothing `quotedName` escapes), quoted
 * as `quotedName` writes it otherwise — in eager mode a name no tool has reaches `dispatch`, and the
 * model may have written anything there.
 */
function echoedName(name: string): string {
  return name.length <= ECHOED_NAME_CHARS && name.isWellFormed() && !ECHO_FOUND.test(name)
    ? name
    : quotedName(name);
}

/** How the loop's words name a tool, given the host's name for it (see `speakerOf`). */
type Speak = (name: string) => string;

/** The wire names `speakingWire` gave an options object: host name → the name the request declared. */
const WIRE_NAMES = new WeakMap<object, ReadonlyMap<string, string>>();

/**
 * `options`, with the loop's own words in the answers (`the fs.read tool did not finish…`, `the
 * arguments for the fs.read call…`) naming each tool as the request declared it to the model
 * (`toWire`: host name → wire name, `fs.read` → `fs_read`) rather than as the host does, which
 * the model never saw. What `dispatch`, the watchers and the outcomes are handed keeps the host's.
 */
export function speakingWire<O extends RunCallsOptions>(options: O, toWire: ReadonlyMap<string, string>): O {
  WIRE_NAMES.set(options, toWire);
  return options;
}

/**
 * How a step's answers name a tool: a declared one by the name the request gave it (the wire's,
 * where `speakingWire` gave one; a legal name, whole whatever its length), any other as the model
 * wrote it, through `echoedName`.
 */
function speakerOf(toWire: ReadonlyMap<string, string> | undefined, tools: RunCallsOptions["tools"]): Speak {
  const declared = new Set<string>();
  for (const tool of tools ?? []) {
    const name: unknown = tool?.function?.name;
    if (typeof name === "string") declared.add(name);
  }
  return (name) => {
    const wire = toWire?.get(name) ?? name;
    return declared.has(name) ? wire : echoedName(wire);
  };
}

function prepare(
  call: AssistantToolCall,
  finishReason: string | undefined,
  schemas: Schemas,
  routing = false,
  speak: Speak = echoedName,
): Prepared {
  const name = call.function.name ?? "";
  const said = speak(name);
  const raw = call.function.arguments ?? "";
  if (namesNoTool(name, schemas)) {
    // Never dispatched: there is no tool to run. Its arguments are replayed as read, or as {}.
    let json = "{}";
    try {
      json = parseToolArguments(raw, { finishReason, name: UNNAMED, takesString: () => true }).json;
    } catch {
      // Unreadable as well: {} as any unreadable call is replayed.
    }
    return made({
      call: { id: call.id, type: "function", function: { name: UNNAMED, arguments: json } },
      request: { id: call.id, name, args: {}, raw },
      json,
      unreadable: unnamed(name),
    });
  }
  const schema = schemas.get(name);
  try {
    // A number JS cannot hold reaches the tool as the model's digits where its schema takes a
    // string there, and is refused (answered, never run) elsewhere; any number token where it
    // takes only a string (a zip code written 02134) reaches it as the text written.
    const parsed = parseToolArguments(raw, {
      finishReason,
      name: said,
      ...(schema === undefined
        ? {}
        : {
            takesString: (path: ArgumentPath) => takesStringAt(schema, path),
            takesOnlyString: (path: ArgumentPath) => takesOnlyStringAt(schema, path),
          }),
    });
    const back: Restored<typeof parsed.value> =
      schema === undefined
        ? { args: parsed.value, refusal: undefined }
        : restored(said, parsed.value, schema);
    const args = back.args;
    const unreadable = finishReason === "" ? cutOff(said) : back.refusal;
    return made({
      call: { id: call.id, type: "function", function: { name, arguments: parsed.json } },
      request: { id: call.id, name, args, raw },
      // What the dedupe compares: the arguments the tool is handed (a dropped null and a left-out
      // parameter reach it the same), as a proxied call's inner arguments are.
      json: args === parsed.value ? parsed.json : JSON.stringify(args),
      ...(unreadable === undefined ? {} : { unreadable }),
    });
  } catch (error) {
    if (!ToolArgumentsError.isInstance(error)) throw error;
    // A call the route may hand to another tool (call_tool, another spelling) keeps its numbers
    // held until that tool's schema settles them.
    if (routing && error.kind === "inexact" && finishReason !== "") {
      const read = readHolding(raw, { finishReason, name: said });
      return made({
        call: { id: call.id, type: "function", function: { name, arguments: "{}" } },
        request: { id: call.id, name, args: read.value, raw },
        json: "{}",
        held: { refusal: error.message, numbers: read.held },
      });
    }
    // Replayed as {}: a server that parses replayed arguments refuses the originals on every later request.
    return made({
      call: { id: call.id, type: "function", function: { name, arguments: "{}" } },
      request: { id: call.id, name, args: {}, raw },
      json: "{}",
      unreadable: finishReason === "" ? cutOff(said) : error.message,
    });
  }
}

/** A call answered with `refusal` and never run; replayed as `{}`, as unreadable arguments are. */
function refused(p: Prepared, refusal: string): Prepared {
  return made({
    call: { ...p.call, function: { ...p.call.function, arguments: "{}" } },
    request: { ...p.request, args: {} },
    json: "{}",
    unreadable: refusal,
  });
}

/** A call whose held numbers reach no other tool: refused, as its own schema refused them. */
function refusedAsWritten(p: Prepared): Prepared {
  return p.held ? refused(p, p.held.refusal) : p;
}

/**
 * A readable call as `route` decides: as it was, another call under its id, or answered by the
 * loop. Numbers held for the route are settled by the tool the call reaches.
 */
function routed(
  p: Prepared,
  route: RunCallsOptions["route"],
  schemas: Schemas,
  speak: Speak = echoedName,
): Prepared {
  if (!route) return p;
  if (p.unreadable !== undefined) {
    // Answered by the loop for its name where the name alone decides (one outside the catalogue),
    // as the same call with readable arguments is: its arguments would not matter once readable.
    // Replayed as it was prepared (`{}` for arguments that could not be read). A call that named no
    // tool keeps its own answer.
    if (p.call.function.name === UNNAMED) return p;
    const byName = NAME_ANSWERS.get(route)?.(p.request);
    return byName ? { ...p, unreadable: undefined, answer: byName.answer, onRun: byName.onRun } : p;
  }
  const decision = route(p.request);
  if (decision === undefined) return refusedAsWritten(p);
  if (hasOwnKey(decision, "answer")) return { ...p, answer: decision.answer, onRun: decision.onRun };
  if (decision.dispatch === p.request) return p.held ? refusedAsWritten(p) : { ...p, onRun: decision.onRun };
  const rewritten = p.held ? undefined : asWrittenFor(p.request, decision.dispatch, schemas);
  const call =
    rewritten?.json === undefined
      ? p.call
      : { ...p.call, function: { ...p.call.function, arguments: rewritten.json } };
  const inner = rewritten?.inner ?? decision.dispatch;
  const settled = settleHeld(inner, schemas, speak(inner.name));
  if (hasOwnKey(settled, "refusal")) return refused(p, settled.refusal);
  // A number the call held outside what reaches the tool is refused as the call's own schema refused it.
  if (p.held?.numbers.some((held) => !settled.values.has(held))) return refusedAsWritten(p);
  const schema = schemas.get(inner.name);
  const back: Restored<typeof settled.request.args> =
    schema === undefined
      ? { args: settled.request.args, refusal: undefined }
      : restored(speak(inner.name), settled.request.args, schema);
  const args = back.args;
  const unreadable = p.unreadable ?? back.refusal;
  const written = p.held ? exactJsonOf(p.request.args, settled.values) : undefined;
  return made({
    call: written === undefined ? call : { ...call, function: { ...call.function, arguments: written } },
    request: { ...settled.request, id: p.request.id, args },
    json: JSON.stringify(args),
    ...(unreadable === undefined ? {} : { unreadable }),
    ...(decision.onRun ? { onRun: decision.onRun } : {}),
  });
}

/**
 * The call a route hands on (`inner`, a `call_tool`'s tool) with its arguments read again from the
 * model's text by that tool's schema, so a number token where it takes only a string (`02134`)
 * reaches it as the text written, as when the tool is called directly; with the outer call's
 * arguments as they now read (`json`). Undefined where nothing would change, or where the inner
 * arguments are not found in the text (written beside the name rather than under a key), or
 * hold a number the inner schema refuses (settled as before).
 */
function asWrittenFor(
  outer: DispatchRequest,
  inner: DispatchRequest,
  schemas: Schemas,
): { inner: DispatchRequest; json?: string } | undefined {
  const schema = schemas.get(inner.name);
  if (schema === undefined || typeof outer.raw !== "string") return undefined;
  const text = (parsed: { inexact: readonly { kind: string }[] }) =>
    parsed.inexact.some((n) => n.kind === "text");
  try {
    for (const [key, value] of Object.entries(outer.args)) {
      if (value === inner.args) {
        // Under a key of the outer arguments: that part of the model's text, read by the inner schema.
        const under = (ask: (schema: unknown, path: ArgumentPath) => boolean) => (path: ArgumentPath) =>
          path[0] === key && path.length > 1 && ask(schema, path.slice(1));
        const parsed = parseToolArguments(outer.raw, {
          takesString: under(takesStringAt),
          takesOnlyString: under(takesOnlyStringAt),
        });
        const args = parsed.value[key];
        if (!text(parsed) || typeof args !== "object" || args === null || Array.isArray(args))
          return undefined;
        const read = args as Record<string, unknown>;
        return { inner: { ...inner, args: read, raw: JSON.stringify(read) }, json: parsed.json };
      }
      if (typeof value === "string" && value === inner.raw) {
        // JSON text in a string: read again by the inner schema.
        const parsed = parseToolArguments(value, {
          takesString: (path) => takesStringAt(schema, path),
          takesOnlyString: (path) => takesOnlyStringAt(schema, path),
        });
        return text(parsed) ? { inner: { ...inner, args: parsed.value } } : undefined;
      }
    }
  } catch (error) {
    if (!ToolArgumentsError.isInstance(error)) throw error;
  }
  return undefined;
}

/**
 * A call with each lone surrogate in its arguments — a key or a string, written by the model as an
 * escape (`"\\ud800"`) that parsing made half a pair — written U+FFFD: in what the tool is handed
 * (an MCP server's JSON reader, a Python tool encoding to UTF-8, refuses it) and in the arguments
 * text replayed on every later request (llama.cpp's JSON reader refuses the escape with a 500).
 */
function wellFormedCall(p: Prepared): Prepared {
  const text = wellFormedJson(p.call.function.arguments);
  const args = hasLoneSurrogate(p.request.args)
    ? (wellFormedValue(p.request.args) as DispatchRequest["args"])
    : undefined;
  if (text === p.call.function.arguments && args === undefined) return p;
  return {
    ...p,
    call: { ...p.call, function: { ...p.call.function, arguments: text } },
    ...(args === undefined ? {} : { request: { ...p.request, args } }),
    json: wellFormedJson(p.json),
  };
}

/** JSON text with each escape of half a surrogate pair (and each lone surrogate itself) written as U+FFFD. */
function wellFormedJson(text: string): string {
  if (!text.includes("\\u")) return text.toWellFormed();
  return text
    .replace(
      /\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|\\u(d[89a-f][0-9a-f]{2})|\\[\s\S]/gi,
      (written, _hi, _lo, lone) => (lone === undefined ? written : "\\ufffd"),
    )
    .toWellFormed();
}

/** Whether a string, key or element anywhere in plain data is not well-formed UTF-16. */
function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === "string") return !value.isWellFormed();
  if (Array.isArray(value)) return value.some(hasLoneSurrogate);
  if (!isPlainObject(value)) return false;
  return Object.keys(value).some(
    (key) => !key.isWellFormed() || hasLoneSurrogate((value as Record<string, unknown>)[key]),
  );
}

/** Plain data with every string and key well-formed; anything else (a held number) kept as it is. */
function wellFormedValue(value: unknown): unknown {
  return copyPlain(value, (text) => text.toWellFormed());
}

/** A copy of the plain data (objects and arrays) in `value`; anything else kept as it is. */
function plainCopy<T>(value: T): T {
  return copyPlain(value, (text) => text) as T;
}

function copyPlain(value: unknown, text: (text: string) => string): unknown {
  if (typeof value === "string") return text(value);
  if (Array.isArray(value)) return value.map((inner) => copyPlain(inner, text));
  if (!isPlainObject(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    // defineProperty: an own "__proto__" key stays a key, as JSON.parse made it, not the copy's prototype.
    Object.defineProperty(
      copy,
      text(key),
      protoless({
        value: copyPlain(inner, text),
        enumerable: true,
        writable: true,
        configurable: true,
      }),
    );
  }
  return copy;
}

function isPlainObject(value: unknown): value is object {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** JSON of a call's arguments with each held number replaced by what it was settled as. */
function exactJsonOf(args: unknown, values: ReadonlyMap<HeldNumber, unknown>): string {
  return JSON.stringify(args, (_key, value: unknown) =>
    value instanceof HeldNumber ? values.get(value) : value,
  );
}

/**
 * The calls as a transcript should replay them: arguments repaired into compact JSON, and `{}` for
 * arguments that could not be read (a server that parses replayed arguments refuses the originals
 * on every later request). What `runCalls` returns as `calls`, available before anything runs;
 * given the `tools`, a number JS cannot hold is replayed as the digits handed to the tool.
 */
export function replayable(
  toolCalls: ReadonlyArray<AssistantToolCall>,
  finishReason?: string,
  tools?: readonly ToolDefinition[],
): AssistantToolCall[] {
  return replayedCalls(toolCalls, finishReason, tools);
}

/**
 * {@link replayable}, with the calls routed as `runCalls` routes them: a number a `call_tool` (or
 * another spelling of a tool) holds is replayed as the tool it reaches settles it.
 */
export function replayedCalls(
  toolCalls: ReadonlyArray<AssistantToolCall>,
  finishReason?: string,
  tools?: readonly ToolDefinition[],
  route?: RunCallsOptions["route"],
): AssistantToolCall[] {
  const schemas = schemasOf(tools);
  return toolCalls.map(
    (call) => wellFormedCall(routed(prepare(call, finishReason, schemas, holds(route)), route, schemas)).call,
  );
}

/**
 * Runs one step's tool calls and answers every one of them, whatever happens: arguments that cannot
 * be read are answered with the reason (and replayed as `{}`), a throwing tool with its message, a
 * call the signal interrupted with `STOPPED_DURING`, and a call the run never reached with
 * `NOT_RUN`. An identical call (same name, same repaired arguments) is dispatched once per step and
 * its answer handed to the repeat under the repeat's own id, unless `dedupe` says otherwise; a call
 * that threw is forgotten, so asking again is a real retry. Calls run in order, or all at once with
 * `parallel`; the tool messages are in the calls' order either way. A stop is reported on
 * `stopped`, never thrown. Given `redact`, every error text a tool's failure puts in an answer goes
 * through it first. Throws only what the `dedupe` predicate throws (asked of every call
 * before any is told or dispatched, so nothing has run), a `RangeError` for a bad `timeoutMs` and a
 * `TypeError` for a `redact` that is not a function.
 */
export async function runCalls(
  toolCalls: ReadonlyArray<AssistantToolCall>,
  options: RunCallsOptions,
): Promise<RunCallsResult> {
  const toWire = WIRE_NAMES.get(options);
  // Its own fields only (never one a polluted Object.prototype holds: an inherited `parallel` or `dedupe`).
  options = ownView(options);
  const { signal, dispatch } = options;
  const limit = toolLimit(options.timeoutMs);
  const clean = cleanerOf(options.redact);
  const schemas = schemasOf(options.tools);
  const speak = speakerOf(toWire, options.tools);
  const prepared = toolCalls.map((call) =>
    wellFormedCall(
      routed(
        prepare(call, options.finishReason, schemas, holds(options.route), speak),
        options.route,
        schemas,
        speak,
      ),
    ),
  );
  // Asked of every call that may reach dispatch before any call is told or run: a predicate that
  // throws ends the step with nothing dispatched, rather than half the step run and the rest unanswered.
  const policy = options.dedupe ?? true;
  const sharing = new Map<Prepared, boolean>();
  for (const p of prepared) {
    if (p.unreadable === undefined && !p.answer) {
      sharing.set(p, typeof policy === "function" ? Boolean(policy(p.request)) : policy);
    }
  }
  const inFlight = new Map<string, Promise<Outcome>>();
  let stopped: unknown;

  const start = (p: Prepared): Promise<Outcome> => {
    if (p.unreadable !== undefined)
      return Promise.resolve({ ok: false, content: p.unreadable, source: "refused" });
    if (signal?.aborted) {
      stopped ??= signal.reason;
      return Promise.resolve({ ok: false, content: NOT_RUN, source: "refused" });
    }
    p.onRun?.();
    if (p.answer) return Promise.resolve({ ...p.answer, source: "loop" });
    const shared = sharing.get(p) === true;
    const key = `${p.request.name}\u0000${p.json}`;
    const existing = shared ? inFlight.get(key) : undefined;
    if (existing) return existing.then(({ ok, content }) => ({ ok, content, source: "repeat" }));
    const pending = runOne(dispatch, p.request, signal, limit, clean, speak(p.request.name)).then(
      (outcome) => {
        if (!outcome.ok) inFlight.delete(key);
        return outcome;
      },
    );
    if (shared) inFlight.set(key, pending);
    return pending;
  };
  const told = (p: Prepared, outcome: Outcome): CallResult => {
    const result: CallResult = { id: p.call.id, name: p.request.name, ...outcome };
    // A copy: a watcher that rewrites what it is told (an id, the content) changes neither the
    // transcript nor what the run reports.
    tell(options.onToolResult, { ...result });
    return result;
  };

  // A copy: a watcher that rewrites the request it is told of does not change what is dispatched.
  for (const p of prepared) tell(options.onToolCall, { ...p.request, args: plainCopy(p.request.args) });
  let outcomes: CallResult[];
  if (options.parallel) {
    outcomes = await Promise.all(prepared.map((p) => start(p).then((outcome) => told(p, outcome))));
  } else {
    outcomes = [];
    for (const p of prepared) outcomes.push(told(p, await start(p)));
  }
  if (signal?.aborted) stopped ??= signal.reason;
  const results: ChatMessage[] = outcomes.map((o) => ({
    role: "tool",
    tool_call_id: o.id,
    content: o.content,
  }));
  return {
    calls: prepared.map((p) => p.call),
    results,
    outcomes,
    // Always written (undefined where the signal stopped nothing): a host reading `stopped` of a
    // result without it would read a polluted `Object.prototype.stopped` as the step's stop.
    stopped,
  };
}

function toolLimit(ms: unknown): number | undefined {
  if (ms === undefined) return DEFAULT_TOOL_TIMEOUT_MS;
  if (typeof ms !== "number" || Number.isNaN(ms) || ms < 0) {
    throw new RangeError(`runCalls: timeoutMs must be a number of milliseconds from 0, got ${String(ms)}.`);
  }
  return ms === 0 || ms === Number.POSITIVE_INFINITY ? undefined : Math.min(ms, MAX_TIMER_MS);
}

function timedOut(name: string, ms: number): string {
  const s = ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
  return `Error: the ${name} tool did not finish within ${s} (toolTimeoutSeconds) and was stopped. Try it again with less to do, or do without it.`;
}

async function runOne(
  dispatch: Dispatch,
  request: DispatchRequest,
  signal: AbortSignal | undefined,
  limit: number | undefined,
  clean: Clean,
  said: string,
): Promise<Outcome> {
  const started = Date.now();
  // The call's own signal: the run's stop, or its time running out. Its own even with no time limit:
  // a tool that listens to the signal it is handed listens to its call's, and the calls in flight
  // share one listener on the run's (listenForAbort), so a step's eleventh call makes no
  // MaxListenersExceededWarning on a host's signal.
  const call = limit === undefined && !signal ? undefined : new AbortController();
  const unlink = call && signal ? listenForAbort(signal, () => call.abort(signal.reason)) : undefined;
  // A timer that comes due while the host's event loop was held up (a long synchronous task) runs
  // before the reads that came meanwhile — a tool's answer among them: the call is stopped one
  // round later, once those reads were taken (Node reads between two rounds of timers).
  let timer: ReturnType<typeof setTimeout> | undefined =
    call && limit !== undefined
      ? setTimeout(() => {
          timer = setTimeout(
            () => call.abort(new DOMException(`The ${request.name} tool ran out of time`, "TimeoutError")),
            0,
          );
        }, limit)
      : undefined;
  const callSignal = call?.signal ?? signal;
  try {
    const value = await raceSignal(
      Promise.resolve().then(() => dispatch(request, callSignal)),
      callSignal,
    );
    const content = wellFormed(asContent(value, said, clean));
    return {
      ok: true,
      content: content.trim() === "" ? NO_OUTPUT : content,
      source: "dispatched",
      ms: Date.now() - started,
    };
  } catch (error) {
    const ms = Date.now() - started;
    if (signal?.aborted) return { ok: false, content: STOPPED_DURING, source: "dispatched", ms };
    if (call?.signal.aborted && limit !== undefined) {
      return { ok: false, content: timedOut(said, limit), source: "dispatched", ms };
    }
    // The host's words: a failing tool often quotes the request it sent, credentials and all.
    // What cannot be read (a Proxy whose traps throw), or says nothing, is said so in the loop's words.
    const message = readErrorMessage(error);
    return {
      ok: false,
      content:
        message === undefined
          ? `Error: the ${said} tool failed with ${UNREADABLE_ERROR}.`
          : message.trim() === ""
            ? `Error: the ${said} tool failed without saying why.`
            : `Error: ${wellFormed(clean(message))}`,
      source: "dispatched",
      ms,
    };
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    unlink?.();
  }
}

function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    // One listener per signal however many calls and runs share it (no MaxListenersExceededWarning).
    const stop = listenForAbort(signal, () => reject(signal.reason));
    promise.then(
      (value) => {
        stop();
        resolve(value);
      },
      (error: unknown) => {
        stop();
        reject(error);
      },
    );
  });
}
