import { inspect, types } from "node:util";
import { orderTools, relaxTools } from "@loopwright/schema-compat";
import { type EndpointCapabilities, effortFor, type ModelCapabilities } from "./capabilities.js";
import { own } from "./own.js";
import { withTemplateRoles } from "./template-roles.js";
import { shortToolCallIds } from "./tool-call-ids.js";
import { wellFormedItems } from "./well-formed.js";

/** The model settings `buildBody` reads (a structural subset of any host's config). */
export interface ModelParams {
  /** The model's name at the endpoint. */
  model: string;
  /** Sampling temperature, a finite number; sent only while the model lets the caller pick it. */
  temperature?: number | undefined;
  /** Reply ceiling in tokens, a whole number; absent or `0` sends none. */
  maxTokens?: number | undefined;
  /** `"none"`…`"high"` (or any value the server takes); absent or `"off"` sends none. */
  reasoningEffort?: string | undefined;
  /**
   * Fields this interface cannot spell (`top_k`, `min_p`, llama.cpp's `id_slot`…), merged last.
   * May override `temperature`; never `model`, `messages`, `stream` or `tools` (`buildBody` refuses
   * an `extraBody` setting one). A plain object (a `Map` or a class's instance is refused, as
   * `checkExtraBody` says).
   */
  extraBody?: Record<string, unknown> | undefined;
}

/** How deep a prototype chain {@link ownParam} follows: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/** `config[name]` where the config or a prototype of its own holds it; never `Object.prototype`'s. */
function ownParam(config: object, name: string): unknown {
  let at: object | null = config;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    if (Object.hasOwn(at, name)) return (config as Record<string, unknown>)[name];
    at = Object.getPrototypeOf(at) as object | null;
  }
  return undefined;
}

/** The `ModelParams` fields of `config`, each read once by {@link ownParam}; a non-object as it is. */
function paramsOf<C extends ModelParams>(config: C): C {
  if (typeof config !== "object" || config === null) return config;
  // Every field set (an absent one as undefined): left out, it would read through Object.prototype again.
  const read: Record<string, unknown> = {};
  for (const name of ["model", "temperature", "maxTokens", "reasoningEffort", "extraBody"]) {
    read[name] = ownParam(config, name);
  }
  return read as C;
}

/**
 * A function tool as the chat-completions API declares it. The `openai` SDK's
 * `ChatCompletionFunctionTool` is one (`strict: boolean | null` included), and so is what
 * `@loopwright/schema-compat`'s `sanitizeTools` hands back for a function tool. Also what
 * `buildBody` sends, so its optional fields do not admit `undefined` (the SDK's do not).
 */
export interface ToolDefinition {
  type: "function";
  function: {
    name: string;
    description?: string;
    parameters?: { [keyword: string]: unknown };
    strict?: boolean | null;
  };
}

/**
 * A tool of the chat-completions API's other type, `custom` (free-form text input): the `openai`
 * SDK's `ChatCompletionCustomTool` is one. `buildBody` sends it as given — never relaxed, never
 * checked past its `type` — so a host's `ChatCompletionTool[]` goes in without a cast.
 */
export interface CustomToolDefinition {
  type: "custom";
  custom: { name: string; description?: string; format?: unknown };
}

/** Any tool entry `buildBody` takes: a function tool or a custom one (the SDK's `ChatCompletionTool`). */
export type AnyToolDefinition = ToolDefinition | CustomToolDefinition;

/**
 * Which tools the model may call on one request, as the chat-completions API spells `tool_choice`:
 * `"auto"` (the model decides), `"none"` (answer in text), `"required"` (call at least one), or
 * one function by name. The `openai` SDK's `ChatCompletionToolChoiceOption` for function tools.
 */
export type ToolChoice = "auto" | "none" | "required" | { type: "function"; function: { name: string } };

const CHOICE_WORDS = new Set(["auto", "none", "required"]);

/**
 * Whether a value is one of the four forms of `tool_choice`: `"auto"`, `"none"`, `"required"`, or
 * `{ type: "function", function: { name } }` with a non-empty name. Never throws.
 */
export function isToolChoice(value: unknown): value is ToolChoice {
  if (typeof value === "string") return CHOICE_WORDS.has(value);
  if (!isRecord(value) || value.type !== "function" || !isRecord(value.function)) return false;
  const name = value.function.name;
  return typeof name === "string" && name !== "";
}

/** `value` as JSON for a message; what JSON cannot show (a bigint, a cycle) as Node inspects it. */
function shown(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return inspect(value, { depth: 3, breakLength: Number.POSITIVE_INFINITY });
  }
}

/**
 * How `buildBody` orders the tool array: by name (default), the caller's order (`false`), or a
 * comparator. `Tool` is the tools' type, so a comparator over a `ChatCompletionTool[]` is handed
 * the custom tools too.
 */
export type ToolOrder<Tool = ToolDefinition> = boolean | Comparator<Tool> | undefined;

// Method syntax, so its parameters are compared both ways: a comparator written for function
// tools (`(a: ToolDefinition, b: ToolDefinition) => number`) is still an order where the tools'
// type is wider (`Parameters<typeof buildBody>[5]` reads it at its constraint).
type Comparator<Tool> = { compare(a: Tool, b: Tool): number }["compare"];

/** `buildBody`'s last argument in its longer form: the tool order and one request's `tool_choice`. */
export interface BuildBodyOptions<Tool = ToolDefinition> {
  /** How the tools are ordered: by name when absent or `true`, as given with `false`, or a comparator. */
  order?: ToolOrder<Tool> | undefined;
  /** This request's `tool_choice`, sent only beside tools (see `buildBody`). */
  toolChoice?: ToolChoice | undefined;
}

const OPTION_NAMES = new Set(["order", "toolChoice"]);

/**
 * The order and tool choice `buildBody`'s last argument holds, which is a `ToolOrder` or a
 * `BuildBodyOptions` (`null` is none). Refuses anything else, an option it does not know (a
 * misspelt one would be ignored and the request sent otherwise than meant), an order that is not
 * one, and a `toolChoice` that is none of the four forms, each by name.
 */
