import { checkExtraBody } from "@loopwright/negotiate";
import { checkCatalog } from "@loopwright/tool-loading";
import { LoopOptionError } from "./errors.js";
import { hasOwnKey, ownField } from "./own.js";

/**
 * How `runAgentLoop` treats an option:
 * - `read`: the loop does what it says;
 * - `host`: a field of the resolved agent config that is the host's to act on (which servers to
 *   connect, the side tasks' models) — accepted, never read by the loop;
 * - `not-built`: known, not done yet — refused with `LoopOptionError` when it asks for anything,
 *   rather than dropped. Building one is flipping it to `read` here and reading it in a phase.
 */
export type OptionHandling = "read" | "host" | "not-built";

/** One option: its name (`config.` for a config field), how it is handled, and when it asks for anything. */
export interface LoopOption {
  readonly name: string;
  readonly handling: OptionHandling;
  /** For `not-built`: what it is, for the error. */
  readonly what?: string;
  /** For `not-built`: whether a value asks for the feature (absent: any value but `undefined`). */
  readonly asks?: (value: unknown) => boolean;
}

/**
 * Every option the loop knows, the one list: `runAgentLoop`'s own options, and the `config` fields
 * beyond `Endpoint & ModelParams` (the endpoint and model fields are read by the packages they go to).
 * An option object key not listed here is refused as unknown; a config field not listed is the
 * host's (config is often a host's whole settings object).
 */
export const LOOP_OPTIONS: readonly LoopOption[] = [
  ...[
    "config",
    "system",
    "messages",
    "tools",
    "dispatch",
    "signal",
    "onEvent",
    "onRequest",
    "client",
    "ledger",
    "parallel",
    "dedupeToolCalls",
    "recoverToolCalls",
    "onToolCall",
    "onToolResult",
    "onTurn",
    "onMessage",
    "beforeStep",
    "hooks",
    "catalog",
    "loaded",
    "preselected",
    "preselect",
    "preselectRouting",
  ].map((name): LoopOption => ({ name, handling: "read" })),
  ...[
    "maxToolIterations",
    "toolOrder",
    "parallel",
    "dedupeToolCalls",
    "recoverToolCalls",
    "maxRetries",
    "loadingTimeoutSeconds",
    "maxRetryWaitSeconds",
    "toolTimeoutSeconds",
    "contextLength",
    "maxContinuations",
    "prompt",
    "compact",
    "toolDiscovery",
    "preselect",
    "preselectRouting",
    "preselectKeywords",
    "toolSelectModel",
    "tasks",
  ].map((name): LoopOption => ({ name: `config.${name}`, handling: "read" })),
  // `hooks` is the spec's list of hooks: the host's runner (the `hooks` option's `run`) runs them.
  ...["name", "description", "servers", "mcpServers", "hooks"].map(
    (name): LoopOption => ({ name: `config.${name}`, handling: "host" }),
  ),
];

const BY_NAME = new Map(LOOP_OPTIONS.map((option) => [option.name, option]));

/** The endpoint's and model's fields: read off `config` by the packages they go to. */
const ENDPOINT_FIELDS = new Set([
  "baseUrl",
  "apiKey",
  "headers",
  "requestTimeoutSeconds",
  "firstTokenSeconds",
  "model",
  "temperature",
  "maxTokens",
  "reasoningEffort",
  "extraBody",
]);

const STEP_LIMIT =
  "a step limit is config.maxToolIterations, which counts tool steps, n - 1 for at most n requests, and throws ToolIterationLimit past them; beforeStep returning { stop: true } on step n + 1 ends with a result instead";

