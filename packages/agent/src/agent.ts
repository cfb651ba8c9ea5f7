import type { RunEvent } from "@loopwright/events";
import { SUMMARY_LEAD } from "@loopwright/ledger";
import {
  type AgentLoopOptions,
  type CallResult,
  type ChatMessage,
  DEFAULT_MAX_TOOL_ITERATIONS,
  type DedupePolicy,
  type DispatchRequest,
  errorMessage,
  failedRun,
  foreignStepLimitsIn,
  foreignStepLimitsUnread,
  type LoopConfig,
  NOT_RUN,
  type RunUsage,
  type SideUsage,
  type StepPlan,
  type ToolChoice,
  UNREADABLE_ERROR,
} from "@loopwright/loop";
import { isPlainPrototype } from "@loopwright/schema-compat";
import { type AgentSpec, resolveAgentSpec } from "@loopwright/spec";
import type {
  AfterToolCallContext,
  AfterToolCallResult,
  AgentEvent,
  AgentListener,
  AgentRunResult,
  AgentRunStatus,
  BeforeToolCallContext,
  BeforeToolCallResult,
} from "./agent-events.js";
import { type AgentBackend, loopBackend } from "./backend.js";
import { configCopy } from "./config-copy.js";
import { echoedName, quotedEcho } from "./echo.js";
import { AgentError, errorText, forTheAgentsHost, kindOf } from "./errors.js";
import {
  type AgentMessage,
  cutText,
  defaultConvertToLlm,
  fieldOf,
  hasCalls,
  messageProblem,
  toolCallsOf,
  userMessage,
} from "./messages.js";
import { ownFields, setting } from "./own.js";
import { protoless } from "./protoless.js";
import { type AgentTool, type ToolExecutionMode, ToolRegistry } from "./tools.js";

/** How many queued messages a drain point delivers: the oldest only (default), or all of them. */
export type QueueMode = "one-at-a-time" | "all";

/** What `transformContext` is told besides the transcript. */
export interface TransformContextInfo {
  /** The loop step the request is for, from 1. */
  step: number;
  /** The prompt tokens the run's last request reported (absent on a run's first step): with `limit`, where a host decides to compact. */
  used?: number;
  /**
   * The context window, where `config.contextLength` gives one: that of the model the run's last
   * request named (`model`), whose count `used` is — with `config.compact`, a smaller window an
   * endpoint's refusal named for that model in this run (the loop's `BeforeStepContext.limit`).
   */
  limit?: number;
  /** The model the run's last request named: what `used` counted and `limit` is the window of. Absent on a run's first step. */
  model?: string;
}

/**
 * What `new Agent` reads. Give `config` (the loop's config) or `spec` (agent documents, weakest
 * first). Each option is checked when the agent is built: a wrong type throws `AgentError`
 * (`invalid-input`) naming the option and what it got.
 */
export interface AgentOptions {
  /** Endpoint, model parameters, tool and retry policy, as `runAgentLoop` takes them. */
  config?: LoopConfig | null | undefined;
  /** Parsed agent specs, layered with `resolveAgentSpec` (one spec, or a list weakest first). */
  spec?: AgentSpec | readonly AgentSpec[] | null | undefined;
  /** The system prompt. */
  system?: string | null | undefined;
  /**
   * Automatic compaction through the loop's `compact`: once a request would fill 75 % of the window
   * (`config.contextLength`, required), or would not fit it with its reply ceiling — the request as
   * it goes out, tool results appended since the last one counted — the oldest stretch is folded into a summary written by
   * `model` (default: the run's own model, named as `tasks.compaction.model`; an existing
   * `tasks.compaction` in the config is kept), and the agent's transcript becomes the folded one.
   * Without any of those models (no `model` here, no `tasks.compaction.model`, no model in the config
   * or spec), `new Agent` throws `AgentError` (`invalid-input`) naming what to set.
   */
  autoCompact?: boolean | { model?: string | undefined } | null | undefined;
  /** The tools, or a registry to share. */
  tools?: readonly AgentTool[] | ToolRegistry | null | undefined;
  /**
   * The loop's `catalog`: the tools by name, grouped by server (`[{ name, tools: [{ name,
   * description? }] }]`), for `config.toolDiscovery` `"ondemand"` and `"proxy"`; a server's name
   * loads all of its tools. Absent: one server `"tools"` holding every tool. A tool it does not
   * list cannot be loaded, nor called in these modes (a call to it is refused with a result the
   * model reads, never run): list every tool the model may call. Read at each loop run's start
   * (see `Agent.catalog`).
   */
  catalog?: AgentLoopOptions["catalog"] | null | undefined;
  /** Whether identical calls of a step share one answer (the loop's `dedupeToolCalls`); overrides `config.dedupeToolCalls`. */
  dedupeToolCalls?: DedupePolicy | null | undefined;
  /** Runs a call of a tool the registry does not hold; without it such a call is answered "unknown tool". */
  dispatch?: ((request: DispatchRequest, signal?: AbortSignal) => unknown) | null | undefined;
  /** The transcript to start from. */
  messages?: readonly AgentMessage[] | null | undefined;
  /**
   * On demand (`config.toolDiscovery: "ondemand"`): the tools already loaded (the host's names), as a
   * host that persisted `agent.loaded` restores them; declared from the first request (the loop's
   * `loaded`). Each run's result updates it.
   */
  loaded?: readonly string[] | null | undefined;
  /** What runs the loop: `loopBackend()` (the default runtime's `runAgentLoop`) when absent. */
  backend?: AgentBackend | null | undefined;
  /** How a step's calls run: "parallel" (default) or "sequential". A tool's own `executionMode: "sequential"` wins for its step. */
  toolExecution?: ToolExecutionMode | null | undefined;
  steeringMode?: QueueMode | null | undefined;
  followUpMode?: QueueMode | null | undefined;
  /** Rewrites the transcript before each request (pruning, injected context); handed a copy, so what it changes in place goes with that request only. Must leave every tool call answered. */
  transformContext?:
    | ((
        messages: readonly AgentMessage[],
        signal: AbortSignal | undefined,
        info: TransformContextInfo,
      ) => readonly AgentMessage[] | Promise<readonly AgentMessage[]>)
    | null
    | undefined;
  /** Turns the transcript into chat messages; `defaultConvertToLlm` (app-only messages left out) when absent. */
  convertToLlm?: ((messages: readonly AgentMessage[]) => ChatMessage[]) | null | undefined;
  /**
   * Runs before each tool call, after `tool_execution_start`: may block it or rewrite its arguments.
   * When the run is stopped while it is pending, the tool never starts, whatever it answers. A hook
   * that throws or rejects fails closed: the call is not run, and its error text goes to a `notice`.
   */
  beforeToolCall?:
    | ((
        context: BeforeToolCallContext,
        signal: AbortSignal | undefined,
      ) => BeforeToolCallResult | Promise<BeforeToolCallResult>)
    | null
    | undefined;
  /**
   * Runs after each tool call, before `tool_execution_end`: may replace the result or ask to
   * terminate. A hook that throws or rejects withholds the result; its error text goes to a `notice`.
   */
  afterToolCall?:
    | ((
        context: AfterToolCallContext,
        signal: AbortSignal | undefined,
      ) => AfterToolCallResult | Promise<AfterToolCallResult>)
    | null
    | undefined;
  /**
   * Asked before each request for that step's `tool_choice` (`"auto"`, `"none"`, `"required"` or
   * `{ type: "function", function: { name } }`); `undefined` sends none. What the loop's
   * `beforeStep` plan takes (see `StepPlan` in `@loopwright/loop`). A session answers `"none"` on its
   * reserved final turn.
   */
  toolChoice?: ((info: TransformContextInfo) => ToolChoice | undefined) | null | undefined;
  /**
   * Asked after each tool step, before queued messages and the next request, and after a turn that
   * answered with text when a queued message would start another: true ends the run ("stopped"),
   * the queued messages kept.
   */
  shouldStopAfterTurn?:
    | ((
        context: {
          messages: readonly AgentMessage[];
          message: ChatMessage | undefined;
          toolResults: ChatMessage[];
        },
        signal: AbortSignal | undefined,
      ) => boolean | Promise<boolean>)
    | null
    | undefined;
}

/** The parts of the loop's step context `transformContext` is told. */
function pick(context: {
  used?: number;
  limit?: number;
  model?: string;
}): Omit<TransformContextInfo, "step"> {
  return {
    ...(context.used !== undefined ? { used: context.used } : {}),
    ...(context.limit !== undefined ? { limit: context.limit } : {}),
    ...(context.model !== undefined ? { model: context.model } : {}),
  };
}

/** One tool step as the agent tracks it. */
interface Batch {
  message: ChatMessage;
  ids: string[];
  results: ChatMessage[];
  terminate: Set<string>;
  /** Calls answered with another call's result (the dedupe): they ran as that call did. */
  repeats: Set<string>;
  sequential: boolean;
}

const FUNCTION_OPTIONS = [
  "dispatch",
  "transformContext",
  "convertToLlm",
  "beforeToolCall",
  "afterToolCall",
  "toolChoice",
  "shouldStopAfterTurn",
] as const;

/** Every option `new Agent` reads (the type makes a new option be listed here). */
const OPTION_NAMES = Object.keys({
  config: true,
  spec: true,
  system: true,
  autoCompact: true,
  tools: true,
  catalog: true,
  dedupeToolCalls: true,
  dispatch: true,
  messages: true,
  loaded: true,
  backend: true,
  toolExecution: true,
  steeringMode: true,
  followUpMode: true,
  transformContext: true,
  convertToLlm: true,
  beforeToolCall: true,
  afterToolCall: true,
  toolChoice: true,
  shouldStopAfterTurn: true,
} satisfies Record<keyof AgentOptions, true>) as (keyof AgentOptions)[];

/**
 * Throws `AgentError` (`invalid-input`) for an option key `who` does not read (a misspelling, an
 * option of another call), as `runAgentLoop` refuses one: dropped in silence, `sytem` would leave the
 * run without its system prompt. `hint` says more for a key known to be asked for by mistake.
 */
export function refuseUnknownOptions(
  options: object,
  known: readonly string[],
  who: string,
  hint: Readonly<Record<string, string>> = {},
): void {
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const near = known.find((name) => closeSpelling(name, key));
    throw new AgentError(
      "invalid-input",
      `${who} does not know the option ${JSON.stringify(key)}${
        Object.hasOwn(hint, key) ? `: ${hint[key]}` : near ? ` (did you mean ${JSON.stringify(near)}?)` : ""
      }; the options it reads are ${known.join(", ")}.`,
    );
  }
}