function readLast(last: unknown): { order: ToolOrder; toolChoice: ToolChoice | undefined } {
  if (last === undefined || last === null) return { order: undefined, toolChoice: undefined };
  if (typeof last === "boolean" || typeof last === "function") {
    return { order: last as ToolOrder, toolChoice: undefined };
  }
  if (!isRecord(last)) {
    throw new TypeError(
      "buildBody: the last argument must be a tool order (true, false or a comparator) or " +
        `{ order?, toolChoice? }; got ${shown(last)}.`,
    );
  }
  for (const name of Object.keys(last)) {
    if (!OPTION_NAMES.has(name)) {
      throw new TypeError(
        `buildBody: options has no ${JSON.stringify(name)}; it takes order and toolChoice.`,
      );
    }
  }
  // Its own fields, never a polluted Object.prototype's (an inherited `order` refused every call).
  const order = own(last, "order");
  const toolChoice = own(last, "toolChoice");
  if (order !== undefined && typeof order !== "boolean" && typeof order !== "function") {
    throw new TypeError(
      `buildBody: options.order must be true (by name), false (as given) or a comparator; got ${shown(order)}.`,
    );
  }
  if (toolChoice !== undefined && !isToolChoice(toolChoice)) {
    throw new TypeError(
      'buildBody: options.toolChoice must be "auto", "none", "required" or { type: "function", function: { name } } ' +
        `with a tool's name; got ${shown(toolChoice)}.`,
    );
  }
  return { order: order as ToolOrder, toolChoice };
}

/**
 * A rung of `EFFORT_LADDER`: a `reasoning_effort` `buildBody` may climb to from the one asked once
 * the model refused that (`effortFor`).
 */
export type EffortRung = "none" | "minimal" | "low" | "medium" | "high";

/** The roles a message type spells out: `string` for one whose `role` is any string, `never` for one with none. */
type RolesOf<M> = M extends { role: infer Role } ? Role : never;

/** The tool message a loop adds to a transcript, as it writes it. */
type LoopToolMessage = { role: "tool"; tool_call_id: string; content: string };

/**
 * `true` when a member of `M` takes the loop's tool message written as an object literal: its
 * fields assign to the member, and the member names `tool_call_id` (a literal with a field its
 * type does not name is refused), else `never`.
 */
type TakesToolMessage<M> = M extends unknown
  ? LoopToolMessage extends M
    ? "tool_call_id" extends keyof M
      ? true
      : never
    : never
  : never;

/**
 * The type of the messages `buildBody` hands back for a transcript of `M`: `M` itself when it
 * spells out its roles and takes the tool message a loop adds (`{ role: "tool"; tool_call_id:
 * string; content: string }`), as the `openai` SDK's `ChatCompletionMessageParam` and a host's own
 * closed union of messages do — and `unknown` otherwise (a `role: string` such as an object
 * literal's, roles without `"tool"`, or a `"tool"` role with no `tool_call_id` field), as before
 * `buildBody` was generic, so such a body still takes any message afterwards. A body stored as the
 * plain `RequestBody` takes any message whatever `M` was.
 */
export type KeptMessage<M> =
  string extends RolesOf<M> ? unknown : true extends TakesToolMessage<M> ? M : unknown;

/**
 * The streamed chat-completions body `buildBody` produces. `M` is the type of its messages: from
 * `buildBody`, the type it was given when that type can hold a tool message (an `openai` SDK
 * `ChatCompletionMessageParam`, say), else `unknown` (`KeptMessage`). `Effort` is what its
 * `reasoning_effort` can be: from `buildBody`, the config's effort or the rung of the ladder it
 * climbed to, so a body built without an effort, or with one of the SDK's, goes to the SDK's
 * `create` as it is.
 */
export interface RequestBody<M = unknown, Effort extends string = string, Tool = ToolDefinition> {
  model: string;
  messages: M[];
  stream: true;
  stream_options?: { include_usage: true };
  /** The tools as given (`Tool`: a `ChatCompletionTool` when the SDK's were given), ordered, relaxed where latched. */
  tools?: Tool[];
  tool_choice?: ToolChoice;
  reasoning_effort?: Effort;
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  [field: string]: unknown;
}

/** Relaxed tools, with strict mode no longer asked for: a relaxed schema need not pass its rules. */
function relaxed<Tool extends AnyToolDefinition>(tools: readonly Tool[]): Tool[] {
  // A custom tool has no `function`: `relaxTools` and this pass it on as given.
  return (relaxTools([...tools]) as Tool[]).map((tool) => {
    const fn = (tool as Partial<ToolDefinition>).function;
    if (fn?.strict === undefined) return tool;
    const { strict: _strict, ...rest } = fn;
    return { ...tool, function: rest };
  });
}

/** A request-body field the loop writes itself, which no `extraBody` may set: a key of `OWNED_BODY_FIELDS`. */
export type OwnedBodyField = "model" | "messages" | "stream" | "tools";

/**
 * The request-body fields every request is built with of its own — `model`, `messages`, `stream`
 * and `tools` — each with where it is set instead: the one list of them. No `extraBody` may set one
 * (one set to `undefined` sends nothing, and is let be): `buildBody` refuses `config.extraBody`
 * setting one with a `TypeError` naming it and this text, `@loopwright/side-task` a side task's
 * (`invalid-input`), `@loopwright/loop` a step plan's (`LoopOptionError`), and `@loopwright/spec`'s
 * `RESERVED_BODY_FIELDS` (the same keys; a test holds the two together) a document's. Dropped without
 * a word, `extraBody: { model: "x" }` sent the request to another model than the one its author meant.
 *
 * `stream_options` is not one, for `config.extraBody` and a step plan's alike: `buildBody` sends
 * `{ include_usage: true }` while the endpoint takes it, and an `extraBody.stream_options` replaces
 * that whole — vLLM's `{ include_usage: true, continuous_usage_stats: true }` puts usage on every
 * chunk — and is left out once the endpoint refused `stream_options`, as the loop's own is. A plan
 * may set it for its step as the config may for every step (nothing the loop reads is lost unless
 * the value leaves `include_usage` out: then that request's usage goes unreported, as the author
 * asked). A side task, sent unstreamed, leaves it out (OpenAI refuses it on such a request).
 *
 * Frozen, on no prototype (`OWNED_BODY_FIELDS[key]` is `undefined` for `"constructor"` or
 * `"toString"`).
 */