/**
 * Config fields that another SDK or framework reads as its step or turn limit or its stop condition
 * (the AI SDK's `maxSteps` and `stopWhen`, smolagents' `max_steps`, the Agents SDK's `maxTurns` /
 * `max_turns`, LangChain's `maxIterations` / `max_iterations`, LangGraph's `recursionLimit` /
 * `recursion_limit`: the snake-case spellings are the Python SDKs', which a config read from
 * such a project's settings file carries). Unknown config fields are the host's, so these are not
 * refused; but one left there means a limit the user believes set and the run does not keep, and
 * the run tells a notice. A host that sets the step limit itself (as `@loopwright/agent`'s `Agent`
 * does, and its session from its `maxTurns`) takes them out and tells its own, worded with
 * `foreignStepLimitsIn` and `foreignStepLimitsUnread`.
 */
export const FOREIGN_STEP_LIMITS: readonly string[] = Object.freeze([
  "maxSteps",
  "max_steps",
  "maxTurns",
  "max_turns",
  "stopWhen",
  "maxIterations",
  "max_iterations",
  "recursionLimit",
  "recursion_limit",
]);

/**
 * The fields of `FOREIGN_STEP_LIMITS` a config holds, in that list's order (empty when it holds
 * none), as the loop reads a config: held by the object itself or by a prototype of its own (a
 * class's getter, `Object.create(defaults)`'s defaults), never only by `Object.prototype`, and with
 * a value (`null` and `undefined` are absent, as elsewhere). What the loop tells its notice for: a
 * host that sets the step limit itself takes these out of the config it hands the loop (one a
 * prototype holds as well) and tells its own notice for them.
 */
export function foreignStepLimitsIn(config: object): string[] {
  const fields = config as Record<string, unknown>;
  return FOREIGN_STEP_LIMITS.filter((key) => hasOwnKey(fields, key) && fields[key] != null);
}

/**
 * The opening of a notice for `found` (what `foreignStepLimitsIn` gave, not empty), up to where
 * the limit kept is told: the fields named (`config.maxSteps, config.stopWhen`) and that `reader`
 * does not read them — `config.maxSteps is how another SDK spells a step limit, and an Agent does
 * not read it` ("are" and "them" for more than one). The loop's own notice begins so, `reader`
 * "this loop"; a host that tells its own (as `@loopwright/agent`'s `Agent` and session do) goes on
 * after a colon with the limit it keeps and how to stop a run.
 */
export function foreignStepLimitsUnread(found: readonly string[], reader: string): string {
  const named = found.map((key) => `config.${key}`).join(", ");
  const one = found.length === 1;
  return `${named} ${one ? "is" : "are"} how another SDK spells a step limit, and ${reader} does not read ${one ? "it" : "them"}`;
}

/**
 * The one notice for a config that holds another SDK's step limit (`undefined` when it holds none):
 * the fields named, that the loop does not read them, and the limit this run keeps instead.
 */
export function foreignStepLimitNotice(config: object, limit: number): string | undefined {
  const found = foreignStepLimitsIn(config);
  if (found.length === 0) return undefined;
  const fields = config as Record<string, unknown>;
  const given = Object.hasOwn(fields, "maxToolIterations") && fields.maxToolIterations != null;
  return (
    `${foreignStepLimitsUnread(found, "this loop")}: this run allows ${limit} tool steps (config.maxToolIterations` +
    `${given ? "" : "'s default"}). Here ${STEP_LIMIT}.`
  );
}

/** Where a step's end is told (the AI SDK's `onStepFinish`, the Agents SDK's `onStepEnd`). */
const PER_STEP =
  "each step is told to onMessage (the assistant message with its turn, then one tool message per call), and to onEvent as a usage event";

/** Where structured output is asked for (the AI SDK's `output` / `experimental_output`, the Agents SDK's `outputType`). */
const STRUCTURED_OUTPUT =
  'structured output is config.extraBody: { response_format: { type: "json_schema", json_schema } }, the answer\'s text to parse';

/**
 * Options of the Vercel AI SDK and the OpenAI Agents SDK that a port writes here as it wrote them
 * there, and what does that job here: listing every option the loop reads did not say which.
 */