/** Whether two names differ by at most two single-character edits, case aside (a likely misspelling). */
function closeSpelling(a: string, b: string): boolean {
  return editsWithin(a.toLowerCase(), b.toLowerCase(), 2);
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Checks every option `new Agent` reads, before any is used: throws `AgentError` (`invalid-input`)
 * naming the option, what it must be, and what it got, after `who` (the call the host made:
 * `createSession` checks the options it hands on with this rule too). An option left `undefined`
 * or `null` is absent (null is how a nullable field reads back from JSON); options it does not know
 * are not looked at.
 */
export function checkAgentOptions(options: object, who = "new Agent"): void {
  const given = options as Record<string, unknown>;
  const refuse = (name: string, want: string, got: unknown = given[name]): never => {
    throw new AgentError("invalid-input", `${who}: ${name} must be ${want}; got ${kindOf(got)}.`);
  };
  const present = (name: string) => given[name] != null;
  if (present("config") && !isRecord(given.config)) refuse("config", "an object (the loop's config)");
  if (present("spec")) {
    const specs = Array.isArray(given.spec) ? given.spec : [given.spec];
    if (!specs.every(isRecord)) refuse("spec", "a parsed agent spec or a list of them");
  }
  if (present("system") && typeof given.system !== "string") refuse("system", "a string");
  const autoCompact = given.autoCompact;
  if (present("autoCompact") && typeof autoCompact !== "boolean") {
    if (!isRecord(autoCompact)) refuse("autoCompact", "true, false or { model }");
    const model = setting(autoCompact, "model");
    if (model != null && (typeof model !== "string" || model === "")) {
      refuse("autoCompact.model", "a model name (a non-empty string)", model);
    }
  }
  if (present("tools")) {
    const tools = given.tools;
    if (!(tools instanceof ToolRegistry)) {
      if (!Array.isArray(tools)) refuse("tools", "a list of tools or a ToolRegistry");
      (tools as unknown[]).forEach((tool, at) => {
        if (
          !isRecord(tool) ||
          typeof setting(tool, "name") !== "string" ||
          setting(tool, "name") === "" ||
          typeof setting(tool, "execute") !== "function"
        ) {
          refuse(`tools[${at}]`, "a tool with a non-empty name and an execute function", tool);
        }
      });
    }
  }
  if (present("catalog")) {
    if (!Array.isArray(given.catalog)) refuse("catalog", "a list of servers ({ name, tools: [{ name }] })");
    (given.catalog as unknown[]).forEach((server, at) => {
      if (
        !isRecord(server) ||
        typeof setting(server, "name") !== "string" ||
        !Array.isArray(setting(server, "tools"))
      ) {
        refuse(`catalog[${at}]`, "a server ({ name, tools: [{ name }] })", server);
      }
      (setting(server, "tools") as unknown[]).forEach((tool, j) => {
        if (!isRecord(tool) || typeof setting(tool, "name") !== "string" || setting(tool, "name") === "") {
          refuse(`catalog[${at}].tools[${j}]`, "a tool ({ name, description? }) with a non-empty name", tool);
        }
      });
    });
  }
  const dedupe = given.dedupeToolCalls;
  if (present("dedupeToolCalls") && typeof dedupe !== "boolean" && typeof dedupe !== "function") {
    refuse("dedupeToolCalls", "true, false or a function");
  }
  for (const name of FUNCTION_OPTIONS) {
    if (present(name) && typeof given[name] !== "function") refuse(name, "a function");
  }
  if (present("messages")) checkedMessages(`${who}: messages`, given.messages);
  if (present("loaded") && !isNameList(given.loaded)) refuse("loaded", "a list of tool names");
  if (
    present("backend") &&
    !(isRecord(given.backend) && typeof setting(given.backend, "run") === "function")
  ) {
    refuse("backend", "an AgentBackend (an object with a run function)");
  }
  const oneOf = (name: string, values: readonly string[]) => {
    if (present(name) && !values.includes(given[name] as string)) {
      refuse(name, values.map((v) => `"${v}"`).join(" or "));
    }
  };
  oneOf("toolExecution", ["parallel", "sequential"]);
  oneOf("steeringMode", ["one-at-a-time", "all"]);
  oneOf("followUpMode", ["one-at-a-time", "all"]);
}

/** Whether a value is a list of names (strings). */
function isNameList(value: unknown): value is readonly string[] {
  return Array.isArray(value) && value.every((name) => typeof name === "string");
}

/**
 * The loaded names a transcript still shows being loaded or used: a tool call of that name, or one
 * (a `load_tools`, a `call_tool`) whose arguments name it. The rest went with the messages that
 * loaded them, and are loaded again when the model asks.
 */
function stillShown(names: readonly string[], messages: readonly AgentMessage[]): string[] {
  if (names.length === 0) return [];
  const calls: { name: unknown; args: string }[] = [];
  for (const message of messages) {
    if (fieldOf(message, "role") !== "assistant") continue;
    for (const call of toolCallsOf(message)) {
      if (call.type !== "function") continue;
      const args: unknown = call.function.arguments;
      calls.push({ name: call.function.name, args: typeof args === "string" ? args : JSON.stringify(args) });
    }
  }
  return names.filter((name) =>
    calls.some((call) => call.name === name || call.args.includes(JSON.stringify(name))),
  );
}

/** The notice of a stop that came once the model's answer was whole: the run ends `ok`. */
const STOPPED_AFTER_ANSWER =
  "The stop came after the model's answer was complete: the answer is kept and the run ended ok.";

/** The refusal of a change to `Agent.messages` (`how`: "assigned", "changed in place") while a run's loop goes. */
function busyChange(how: string): AgentError {
  return new AgentError(
    "busy",
    `Agent.messages was ${how} while a run is going; the transcript was not changed (the run appends its messages to it, and would leave its calls unanswered). Change it once the run has ended — after prompt() resolves, or in an agent_end listener —, or add a message with steer()/followUp().`,
  );
}

/** A transcript given whole, checked: a list, each entry a message (`messageProblem`); else `AgentError` (`invalid-input`). */
function checkedMessages(what: string, messages: unknown): readonly AgentMessage[] {
  if (!Array.isArray(messages)) {
    throw new AgentError("invalid-input", `${what} must be a list of messages; got ${kindOf(messages)}.`);
  }
  messages.forEach((message, at) => {
    const problem = messageProblem(message, false);
    if (problem) throw new AgentError("invalid-input", `${what}[${at}] ${problem}.`);
  });
  return messages as readonly AgentMessage[];
}

/**
 * Where a chat transcript's tool calls and answers do not pair as an endpoint takes them: the
 * index of the first message at fault and what is wrong with it, or undefined when they pair.
 */
function pairingFault(view: readonly ChatMessage[]): { at: number; text: string } | undefined {
  let asked: string[] = [];
  let askedAt = -1;
  const answered = new Set<string>();
  const open = () => asked.filter((id) => !answered.has(id));
  for (let at = 0; at < view.length; at++) {
    const message = view[at] as ChatMessage;
    if (fieldOf(message, "role") === "tool") {
      const id = fieldOf(message, "tool_call_id") as string;
      if (asked.includes(id) && !answered.has(id)) {
        answered.add(id);
        continue;
      }
      return {
        at,
        text: `answers no open tool call of the assistant message right before it (tool_call_id ${quotedEcho(id)})`,
      };
    }
    if (open().length > 0) {
      return {
        at: askedAt,
        text: `has tool calls no tool message answers right after it (${open().map(quotedEcho).join(", ")})`,
      };
    }
    asked = fieldOf(message, "role") === "assistant" ? toolCallsOf(message).map((call) => call.id) : [];
    askedAt = at;
    answered.clear();
  }
  if (open().length > 0) {
    return {
      at: askedAt,
      text: `has tool calls no tool message answers right after it (${open().map(quotedEcho).join(", ")})`,
    };
  }
  return undefined;
}

/** Whether a config's `prompt` has text the loop sends as the system prompt (`system` beside it, the loop refuses). */
function hasPromptText(config: LoopConfig): boolean {
  const prompt = setting(config, "prompt");
  return (
    Array.isArray(prompt) &&
    prompt.some((entry: unknown) => {
      const text = setting(entry, "text");
      return typeof text === "string" && text !== "";
    })
  );
}

/** The refusal of a system prompt given twice: `system` beside prompt entries, which the loop refuses at every request. */
function givenTwice(who: string, where: string): AgentError {
  return new AgentError(
    "invalid-input",
    `${who}: the system prompt was given twice, as system and as ${where}; the loop refuses both at every ` +
      "request, so give it one way (leave system out, or the prompt entries).",
  );
}

/**
 * The calls of a chat transcript's last assistant message that no tool message after it answers,
 * when nothing but tool messages follows it (a run stopped after the call was stored, before its
 * tools ran); else none.
 */
function trailingOpenCalls(messages: readonly ChatMessage[]): string[] {
  const answered = new Set<string>();
  let at = messages.length - 1;
  for (; at >= 0 && fieldOf(messages[at], "role") === "tool"; at--) {
    answered.add(fieldOf(messages[at], "tool_call_id") as string);
  }
  const last = messages[at];
  if (fieldOf(last, "role") !== "assistant") return [];
  return toolCallsOf(last)
    .map((call) => call.id)
    .filter((id) => !answered.has(id));
}

/** The loop config the agent specs resolve to; what `resolveAgentSpec` refuses is `AgentError` (`invalid-input`) naming `spec`. */
function specConfig(spec: AgentSpec | readonly AgentSpec[]): LoopConfig {
  try {
    return resolveAgentSpec(Array.isArray(spec) ? spec : [spec as AgentSpec]);
  } catch (error) {
    throw new AgentError("invalid-input", `new Agent: spec: ${errorText(error)}`, { cause: error });
  }
}

/**
 * `config` with the loop's compaction turned on as `autoCompact` asks (a copy: see `configCopy`);
 * throws `AgentError` (`invalid-input`) without a window, or without a model to write the summaries
 * (`autoCompact`'s, the config's `tasks.compaction.model` or the run's own, as they stand now): the
 * loop's refusal of that spoke of `config.compact` and `tasks.compaction`, which such a host never
 * set. `fromSpec`: the config was made from a spec (the refusal names the spec's model).
 */
function withAutoCompact(
  config: LoopConfig,
  autoCompact: NonNullable<AgentOptions["autoCompact"]> | undefined,
  fromSpec = false,
): LoopConfig {
  if (autoCompact === undefined || autoCompact === false) return config;
  const limit = setting(config, "contextLength");
  if (!(typeof limit === "number" && Number.isFinite(limit) && limit > 0)) {
    throw new AgentError(
      "invalid-input",
      "autoCompact folds the transcript at 75 % of the context window and needs config.contextLength " +
        `(the window in tokens, above zero); it was ${typeof limit === "number" ? String(limit) : kindOf(limit)}.`,
    );
  }
  const named =
    typeof autoCompact === "object" ? (setting(autoCompact, "model") as string | undefined) : undefined;
  const nonEmpty = (value: unknown) => typeof value === "string" && value !== "";
  const runModel = setting(config, "model");
  if (
    named === undefined &&
    !nonEmpty(setting(setting(setting(config, "tasks"), "compaction"), "model")) &&
    !nonEmpty(runModel)
  ) {
    const unset = fromSpec ? "the spec names no model" : `config.model was ${kindOf(runModel)}`;
    throw new AgentError(
      "invalid-input",
      `autoCompact needs a model to write its summaries: it names none (autoCompact: ${
        typeof autoCompact === "object" ? "{} without a model" : "true"
      }), and the run's own model, which writes them then, is not set (${unset}; every request names ` +
        `it too). ${fromSpec ? "Name the model in the spec" : "Set config.model"}; ` +
        'autoCompact: { model: "…" } names a summariser of its own besides.',
    );
  }
  // A copy that keeps the config's getters and what its prototype holds, as a run reads them: a
  // spread left an Object.create(defaults) config's model and base URL behind. Its tasks are read
  // each time too, `tasks.compaction` and the model given to it made from them as they stand then.
  return configCopy(config, {
    with: { compact: true },
    read: { tasks: (tasks, copy) => compactionTasks(tasks, named, copy) },
  });
}

/**
 * `tasks` (the config's, as it stands when the run reads it) with `compaction` naming the model that
 * writes the summaries: `named` (`autoCompact`'s `model`), else the model `tasks.compaction` gives,
 * else the config's own (`config`: the agent's copy, as the run reads it). A copy of each (see
 * `configCopy`): their other fields, getters and what their prototypes hold are read as the loop
 * reads them; the host's objects are left as they are.
 */
function compactionTasks(tasks: unknown, named: string | undefined, config: LoopConfig): LoopConfig["tasks"] {
  const given = setting(tasks, "compaction");
  const givenModel = setting(given, "model");
  const model =
    named ??
    (typeof givenModel === "string" && givenModel !== "" ? givenModel : (setting(config, "model") as string));
  const isObject = (value: unknown): value is LoopConfig =>
    (typeof value === "object" || typeof value === "function") && value !== null;
  const compaction = isObject(given) ? configCopy(given, { with: { model } }) : { model };
  return isObject(tasks)
    ? (configCopy(tasks, { with: { compaction } }) as unknown as LoopConfig["tasks"])
    : { compaction };
}

/**
 * Throws the signal's reason once it has aborted: the loop answered the call with the stop already,
 * so nothing of it may start afterwards.
 */
function stopIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason ?? new Error("The run was stopped.");
}

/**
 * Whether `value` is a promise (anything with a callable `then`), for a hook that must answer
 * synchronously. Its rejection is handled here, at once, so a hook written `async` that rejects can
 * never end the host process as an unhandled rejection. False where reading `then` throws.
 */
function handledThenable(value: unknown): boolean {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  let then: unknown;
  try {
    then = (value as { then?: unknown }).then;
  } catch {
    return false;
  }
  if (typeof then !== "function") return false;
  try {
    then.call(value, undefined, () => {});
  } catch {
    // A `then` that throws: nothing left to handle.
  }
  return true;
}

const NO_USAGE: RunUsage = { prompt: 0, completion: 0, total: 0, cached: 0 };

/** No side request answered yet. */
const NO_SIDE: SideUsage = { ...NO_USAGE, summary: { ...NO_USAGE }, preselect: { ...NO_USAGE } };

/** The four counts of `value`, where it has them as whole numbers from 0; else none. */
function countsOf(value: unknown): RunUsage | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const counts = value as Record<string, unknown>;
  const read = (key: string) => {
    const n = counts[key];
    return typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : undefined;
  };
  const prompt = read("prompt");
  const completion = read("completion");
  const total = read("total");
  const cached = read("cached");
  return prompt === undefined || completion === undefined || total === undefined || cached === undefined
    ? undefined
    : { prompt, completion, total, cached };
}

/**
 * A loop run's side usage (`result.sideUsage`, `failedRun(error).sideUsage`, a usage event's), read
 * field by field: what a backend leaves out or writes as no count (a backend of its own, an older
 * loop) is zero, never `NaN` in the host's totals.
 */
function sideUsageOf(value: unknown): SideUsage {
  const all = countsOf(value);
  if (!all) return NO_SIDE;
  const { summary, preselect } = value as { summary?: unknown; preselect?: unknown };
  return {
    ...all,
    summary: countsOf(summary) ?? { ...NO_USAGE },
    preselect: countsOf(preselect) ?? { ...NO_USAGE },
  };
}

function addCounts(a: RunUsage, b: RunUsage): RunUsage {
  return {
    prompt: a.prompt + b.prompt,
    completion: a.completion + b.completion,
    total: a.total + b.total,
    cached: a.cached + b.cached,
  };
}

function addSide(a: SideUsage, b: SideUsage): SideUsage {
  return {
    ...addCounts(a, b),
    summary: addCounts(a.summary, b.summary),
    preselect: addCounts(a.preselect, b.preselect),
  };
}

/** Whether any side request cost anything. */
function spent(side: SideUsage): boolean {
  return side.prompt > 0 || side.completion > 0 || side.total > 0;
}

/** The calls in flight on a run's signal, and the one listener that stops them. */
const callsOf = new WeakMap<AbortSignal, { calls: Set<AbortController>; stop: () => void }>();

/**
 * A signal of one tool call's own that aborts, with the run's reason, when the run's `signal`
 * does. The calls in flight share one listener on the run's signal, removed with the last
 * (`release`): a tool that listens to its signal, as `AgentToolContext.signal` invites, adds its
 * listener to its call's, so eleven parallel calls no longer make Node warn of a leak
 * (`MaxListenersExceededWarning`) on the run's.
 */
function callOf(signal: AbortSignal): { signal: AbortSignal; release: () => void } {
  const call = new AbortController();
  if (signal.aborted) {
    call.abort(signal.reason);
    return { signal: call.signal, release: () => {} };
  }
  let entry = callsOf.get(signal);
  if (!entry) {
    const calls = new Set<AbortController>();
    const stop = () => {
      callsOf.delete(signal);
      for (const each of [...calls]) each.abort(signal.reason);
    };
    entry = { calls, stop };
    callsOf.set(signal, entry);
    signal.addEventListener("abort", stop, { once: true });
  }
  const { calls, stop } = entry;
  calls.add(call);
  return {
    signal: call.signal,
    release: () => {
      calls.delete(call);
      if (calls.size === 0 && callsOf.get(signal)?.calls === calls) {
        callsOf.delete(signal);
        signal.removeEventListener("abort", stop);
      }
    },
  };
}

/**
 * `pending`, or the run's stop if the signal aborts first: a host callback the agent awaits
 * (`transformContext`) that stalls cannot keep a stopped run going. What it settles with after the
 * stop is ignored, its rejection handled.
 */