export const OWNED_BODY_FIELDS: Readonly<Record<OwnedBodyField, string>> = Object.freeze(
  Object.assign(Object.create(null) as Record<OwnedBodyField, string>, {
    model:
      "the request names the model it is built for: config.model, a step plan's model, a side task's model argument",
    messages:
      "the request's messages are the transcript it is built from: the run's or a step plan's, a side task's " +
      "system prompt and input",
    stream: "a run's requests are always streamed, a side task's never",
    tools:
      "the request's tools are the tools it is built with: the run's or a step plan's; a side task declares none",
  }),
);

/**
 * `key` where it names a field the request is built with of its own (a key of
 * `OWNED_BODY_FIELDS`: `model`, `messages`, `stream`, `tools`), so `OWNED_BODY_FIELDS[field]` says
 * where it is set instead; `undefined` for any other key, `"constructor"`, `"toString"` and
 * `"__proto__"` included, and for anything that is not a string. Never throws.
 */
export function ownedBodyField(key: string): OwnedBodyField | undefined {
  return typeof key === "string" && Object.hasOwn(OWNED_BODY_FIELDS, key)
    ? (key as OwnedBodyField)
    : undefined;
}

/** A function tool's name, or `undefined` for another kind of tool. */
function functionName(tool: AnyToolDefinition): string | undefined {
  if (own(tool, "type") !== "function") return undefined;
  const name = own(own(tool, "function") as object, "name");
  return typeof name === "string" ? name : undefined;
}

/** How many tool names a refused choice's message lists. */
const NAMES_SHOWN = 20;

/**
 * A `tool_choice` naming a function with the name that tool goes out under: relaxed tools
 * (`relaxTools`) are renamed where OpenAI would refuse the name (`fs.read` → `fs_read`), and a
 * choice still naming `fs.read` is refused or ignored by the server. `given` and `sent` are the
 * tools before and after relaxing, index for index (before ordering). A choice already naming a
 * tool as it goes out stays. One naming no tool either way: `undefined` — `buildBody` refuses the
 * caller's own by name, and sends an `extraBody.tool_choice` as given.
 */
function choiceAsSent(
  choice: ToolChoice,
  given: readonly AnyToolDefinition[],
  sent: readonly AnyToolDefinition[],
): ToolChoice | undefined {
  if (typeof choice !== "object") return choice;
  const wanted = choice.function.name;
  const name = nameAsSent(wanted, given, sent);
  if (name === undefined) return undefined;
  return name === wanted ? choice : { ...choice, function: { ...choice.function, name } };
}

/**
 * The name the function tool given as `wanted` goes out under (`wanted` itself when it already
 * names a tool as sent); `undefined` when it names no function tool either way.
 */
function nameAsSent(
  wanted: string,
  given: readonly AnyToolDefinition[],
  sent: readonly AnyToolDefinition[],
): string | undefined {
  const at = given.findIndex((tool) => functionName(tool) === wanted);
  if (at >= 0) return functionName(sent[at] as AnyToolDefinition) ?? wanted;
  return sent.some((tool) => functionName(tool) === wanted) ? wanted : undefined;
}

/**
 * OpenAI's newer `tool_choice` form, `{ type: "allowed_tools", allowed_tools: { mode, tools: [{ type:
 * "function", function: { name } }, …] } }`, with each function it lists named as that tool goes
 * out (relaxing renames `fs.read` → `fs_read`, and a list still naming `fs.read` is refused or
 * ignored). A copy where a name changed, else `value` itself; never the caller's object changed.
 * A name of no tool stays as given, as an `extraBody` choice naming no tool does. `undefined` when
 * `value` is not of that form.
 */
function allowedAsSent(
  value: unknown,
  given: readonly AnyToolDefinition[],
  sent: readonly AnyToolDefinition[],
): unknown {
  if (!isRecord(value) || own(value, "type") !== "allowed_tools") return undefined;
  const allowed = own(value, "allowed_tools");
  const listed = isRecord(allowed) ? own(allowed, "tools") : undefined;
  if (!Array.isArray(listed)) return undefined;
  let renamed = false;
  const tools = listed.map((entry: unknown) => {
    if (!isRecord(entry) || own(entry, "type") !== "function") return entry;
    const fn = own(entry, "function");
    const wanted = isRecord(fn) ? own(fn, "name") : undefined;
    if (typeof wanted !== "string") return entry;
    const name = nameAsSent(wanted, given, sent);
    if (name === undefined || name === wanted) return entry;
    renamed = true;
    return { ...entry, function: { ...(fn as Record<string, unknown>), name } };
  });
  return renamed ? { ...value, allowed_tools: { ...(allowed as Record<string, unknown>), tools } } : value;
}

/** The refusal of an `options.toolChoice` naming no tool: the names there are, as given and as sent. */
function unknownChoice(
  wanted: string,
  given: readonly AnyToolDefinition[],
  sent: readonly AnyToolDefinition[],
): RangeError {
  const names = given.flatMap((tool, index) => {
    const name = functionName(tool);
    if (name === undefined) return [];
    const out = functionName(sent[index] as AnyToolDefinition);
    return [
      out !== undefined && out !== name
        ? `${JSON.stringify(name)} (sent as ${JSON.stringify(out)})`
        : JSON.stringify(name),
    ];
  });
  const listed =
    names.length === 0
      ? "there is no function tool"
      : `the function tools are ${names.slice(0, NAMES_SHOWN).join(", ")}${names.length > NAMES_SHOWN ? `, and ${names.length - NAMES_SHOWN} more` : ""}`;
  return new RangeError(
    `buildBody: options.toolChoice names the tool ${JSON.stringify(wanted)}, which is none of the tools given; ${listed}.`,
  );
}

function wrongType(name: string, what: string, value: unknown): TypeError {
  const got = Array.isArray(value) ? "an array" : value === null ? "null" : typeof value;
  return new TypeError(`buildBody: ${name} must be ${what}; got ${got}.`);
}

/** What a thrown value says, never throwing itself (a hostile error's getters may). */
function thrownText(error: unknown): string {
  try {
    if (error instanceof Error) return `${String(error.name)}: ${String(error.message)}`;
    return typeof error === "string" ? error : typeof error;
  } catch {
    return "an unreadable error";
  }
}