const FAMILIAR = new Map<string, string>([
  ["maxSteps", STEP_LIMIT],
  ["maxTurns", STEP_LIMIT],
  ["stopWhen", STEP_LIMIT],
  ["instructions", "the instructions are system"],
  ["abortSignal", "the abort signal is signal"],
  [
    "timeout",
    "a time limit on the whole run is signal: AbortSignal.timeout(ms) (config.requestTimeoutSeconds is the silence allowed between chunks)",
  ],
  ["onStepFinish", PER_STEP],
  ["onStepEnd", PER_STEP],
  ["onChunk", "each delta is an output or thinking event to onEvent"],
  ["onFinish", "the run's result is what runAgentLoop resolves with"],
  [
    "prepareStep",
    "beforeStep returns each step's plan ({ messages, toolChoice, tools, stop, model, extraBody }): its model is plan { model }, its providerOptions plan { extraBody }, both for that step only",
  ],
  ["toolChoice", "a step's tool_choice is beforeStep's plan { toolChoice }"],
  ["activeTools", "a step's tools are beforeStep's plan { tools }"],
  ["maxOutputTokens", "the reply's ceiling is config.maxTokens"],
  [
    "prompt",
    'the question goes in messages: [{ role: "user", content }] (config.prompt is a resolved spec\'s system prompt)',
  ],
  ["output", STRUCTURED_OUTPUT],
  ["experimental_output", STRUCTURED_OUTPUT],
  [
    "mcpServers",
    "an MCP server's tools reach the loop through @loopwright/tools-mcp: createMcpPool(servers), then tools: await pool.tools() and dispatch: ({ name, args }, signal) => pool.call(name, args, signal); config.mcpServers is a spec's list for the host to connect, never read by the loop",
  ],
  ["outputType", STRUCTURED_OUTPUT],
]);

/** What to write instead of an option the loop does not know, where one is known: " (…)" or "". */
function familiarHint(key: string): string {
  // First: `prompt` is a config field too, but there it is a resolved spec's system prompt.
  const hint = FAMILIAR.has(key) ? FAMILIAR.get(key) : undefined;
  if (hint !== undefined) return ` (${hint})`;
  if (ENDPOINT_FIELDS.has(key) || BY_NAME.get(`config.${key}`)?.handling === "read") {
    return ` (it is read from config: config.${key})`;
  }
  // A resolved spec's field (`name`, `servers`): config takes it, but only for the host to act on.
  return BY_NAME.has(`config.${key}`)
    ? ` (config.${key} is a field of a resolved agent config, the host's to act on: the loop accepts it there and never reads it)`
    : "";
}

/**
 * Refuses what the loop would otherwise drop: an option key it does not know, and an option or
 * config field it knows of but does not do yet when its value asks for it. Throws `LoopOptionError`.
 */
export function refuseUnbuilt(options: object, config: object): void {
  for (const [key, value] of Object.entries(options)) {
    const option = BY_NAME.get(key);
    if (!option) {
      throw new LoopOptionError(
        "unknown-option",
        key,
        `runAgentLoop does not know the option "${key}"${familiarHint(key)}; the options it reads are ${LOOP_OPTIONS.filter(
          (o) => o.handling === "read" && !o.name.includes("."),
        )
          .map((o) => o.name)
          .join(", ")}.`,
      );
    }
    if (value !== undefined) refuseIfUnbuilt(option, value);
  }
  for (const [key, value] of Object.entries(config)) {
    const option = BY_NAME.get(`config.${key}`);
    const asked = option && asks(option);
    if (option && (asked ? asked(value) : value !== undefined)) refuseIfUnbuilt(option, value);
  }
}

/** The option's own test of a value, never one a polluted `Object.prototype.asks` holds. */
function asks(option: LoopOption): LoopOption["asks"] {
  return ownField(option, "asks");
}