function untilStopped<T>(pending: T | Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal || !handledThenable(pending)) return Promise.resolve(pending);
  if (signal.aborted) return Promise.reject(signal.reason ?? new Error("The run was stopped."));
  return new Promise<T>((resolve, reject) => {
    const stop = (): void => reject(signal.reason ?? new Error("The run was stopped."));
    signal.addEventListener("abort", stop, { once: true });
    (pending as Promise<T>).then(
      (value) => {
        signal.removeEventListener("abort", stop);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", stop);
        reject(error);
      },
    );
  });
}

/**
 * A failure that is no Error (a tool threw it, or `afterToolCall` marked it an error) as the model
 * reads it: its JSON; where `JSON.stringify` throws, a bigint as its digits and an object met again
 * (a cycle) as "[Circular]". Before, the model read the crash ("Do not know how to serialize a
 * BigInt", "Converting circular structure to JSON …") instead of what failed. An object none of
 * whose parts can be read (the loop's `errorMessage` answers `UNREADABLE_ERROR`: its `message`,
 * `name`, `toString` and `Symbol.toPrimitive` getters all throw) is said as the loop says one: "the <name> tool failed
 * with an error that could not be read." — it was `{}` (its getters not enumerable) or "an object".
 */
function failureText(value: unknown, name: string): string {
  if (typeof value === "bigint") return value.toString();
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    const seen = new WeakSet<object>();
    try {
      text = JSON.stringify(value, (_key, item: unknown) => {
        if (typeof item === "bigint") return item.toString();
        if (typeof item === "object" && item !== null) {
          if (seen.has(item)) return "[Circular]";
          seen.add(item);
        }
        return item;
      });
    } catch {
      // A getter or toJSON that throws: said below as the value's kind, or as unreadable.
    }
  }
  if (text !== undefined && text !== "{}") return text;
  // The loop's reading (JSON's `{}` of an object that holds what cannot be read, or nothing).
  if (typeof value === "object" && value !== null && errorMessage(value) === UNREADABLE_ERROR) {
    return `the ${echoedName(name)} tool failed with an error that could not be read.`;
  }
  return text ?? kindOf(value);
}

/** How many tool names an unknown-tool answer lists; the rest are counted. */
const NAMED_TOOLS = 40;

/**
 * The tools an unknown-tool answer names: every one of a small set; of a larger one (an MCP pool's
 * hundreds) the first forty, those whose name holds the one called or is held by it (letters and
 * digits, any case) first — the tool it meant, written another way — and a count of the rest. Each
 * is declared to the model anyway; listing 2,000 made one made-up call an 85 kB answer.
 */
function knownTools(called: string, names: readonly string[]): string {
  if (names.length === 0) return "none";
  if (names.length <= NAMED_TOOLS) return names.join(", ");
  const bare = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "");
  const wanted = bare(called.slice(0, 200));
  const near = (name: string) => {
    const other = bare(name);
    return wanted !== "" && other !== "" && (other.includes(wanted) || wanted.includes(other));
  };
  const ordered = [...names.filter(near), ...names.filter((name) => !near(name))];
  return `${ordered.slice(0, NAMED_TOOLS).join(", ")} and ${names.length - NAMED_TOOLS} more`;
}

/**
 * The agent's own `AgentError` a loop error carries as its cause (thrown inside the agent's
 * `beforeStep`), or `undefined`; never throws, whatever was thrown.
 */
function ownRefusal(caught: unknown): AgentError | undefined {
  try {
    const inner = (caught as { cause?: unknown } | null | undefined)?.cause;
    return AgentError.isInstance(inner) ? inner : undefined;
  } catch {
    return undefined;
  }
}

/** What a `beforeToolCall` answer came to: the arguments to run with, or why the call is not run. */
type BeforeDecision =
  | { run: true; args: unknown; notes: string[] }
  | { run: false; reason: string; terminate: boolean; notes: string[] };

/** The fields a `beforeToolCall` answer may have (`BeforeToolCallResult`). */
const BEFORE_FIELDS = ["block", "reason", "terminate", "args"] as const;
/** The fields an `afterToolCall` answer may have (`AfterToolCallResult`). */
const AFTER_FIELDS = ["result", "isError", "terminate"] as const;
/**
 * The key of either hook's answer that holds the host's own data (audit records, policy verdicts):
 * never read — not as a verdict, arguments or a result —, never named in a note. The fields lists
 * above are what the hooks read; this one is declared beside them.
 */
const META = "meta";

/**
 * The keys of a hook's answer outside its declared `fields` (and `meta`) that hold a value: a key
 * whose value is `undefined` or `null` is absent (a host's `reason: blocked ? text : undefined`).
 */
function extraKeys(answer: object, fields: readonly string[]): string[] {
  // Own string keys, enumerable or not: a key `answer.block` would read is a key that is counted.
  return Object.getOwnPropertyNames(answer).filter((key) => {
    if (key === META || fields.includes(key)) return false;
    const value = (answer as Record<string, unknown>)[key];
    return value !== undefined && value !== null;
  });
}

/**
 * Whether `value` is a plain object, the only kind of object a hook's answer (or `args`) is read
 * as: its prototype is none, some realm's `Object.prototype` (a `node:vm` context's too) or an
 * arguments prototype (`isPlainPrototype` of `@loopwright/schema-compat`, the rule the loop reads
 * tool errors by). An `Error`, a `Response`, a `Map`, a `Promise`, a class instance (one extending
 * `null` too) is not: its fields are not own keys (a getter, a private field, a body still to
 * read), so reading it by its keys would read it as saying nothing. Throws where a Proxy's
 * `getPrototypeOf` trap does (the readers below fail closed on it).
 */
function isPlainObject(value: object): boolean {
  return isPlainPrototype(Object.getPrototypeOf(value));
}

/** A hook answer's reading that threw (a Proxy's trap), said for the host: its message, cut short. */
function thrownDetail(thrown: unknown): string {
  let text: string;
  try {
    text = errorText(thrown);
  } catch {
    text = "something that could not be read";
  }
  return text.length > 200 ? `${cutText(text, 200)}…` : text;
}

/**
 * An object that is not a plain one, named for a message: `a Promise` for anything with a `then`
 * method, else by its built-in tag (`an Error` — any subclass —, `a Response`, `a Map`, `a Date`),
 * else by its class (`an instance of Verdict`), else as not a plain one (`Object.create(proto)`,
 * an anonymous class). Never throws (a Proxy's trap may).
 */
function objectKind(value: object): string {
  try {
    if (typeof (value as { then?: unknown }).then === "function") return "a Promise";
    const tag = Object.prototype.toString.call(value).slice("[object ".length, -1);
    if (tag !== "Object" && /^[A-Za-z][A-Za-z0-9]{0,39}$/.test(tag)) {
      return `${/^[AEIOaeio]/.test(tag) ? "an" : "a"} ${tag}`;
    }
    const proto = Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null;
    const name = proto?.constructor?.name;
    if (typeof name === "string" && name !== "Object" && /^[\p{L}_$][\p{L}\p{N}_$]{0,39}$/u.test(name)) {
      return `an instance of ${name}`;
    }
  } catch {
    // A trap that throws: named without it below.
  }
  return "an object that is not a plain one (its prototype is not Object.prototype)";
}

/** What a hook answered that is an object but not a plain one, with a hint for the likely slips. */
function notPlain(value: object): string {
  const kind = objectKind(value);
  if (kind === "a Response") return `${kind} (read its body first: await response.json())`;
  if (kind === "a Promise") return `${kind} (await it)`;
  return kind;
}

/**
 * What is wrong with a hook's object answer that has keys outside its declared `fields` (`extraKeys`),
 * or undefined when it has none: `an object with "blocked", not a field it reads (block, reason,
 * terminate, args; put the host's own data in meta; did you mean "block"?)`. A key is named, never
 * its value (which may be the tool's raw result); a close spelling of a field is named as a hint.
 */