/**
 * What {@link unsendableIn} found: where (a path such as `.stop[2]`), what it is (`a BigInt`,
 * `NaN`, `a Map`, `unreadable`…), whether it is an array's item (`item`), and for one that could
 * not be read, what reading it threw.
 */
type Unsendable = { at: string; what: string; thrown?: unknown; item?: boolean };

/**
 * The first place in `value` (a path such as `.chat_template_kwargs.top_k` or `.stop[2]`) holding
 * what JSON cannot send as given — a BigInt (`JSON.stringify` throws, inside the client), `NaN` or
 * `±Infinity` (written as `null`: a knob silently back at the server's default), an object that
 * holds itself (a cycle), a `Map` or a `Set` (written as `{}`: its entries silently unsent), a
 * function or a symbol (in an array written as `null`, a null the host never wrote; as a field left
 * out, the field silently unsent), or `undefined` in an array (written as `null`) — with what it
 * is (`undefined` as a field is let be: JSON leaves it out, as a spread-merged config expects); or a member that cannot be read at all (a getter that throws, a Proxy whose
 * trap throws, a revoked Proxy: `JSON.stringify` would throw that inside the client), with what it
 * threw; `undefined` when there is none. Each member is read once, as `JSON.stringify` reads it:
 * an array's items, an object's own enumerable fields (a getter among them is called, and what it
 * answers is checked). A class's instance is walked as JSON writes it, by its own enumerable
 * fields (a getter on its class is not sent, so not read); an object with a `toJSON` method (a
 * `Date`) is sent as that method says, so not read. Iterative, so any depth; an object reached
 * twice on two paths is read once.
 */
function unsendableIn(value: object): Unsendable | undefined {
  const done = new Set<object>();
  const open = new Set<object>();
  // Parallel stacks: a member to read and its key in its object (an index in an array), or
  // (leaving[i]) an object whose members are all read. A path is written only once something was
  // found, from the keys of the objects open: built for every member, paths cost more than the rest
  // of buildBody (60 tools of 15 fields each: 1.2 ms more a request; this walk, 0.3 ms).
  const items: unknown[] = [value];
  const keys: Array<string | number> = [""];
  const leaving: boolean[] = [false];
  // The keys leading to the object whose members are being read (the top's "" first).
  const ancestry: Array<string | number> = [];
  while (items.length > 0) {
    const item = items.pop();
    const key = keys.pop() as string | number;
    if (leaving.pop()) {
      open.delete(item as object);
      done.add(item as object);
      ancestry.pop();
      continue;
    }
    let what: string | undefined;
    if (typeof item === "bigint") what = "a BigInt";
    // A function or a symbol JSON writes as null in an array (the server reads a null the host
    // never wrote) and leaves out as a field (the host's field silently unsent). `undefined` in an
    // array is written as null too; as a field it is left out, as a spread-merged config expects.
    else if (typeof item === "function" || typeof item === "symbol") what = `a ${typeof item}`;
    else if (item === undefined) {
      if (typeof key !== "number") continue;
      what = "undefined";
    } else if (typeof item === "number") {
      if (Number.isFinite(item)) continue;
      what = String(item);
    } else if (typeof item !== "object" || item === null || done.has(item)) continue;
    else if (open.has(item)) what = "a cycle";
    // JSON writes a Map or a Set as {}: every entry it holds would go unsent, unsaid.
    else if (types.isMap(item)) what = "a Map";
    else if (types.isSet(item)) what = "a Set";
    if (what !== undefined) return { at: pathOf([...ancestry, key]), what, item: typeof key === "number" };
    // What a Proxy's trap or a getter throws is what JSON.stringify would throw inside the client.
    let array: boolean;
    let names: string[] | undefined;
    try {
      array = Array.isArray(item);
      // A class's instance with a toJSON method (a Date) is sent as that method says.
      if (
        !array &&
        !isPlainProto(Object.getPrototypeOf(item)) &&
        typeof (item as { toJSON?: unknown }).toJSON === "function"
      ) {
        continue;
      }
      if (!array) names = Object.keys(item as object);
    } catch (thrown) {
      return { at: pathOf([...ancestry, key]), what: "unreadable", thrown };
    }
    open.add(item as object);
    ancestry.push(key);
    items.push(item);
    keys.push(key);
    leaving.push(true);
    let at: string | number = "";
    try {
      if (names === undefined) {
        for (let i = (item as unknown[]).length - 1; i >= 0; i--) {
          at = i;
          items.push((item as unknown[])[i]);
          keys.push(i);
          leaving.push(false);
        }
      } else {
        for (let i = names.length - 1; i >= 0; i--) {
          const name = names[i] as string;
          at = name;
          items.push((item as Record<string, unknown>)[name]);
          keys.push(name);
          leaving.push(false);
        }
      }
    } catch (thrown) {
      return { at: pathOf([...ancestry, at]), what: "unreadable", thrown };
    }
  }
  return undefined;
}

/** Whether `proto` is a plain object's prototype (`Object.prototype`, or none). */
function isPlainProto(proto: unknown): boolean {
  return proto === Object.prototype || proto === null;
}

/** The path `keys` (the top's "" first) name: `.top_k`, `.stop[2]`, `["a-b"]`. */
function pathOf(keys: ReadonlyArray<string | number>): string {
  let path = "";
  for (const key of keys.slice(1)) {
    path +=
      typeof key === "number"
        ? `[${key}]`
        : /^[A-Za-z_$][\w$]*$/.test(key)
          ? `.${key}`
          : `[${JSON.stringify(key)}]`;
  }
  return path;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const FUNCTION_TOOL = '{ type: "function", function: { name, description?, parameters? } }';

/**
 * {@link own}'s `value[name]`, a throw (a getter's, a Proxy trap's) as a `TypeError` naming
 * `where` + `.name` and what was thrown, its `cause`: `JSON.stringify` would throw it while
 * sending, naming nothing.
 */
function readOwn(value: unknown, name: string, where: string): unknown {
  try {
    return own(value, name);
  } catch (thrown) {
    throw unsendableError(`buildBody: ${where}`, { at: pathOf(["", name]), what: "unreadable", thrown });
  }
}

/**
 * Whether `value` is an array, where `Array.isArray` itself throws (a revoked Proxy: the Proxy
 * machinery's `TypeError`, naming nothing): that throw is a `TypeError` naming `where` and what was
 * thrown, its `cause`, as a field that cannot be read is named (`JSON.stringify` would throw it while
 * sending).
 */
function isArrayAt(value: unknown, where: string): value is unknown[] {
  try {
    return Array.isArray(value);
  } catch (thrown) {
    throw unsendableError(`buildBody: ${where}`, { at: "", what: "unreadable", thrown });
  }
}

/** {@link isRecord}, a revoked Proxy named by `where` as {@link isArrayAt} names it. */
function isRecordAt(value: unknown, where: string): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !isArrayAt(value, where);
}