function refuseIfUnbuilt(option: LoopOption, value: unknown): void {
  if (option.handling !== "not-built") return;
  const asked = asks(option);
  if (asked && !asked(value)) return;
  throw new LoopOptionError(
    "not-built",
    option.name,
    `${option.name} asks for ${ownField(option, "what")}, which this loop does not do yet; it is refused rather than ` +
      `ignored. Leave ${option.name} out${option.name.startsWith("config.") ? " of the config" : ""} for now.`,
  );
}

/** What a value is, in a few words, for a refusal (never the value itself: it may be long or private). */
export function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "nothing";
  if (Array.isArray(value)) return "an array";
  if (isThenable(value)) return "a Promise";
  if (typeof value === "object") return "an object";
  if (typeof value === "string")
    return value === "" ? "an empty string" : `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : `the number ${value}`;
  return `a ${typeof value}`;
}

function isThenable(value: unknown): boolean {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/**
 * Refuses a `catalog` that is not one by tool-loading's own rule (`checkCatalog`), in every mode:
 * a Promise is named as one (an MCP pool's `servers()` answers a Promise, to be awaited). Absent or
 * `null` is no catalogue. Throws `LoopOptionError` (`invalid-option`, option `catalog`).
 */
export function checkCatalogOption(catalog: unknown): void {
  if (catalog === undefined || catalog === null) return;
  if (isThenable(catalog)) {
    throw new LoopOptionError(
      "invalid-option",
      "catalog",
      "runAgentLoop: catalog is a Promise — await pool.servers() (or whatever answers it) and pass the array " +
        "of { name, tools: [{ name }] } servers it resolves to.",
    );
  }
  try {
    checkCatalog(catalog, "runAgentLoop: catalog");
  } catch (error) {
    throw new LoopOptionError(
      "invalid-option",
      "catalog",
      error instanceof Error ? error.message : String(error),
    );
  }
}

/**
 * Refuses a `tools` entry that is not a function tool with a name: not an object, no `function`
 * object, or a `function.name` that is not a string (it would be declared under another name, or
 * fail inside the run). Throws `LoopOptionError` (`invalid-option`, option `tools`) naming the index.
 */
export function checkToolEntries(tools: readonly unknown[]): void {
  tools.forEach((entry, i) => {
    const fault = toolEntryFault(entry);
    if (fault === undefined) return;
    throw new LoopOptionError(
      "invalid-option",
      "tools",
      `runAgentLoop: tools entry ${i}${fault}; each entry must be ` +
        '{ type: "function", function: { name: string, description?, parameters? } }.',
    );
  });
}

/** What is wrong with one `tools` entry, worded to follow "tools entry 3", or `undefined`. */
function toolEntryFault(entry: unknown): string | undefined {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return ` is ${kindOf(entry)}`;
  const fn = (entry as { function?: unknown }).function;
  if (typeof fn !== "object" || fn === null || Array.isArray(fn)) return " has no function";
  const name = (fn as { name?: unknown }).name;
  if (typeof name === "string") return undefined;
  return `'s function.name is ${typeof name === "number" ? "a number" : kindOf(name)}, not a string`;
}

/**
 * Refuses a `system`, flag, callback or `contextLength` of the wrong type before anything is sent,
 * rather than sending it (`system: 5`), dropping it (`onEvent: "log"`, never called) or reading it one
 * way here and another there (`contextLength: "1000"`). `null` is taken as absent throughout. Throws `LoopOptionError` (`invalid-option`)
 * naming the option and what it was given.
 */