function unknownFields(answer: object, fields: readonly string[]): string | undefined {
  const unknown = extraKeys(answer, fields);
  if (unknown.length === 0) return undefined;
  const shown = unknown
    .slice(0, 5)
    .map((key) => JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key));
  const more = unknown.length > 5 ? ` and ${unknown.length - 5} more` : "";
  // A likely misspelling is named: `"block"` for one unknown key, `"block" for "Blocked"` for several.
  const meant = unknown.slice(0, 5).flatMap((key, at) => {
    const field = fields.find((name) => closeSpelling(name, key));
    return field === undefined
      ? []
      : [unknown.length === 1 ? JSON.stringify(field) : `${JSON.stringify(field)} for ${shown[at]}`];
  });
  const guess = meant.length > 0 ? `; did you mean ${meant.join(", ")}?` : "";
  return `an object with ${shown.join(", ")}${more}, ${
    unknown.length === 1 ? "not a field it reads" : "not fields it reads"
  } (${fields.join(", ")}; put the host's own data in ${META}${guess})`;
}
/** Whether `a` becomes `b` by at most `most` single-character edits (both already lowercased). */
function editsWithin(a: string, b: string, most: number): boolean {
  if (Math.abs(a.length - b.length) > most || a.length > 64 || b.length > 64) return false;
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(
        (row[j] ?? 0) + 1,
        (next[j - 1] ?? 0) + 1,
        (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    row = next;
  }
  return (row[b.length] ?? most + 1) <= most;
}

/** What a hook answered that was not an object, said without its text (it may be the raw result). */
function shapeOf(value: unknown): string {
  if (typeof value === "string") return `a string (${value.length} characters)`;
  if (Array.isArray(value)) return `a list (${value.length} ${value.length === 1 ? "item" : "items"})`;
  return kindOf(value);
}

/** `a`, `a and b`, `a, b and c`. */
function listed(names: readonly string[]): string {
  return names.length <= 1 ? (names[0] ?? "") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}

/**
 * A `beforeToolCall` answer read by its declared keys only, failing closed: `undefined`/`null` runs
 * the call as it is. Only a plain object (`isPlainObject`) is read, by `block`, `reason`,
 * `terminate` and `args`; `meta` (the host's own data) is never read nor named. `block: true` blocks
 * with `reason` (a string) and ends the run after the step for `terminate: true` (a `terminate` that
 * is neither a boolean nor `null`/absent does not, with a note); a `block` that is neither a boolean
 * nor `null`/absent (`1`, `"true"`) blocks too. Without `block: true`, a `reason` or a `terminate`
 * other than `false` (which mean something only for a block: `{ reason: "Outside the workspace" }`
 * is a "no" that forgot its block) is not run. Otherwise the call runs, with `args` where they are
 * a plain object (`args` that are not — their JSON text, an un-awaited rewrite's Promise, a Date,
 * and an own `args` key holding `undefined` or `null`, a rewrite that produced nothing — are not
 * run). A key outside the declared ones whose value is not `undefined`/`null` is never
 * guessed at: beside `block: true` the call is blocked as asked, with a note naming the key; without
 * it the call is not run. Anything else — a string, a number, an array, an object that is not a
 * plain one (an Error, a Response, a Map, a class instance) — is not run.
 *
 * An answer whose reading throws (a Proxy whose `ownKeys`, `get` or `getPrototypeOf` trap throws)
 * is not run either.
 *
 * A call not run for an answer of the wrong shape is answered, for the model, with a short text
 * that names none of the host's keys nor a trap's text (`reason`); the host's `notes` say what was
 * wrong in full.
 */
function readBeforeDecision(decision: Answer, name: string, args: unknown): BeforeDecision {
  return readGuarded(
    decision,
    (value) => readBeforeAnswer(value, name, args),
    (what) => notRun(name, what),
    "undefined, { block: true, reason } or { args }",
  );
}

/**
 * `read(answer)`, or `unreadable` of what was wrong where reading it threw (a Proxy whose
 * `ownKeys`, `get` or `getPrototypeOf` trap throws): its text may be anything the host's code
 * holds, so only the host's notice carries it. `expected` names the answers the hook may give.
 */
function readGuarded<T>(
  answer: Answer,
  read: (value: unknown) => T,
  unreadable: (what: string) => T,
  expected: string,
): T {
  try {
    if (!("value" in answer)) throw "threw" in answer ? answer.threw : answer.failed;
    return read(answer.value);
  } catch (thrown) {
    return unreadable(`an object whose reading threw (${thrownDetail(thrown)}), not ${expected}`);
  }
}

/**
 * What a hook answered, awaited; what reading it threw (a Proxy's `get` trap asked for `then`); or
 * what the hook itself threw or rejected with (`failed`: the host's code failed, not its answer).
 */
type Answer = { value: unknown } | { threw: unknown } | { failed: unknown };

/**
 * The host's notice for a `hook` that threw or rejected on the call to `name`: its text goes to the
 * host only, since it may quote anything the host's code holds (a policy store's URL, the result
 * being redacted); the model reads only that the host's policy hook failed.
 */
function hookFailedNote(hook: string, name: string, thrown: unknown, outcome: string): string {
  return `${hook} failed for the call to ${name} (${thrownDetail(thrown)}); ${outcome}.`;
}

/**
 * What `call`, a hook, answered, awaited where it is a promise. The hook's own failure — a throw, or
 * its promise's rejection (an `async` hook resolving to a Proxy whose `get` trap throws rejects too)
 * — is `failed`. Where reading its `then` throws (a Proxy whose `get` trap throws), that is what it
 * answered (`threw`): `await` would have thrown the trap's text into the call's answer, for the model.
 */
async function hookAnswer(call: () => unknown): Promise<Answer> {
  let raw: unknown;
  try {
    raw = call();
  } catch (failed) {
    return { failed };
  }
  if ((typeof raw !== "object" && typeof raw !== "function") || raw === null) return { value: raw };
  let then: unknown;
  try {
    then = (raw as { then?: unknown }).then;
  } catch (thrown) {
    return { threw: thrown };
  }
  if (typeof then !== "function") return { value: raw };
  try {
    return { value: await raw };
  } catch (failed) {
    return { failed };
  }
}

/**
 * A hook's replacement (`afterToolCall`'s `result`, `beforeToolCall`'s `args`) as the tool and the
 * loop get it: written as JSON once, here inside the hook's guard, and that text parsed back. The
 * host's object is read this once only, so a getter, a Proxy trap or a `toJSON` that throws from its
 * second read on cannot throw its text later from the tool's validation or the loop's writing, for
 * the model to read as the tool's failure. `unheld` says why it cannot be written (a trap or getter
 * that throws, a cycle, a BigInt, a Map or Set JSON would write as `{}`, an Error of any realm
 * anywhere in it, a `toJSON` answering nothing); its text may quote anything the host's code
 * holds, so it is for the host's notice only. An Error is refused before its `toJSON` is asked:
 * one that has a `toJSON` (an HTTP client's error) would otherwise be passed on as what that
 * answers, which can be the request's config and headers. A string, number, boolean or `null` is
 * passed on as it is (a function or symbol too: the loop refuses it by itself without reading it).
 */
function writtenCopy(value: unknown): { copy: unknown } | { unheld: string } {
  if ((typeof value !== "object" || value === null) && typeof value !== "bigint") return { copy: value };
  let text: string | undefined;
  try {
    refuseError(value);
    // One copy per object, so a cycle in the host's object is a cycle JSON finds in the copies.
    const copies = new WeakMap<object, unknown>();
    text = JSON.stringify(value, (_key, item: unknown) => {
      const lost = lostByJson(item);
      if (lost !== undefined) throw new TypeError(lost);
      if (typeof item !== "object" || item === null) return item;
      if (!copies.has(item)) copies.set(item, readOnce(item));
      return copies.get(item);
    });
  } catch (thrown) {
    return { unheld: `a value JSON cannot hold (${thrownDetail(thrown)})` };
  }
  if (text === undefined) return { unheld: "a value JSON writes as nothing (its toJSON answered nothing)" };
  return { copy: JSON.parse(text) };
}

const ERROR_LOST =
  "an Error, which JSON writes without its message or as its toJSON answers; put its text in as a string";

/**
 * Whether `item` is an Error of this realm or another: `Error.isError` where the runtime has it,
 * `instanceof Error` (an object whose prototype chain has this realm's `Error.prototype`), and
 * `Object.prototype.toString` (`[object Error]` for an Error made in another realm).
 */
function isAnyError(item: object): boolean {
  // The runtime's own `Error.isError`, never a function a polluted Object.prototype holds (which
  // made every object a hook answered an Error, its data refused).
  const isError = setting(Error, "isError");
  if (typeof isError === "function" && isError.call(Error, item) === true) return true;
  return item instanceof Error || Object.prototype.toString.call(item) === "[object Error]";
}

/** Whether `value` is an Error; not for a Proxy whose trap throws (writing it reports that). */
function isErrorAtRoot(value: unknown): boolean {
  try {
    return typeof value === "object" && value !== null && isAnyError(value);
  } catch {
    return false;
  }
}

/** Throws the Error refusal for `item` if it is an Error; read before JSON asks its `toJSON`. */
function refuseError(item: unknown): void {
  if (typeof item === "object" && item !== null && isAnyError(item)) throw new TypeError(ERROR_LOST);
}

/** Whether `item` is a boxed number, string, boolean or BigInt, which JSON writes as the value inside. */
function isBoxed(item: object): boolean {
  const unboxers: ((this: unknown) => unknown)[] = [
    Number.prototype.valueOf,
    String.prototype.valueOf,
    Boolean.prototype.valueOf,
    BigInt.prototype.valueOf,
  ];
  for (const unbox of unboxers) {
    try {
      unbox.call(item);
      return true;
    } catch {
      // Not this kind of box.
    }
  }
  return false;
}

/**
 * What JSON writes of an object or array `item`, as a copy it then reads in place of it: each of
 * its entries read once, as JSON would read it (an array by its length, an object by its own
 * enumerable string keys), and an Error among them refused before JSON asks its `toJSON`. A boxed
 * value is answered as it is.
 */
function readOnce(item: object): unknown {
  if (isBoxed(item)) return item;
  if (Array.isArray(item)) {
    const length = (item as unknown[]).length;
    const copy: unknown[] = [];
    for (let at = 0; at < length; at += 1) {
      const entry: unknown = (item as unknown[])[at];
      refuseError(entry);
      copy.push(entry);
    }
    return copy;
  }
  const copy: Record<string, unknown> = Object.create(null);
  for (const key of Object.keys(item)) {
    const entry: unknown = (item as Record<string, unknown>)[key];
    refuseError(entry);
    copy[key] = entry;
  }
  return copy;
}

/** What JSON would write of `item` without a word of its data: a Map or Set (as `{}`), an Error (as said above). */
function lostByJson(item: unknown): string | undefined {
  if (typeof item !== "object" || item === null) return undefined;
  if (item instanceof Map || item instanceof WeakMap) return "a Map, which JSON writes as {}";
  if (item instanceof Set || item instanceof WeakSet) return "a Set, which JSON writes as {}";
  if (isAnyError(item)) return ERROR_LOST;
  return undefined;
}

/** A call not run for an answer `what` that could not be read: the short text for the model, the detail for the host. */
function notRun(name: string, what: string): BeforeDecision {
  return {
    run: false,
    reason: `Not run: the host's policy hook stopped this call to ${name} (its answer could not be read).`,
    terminate: false,
    notes: [`Not run: beforeToolCall answered ${what}.`],
  };
}

/** `readBeforeDecision` without its guard: may throw where the answer is a Proxy whose trap throws. */
function readBeforeAnswer(decision: unknown, name: string, args: unknown): BeforeDecision {
  if (decision === undefined || decision === null) return { run: true, args, notes: [] };
  const refused = (what: string): BeforeDecision => notRun(name, what);
  if (typeof decision !== "object" || Array.isArray(decision)) {
    return refused(`${kindOf(decision)}, not undefined, { block: true, reason } or { args }`);
  }
  if (!isPlainObject(decision)) {
    return refused(`${notPlain(decision)}, not undefined, { block: true, reason } or { args }`);
  }
  // Each field read once, where the answer holds it: `block` on a polluted Object.prototype blocks nothing.
  const answer = ownFields(decision, BEFORE_FIELDS) as {
    block?: unknown;
    reason?: unknown;
    terminate?: unknown;
    args?: unknown;
  };
  const { block } = answer;
  const unknown = unknownFields(decision, BEFORE_FIELDS);
  // A key it does not read may be a "no" or arguments in the host's own words: only an explicit
  // block is followed; anything else is not run.
  if (unknown !== undefined && block !== true) return refused(unknown);
  const notes =
    unknown === undefined
      ? []
      : [`beforeToolCall answered ${unknown} for the call to ${name}; its block: true was read.`];
  const { reason, terminate } = answer;
  if (block === true) {
    if (terminate !== undefined && terminate !== null && typeof terminate !== "boolean") {
      notes.push(
        `beforeToolCall answered terminate: ${kindOf(terminate)}, not true or false, for the call to ${name}; the call was blocked, and the run is not ended for it.`,
      );
    }
    return {
      run: false,
      reason: typeof reason === "string" ? reason : `The call to ${name} was blocked.`,
      terminate: terminate === true,
      notes,
    };
  }
  if (block !== undefined && block !== null && block !== false) {
    return refused(`block: ${kindOf(block)}, not true or false, read as a block`);
  }
  // `reason` and `terminate` are a block's: without `block: true` they are a "no" whose block went
  // missing (`{ reason }`, `{ block: denied, reason }` with `denied` wrong), never dropped in silence.
  const blockOnly = [
    ...(reason !== undefined && reason !== null ? ["reason"] : []),
    ...(terminate !== undefined && terminate !== null && terminate !== false
      ? [terminate === true ? "terminate: true" : `terminate: ${kindOf(terminate)}`]
      : []),
  ];
  if (blockOnly.length > 0) {
    const keys = listed(blockOnly.map((key) => key.replace(/:.*$/, "")));
    return refused(
      `${listed(blockOnly)} without block: true; give block: true to block, or leave ${keys} out (the host's own notes go in ${META})`,
    );
  }
  if (!Object.hasOwn(decision, "args")) return { run: true, args, notes };
  const given = answer.args;
  // An own `args` key holding nothing is a rewrite that produced nothing (`{ args: sanitize(args) }`
  // whose sanitizer returned undefined): the model's own arguments are not run in its place.
  if (given === undefined || given === null) {
    return refused(
      `args: ${given === undefined ? "undefined" : "null"} — the rewrite produced nothing (leave args out to run the call as the model wrote it)`,
    );
  }
  if (typeof given !== "object" || Array.isArray(given)) {
    return refused(`args: ${kindOf(given)}, not an object of arguments`);
  }
  if (!isPlainObject(given)) {
    const kind = objectKind(given);
    return refused(
      `args: ${kind}${kind === "a Promise" ? ": await the rewrite" : ""}, not an object of arguments`,
    );
  }
  // Written here, inside the guard, and the written copy run: a Proxy whose trap throws would
  // otherwise throw its text from the tool's validation, for the model to read as the tool's error.
  const written = writtenCopy(given);
  if ("unheld" in written) return refused(`args: ${written.unheld}, not an object of arguments`);
  return { run: true, args: written.copy, notes };
}

/** What an `afterToolCall` answer comes to: its fields to use, or the tool's result withheld. */
type AfterRead =
  | { withheld: string; notes: string[] }
  | { withheld?: undefined; result: unknown; isError?: boolean; terminate: boolean; notes: string[] };

/**
 * An `afterToolCall` answer read by its declared keys only, failing closed: `undefined`/`null` keeps
 * the tool's result; an own `result` key whose value is `undefined` (a redaction that returned
 * nothing) withholds it (`result: null` replaces it with `null`). Only a plain object (`isPlainObject`) is read, by `result` (the replacement), `isError` and `terminate` (only
 * as booleans: `null`/absent leaves them; `"false"` keeps the tool's own flag and does not end the
 * run, with a note); `meta` (the host's own data) is never read nor named. A key outside the
 * declared ones whose value is not `undefined`/`null` is never guessed at: beside a `result` the
 * result is used, with a note naming the key; without one (a redaction under another name, a
 * status, an error text) the tool's result is withheld. An answer that is no object at all (a bare
 * string — `redact(result)` returned as it is —, a number, a list) withholds it too, and so does an
 * object that is not a plain one (an Error, a fetch Response whose body was not read, a Map, a class
 * instance), a `result` that is a Promise (an un-awaited redaction: its rejection is handled) and
 * an answer whose reading throws (a Proxy's trap). `withheld` is the error the call is answered
 * with, for the model: it never quotes what the hook answered (which may be the raw result), a
 * trap's text nor the host's keys; the host's `notes` say what was wrong in full.
 */
function readAfterAnswer(answer: Answer, name: string, toolIsError: boolean): AfterRead {
  return readGuarded(
    answer,
    (value) => readAfterFields(value, name, toolIsError),
    (what) => resultWithheld(name, what),
    "undefined or { result, isError, terminate }",
  );
}

/** The tool's result withheld for an answer `what`: the short text for the model, the detail for the host. */
function resultWithheld(name: string, what: string): AfterRead {
  return {
    withheld: `Result withheld: the host's policy hook withheld the result of this call to ${name} (its answer could not be read).`,
    notes: [`afterToolCall answered ${what} for the call to ${name}; the tool's result was withheld.`],
  };
}

/** `readAfterAnswer` without its guard: may throw where the answer is a Proxy whose trap throws. */
function readAfterFields(answer: unknown, name: string, toolIsError: boolean): AfterRead {
  if (answer === undefined || answer === null) return { result: undefined, terminate: false, notes: [] };
  const withheld = (what: string): AfterRead => resultWithheld(name, what);
  if (typeof answer !== "object" || Array.isArray(answer)) {
    return withheld(`${shapeOf(answer)}, not undefined or { result, isError, terminate }`);
  }
  if (!isPlainObject(answer)) {
    return withheld(`${notPlain(answer)}, not undefined or { result, isError, terminate }`);
  }
  // Each field read once, here, where the answer holds it: a getter on `result` is not asked again,
  // and a `result` on a polluted Object.prototype replaces nothing.
  const given = ownFields(answer, AFTER_FIELDS) as {
    result?: unknown;
    isError?: unknown;
    terminate?: unknown;
  };
  const result = given.result;
  // An own `result` key holding `undefined` is a replacement that produced nothing (`{ result:
  // redact(result) }` whose redactor returned nothing): the tool's raw result is not sent in its
  // place. (`null` is a value, and replaces the result as any other does.)
  if (Object.hasOwn(answer, "result") && result === undefined) {
    return withheld(
      "result: undefined — the redaction produced nothing (leave result out to keep the tool's result)",
    );
  }
  // An un-awaited redaction (`{ result: redact(result) }` of an async `redact`) is no result: its
  // text is not known yet, and the tool's raw result is not sent in its place (as `args` of a Promise).
  if (handledThenable(result)) {
    return withheld("result: a Promise: await the redaction, not a result");
  }
  const wrong = unknownFields(answer, AFTER_FIELDS);
  if (wrong !== undefined && result === undefined) return withheld(`${wrong}, and no result`);
  const notes: string[] = [];
  const flag = (field: "isError" | "terminate"): boolean | undefined => {
    const value = given[field];
    if (value === undefined || value === null || typeof value === "boolean") return value ?? undefined;
    notes.push(
      `afterToolCall answered ${field}: ${kindOf(value)}, not true or false, for the call to ${name}; ${
        field === "isError"
          ? `the tool's own isError (${toolIsError}) was kept`
          : "the run is not ended for it"
      }.`,
    );
    return undefined;
  };
  // An Error as the whole replacement is the call's failure in the host's words (a redaction of a
  // failed call: `{ result: new Error("Denied"), isError: true }`): its message, read once here, is
  // what the model reads, as an error unless the answer says `isError: false` (then as the result's
  // text). Nothing else of it is passed on: not its other fields, nor what a `toJSON` of its own
  // answers (an HTTP client's error writes the request's headers there). Inside data it is refused.
  let errorText: string | undefined;
  if (isErrorAtRoot(result)) {
    const { message } = result as { message?: unknown };
    if (typeof message !== "string") {
      return withheld(`result: an Error whose message is ${kindOf(message)}, not a string`);
    }
    errorText = message;
  }
  // Written here, inside the guard, and the written copy passed on: the loop writing a Proxy whose
  // trap throws (or a cycle) would send the error's text to the model as the tool's own failure.
  const written = errorText === undefined ? writtenCopy(result) : { copy: undefined };
  if ("unheld" in written) return withheld(`result: ${written.unheld}, not a string or plain data`);
  const isError = flag("isError") ?? (errorText === undefined ? undefined : true);
  const terminate = flag("terminate");
  if (wrong !== undefined) {
    const read = [
      "result",
      ...(isError !== undefined ? ["isError"] : []),
      ...(terminate !== undefined ? ["terminate"] : []),
    ];
    notes.unshift(
      `afterToolCall answered ${wrong} for the call to ${name}; its ${listed(read)} ${
        read.length === 1 ? "was" : "were"
      } read.`,
    );
  }
  return {
    result: errorText === undefined ? written.copy : isError ? new Error(errorText) : errorText,
    ...(isError === undefined ? {} : { isError }),
    terminate: terminate === true,
    notes,
  };
}

/** Whether a message is the summary a loop's fold writes. */
function isSummary(message: AgentMessage): boolean {
  const content = fieldOf(message, "content");
  return (
    fieldOf(message, "role") === "system" && typeof content === "string" && content.startsWith(SUMMARY_LEAD)
  );
}

/** The summary message a loop's fold put into `messages`, if any. */
function foldedSummary(messages: readonly AgentMessage[]): AgentMessage | undefined {
  return messages.find(isSummary);
}

/** What a copy of a chat message keeps however a view rewrote it: the call it answers, or the calls it makes. */
function callKey(message: unknown): string | undefined {
  if (!isRecord(message)) return undefined;
  const answers = fieldOf(message, "tool_call_id");
  if (fieldOf(message, "role") === "tool" && typeof answers === "string") return `tool ${answers}`;
  if (hasCalls(message)) {
    return `calls ${toolCallsOf(message)
      .map((call: unknown) => (isRecord(call) ? String(setting(call, "id")) : ""))
      .join(" ")}`;
  }
  return undefined;
}

/**
 * For each message of `target` (a view made from `source`), the index of the `source` message it
 * stands for, or -1 for one the view added: the same object; else a copy answering, or making, the
 * same tool calls; else, in a stretch between two such matches where the view kept as many messages
 * as the source has, the message in the same place (a copy with its text pruned).
 */
function standsFor(source: readonly unknown[], target: readonly unknown[]): number[] {
  const found = target.map(() => -1);
  const claimed = new Set<number>();
  const first = new Map<unknown, number>();
  source.forEach((message, i) => {
    if (!first.has(message)) first.set(message, i);
  });
  target.forEach((message, j) => {
    const i = first.get(message);
    if (i !== undefined && !claimed.has(i)) {
      found[j] = i;
      claimed.add(i);
    }
  });
  const byKey = new Map<string, number[]>();
  source.forEach((message, i) => {
    const key = callKey(message);
    if (key !== undefined && !claimed.has(i)) byKey.set(key, [...(byKey.get(key) ?? []), i]);
  });
  target.forEach((message, j) => {
    if ((found[j] as number) >= 0) return;
    const key = callKey(message);
    const i = key === undefined ? undefined : byKey.get(key)?.shift();
    if (i !== undefined) {
      found[j] = i;
      claimed.add(i);
    }
  });
  let fromTarget = 0;
  let fromSource = 0;
  for (let j = 0; j <= target.length; j++) {
    const match = j < target.length ? (found[j] as number) : source.length;
    if (match < 0) continue;
    if (match >= fromSource) {
      const open: number[] = [];
      for (let i = fromSource; i < match; i++) if (!claimed.has(i)) open.push(i);
      if (open.length === j - fromTarget) {
        for (let n = 0; n < open.length; n++) found[fromTarget + n] = open[n] as number;
      }
      fromSource = match + 1;
    }
    fromTarget = j + 1;
  }
  return found;
}

/** A value as JSON text, to tell a change from none; `undefined` for one JSON cannot show (never equal). */
function textOf(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/**
 * The key of a subclass's method `prompt` and `continue` call once every check of their input
 * passed, just before the run starts (the session's agent shows its prompt there, and gives a run
 * the host started a turn budget of its own); what it throws refuses the prompt, nothing added or
 * sent. Inside this package only: not exported from its index.
 */
export const BEFORE_START: unique symbol = Symbol("Agent.beforeStart");

/**
 * The key of the method that empties both queues and hands back what they held (steering first,
 * each in its order): a session drops what its ended prompt never delivered. Inside this package
 * only: not exported from its index.
 */
export const TAKE_QUEUED: unique symbol = Symbol("Agent.takeQueued");

/**
 * The key of a subclass's method each run calls once it has settled — its `agent_end` listeners
 * awaited, `isRunning` false — just before the run's promise resolves, with the run's result: a
 * session drops what a run the host started on its agent left queued, as it does for its own
 * prompts. What it throws is ignored. Inside this package only: not exported from its index.
 */
export const AFTER_RUN: unique symbol = Symbol("Agent.afterRun");

/**
 * The key of the method that words the notice for another SDK's step limit left in the config
 * (`found`: the fields of the loop's `FOREIGN_STEP_LIMITS` it holds), told once an agent for each
 * set of them; `undefined` tells none. The Agent's names the limit its loop runs keep
 * (`config.maxToolIterations`) and `shouldStopAfterTurn`; a session's agent names the session's
 * `maxTurns` option, which replaces that limit, instead. Inside this package only: not exported
 * from its index.
 */
export const STEP_LIMIT_NOTICE: unique symbol = Symbol("Agent.stepLimitNotice");

/**
 * A conversation with a model that an application drives: it owns the transcript, runs each
 * prompt through the loop (tools called and answered until the model answers), and tells
 * subscribers every step. One run at a time; `steer` and `followUp` queue messages into a run.
 */
export class Agent {
  /**
   * The transcript. Assigning copies the array; a value that is not a list of messages throws
   * `AgentError` (`invalid-input`) naming the first that is not one, the transcript unchanged, and
   * so does (`busy`) an assignment while a run's loop goes (from a tool's `execute`, a hook, a
   * listener before `agent_end`): the run appends to the transcript. In an `agent_end` listener it
   * is taken. The list read is the live transcript; changing it in place (`push`, `splice`, an index
   * or `length` assigned) while a run's loop goes throws `busy` the same way, nothing changed.
   */
  get messages(): AgentMessage[] {
    const live = this.#messages;
    if (this.#guard?.of !== live) {
      const refuse = (how: string) => {
        if (this.#looping) throw busyChange(how);
      };
      this.#guard = {
        of: live,
        guarded: new Proxy(
          live,
          protoless({
            set(target, key, value) {
              refuse("changed in place");
              return Reflect.set(target, key, value);
            },
            defineProperty(target, key, descriptor) {
              refuse("changed in place");
              return Reflect.defineProperty(target, key, protoless({ ...descriptor }));
            },
            deleteProperty(target, key) {
              refuse("changed in place");
              return Reflect.deleteProperty(target, key);
            },
          }),
        ),
      };
    }
    return this.#guard.guarded;
  }
  set messages(messages: readonly AgentMessage[]) {
    if (this.#looping) throw busyChange("assigned");
    this.#messages = [...checkedMessages("Agent.messages", messages)];
    // A replacement that dropped the messages a tool was loaded in drops it from what is loaded.
    this.#loaded = stillShown(this.#loaded, this.#messages);
  }
  /**
   * On demand (`config.toolDiscovery: "ondemand"`): the tools loaded so far (the host's names), taken
   * from each run's result (a failed run's too) and handed to the next run as the loop's `loaded`, so
   * what a prompt loaded stays declared on the next. Cleared by `reset()`; assigning `messages` keeps
   * only the names the new transcript still shows loaded or called. Assigning takes a list of names
   * (a host restoring what it persisted); anything else throws `AgentError` (`invalid-input`). `[]`
   * in eager and proxy mode.
   */
  get loaded(): readonly string[] {
    return this.#loaded;
  }
  set loaded(names: readonly string[]) {
    if (!isNameList(names)) {
      throw new AgentError(
        "invalid-input",
        `Agent.loaded must be a list of tool names; got ${kindOf(names)}.`,
      );
    }
    this.#loaded = [...names];
  }
  /**
   * The system prompt sent first on every request (read at each run's start). Assigning anything but
   * text (`undefined` or `null` clears it) throws `AgentError` (`invalid-input`), and so does text
   * when `config.prompt` has entries with text (the loop refuses both); the value is then unchanged.
   */
  get system(): string | undefined {
    return this.#system;
  }
  set system(system: string | undefined) {
    if (system === undefined || system === null) {
      this.#system = undefined;
      return;
    }
    if (typeof system !== "string") {
      throw new AgentError("invalid-input", `Agent.system must be a string; got ${kindOf(system)}.`);
    }
    if (hasPromptText(this.config)) throw givenTwice("Agent.system", "the config's prompt (config.prompt)");
    this.#system = system;
  }
  /** The loop config every run uses. */
  readonly config: LoopConfig;
  /**
   * The tools the model may call. Registered or unregistered while a prompt runs (from a tool's
   * `execute`, an event listener, an MCP server that connected), they are declared from the run's
   * next step on: the loop is handed the new tools in that step's `beforeStep` plan. A step after
   * which nothing changed hands over nothing, so its request is the one before it plus the new
   * messages.
   */
  readonly tools: ToolRegistry;
  /**
   * See `AgentOptions.catalog`; read at each loop run's start, and in `"ondemand"` and `"proxy"`
   * mode assigned mid-run, listed from the run's next step on (the catalogue text on the system
   * prompt changes on that step only).
   */
  get catalog(): AgentOptions["catalog"] {
    return this.#catalog;
  }
  set catalog(catalog: AgentOptions["catalog"]) {
    this.#catalog = catalog;
    this.#catalogVersion++;
  }
  /** How a step's calls run; see `AgentOptions.toolExecution`. */
  toolExecution: ToolExecutionMode;
  /** How many steering messages one drain point delivers. */
  steeringMode: QueueMode;
  /** How many follow-up messages one drain point delivers. */
  followUpMode: QueueMode;
  /** See `AgentOptions.beforeToolCall`. */
  beforeToolCall: AgentOptions["beforeToolCall"];
  /** See `AgentOptions.afterToolCall`. */
  afterToolCall: AgentOptions["afterToolCall"];
  /** See `AgentOptions.shouldStopAfterTurn`. */
  shouldStopAfterTurn: AgentOptions["shouldStopAfterTurn"];
  /** See `AgentOptions.toolChoice`. */
  toolChoice: AgentOptions["toolChoice"];
  /** See `AgentOptions.transformContext`. */
  transformContext: AgentOptions["transformContext"];
  /** See `AgentOptions.convertToLlm`. */
  convertToLlm: NonNullable<AgentOptions["convertToLlm"]>;
  /** The message of the last failed run, cleared when the next starts. */
  errorMessage: string | undefined;

  #messages: AgentMessage[];
  /** The transcript as `messages` gives it (guarded against in-place changes during a run), and the array it stands for. */
  #guard: { of: AgentMessage[]; guarded: AgentMessage[] } | undefined;
  #system: string | undefined;
  #catalog: AgentOptions["catalog"];
  /** Moves on every assignment of `catalog`. */
  #catalogVersion = 0;
  /**
   * What the running loop run was last handed of the tools and the catalogue: the registry's
   * version and the catalogue's when it was read, and the text of what was handed (a change that
   * comes back to the same tools hands nothing).
   */
  #declared:
    | { tools: number; catalog: number; toolsText: string | undefined; catalogText: string | undefined }
    | undefined;
  #loaded: string[] = [];
  readonly #backend: AgentBackend;
  readonly #dispatch: AgentOptions["dispatch"];
  readonly #dedupeToolCalls: DedupePolicy | undefined;
  readonly #listeners: AgentListener[] = [];
  readonly #steering: AgentMessage[] = [];
  readonly #followUp: AgentMessage[] = [];
  #abort: AbortController | undefined;
  #idle: Promise<void> = Promise.resolve();
  #delivery: Promise<void> = Promise.resolve();
  #turnOpen = false;
  #partial: ChatMessage | undefined;
  #batch: Batch | undefined;
  /** Where the running run's messages start in the transcript. */
  #from = 0;
  /** True while a run's loop goes: from its start until its `agent_end` is told (the transcript is the run's to append to). */
  #looping = false;
  /** The messages of the loop's transcript this agent knows of: the view it handed over, and each one `onMessage` told. */
  #known = new Set<ChatMessage>();
  /** How many leading messages of the loop's transcript the agent knows of: what follows, a failed run added unannounced. */
  #told = 0;
  /** With compaction on: for each message of the last view, the agent's own message it stands for (a view's copy included). */
  #owners = new Map<ChatMessage, AgentMessage>();
  /**
   * With compaction on: how many messages at the end of the last view stand for none of the agent's
   * own (a note only the view adds, as a session's "tool budget spent"), handed to the loop as the
   * step's `requestOnly` so its fold never cuts at one nor folds one into the summary.
   */
  #viewOnly = 0;
  /** The model's answer (an assistant message without calls) the running loop run told, if it told one. */
  #answered: ChatMessage | undefined;
  /** Why the running run asked the loop to stop after its last tool step, if it did. */
  #ending: "terminated" | "stopped" | undefined;
  /** What the side tasks of the running run's finished loop runs cost (a run loops again for a queued message). */
  #sideDone: SideUsage = NO_SIDE;
  /** What the side tasks of its running loop run cost so far (its last usage event's `sideUsage`). */
  #sideNow: SideUsage = NO_SIDE;
  /** The sets of another SDK's step-limit fields (`config.maxSteps`, …) whose notice this agent has told, each once. */
  #stepLimitsTold = new Set<string>();

  constructor(options: AgentOptions) {
    if (typeof options !== "object" || options === null) {
      throw new AgentError(
        "invalid-input",
        "new Agent(options): options must be an object with config or spec.",
      );
    }
    refuseUnknownOptions(options, OPTION_NAMES, "new Agent");
    // Read where the options object (or its own class) holds them: one on a polluted
    // Object.prototype is nobody's option.
    const own = ownFields(options, OPTION_NAMES);
    checkAgentOptions(own);
    // A null option is absent, as an undefined one is: dropped here, so what follows sees only values.
    const set: { [K in keyof AgentOptions]?: NonNullable<AgentOptions[K]> } = Object.create(null);
    for (const name of OPTION_NAMES) {
      const value = own[name];
      if (value !== null && value !== undefined) (set as Record<string, unknown>)[name] = value;
    }
    if ((set.config === undefined) === (set.spec === undefined)) {
      throw new AgentError(
        "invalid-input",
        "new Agent: give exactly one of config (the loop's config) and spec (parsed agent documents).",
      );
    }
    this.config = withAutoCompact(
      set.config ?? specConfig(set.spec as AgentSpec),
      set.autoCompact,
      set.config === undefined,
    );
    if (set.system !== undefined && hasPromptText(this.config)) {
      throw givenTwice(
        "new Agent",
        set.spec !== undefined ? "the spec's prompt entries" : "the config's prompt (config.prompt)",
      );
    }
    this.#system = set.system;
    this.tools = set.tools instanceof ToolRegistry ? set.tools : new ToolRegistry(set.tools ?? []);
    this.#catalog = set.catalog;
    this.#messages = [...(set.messages ?? [])];
    this.#loaded = [...(set.loaded ?? [])];
    this.#backend = set.backend ?? loopBackend();
    this.#dispatch = set.dispatch;
    this.#dedupeToolCalls = set.dedupeToolCalls;
    this.toolExecution = set.toolExecution ?? "parallel";
    this.steeringMode = set.steeringMode ?? "one-at-a-time";
    this.followUpMode = set.followUpMode ?? "one-at-a-time";
    this.beforeToolCall = set.beforeToolCall;
    this.afterToolCall = set.afterToolCall;
    this.shouldStopAfterTurn = set.shouldStopAfterTurn;
    this.toolChoice = set.toolChoice;
    this.transformContext = set.transformContext;
    this.convertToLlm = set.convertToLlm ?? defaultConvertToLlm;
  }

  /** True from the start of a run until it has settled (its `agent_end` listeners included). */
  get isRunning(): boolean {
    return this.#abort !== undefined;
  }

  /** The running run's signal, if any. */
  get signal(): AbortSignal | undefined {
    return this.#abort?.signal;
  }

  /** The assistant message being streamed, if any. */
  get streamingMessage(): ChatMessage | undefined {
    return this.#partial;
  }

  /** Registers a listener; returns the function that removes it. */
  subscribe(listener: AgentListener): () => void {
    if (typeof listener !== "function") {
      throw new AgentError(
        "invalid-input",
        `Agent.subscribe: the listener must be a function (event, signal) => void, and was ${kindOf(listener)}.`,
      );
    }
    this.#listeners.push(listener);
    return () => {
      const at = this.#listeners.indexOf(listener);
      if (at >= 0) this.#listeners.splice(at, 1);
    };
  }

  /**
   * Adds the message(s) to the transcript and runs until the model answers. Resolves with how the
   * run ended (a failed run resolves with `status: "error"`, never rejects). Rejects with
   * `AgentError` `busy` while a run is going, `invalid-input` (nothing added, nothing sent) for an
   * empty prompt or messages an endpoint would refuse, naming the message and the fault. The checks
   * and the run's start happen before it returns (`isRunning` is true at once); only their error
   * comes through the promise, never thrown.
   */
  prompt(input: string | AgentMessage | readonly AgentMessage[]): Promise<AgentRunResult> {
    try {
      return this.#prompt(input);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #prompt(input: string | AgentMessage | readonly AgentMessage[]): Promise<AgentRunResult> {
    this.#notBusy("prompt");
    this.#systemOnce("prompt");
    let messages: AgentMessage[];
    if (typeof input === "string") {
      if (input.trim() === "") throw new AgentError("invalid-input", "Agent.prompt: the prompt is empty.");
      messages = [userMessage(input)];
    } else if (Array.isArray(input)) {
      messages = [...input];
    } else if (typeof input === "object" && input !== null) {
      messages = [input as AgentMessage];
    } else {
      throw new AgentError(
        "invalid-input",
        `Agent.prompt takes text, a message, or a list of messages; got ${kindOf(input)}.`,
      );
    }
    if (messages.length === 0) throw new AgentError("invalid-input", "Agent.prompt: no messages given.");
    this.#checkPrompt(messages);
    this.#beforeStart();
    return this.#start(messages);
  }

  /**
   * `convertToLlm(messages)`, held to what it must answer: an array of chat messages, given at once.
   * A promise (a `convertToLlm` written `async`) is refused — its rejection handled, never left to
   * end the process — and so is anything that is not an array, with `AgentError` `invalid-input`
   * naming the hook, rather than a TypeError from deep inside.
   */
  #convert(messages: readonly AgentMessage[]): ChatMessage[] {
    const view: unknown = this.convertToLlm(messages);
    if (handledThenable(view)) {
      throw new AgentError(
        "invalid-input",
        "convertToLlm returned a Promise; it must answer synchronously, with the array of chat messages to send.",
      );
    }
    if (!Array.isArray(view)) {
      throw new AgentError(
        "invalid-input",
        `convertToLlm must return an array of chat messages, and returned ${kindOf(view)}.`,
      );
    }
    return view as ChatMessage[];
  }

  /**
   * The step's `toolChoice`, held to answering synchronously: a promise (a `toolChoice` written
   * `async`, a policy looked up in a store) is refused with `AgentError` `invalid-input` naming the
   * hook, its rejection handled, never left to end the process.
   */
  #toolChoiceFor(info: TransformContextInfo): ToolChoice | undefined {
    const choice: unknown = this.toolChoice?.(info);
    if (handledThenable(choice)) {
      throw new AgentError(
        "invalid-input",
        'toolChoice returned a Promise; it must answer synchronously: "auto", "none", "required", ' +
          '{ type: "function", function: { name } } or undefined.',
      );
    }
    return choice as ToolChoice | undefined;
  }

  /**
   * What `prompt` adds, checked before anything is stored: each a message, the tool messages among
   * them answering the assistant call before them, and the request ending in something for the
   * model to answer. Throws `AgentError` (`invalid-input`) naming the message and the fault.
   */
  #checkPrompt(messages: readonly AgentMessage[]): void {
    messages.forEach((message, at) => {
      const problem = messageProblem(message, true);
      if (problem) throw new AgentError("invalid-input", `Agent.prompt: message ${at} ${problem}.`);
    });
    let view: ChatMessage[];
    try {
      view = this.#convert([...this.#messages, ...messages]);
    } catch {
      return; // the run reports a convertToLlm that throws, as it always has
    }
    const fault = pairingFault(view);
    if (fault) {
      const given = messages.indexOf(view[fault.at] as AgentMessage);
      // A fault of the transcript as the host left it is not this prompt's to name; past it, one of
      // the messages given (a convertToLlm that copies leaves no index to name) is.
      const which =
        given >= 0
          ? `message ${given}`
          : fault.at >= this.#convert(this.#messages).length
            ? "a message given"
            : undefined;
      if (which !== undefined) {
        throw new AgentError(
          "invalid-input",
          `Agent.prompt: ${which} ${fault.text}; an endpoint refuses that.`,
        );
      }
    }
    if (view.length === 0 || fieldOf(view.at(-1), "role") === "assistant") {
      throw new AgentError(
        "invalid-input",
        "Agent.prompt: the messages given leave nothing for the model to answer: what the model is sent " +
          "ends in an assistant reply (an app-only message is not sent). Add a user message, or use continue().",
      );
    }
  }

  /** A message for a queue, checked: `AgentError` (`invalid-input`) for one a request could not carry. */
  #queued(method: string, message: string | AgentMessage): AgentMessage {
    if (typeof message === "string") {
      if (message.trim() === "")
        throw new AgentError("invalid-input", `Agent.${method}: the message is empty.`);
      return userMessage(message);
    }
    const problem = messageProblem(message, true);
    if (problem) throw new AgentError("invalid-input", `Agent.${method}: the message ${problem}.`);
    const tool = fieldOf(message, "role") === "tool";
    if (tool || hasCalls(message)) {
      throw new AgentError(
        "invalid-input",
        `Agent.${method}: a queued message is delivered after every call of a step was answered, so it ` +
          `cannot be a ${tool ? "tool message" : "tool call"}; give a user message.`,
      );
    }
    return message;
  }

  /**
   * Runs again from the transcript as it is (after an error, after app-side edits, or after a restore
   * that ends in an assistant message whose calls were never answered: each is answered "Not run…",
   * not run, and the model is asked). When it ends in an assistant message without tool calls, or
   * in a system message (a compaction's notes left alone after `rewind`), a queued message is run
   * instead; with none queued, rejects with `AgentError` `cannot-continue`.
   * Rejects with `busy` while a run is going. As with `prompt`, never throws.
   */
  continue(): Promise<AgentRunResult> {
    try {
      return this.#continue();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #continue(): Promise<AgentRunResult> {
    this.#notBusy("continue");
    this.#systemOnce("continue");
    const last = this.#convert(this.#messages).at(-1);
    // A transcript that ends in a system message (a compaction's notes left alone after a rewind)
    // asks nothing: Mistral refuses a request that ends in one, as it does one that ends in an answer.
    const asksNothing =
      last !== undefined &&
      (fieldOf(last, "role") === "system" || (fieldOf(last, "role") === "assistant" && !hasCalls(last)));
    if (last === undefined || asksNothing) {
      const queued = this.#drain(this.#steering, this.steeringMode);
      const next = queued.length > 0 ? queued : this.#drain(this.#followUp, this.followUpMode);
      if (next.length === 0) {
        throw new AgentError(
          "cannot-continue",
          `Agent.continue: the transcript ${last === undefined ? "is empty" : fieldOf(last, "role") === "system" ? "ends in a system message, with no question to answer" : "ends in an assistant message with no tool call to answer"} and nothing is queued; prompt() instead.`,
        );
      }
      this.#beforeStart();
      return this.#start(next, true);
    }
    this.#beforeStart();
    return this.#start([]);
  }

  /**
   * Queues a message delivered after the current tool step, before the next request; queued while
   * no run is going, it goes with the next run's first request, after what `prompt()` was given.
   * Throws `AgentError` `invalid-input` (nothing queued) for empty text, a value that is not a
   * message, or a tool message or tool call.
   */
  steer(message: string | AgentMessage): void {
    this.#steering.push(this.#queued("steer", message));
  }

  /** Queues a message delivered when the run would otherwise stop. Checked as `steer` checks. */
  followUp(message: string | AgentMessage): void {
    this.#followUp.push(this.#queued("followUp", message));
  }

  /** True when either queue holds a message. */
  hasQueuedMessages(): boolean {
    return this.#steering.length > 0 || this.#followUp.length > 0;
  }

  /** Drops every queued steering message. */
  clearSteeringQueue(): void {
    this.#steering.length = 0;
  }

  /** Drops every queued follow-up message. */
  clearFollowUpQueue(): void {
    this.#followUp.length = 0;
  }

  /** Empties both queues; returns what they held, steering first (see `TAKE_QUEUED`). */
  [TAKE_QUEUED](): AgentMessage[] {
    return [...this.#steering.splice(0), ...this.#followUp.splice(0)];
  }

  /** Drops both queues. */
  clearAllQueues(): void {
    this.clearSteeringQueue();
    this.clearFollowUpQueue();
  }

  /**
   * Stops the running run: the stream is closed, running tools are signalled, every call is
   * answered; a call whose `beforeToolCall` is pending never starts its tool. No-op when idle.
   */
  abort(reason?: unknown): void {
    this.#abort?.abort(reason ?? new Error("Aborted by the caller."));
  }

  /** Resolves when no run is going (after awaited `agent_end` listeners). */
  waitForIdle(): Promise<void> {
    return this.#idle;
  }

  /** Clears the transcript, what is loaded, both queues and the last error. Throws `AgentError` `busy` while a run is going. */
  reset(): void {
    this.#notBusy("reset");
    this.#messages = [];
    this.#loaded = [];
    this.clearAllQueues();
    this.errorMessage = undefined;
  }

  /** A subclass's `BEFORE_START`, once a run's checks passed. */
  #beforeStart(): void {
    (this as { [BEFORE_START]?: () => void })[BEFORE_START]?.();
  }

  #notBusy(method: string): void {
    if (this.isRunning) {
      throw new AgentError(
        "busy",
        `Agent.${method}() was called while a run is going; use steer()/followUp(), or await waitForIdle().`,
      );
    }
  }

  /** A config given prompt entries after `system` was set: refused before anything is added or sent. */
  #systemOnce(method: string): void {
    if (this.#system !== undefined && hasPromptText(this.config)) {
      throw givenTwice(`Agent.${method}`, "the config's prompt (config.prompt, set after system)");
    }
  }

  #drain(queue: AgentMessage[], mode: QueueMode): AgentMessage[] {
    return mode === "all" ? queue.splice(0, queue.length) : queue.splice(0, 1);
  }

  #emit(event: AgentEvent): void {
    const signal = this.#abort?.signal;
    const listeners = [...this.#listeners];
    this.#delivery = this.#delivery.then(async () => {
      for (const listener of listeners) {
        try {
          await listener(event, signal);
        } catch {
          // A listener's failure is its own; the run goes on.
        }
      }
    });
  }

  #openTurn(): void {
    if (this.#turnOpen) return;
    this.#turnOpen = true;
    this.#emit({ type: "turn_start" });
  }

  #closeTurn(message: ChatMessage | undefined, toolResults: ChatMessage[]): void {
    if (!this.#turnOpen) return;
    this.#turnOpen = false;
    this.#emit({ type: "turn_end", message, toolResults });
  }

  #add(message: AgentMessage): void {
    this.#messages.push(message);
    this.#emit({ type: "message_start", message });
    this.#emit({ type: "message_end", message });
  }

  /** Starts a run with `messages` added first; `queued` when they came from a queue (`continue()`). */
  #start(messages: AgentMessage[], queued = false): Promise<AgentRunResult> {
    this.#abort = new AbortController();
    this.errorMessage = undefined;
    const run = this.#run(messages, queued);
    this.#idle = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  async #run(first: AgentMessage[], firstQueued: boolean): Promise<AgentRunResult> {
    const signal = this.#abort?.signal;
    this.#looping = true;
    this.#from = this.#messages.length;
    this.#ending = undefined;
    this.#sideDone = NO_SIDE;
    this.#sideNow = NO_SIDE;
    let status: AgentRunStatus = "ok";
    let error: string | undefined;
    let cause: unknown;
    this.#emit({ type: "agent_start" });
    let pending = first;
    /** Whether `pending` came from a queue (checked by `steer`/`followUp`, not as a prompt is). */
    let queued = firstQueued;
    // A restored transcript whose last assistant message's calls were never answered (stored before
    // its tools ran): each is answered as not run, in the agent's transcript and so in every request
    // after, before what this run adds. A tool message given to answer one is the host's answer instead.
    const open = fieldOf(first[0], "role") === "tool" ? [] : this.#openAtEnd();
    if (open.length > 0) {
      const ids = open.map((id) => quotedEcho(id)).join(", ");
      this.#emit({
        type: "notice",
        text:
          `The transcript has ${open.length === 1 ? "a tool call" : "tool calls"} no tool message answers (${ids}), ` +
          `as a run stopped after storing the call leaves it. ${open.length === 1 ? "It is" : "Each is"} answered ` +
          `"${NOT_RUN}" and not run.`,
      });
      pending = [
        ...open.map((id): ChatMessage => ({ role: "tool", tool_call_id: id, content: NOT_RUN })),
        ...first,
      ];
    }
    // Steering queued while no run was going (in an agent_end listener, or between runs) goes with
    // this run's first request, after what the run was given: "before the next request", never after
    // the answer. A continue() that runs a queued message has taken it from the queues already.
    if (!firstQueued) pending = [...pending, ...this.#drain(this.#steering, this.steeringMode)];
    try {
      for (;;) {
        this.#openTurn();
        for (const message of pending) this.#add(message);
        await this.#delivery;
        // Raced with the stop: a transformContext that stalls cannot keep a stopped run going.
        const view = this.transformContext
          ? await untilStopped(this.transformContext([...this.#messages], signal, { step: 1 }), signal)
          : this.#messages;
        const llm = this.#convert(view);
        // A queued message that leaves the model nothing to answer (an app-only note the converter
        // does not send, after the model's answer) is kept where it was delivered; no request is
        // made for it: one ending in the model's own answer asks it to answer itself (and some
        // endpoints refuse a request ending in an assistant message).
        const last = llm.at(-1);
        if (queued && fieldOf(last, "role") === "assistant" && !hasCalls(last)) {
          const steering = this.#drain(this.#steering, this.steeringMode);
          pending = steering.length > 0 ? steering : this.#drain(this.#followUp, this.followUpMode);
          if (pending.length === 0) break;
          continue;
        }
        this.#sentView(view, llm);
        this.#answered = undefined;
        const result = await this.#backend.run(this.#loopOptions(llm, signal));
        this.#endSide(setting(result, "sideUsage"));
        this.#carry(result.loaded);
        this.#adopt(result.messages);
        // The loop ended after a tool step at this agent's word: nothing queued is delivered.
        if (result.stopReason === "stopped" && this.#ending) {
          status = this.#ending;
          break;
        }
        // The model answered; before a queued message starts another turn, the hook may end the run.
        if (this.hasQueuedMessages() && (await this.#stopAfterAnswer(result.messages, signal))) {
          status = "stopped";
          break;
        }
        const steering = this.#drain(this.#steering, this.steeringMode);
        pending = steering.length > 0 ? steering : this.#drain(this.#followUp, this.followUpMode);
        queued = true;
        if (pending.length === 0) break;
      }
    } catch (caught) {
      this.#recover(caught);
      // A stop that came once the model's answer was whole and in the transcript (a listener of its
      // message_end or turn_end, a stop button pressed as the answer ended) stopped nothing: the
      // loop's wait on the agent's own onMessage was all it ended. The run answered.
      if (signal?.aborted && this.#answered !== undefined && this.#messages.at(-1) === this.#answered) {
        this.#emit({ type: "notice", text: STOPPED_AFTER_ANSWER });
      } else if (signal?.aborted) status = "aborted";
      else {
        status = "error";
        // The agent's own refusal from inside its beforeStep (a toolChoice that returned a promise)
        // reads as itself: the loop's "beforeStep threw:" names a callback the host never gave.
        error = forTheAgentsHost(errorText(ownRefusal(caught) ?? caught));
        cause = caught;
        this.errorMessage = error;
      }
    }
    if (this.#partial) {
      this.#emit({ type: "message_end", message: this.#partial });
      this.#partial = undefined;
    }
    this.#closeTurn(this.#batch?.message, this.#batch?.results ?? []);
    this.#batch = undefined;
    const messages = this.#messages.slice(this.#from);
    this.#looping = false;
    // What the run's side tasks cost in all, where anything: a fold's summary for a request that
    // then failed came after the run's last usage event.
    // Each its own copy: a listener that rewrites the event's changes nothing the result says.
    const sideUsage = spent(this.#side()) ? () => ({ sideUsage: this.#side() }) : () => ({});
    this.#emit({
      type: "agent_end",
      messages,
      status,
      ...(error !== undefined ? { error } : {}),
      ...sideUsage(),
    });
    await this.#delivery;
    this.#abort = undefined;
    const result: AgentRunResult = {
      status,
      messages,
      ...(error !== undefined ? { error, cause } : {}),
      ...sideUsage(),
    };
    try {
      (this as { [AFTER_RUN]?: (result: AgentRunResult) => void })[AFTER_RUN]?.(result);
    } catch {
      // The subclass's own bookkeeping; the run's result stands.
    }
    return result;
  }

  /**
   * The calls of the last assistant message that no answer follows, as the model is sent the
   * transcript (`convertToLlm`, so app-only messages after the call are left out), when an answer
   * appended to the agent's transcript lands right after the call's other answers there; else none
   * (the loop answers a call left open in its request, as it does one before a later message).
   */
  #openAtEnd(): string[] {
    try {
      const open = trailingOpenCalls(this.#convert(this.#messages));
      if (open.length === 0) return [];
      const answers = open.map((id): ChatMessage => ({ role: "tool", tool_call_id: id, content: NOT_RUN }));
      const after = this.#convert([...this.#messages, ...answers]);
      const tail = after.slice(-open.length) as Partial<ChatMessage & { tool_call_id: string }>[];
      const lands =
        trailingOpenCalls(after).length === 0 &&
        tail.every(
          (message, k) => fieldOf(message, "role") === "tool" && fieldOf(message, "tool_call_id") === open[k],
        );
      return lands ? open : [];
    } catch {
      return []; // the run reports a convertToLlm that throws
    }
  }

  /** After a failure: the messages the loop added without telling `onMessage` (answers to unanswered calls). */
  #recover(caught: unknown): void {
    const run = failedRun(caught);
    if (!run) return;
    this.#endSide(setting(run, "sideUsage"));
    this.#carry(run.loaded);
    this.#adopt(run.messages);
    // By place, not by object: a backend may hand back its run's messages as copies.
    for (const message of run.messages.slice(this.#told)) {
      this.#known.add(message);
      this.#add(message);
      if (fieldOf(message, "role") === "tool") this.#batch?.results.push(message);
    }
  }

  /** A loop run ended: what its side tasks cost in all (its result's or its failure's `sideUsage`) joins the run's. */
  #endSide(side: unknown): void {
    this.#sideDone = addSide(this.#sideDone, sideUsageOf(side));
    this.#sideNow = NO_SIDE;
  }

  /** What the running run's side tasks cost so far. */
  #side(): SideUsage {
    return addSide(this.#sideDone, this.#sideNow);
  }

  /** What a run (or a failed one) says is loaded, kept for the next; a backend that says nothing leaves it. */
  #carry(loaded: unknown): void {
    if (isNameList(loaded)) this.#loaded = [...loaded];
  }

  #loopOptions(messages: ChatMessage[], signal: AbortSignal | undefined): AgentLoopOptions {
    const batch = () => this.#batch;
    const tools = this.tools.definitions();
    this.#declared = {
      tools: this.tools.version,
      catalog: this.#catalogVersion,
      toolsText: textOf(tools),
      catalogText: textOf(this.catalog ?? null),
    };
    return {
      config: this.#loopConfig(),
      ...(this.system !== undefined ? { system: this.system } : {}),
      messages,
      ...(this.#loaded.length > 0 ? { loaded: [...this.#loaded] } : {}),
      tools,
      ...(this.catalog ? { catalog: this.catalog } : {}),
      dispatch: (request, callSignal) => {
        // The run's own signal (a loop before r81 handed it on as it was with no time limit): each
        // call gets one of its own, so a step's thirty tools that each listen to theirs hang no
        // listener on the run's. The loop now gives every call its own, so this is a guard only.
        if (!signal || callSignal !== signal) return this.#callOne(request, callSignal, this.#batch);
        const call = callOf(signal);
        return this.#callOne(request, call.signal, this.#batch).finally(call.release);
      },
      ...(signal ? { signal } : {}),
      ...(this.#dedupeToolCalls !== undefined ? { dedupeToolCalls: this.#dedupeToolCalls } : {}),
      // Read by the loop as each step's calls start, after `onMessage` made the step's batch: a
      // sequential step is run one call at a time by the loop itself, so a stop leaves the calls
      // after the running one unrun and each call's time limit starts when the call does.
      get parallel() {
        return batch()?.sequential !== true;
      },
      onEvent: (event) => this.#onLoopEvent(event),
      onToolCall: (request) =>
        this.#emit({
          type: "tool_execution_start",
          toolCallId: request.id,
          toolName: request.name,
          args: request.args,
          ...(request.raw !== undefined ? { rawArgs: request.raw } : {}),
        }),
      onToolResult: (result: CallResult) => {
        if (result.source === "repeat") this.#batch?.repeats.add(result.id);
        this.#emit({
          type: "tool_execution_end",
          toolCallId: result.id,
          toolName: result.name,
          result: result.content,
          isError: !result.ok,
        });
      },
      onMessage: (message, step) => this.#onMessage(message, step),
      beforeStep: (messages, step, context) => {
        this.#adopt(messages);
        return this.#beforeStep({ step, ...pick(context) }, signal);
      },
    };
  }

  /**
   * The config a loop run is handed: `config` itself, or, where it holds another SDK's step limit
   * (`maxSteps`, `stopWhen`, … : the loop's `FOREIGN_STEP_LIMITS`), a copy without those fields,
   * and the agent's own notice for them, told the first time a run sees each set of them. The loop
   * would tell its own at every loop run (each prompt, each queued message a run goes on with),
   * pointing at `beforeStep`, which the agent gives the loop itself: advice an Agent's host cannot
   * follow. The host's object is left as it is; the copy keeps its getters and prototype, as the
   * loop reads them.
   */
  #loopConfig(): LoopConfig {
    const found = foreignStepLimitsIn(this.config);
    if (found.length === 0) return this.config;
    const key = found.join(",");
    if (!this.#stepLimitsTold.has(key)) {
      const text = this[STEP_LIMIT_NOTICE](found);
      if (text !== undefined) {
        this.#stepLimitsTold.add(key);
        this.#emit({ type: "notice", text });
      }
    }
    return configCopy(this.config, { without: found });
  }

  /**
   * The Agent's notice for another SDK's step limit in its config (`found`): that an Agent does not
   * read it, the tool steps each loop run keeps (`config.maxToolIterations`, with its value), and
   * `shouldStopAfterTurn` for a stop on a condition. None for a `maxToolIterations` the loop
   * refuses (its refusal names it), so the notice never states a limit no run keeps.
   */
  [STEP_LIMIT_NOTICE](found: readonly string[]): string | undefined {
    const given = setting(this.config, "maxToolIterations");
    if (given != null && !(typeof given === "number" && Number.isInteger(given) && given >= 0))
      return undefined;
    const limit = given ?? DEFAULT_MAX_TOOL_ITERATIONS;
    return (
      `${foreignStepLimitsUnread(found, "an Agent")}: this agent allows ${limit} tool ${limit === 1 ? "step" : "steps"} ` +
      `per loop run (config.maxToolIterations${given == null ? "'s default" : ""}; a queued message a run goes on ` +
      'with starts a new loop run), past which the run ends with status "error"; to stop on a condition, return ' +
      'true from shouldStopAfterTurn, asked after each tool step: the run then ends with status "stopped".'
    );
  }

  /** Notes the transcript handed to the loop (`view` made into `llm`), and which own message each of its messages stands for. */
  #sentView(view: readonly AgentMessage[], llm: readonly ChatMessage[]): void {
    this.#known = new Set(llm);
    this.#told = llm.length;
    this.#owners = new Map();
    this.#viewOnly = 0;
    if (setting(this.config, "compact") !== true) return;
    const own = this.#messages;
    const toOwn = view === own ? undefined : standsFor(own, view);
    const toView = standsFor(view, llm);
    llm.forEach((message, k) => {
      const j = toView[k] as number;
      const i = j < 0 ? -1 : toOwn ? (toOwn[j] as number) : j;
      if (i >= 0) this.#owners.set(message, own[i] as AgentMessage);
    });
    while (
      this.#viewOnly < llm.length &&
      !this.#owners.has(llm[llm.length - 1 - this.#viewOnly] as ChatMessage)
    ) {
      this.#viewOnly++;
    }
  }

  /** The step's `requestOnly` for the view just handed over (`#viewOnly`), where there is any. */
  #requestOnly(): Pick<StepPlan, "requestOnly"> {
    return this.#viewOnly > 0 ? { requestOnly: this.#viewOnly } : {};
  }

  /**
   * After the loop folded the transcript (`autoCompact`): the fold becomes the agent's own. The
   * agent's messages the folded stretch stood for go (app-only messages among them too); the rest
   * stay as the agent keeps them — its own message where the request carried a `transformContext`
   * copy, app-only messages after the stretch in their places, nothing a view only added — behind the
   * summary. The result is checked to pair every tool call with its answers before it is adopted and
   * `compacted` is told; one that would not is left alone (a notice says so) and the agent keeps its
   * transcript whole.
   */
  #adopt(loopMessages: readonly ChatMessage[]): void {
    if (setting(this.config, "compact") !== true) return;
    const summary = foldedSummary(loopMessages);
    if (!summary || this.#known.has(summary as ChatMessage)) return;
    const own = this.#messages;
    const index = new Map<AgentMessage, number>(own.map((message, i) => [message, i]));
    const ownIndex = (message: ChatMessage): number => {
      const owner = this.#owners.get(message) ?? message;
      return index.get(owner) ?? -1;
    };
    const at = loopMessages.indexOf(summary as ChatMessage);
    const after = new Set(loopMessages);
    // The folded stretch: what the loop had before the fold and has no more.
    let cut = 0;
    for (const message of this.#known) {
      if (!after.has(message)) cut = Math.max(cut, ownIndex(message) + 1);
    }
    const lead = loopMessages
      .slice(0, at)
      .map(ownIndex)
      .filter((i) => i >= 0 && i < cut)
      .map((i) => own[i] as AgentMessage);
    const unreported = loopMessages.filter((m) => !this.#known.has(m) && m !== summary);
    const kept = loopMessages.slice(at + 1).filter((m) => !unreported.includes(m));
    const adopted = [...lead, summary, ...own.slice(cut)];
    const fault =
      kept.some((m) => {
        const i = ownIndex(m);
        return i >= 0 && i < cut;
      }) || this.#unpaired([...adopted, ...unreported]);
    this.#known.add(summary as ChatMessage);
    this.#told = loopMessages.length - unreported.length;
    if (fault) {
      this.#emit({
        type: "notice",
        text:
          "The fold was not taken into the agent's transcript: its messages and the fold's did not line up " +
          "(tool calls would go unanswered). The agent keeps its transcript whole; the next run folds again.",
      });
      return;
    }
    this.#messages = adopted;
    for (const message of loopMessages) if (!unreported.includes(message)) this.#known.add(message);
    this.#from = Math.max(0, this.#from - (cut - lead.length - 1));
    this.#emit({ type: "compacted", messages: [...this.#messages] });
  }

  /** Whether a transcript's request would leave a tool call unanswered or an answer without its call. */
  #unpaired(messages: readonly AgentMessage[]): boolean {
    try {
      return pairingFault(this.#convert(messages)) !== undefined;
    } catch {
      return true;
    }
  }

  #onLoopEvent(event: RunEvent): void {
    switch (event.kind) {
      case "turn":
        this.#openTurn();
        this.#partial = { role: "assistant", content: "" };
        this.#emit({ type: "message_start", message: { ...this.#partial } });
        break;
      case "output":
      case "thinking": {
        if (!this.#partial) break;
        if (event.kind === "output") this.#partial.content = `${this.#partial.content ?? ""}${event.text}`;
        this.#emit({
          type: "message_update",
          message: { ...this.#partial },
          delta: { type: event.kind === "output" ? "text" : "thinking", text: event.text },
        });
        break;
      }
      case "retract": {
        // A late </think>: the last `chars` of the answer so far were reasoning after all.
        if (!this.#partial) break;
        const text = typeof this.#partial.content === "string" ? this.#partial.content : "";
        this.#partial.content = text.slice(0, Math.max(0, text.length - event.chars));
        this.#emit({ type: "message_retract", message: { ...this.#partial }, chars: event.chars });
        break;
      }
      case "thinking-retract":
        // Reasoning drawn for a recovered call's markup: taken back, the kept reasoning follows.
        if (!this.#partial) break;
        this.#emit({ type: "thinking_retract", message: { ...this.#partial }, chars: event.chars });
        break;
      case "usage": {
        // The loop's totals so far for its side tasks (`LoopUsageEvent`), where one was answered.
        const told = setting(event, "sideUsage");
        if (told !== undefined) this.#sideNow = sideUsageOf(told);
        const side = this.#side();
        // A turn that did not finish says so (the loop marks its usage event `turn.stopped`/`failed`).
        const ended = event.turn.stopped ? "stopped" : event.turn.failed ? "failed" : undefined;
        this.#emit({
          type: "usage",
          usage: event.turn.usage,
          ...(spent(side) ? { sideUsage: side } : {}),
          ...(ended ? { ended } : {}),
        });
        break;
      }
      case "notice":
        this.#emit({ type: "notice", text: event.text });
        break;
      default:
        break;
    }
  }

  async #onMessage(message: ChatMessage, step: number): Promise<void> {
    this.#known.add(message);
    this.#told++;
    this.#messages.push(message);
    if (step === 0) {
      // The loop's own exchange before the first request (a proxied preselection's load_tools):
      // part of the turn the prompt opened, no model turn of its own, so no turn_end for it.
      this.#emit({ type: "message_start", message });
      this.#emit({ type: "message_end", message });
    } else if (fieldOf(message, "role") === "assistant") {
      if (!this.#partial) this.#emit({ type: "message_start", message });
      this.#partial = undefined;
      this.#emit({ type: "message_end", message });
      // The loop's message: an answer in text holds no tool_calls of its own.
      const calls = toolCallsOf(message);
      const ids = calls.map((c) => c.id);
      if (ids.length === 0) {
        this.#answered = message;
        this.#batch = undefined;
        this.#closeTurn(message, []);
      } else {
        const sequential =
          this.toolExecution === "sequential" ||
          calls.some(
            (c) =>
              c.type === "function" &&
              setting(this.tools.get(c.function.name), "executionMode") === "sequential",
          );
        this.#batch = {
          message,
          ids,
          results: [],
          terminate: new Set(),
          repeats: new Set(),
          sequential,
        };
      }
    } else if (fieldOf(message, "role") === "tool") {
      this.#emit({ type: "message_start", message });
      this.#emit({ type: "message_end", message });
      const batch = this.#batch;
      if (batch) {
        batch.results.push(message);
        if (batch.results.length >= batch.ids.length) this.#closeTurn(batch.message, batch.results);
      }
    }
    // A barrier: listeners have seen the message before any tool of its step starts.
    await this.#delivery;
  }

  /** `shouldStopAfterTurn` after a turn that answered with text (no tool results). */
  async #stopAfterAnswer(
    messages: readonly ChatMessage[],
    signal: AbortSignal | undefined,
  ): Promise<boolean> {
    if (!this.shouldStopAfterTurn) return false;
    const message = messages.findLast((m) => fieldOf(m, "role") === "assistant");
    return this.shouldStopAfterTurn({ messages: this.messages, message, toolResults: [] }, signal);
  }

  /**
   * The loop's `beforeStep`: after a tool step, a stop when every call asked to terminate or
   * `shouldStopAfterTurn` says so (the loop ends with every call answered); else the steering
   * delivered, the view rebuilt, and the step's `toolChoice`.
   */
  async #beforeStep(
    info: TransformContextInfo,
    signal: AbortSignal | undefined,
  ): Promise<StepPlan | undefined> {
    const { step } = info;
    await this.#delivery;
    // Asked only for a step that is sent: after a stop there is none. Tools that joined or left
    // since the last step go with it, and the toolChoice is checked against them.
    const planned = (): StepPlan => {
      const toolChoice = this.#toolChoiceFor(info);
      return { ...this.#toolsPlan(), ...(toolChoice !== undefined ? { toolChoice } : {}) };
    };
    // The first step's view went in as the run's messages, its own note with it.
    if (step === 1) return { ...planned(), ...this.#requestOnly() };
    const batch = this.#batch;
    // Every call asked to end the run: each that ran, and each repeat of one that ran.
    const ran = batch?.ids.filter((id) => !batch.repeats.has(id)) ?? [];
    if (ran.length > 0 && ran.every((id) => batch?.terminate.has(id))) this.#ending = "terminated";
    else if (
      this.shouldStopAfterTurn &&
      (await this.shouldStopAfterTurn(
        { messages: this.messages, message: batch?.message, toolResults: batch?.results ?? [] },
        signal,
      ))
    ) {
      this.#ending = "stopped";
    }
    if (this.#ending) return { stop: true };
    this.#batch = undefined;
    const steering = this.#drain(this.#steering, this.steeringMode);
    if (steering.length === 0 && !this.transformContext) return planned();
    this.#openTurn();
    for (const message of steering) this.#add(message);
    await this.#delivery;
    const view = this.transformContext
      ? await untilStopped(this.transformContext([...this.#messages], signal, info), signal)
      : this.#messages;
    // Stopped while it ran: the loop has ended the run, and nothing of this step may change the agent.
    stopIfAborted(signal);
    const llm = this.#convert(view);
    this.#sentView(view, llm);
    return { messages: llm, ...planned(), ...this.#requestOnly() };
  }

  /**
   * The tools (and, in a loading mode, the catalogue) for the step's plan when they changed since
   * the running loop run was last handed them; nothing when they did not, so the step's request
   * keeps the tool array and system text of the one before it (and the prompt cache with them).
   */
  #toolsPlan(): Pick<StepPlan, "tools" | "catalog"> {
    const declared = this.#declared;
    if (!declared) return {};
    const plan: Pick<StepPlan, "tools" | "catalog"> = {};
    if (declared.tools !== this.tools.version) {
      declared.tools = this.tools.version;
      const tools = this.tools.definitions();
      const text = textOf(tools);
      if (text === undefined || text !== declared.toolsText) {
        declared.toolsText = text;
        plan.tools = tools;
      }
    }
    const mode = setting(this.config, "toolDiscovery");
    if (declared.catalog !== this.#catalogVersion && (mode === "ondemand" || mode === "proxy")) {
      declared.catalog = this.#catalogVersion;
      const text = textOf(this.catalog ?? null);
      if (text === undefined || text !== declared.catalogText) {
        declared.catalogText = text;
        plan.catalog = this.catalog ?? null;
      }
    }
    return plan;
  }

  async #callOne(
    request: DispatchRequest,
    signal: AbortSignal | undefined,
    batch: Batch | undefined,
  ): Promise<unknown> {
    const tool = this.tools.get(request.name);
    let args = request.args;
    const beforeToolCall = this.beforeToolCall;
    if (beforeToolCall) {
      const answer = await hookAnswer(() =>
        beforeToolCall({ toolCall: request, args, messages: this.messages }, signal),
      );
      if ("failed" in answer) {
        // A stop while the hook ran answers the call with the stop, whatever the hook threw for it.
        stopIfAborted(signal);
        this.#emit({
          type: "notice",
          text: hookFailedNote("beforeToolCall", request.name, answer.failed, "the call was not run"),
        });
        throw new Error(`Not run: the host's policy hook failed on this call to ${request.name}.`);
      }
      const decision = readBeforeDecision(answer, request.name, args);
      for (const text of decision.notes) this.#emit({ type: "notice", text });
      if (!decision.run) {
        if (decision.terminate) batch?.terminate.add(request.id);
        // An answer of the wrong shape fails closed: the host's notice says why in full; the model
        // reads only that the host's policy did not let the call run.
        throw new Error(decision.reason);
      }
      args = decision.args as typeof args;
    }
    // A stop while the hook was pending answered the call already: the tool must not start after it.
    stopIfAborted(signal);
    let result: unknown;
    let isError = false;
    // A report after the call settled, or after it was stopped (answered at once, its
    // tool_execution_end told, while a tool that ignores its signal goes on) would come after that
    // end, even after agent_end: it is not told.
    let running = true;
    try {
      if (tool) {
        result = await tool.execute(args, {
          toolCallId: request.id,
          ...(signal ? { signal } : {}),
          onUpdate: (partialResult) => {
            if (!running || signal?.aborted) return;
            this.#emit({
              type: "tool_execution_update",
              toolCallId: request.id,
              toolName: request.name,
              partialResult,
            });
          },
          terminate: () => {
            batch?.terminate.add(request.id);
          },
        });
      } else if (this.#dispatch) {
        result = await this.#dispatch({ ...request, args }, signal);
      } else {
        throw new Error(
          `Unknown tool ${quotedEcho(request.name)}. Available tools: ${knownTools(
            request.name,
            this.tools.list().map((t) => t.name),
          )}.`,
        );
      }
    } catch (thrown) {
      isError = true;
      result = thrown;
    } finally {
      running = false;
    }
    const afterToolCall = this.afterToolCall;
    if (afterToolCall) {
      const toolIsError = isError;
      const toolResult = result;
      const after = await hookAnswer(() =>
        afterToolCall(
          { toolCall: request, args, messages: this.messages, result: toolResult, isError: toolIsError },
          signal,
        ),
      );
      // Stopped while the hook ran: the call was answered with the stop, and what the hook said is not used.
      stopIfAborted(signal);
      if ("failed" in after) {
        this.#emit({
          type: "notice",
          text: hookFailedNote("afterToolCall", request.name, after.failed, "the tool's result was withheld"),
        });
        throw new Error(`Result withheld: the host's policy hook failed on this call to ${request.name}.`);
      }
      // Read by its own fields: `isError` and `withheld` left out of it are nobody's (a polluted
      // Object.prototype's `isError` made every replaced result a failure).
      const read = ownFields(readAfterAnswer(after, request.name, isError), [
        "withheld",
        "result",
        "isError",
        "terminate",
        "notes",
      ]) as AfterRead;
      // A key it does not read, a bare value or `isError: "false"` is never used in silence: the host
      // is told; without a `result` beside it, the tool's result is withheld.
      for (const text of read.notes ?? []) this.#emit({ type: "notice", text });
      if (read.withheld !== undefined) {
        isError = true;
        result = new Error(read.withheld);
      } else {
        if (read.result !== undefined) result = read.result;
        if (read.isError !== undefined) isError = read.isError;
        if (read.terminate) batch?.terminate.add(request.id);
      }
    }
    if (isError)
      throw result instanceof Error
        ? result
        : new Error(typeof result === "string" ? result : failureText(result, request.name));
    return result;
  }
}