/**
 * Refuses a tool entry a server cannot read, naming its index: sent, llama.cpp answers a function
 * tool without a name with a 500 ("Failed to parse tools") and parameters that are not a schema
 * object with a grammar failure, and `relaxTools` throws for both once strict schemas are latched
 * off. A tool of another `type` (the SDK's custom tools) is passed on as given, as `relaxTools` does
 * (`checkArguments` refuses what JSON cannot send as given in any tool).
 */
function checkTool(tool: unknown, index: number): void {
  const where = `tools[${index}]`;
  if (!isRecordAt(tool, where)) throw wrongType(where, `a tool definition ${FUNCTION_TOOL}`, tool);
  // The tool's own fields, never a polluted Object.prototype's (an inherited `parameters` refused
  // every tool declared without any).
  const type = readOwn(tool, "type", where);
  if (typeof type !== "string") {
    throw wrongType(`${where}.type`, `a string such as "function" (${FUNCTION_TOOL})`, type);
  }
  if (type !== "function") return;
  const fn = readOwn(tool, "function", where);
  if (!isRecordAt(fn, `${where}.function`))
    throw wrongType(`${where}.function`, `an object ${FUNCTION_TOOL}`, fn);
  const name = readOwn(fn, "name", `${where}.function`);
  if (typeof name !== "string" || name.trim() === "") {
    throw new TypeError(
      `buildBody: ${where}.function.name must be the tool's non-empty name; got ${
        typeof name === "string" ? JSON.stringify(name) : name === null ? "null" : typeof name
      }.`,
    );
  }
  const parameters = readOwn(fn, "parameters", `${where}.function`);
  if (parameters !== undefined && !isRecord(parameters)) {
    throw wrongType(`${where}.function.parameters`, "a JSON Schema object (or absent)", parameters);
  }
}

/**
 * A message no chat endpoint reads — not an object, or no `role` — refused by its index before
 * anything is sent: llama.cpp answers a 500 that never changes ("Failed to parse messages: Missing
 * 'role'"), OpenAI a 400, either only once the request went.
 */
function checkMessage(message: unknown, index: number): void {
  const where = `messages[${index}]`;
  if (!isRecordAt(message, where)) {
    throw wrongType(where, 'a chat message ({ role: "user", content: "…" })', message);
  }
  // Its own role, never a polluted Object.prototype's (a message without one was sent, and refused);
  // a Proxy whose trap throws is named by the field, as a tool entry's is.
  const role = readOwn(message, "role", where);
  if (typeof role !== "string" || role === "") {
    throw new TypeError(
      `buildBody: ${where}.role must be the message's role ("system", "user", "assistant", "tool" …); got ${
        typeof role === "string"
          ? '""'
          : role === undefined
            ? "no role"
            : role === null
              ? "null"
              : typeof role
      }.`,
    );
  }
}

/** What a non-plain `extraBody` was, for the message refusing it: `an instance of Map`, `an array`, `the string "top_k=20"`. */
function givenKind(value: unknown): string {
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") {
    return value === "" ? "an empty string" : `the string ${JSON.stringify(value.slice(0, 40))}`;
  }
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : `the number ${value}`;
  if (typeof value !== "object" || value === null) return value === null ? "null" : `a ${typeof value}`;
  let named: unknown;
  try {
    // The class's own name, never one a polluted Object.prototype's `constructor` gives.
    named = own(own(value, "constructor"), "name");
  } catch {
    named = undefined;
  }
  return typeof named === "string" && named !== ""
    ? `an instance of ${named}`
    : "an object on a prototype of its own (what it inherits is not sent)";
}

/**
 * The error naming `unsendableIn`'s find at `where` + `at` (`config.extraBody.top_p`,
 * `buildBody: tools[0].function.parameters…`): a `RangeError` for a number JSON writes as `null`,
 * else a `TypeError` (for a member that could not be read, with what it threw as its `cause`).
 */
function unsendableError(where: string, { at, what, thrown, item }: Unsendable): TypeError | RangeError {
  if (what === "unreadable") {
    return new TypeError(
      `${where}${at} could not be read (${thrownText(thrown)}): JSON.stringify would throw that while sending, naming nothing.`,
      { cause: thrown },
    );
  }
  if (what === "a function" || what === "a symbol" || what === "undefined") {
    return new TypeError(
      item
        ? `${where}${at} is ${what}, which JSON writes as null (the server would read a null you never wrote): give a JSON value, or leave the item out.`
        : `${where}${at} is ${what}, which JSON leaves out (the field would not be sent, unsaid): give a JSON value, or leave the field out.`,
    );
  }
  const why =
    what === "a BigInt"
      ? "which JSON cannot write (the client would throw while sending)"
      : what === "a cycle"
        ? "an object that holds itself, which JSON cannot write"
        : what === "a Map" || what === "a Set"
          ? "which JSON writes as {} (none of its entries would be sent): give a plain object or an array"
          : "which JSON writes as null (the server would use its default, unsaid)";
  const error = what.startsWith("a ") ? TypeError : RangeError;
  return new error(`${where}${at} is ${what}, ${why}.`);
}

/**
 * The error refusing `value` as an `extraBody` by {@link checkExtraBody}'s rule, its message
 * `prefix` then the refusal naming `path`; `undefined` where it is taken. One rule for `buildBody`
 * (`buildBody: config.extraBody…`) and `checkExtraBody`'s callers (`@loopwright/loop`'s run and step
 * plan checks).
 */