export function checkOptionTypes(given: object, givenConfig: object): void {
  const options = given as Record<string, unknown>;
  const config = givenConfig as Record<string, unknown>;
  const { system } = options;
  if (system != null && typeof system !== "string") {
    throw new LoopOptionError(
      "invalid-option",
      "system",
      `runAgentLoop: system must be a string (the system prompt; "" or absent for none), and was given ${kindOf(system)}.`,
    );
  }
  const flags: [Record<string, unknown>, string, string][] = [
    [options, "parallel", "parallel"],
    [options, "recoverToolCalls", "recoverToolCalls"],
    [options, "dedupeToolCalls", "dedupeToolCalls"],
    [config, "parallel", "config.parallel"],
    [config, "recoverToolCalls", "config.recoverToolCalls"],
    [config, "dedupeToolCalls", "config.dedupeToolCalls"],
    [config, "compact", "config.compact"],
    [options, "preselect", "preselect"],
    [config, "preselect", "config.preselect"],
    [config, "preselectKeywords", "config.preselectKeywords"],
  ];
  for (const [from, key, option] of flags) {
    const value = from[key];
    if (value == null || typeof value === "boolean") continue;
    const dedupe = key === "dedupeToolCalls";
    if (dedupe && typeof value === "function") continue;
    throw new LoopOptionError(
      "invalid-option",
      option,
      `runAgentLoop: ${option} must be true or false${dedupe ? ", or a function (request) => boolean," : ""} ` +
        `(or absent for the default), and was given ${kindOf(value)}.`,
    );
  }
  const selector = config.toolSelectModel;
  if (selector != null && typeof selector !== "string") {
    throw new LoopOptionError(
      "invalid-option",
      "config.toolSelectModel",
      `runAgentLoop: config.toolSelectModel must be a model name (a string; "" or absent for none), and was given ${kindOf(selector)}.`,
    );
  }
  // A watcher or callback that is not a function would be dropped without a word (the watchers'
  // throws are ignored), or throw a bare TypeError mid-run after a request was paid for.
  for (const key of [
    "onEvent",
    "onRequest",
    "onToolCall",
    "onToolResult",
    "onTurn",
    "onMessage",
    "beforeStep",
  ]) {
    const value = options[key];
    if (value == null || typeof value === "function") continue;
    throw new LoopOptionError(
      "invalid-option",
      key,
      `runAgentLoop: ${key} must be a function (or absent), and was given ${kindOf(value)}.`,
    );
  }
  const window = config.contextLength;
  if (window != null && !(typeof window === "number" && Number.isInteger(window) && window >= 0)) {
    throw new LoopOptionError(
      "invalid-option",
      "config.contextLength",
      "runAgentLoop: config.contextLength must be the context window as a whole number of tokens " +
        `(0, null or absent for none), and was given ${kindOf(window)}${typeof window === "string" ? " (parse it first)" : ""}.`,
    );
  }
}

/**
 * Refuses a `config.extraBody` that `buildBody` would refuse when the first step's body is built —
 * one that is not a plain object of body fields (an array, a string, a `Map` or another class's
 * instance, named by what it was), setting a field the loop owns (`@loopwright/negotiate`'s
 * `OWNED_BODY_FIELDS`), holding a `"__proto__"` key, or holding a value JSON cannot send as given
 * (`NaN`, `±Infinity`, a BigInt, a cycle, named by its path: `config.extraBody.top_p`) — before
 * anything is sent. Found only at the first step's body, it came after a preselect side task had
 * been sent and paid for. `null` and absent are none. Throws `LoopOptionError` (`invalid-option`,
 * option `config.extraBody`), in negotiate's `checkExtraBody`'s words, the rule `buildBody` holds
 * it to.
 */
export function checkExtraBodyOption(extraBody: unknown): void {
  const said = bodyFieldsRefusal(extraBody);
  if (said !== undefined) {
    throw new LoopOptionError("invalid-option", "config.extraBody", `runAgentLoop: ${said}`);
  }
}

/**
 * What negotiate's `checkExtraBody` says of `extraBody` named as `path` (`config.extraBody sets
 * "model"…`), where it refuses it: the rule `buildBody` holds every step's `extraBody` to.
 * Undefined where it takes it. For a config's `extraBody` and a step plan's alike.
 */
export function bodyFieldsRefusal(extraBody: unknown, path = "config.extraBody"): string | undefined {
  try {
    checkExtraBody(extraBody, path);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