function extraBodyFault(value: unknown, path: string, prefix = ""): TypeError | RangeError | undefined {
  if (value === undefined || value === null) return undefined;
  let proto: unknown;
  let keys: string[];
  let hasProto: boolean;
  try {
    proto = typeof value === "object" && !Array.isArray(value) ? Object.getPrototypeOf(value) : undefined;
    hasProto = isPlainProto(proto) && Object.hasOwn(value, "__proto__");
    keys = isPlainProto(proto) ? Object.keys(value) : [];
  } catch (thrown) {
    // A Proxy whose trap throws, a revoked one: named here, not thrown inside the client.
    return unsendableError(`${prefix}${path}`, { at: "", what: "unreadable", thrown });
  }
  // Plain only: `Object.entries` of a Map, a Set, a Date or a class's instance (fields on its
  // prototype, getters) sent none of what it held, unsaid; a string's characters would be fields.
  if (!isPlainProto(proto)) {
    return new TypeError(
      `${prefix}${path} must be a plain object of body fields ({ top_k: 20 }; null or absent for none), ` +
        `and was given ${givenKind(value)}.`,
    );
  }
  const fields = value as Record<string, unknown>;
  // JSON.parse makes `"__proto__"` an own key; set on the body it would replace the body's prototype
  // (its fields inherited, never sent) instead of being a field: refused, never silently lost.
  if (hasProto) {
    return new TypeError(
      `${prefix}${path} must not have a "__proto__" key (a config read from JSON can): it cannot be sent as a body field.`,
    );
  }
  // A field set to undefined sends nothing, and says nothing either way: let be.
  for (const key of keys) {
    const field = ownedBodyField(key);
    if (field === undefined) continue;
    let set: boolean;
    try {
      set = fields[key] !== undefined;
    } catch (thrown) {
      return unsendableError(`${prefix}${path}`, { at: pathOf(["", key]), what: "unreadable", thrown });
    }
    if (set) {
      return new TypeError(
        `${prefix}${path} sets ${JSON.stringify(field)}, a field buildBody writes itself ` +
          `(${OWNED_BODY_FIELDS[field]}): take it out of extraBody.`,
      );
    }
  }
  const unsendable = unsendableIn(fields);
  return unsendable === undefined ? undefined : unsendableError(`${prefix}${path}`, unsendable);
}

/**
 * Refuses an `extraBody` — a config's, a step plan's, one a host builds its own request with — that
 * `buildBody` would not send as written, by the rule `buildBody` holds `config.extraBody` to (the
 * one rule: `buildBody` calls this). `null` and `undefined` are none, and pass. Throws:
 *
 * - `TypeError` for a value that is not a plain object of body fields (on `Object.prototype` or no
 *   prototype): an array, a string, a number, a `Map`, a `Set`, a `Date` or another class's
 *   instance, named by what it was (`an instance of Map`) — `Object.entries` of a Map finds none of
 *   its entries, so such a value sent nothing, unsaid;
 * - `TypeError` for a `"__proto__"` key (JSON read into a config can hold one): set on a body it
 *   would replace the body's prototype rather than be a field;
 * - `TypeError` for a field the request is built with of its own (`OWNED_BODY_FIELDS`: `model`,
 *   `messages`, `stream`, `tools`), named with where it is set instead; one set to `undefined`,
 *   which sends nothing, is let be;
 * - a value JSON cannot send as given, named by its path at any depth (`extraBody.stop[1]`):
 *   `NaN` or `±Infinity` (JSON writes `null`, the knob silently back at the server's default) a
 *   `RangeError`, a BigInt or an object holding itself (the client would throw while sending) a
 *   `TypeError`, and so is a `Map` or a `Set` below the top (JSON writes `{}`: none of its entries
 *   would be sent). Below the top, an object two fields share, a `Date` or a class with `toJSON`
 *   goes as its JSON says; another class's instance is checked by its own fields, which are what
 *   JSON writes of it;
 * - `TypeError` for a field that cannot be read — a getter that throws, a Proxy whose trap throws, a
 *   revoked Proxy — named by its path with what it threw (its `cause`), where `JSON.stringify`
 *   threw it inside the client. A getter is read once, and what it answers is checked as a value;
 * - `TypeError` for a function or a symbol at any depth below the top (as a field JSON leaves it
 *   out, the field silently unsent; in an array JSON writes `null`) and for `undefined` in an array
 *   (written as `null`: the server reads a null never written), each named by its path. A field
 *   set to `undefined` is let be: JSON leaves it out, which is what a host merging configs with
 *   spreads (`{ ...defaults, top_k: undefined }`) means by it.
 *
 * Each message starts with `path` (`"extraBody"` by default; `buildBody` says `config.extraBody`
 * after `buildBody: `), so a caller checking its own option names it as its user wrote it.
 */
export function checkExtraBody(
  value: unknown,
  path = "extraBody",
): asserts value is Record<string, unknown> | null | undefined {
  const refused = extraBodyFault(value, path);
  if (refused) throw refused;
}

/**
 * Refuses what would otherwise be spread into a wrong body (a string's characters as messages,
 * tools or body fields) or crash further in, naming the argument.
 */
function checkArguments(
  config: ModelParams,
  supports: unknown,
  model: unknown,
  messages: unknown,
  tools: unknown,
): void {
  if (!isArrayAt(messages, "messages")) throw wrongType("messages", "an array of chat messages", messages);
  messages.forEach(checkMessage);
  if (!isArrayAt(tools, "tools")) throw wrongType("tools", "an array of tool definitions (or absent)", tools);
  tools.forEach(checkTool);
  // What JSON cannot send as given, in any tool of any type, refused by its path: a schema's
  // `maximum: Infinity` went out as `maximum: null`, a Map of `properties` as `{}` (a tool taking
  // no arguments), and a BigInt `default` threw inside the client, naming nothing. One walk of them
  // all: a schema the tools share is read once.
  const unsendableTool = unsendableIn(tools);
  if (unsendableTool !== undefined) throw unsendableError("buildBody: tools", unsendableTool);
  if (!isRecord(supports))
    throw wrongType("supports", "the object capabilitiesFor(baseUrl, apiKey) returned", supports);
  if (
    model !== undefined &&
    !(isRecord(model) && Array.isArray(model.droppedFields) && Array.isArray(model.refusedEfforts))
  ) {
    throw wrongType(
      "model",
      "the object modelCapabilitiesFor(supports, model) returned, or undefined",
      model,
    );
  }
  const { extraBody, maxTokens, temperature, reasoningEffort } = config;
  const refused = extraBodyFault(extraBody, "config.extraBody", "buildBody: ");
  if (refused) throw refused;
  if (maxTokens != null && typeof maxTokens !== "number") {
    throw wrongType("config.maxTokens", "a number of tokens", maxTokens);
  }
  // Infinity and NaN would go out as JSON null, and NaN or a negative would silently send no
  // ceiling: a number that cannot be a ceiling is refused by its value.
  if (typeof maxTokens === "number" && !(Number.isSafeInteger(maxTokens) && maxTokens >= 0)) {
    throw new RangeError(
      `buildBody: config.maxTokens must be a whole number of tokens from 0 (0 or absent: no ceiling); got ${String(maxTokens)}.`,
    );
  }
  if (temperature != null && typeof temperature !== "number") {
    throw wrongType("config.temperature", "a number", temperature);
  }
  if (typeof temperature === "number" && !Number.isFinite(temperature)) {
    throw new RangeError(
      `buildBody: config.temperature must be a finite number; got ${String(temperature)}.`,
    );
  }
  if (reasoningEffort != null && typeof reasoningEffort !== "string") {
    throw wrongType("config.reasoningEffort", 'a string such as "low"', reasoningEffort);
  }
}

/**
 * Decides the streamed request body from the settings and what the endpoint and model refused.
 *
 * The one place a streamed request body is decided: from the model settings, what the endpoint
 * (`supports`) and the model (`model`) have refused, the transcript, and the declared tools.
 *
 * Tools go as given while the endpoint takes strict schemas, and relaxed (`relaxTools`, without
 * `strict: true`) after it refused them — a custom tool (the `openai` SDK's `ChatCompletionTool[]`
 * may hold them) as given, and `body.tools` typed as the tools given — ordered by the last argument: a `ToolOrder` (by name when
 * absent, `false` as given, or a comparator) or `BuildBodyOptions` (`{ order?, toolChoice? }`). The ceiling is `max_completion_tokens` only when `model.legacyTokenLimit === false`
 * (an absent model reads as `true`). The temperature is sent only while `model.chosenTemperature`
 * is true, so an absent model sends none. `extraBody` is merged last, minus the fields the model
 * refused (a `temperature` in it too, once the model refused one, and a `response_format` once
 * the model refused that; a `max_tokens` in it goes as `max_completion_tokens` once the model asked
 * for that spelling, and a `reasoning_effort` climbs as `effortFor` climbs the config's); it may not
 * set `model`, `messages`, `stream` or `tools`, which the body has of its own. Once the model refused a tool-call id (`model.anyToolCallIds === false`),
 * `messages` go with every id that is not nine letters and digits replaced as `shortToolCallIds`
 * replaces it (the same wire id for the same transcript on every step). Once the model's chat
 * template refused a system message (`model.systemRole === false`) or a user message straight after
 * a tool result (`model.userAfterTool === false`), or an assistant message with several tool calls
 * (`model.parallelCalls === false`), `messages` go as `withTemplateRoles` writes them: the system
 * text at the head of the next user message, an assistant message between a tool result and a user
 * message, one assistant message per call with its result after it. Never mutates its
 * arguments. Throws `TypeError` naming the argument for a
 * config without a model name and for an argument of the wrong type (`messages` or `tools` not an
 * array, a message that is not an object or has no string `role`, named by its index, a function tool with no object `function`, a blank or missing `function.name` or
 * `parameters` that are not an object, or an entry with no string `type`, named by its index
 * whatever the latches; a tool of another type goes as given; `extraBody` not a plain object (an
 * array, a string, a `Map`, a `Set`, a `Date` or another class's instance, named by what it was:
 * none of a Map's entries was sent, unsaid), holding a `"__proto__"` key, or
 * setting `model`, `messages`, `stream` or `tools` (named, with where it goes instead: dropped, an
 * `extraBody: { model }` sent the request to another model than the one named there, unsaid; one set to `undefined` is let be),
 * `maxTokens` or `temperature` not a number, `reasoningEffort`
 * not a string, `supports` or `model` not the store's objects), and `RangeError` naming the field
 * and its value for a `maxTokens` that is not a whole number from 0 (`NaN`, `Infinity`, `-5`,
 * `1.5`) or a `temperature` that is not finite — whether or not the model's latches would send it.
 * An `extraBody` value JSON cannot send as given is refused by its path (`config.extraBody.top_p`),
 * at any depth: `NaN` or `±Infinity` (JSON writes `null`) a `RangeError`, a BigInt or an object
 * holding itself (the client would throw while sending) or a `Map` or a `Set` (JSON writes `{}`,
 * its entries unsent) a `TypeError`. `extraBody` is held to `checkExtraBody`'s rule, the one rule
 * (a caller may check one before it builds anything). So is every tool entry, of any type, named
 * by its path (`tools[0].function.parameters.properties.n.maximum is Infinity`): a schema's
 * `maximum: Infinity` went out as `maximum: null`, a Map of `properties` as `{}`. A field that
 * cannot be read (a getter or a Proxy's trap that throws) is a `TypeError` naming its path and
 * what it threw, in a tool as in `extraBody`, rather than that error from inside the client, and so
 * is a message, a tool entry, its `function`, or `messages` or `tools` themselves that cannot be read
 * (a revoked Proxy, on which asking whether it is an array threw; a message whose `role` a trap
 * withholds), named by its index (`messages[1] could not be read (TypeError: …)`); so is
 * a function or a symbol (as a field JSON left it out, in an array wrote `null`) and `undefined` in
 * an array (written as `null`). A field set to `undefined` is let be (JSON leaves it out).
 *
 * `options.toolChoice` (one request's `tool_choice`) is sent only beside tools, and wins over an
 * `extraBody.tool_choice`. One naming a tool names it as the tool goes out: relaxed tools are
 * renamed where OpenAI refuses the name (`fs.read` → `fs_read`), and so is the choice (an
 * `extraBody.tool_choice` too); one naming no tool, given or sent, throws `RangeError` naming it.
 * Once the model refused `tool_choice` (`model.toolChoice === false`)
 * none is sent (`extraBody`'s neither), and a request asking for `"none"` goes without tools
 * instead — the only other way to keep the model from calling one. Throws `TypeError` naming what
 * is wrong for a last argument that is neither an order nor an options object, an option it does
 * not know, an `options.order` that is no order, and an `options.toolChoice` that is none of its
 * four forms.
 */
export function buildBody<
  M = unknown,
  Effort extends string = never,
  Tool extends AnyToolDefinition = ToolDefinition,
>(
  config: ModelParams & { reasoningEffort?: Effort | undefined },
  supports: EndpointCapabilities,
  model: ModelCapabilities | undefined,
  messages: readonly M[],
  tools: readonly Tool[] = [],
  last?: ToolOrder<Tool> | BuildBodyOptions<Tool>,
): RequestBody<KeptMessage<M>, NoInfer<Exclude<Effort, "off" | ""> | EffortRung>, Tool> {
  // The five fields read once each, where the config (or its class) holds them: never one a polluted
  // Object.prototype holds (an inherited maxTokens or extraBody went into every body).
  config = paramsOf(config);
  if (typeof config.model !== "string" || config.model === "") {
    throw new TypeError("buildBody: config.model must be the model's non-empty name at the endpoint.");
  }
  checkArguments(config, supports, model, messages, tools);
  const { order, toolChoice } = readLast(last);
  // A model that refused a tool-call id is sent nine-character ones, and a message holding half a
  // surrogate pair is sent with it U+FFFD (see well-formed.ts); the caller's messages keep theirs.
  // A model whose chat template refused a system message, or a user message after a tool result,
  // is sent its messages in an order it takes (see template-roles.ts).
  const wireMessages = [
    ...wellFormedItems(
      withTemplateRoles(model?.anyToolCallIds === false ? shortToolCallIds(messages) : messages, model),
    ),
  ];
  // `KeptMessage<M>` is `M` or `unknown`, and the messages are `M`s either way.
  const body: RequestBody<KeptMessage<M>, Exclude<Effort, "off" | ""> | EffortRung, Tool> = {
    model: config.model,
    messages: wireMessages as KeptMessage<M>[],
    stream: true,
  };
  if (supports.usageInStream) body.stream_options = { include_usage: true };
  // tool_choice refused as a field the caller allowed dropping reads as the latch does: the
  // request's own toolChoice was sent on after "sending tool_choice no more" and drew the refusal
  // again, failing every request that asked for one.
  const choiceTaken = model?.toolChoice !== false && !model?.droppedFields.includes("tool_choice");
  // A model that refused tool_choice is kept from calling a tool the one other way: none declared.
  const withTools = tools.length > 0 && (choiceTaken || toolChoice !== "none");
  // The tools as they go out, before ordering: index for index the given ones, so a choice naming a
  // tool relaxing renamed is sent naming it as renamed.
  let declared: Tool[] = [];
  if (withTools) {
    const sound = wellFormedItems(tools);
    declared = supports.strictSchemas ? [...sound] : relaxed(sound);
    body.tools = orderTools(declared, order as ToolOrder<Tool>);
  }
  // A choice naming a tool is checked against the tools whether or not the latches send it.
  let choice = toolChoice;
  if (choice !== undefined && withTools) {
    const named = choiceAsSent(choice, tools, declared);
    if (named === undefined)
      throw unknownChoice((choice as { function: { name: string } }).function.name, tools, declared);
    choice = named;
  }
  const effort = effortFor(model, config.reasoningEffort);
  // The asked effort, or the rung of the ladder `effortFor` climbed to from it.
  if (effort) body.reasoning_effort = effort as Exclude<Effort, "off" | ""> | EffortRung;
  if (config.maxTokens !== undefined && config.maxTokens > 0) {
    if (model?.legacyTokenLimit === false) body.max_completion_tokens = config.maxTokens;
    else body.max_tokens = config.maxTokens;
  }
  const temperatureOk = model?.chosenTemperature === true;
  if (typeof config.temperature === "number" && temperatureOk) body.temperature = config.temperature;
  // A set: a snapshot may hold many dropped fields, and a config many extra ones (n × m lookups).
  const dropped = new Set(model?.droppedFields);
  for (const [field, value] of Object.entries(config.extraBody ?? {})) {
    if (value === undefined) continue;
    if (dropped.has(field)) continue;
    if (field === "temperature" && model?.chosenTemperature === false) continue;
    // What the model refused in the config's own fields it refuses in extraBody's too, and the
    // same latch answers both: sent as given after the latch, each drew the same refusal on every
    // request. A ceiling is spelled as the model takes it, an effort climbs as the config's does,
    // and a response_format the model refused is left out.
    if (field === "max_tokens" && model?.legacyTokenLimit === false) {
      (body as Record<string, unknown>).max_completion_tokens = value;
      continue;
    }
    if (field === "reasoning_effort" && model && typeof value === "string") {
      const rung = effortFor(model, value);
      if (rung) {
        (body as Record<string, unknown>).reasoning_effort = rung;
        continue;
      }
    }
    if (field === "response_format" && model?.structuredOutput === false) continue;
    if (field === "stream_options" && !supports.usageInStream) continue;
    if (field === "tool_choice" && (!choiceTaken || toolChoice !== undefined)) continue;
    // An extraBody tool_choice naming a tool relaxing renamed names it as renamed (else as given).
    if (field === "tool_choice" && withTools && isToolChoice(value)) {
      body[field] = choiceAsSent(value, tools, declared) ?? value;
      continue;
    }
    // So does each function an `allowed_tools` choice lists.
    if (field === "tool_choice" && withTools) {
      const allowed = allowedAsSent(value, tools, declared);
      if (allowed !== undefined) {
        (body as Record<string, unknown>)[field] = allowed;
        continue;
      }
    }
    body[field] = value;
  }
  if (choice !== undefined && withTools && choiceTaken) body.tool_choice = choice;
  // The rest of the body too (the model's name, tool_choice's, a field extraBody adds): a lone half
  // anywhere has a server reading UTF-8 refuse the request whole, and tool_choice names its tool as
  // the tool array does.
  for (const [field, value] of Object.entries(body)) {
    if (field === "messages" || field === "tools") continue;
    const [sound] = wellFormedItems([value]);
    if (sound !== value) (body as Record<string, unknown>)[field] = sound;
  }
  return body;
}
