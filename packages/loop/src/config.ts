import type { Endpoint } from "@loopwright/client";
import type { ModelParams, ToolChoice, ToolDefinition, ToolOrder } from "@loopwright/negotiate";
import type { ToolCallRequest } from "@loopwright/tool-calls";
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";

export type { Endpoint, ModelParams, ToolChoice, ToolDefinition, ToolOrder };

/**
 * Whether an identical call (same name, same repaired arguments) in one step is run once and its
 * answer shared: `true` (default) for every tool, `false` for none, or asked per call — a tool
 * whose second call is a second effect (`send_email`) answers `false`. A predicate is asked of
 * every call of a step before any runs; what it throws ends the run, nothing of the step dispatched.
 */
export type DedupePolicy = boolean | ((request: ToolCallRequest) => boolean);

/** What the loop does with the model's tool calls. */
export interface ToolPolicy {
  /** How many steps may run tools before the run stops with `ToolIterationLimit` (default 50). */
  maxToolIterations?: number | undefined;
  /** Declare tools in name order (default), the caller's order with `false`, or by a comparator. */
  toolOrder?: ToolOrder | undefined;
  /** Run a step's tool calls together rather than one after another (default false). */
  parallel?: boolean | null | undefined;
  /** Share one answer between identical calls of a step (default true); see `DedupePolicy`. */
  dedupeToolCalls?: DedupePolicy | null | undefined;
  /** Look for tool calls a server's parser left in the reply as text (default true). */
  recoverToolCalls?: boolean | null | undefined;
  /**
   * How the run's tools reach the model: `"eager"` (default) declares every tool on every step;
   * `"ondemand"` declares `load_tools` and what has been loaded, with the catalogue on the system
   * prompt; `"proxy"` declares only `load_tools` and `call_tool`, and a load answers with definitions.
   */
  toolDiscovery?: "eager" | "ondemand" | "proxy" | undefined;
  /** Shortlist tools with a side task before the first turn (`tasks.toolSelect`, else `toolSelectModel`). Default false. */
  preselect?: boolean | undefined;
  /** The preselection's model on the agent's endpoint, where `tasks.toolSelect` names none; empty: no preselection. */
  toolSelectModel?: string | undefined;
  /**
   * How long one tool call may run before it is stopped (its signal aborts) and answered with an
   * error saying so; the run carries on. Default 300 (`DEFAULT_TOOL_TIMEOUT_MS`); 0 waits for ever.
   */
  toolTimeoutSeconds?: number | undefined;
}

/**
 * The parts of a resolved agent config (`@loopwright/spec`'s `resolveAgentSpec`) that are not
 * endpoint, model, tool or retry settings. `prompt` is read as the system prompt when `system` is
 * absent and `compact` folds the transcript as the window fills; the rest (`hooks` included: the
 * runner the `hooks` option passes runs them) is the host's to act on and never read here.
 */
export interface AgentParts {
  /** System prompt parts in order, joined with blank lines. */
  prompt?: ReadonlyArray<{ id?: string | undefined; text: string }> | undefined;
  /** The spec's hooks: the host's runner (the `hooks` option's `run`) runs them; the loop does not read this. */
  hooks?: readonly unknown[] | undefined;
  /**
   * Fold the oldest stretch of the transcript into a summary before a request once `planCompaction`
   * says the `contextLength` window is filling, the summary written by `tasks.compaction` (never the
   * main model). A request that comes back too big all the same (the endpoint's refusal, or the size
   * guard's) is folded for, forced past a `beforeCompact` veto, and sent once more before the run
   * ends with `AgentLoopOverflow`. Needs `contextLength` and `tasks.compaction.model`; default false.
   */
  compact?: boolean | null | undefined;
  /** The host's: names, servers to connect; side tasks (the loop reads `tasks.toolSelect` for `preselect`). */
  name?: string | undefined;
  description?: string | undefined;
  servers?: readonly string[] | undefined;
  mcpServers?: readonly unknown[] | undefined;
  tasks?: Readonly<Record<string, unknown>> | undefined;
  /** Preselect by matching words first, spending the model only where they do not settle it. */
  preselectKeywords?: boolean | undefined;
  /** Where an on-demand preselection goes: its own first step (`"exclusive"`, default) or loaded beside the catalogue. */
  preselectRouting?: "exclusive" | "append" | undefined;
}

/** How hard the loop tries before a failure reaches the caller. */
export interface RetryPolicy {
  /** Re-sends of a turn after a transient failure before anything was produced (default 2). */
  maxRetries?: number | undefined;
  /** How long to wait for a server still loading the model (default 120; 0 turns it off). */
  loadingTimeoutSeconds?: number | undefined;
  /**
   * The longest a server's `retry-after` (on a 429 or 503) is honoured, per wait and in total over
   * one turn; a longer request is waited this long (default 120, `DEFAULT_MAX_RETRY_WAIT_MS`).
   */
  maxRetryWaitSeconds?: number | undefined;
  /** The operator's context window: requests that cannot fit it are refused before sending. */
  contextLength?: number | null | undefined;
  /**
   * How many extra requests may carry on an answer cut off (`continueTurn`) at `maxTokens` or the
   * server's own length limit — not one whose prompt and reply filled the `contextLength` window,
   * where none fits; default 0, since each spends a request — and, on a server that does not
   * continue, one to find out.
   */
  maxContinuations?: number | undefined;
}

/**
 * Everything `runAgentLoop` reads off `config` — one shape with what `resolveAgentSpec` returns,
 * which is assignable to it as it is.
 */
export type LoopConfig = Endpoint & ModelParams & ToolPolicy & RetryPolicy & AgentParts;

/**
 * A chat message as the endpoint takes it: the `openai` SDK's `ChatCompletionMessageParam`, with
 * an assistant message that may also carry the reasoning a server streamed (`reasoning_content` or
 * `reasoning`, under the field it came in). A `ChatCompletionMessageParam[]` is a `ChatMessage[]`,
 * and a run's `messages` go back to `client.chat.completions.create` as they are.
 */
export type ChatMessage =
  | Exclude<ChatCompletionMessageParam, ChatCompletionAssistantMessageParam>
  | AssistantMessage;

/** An assistant message: the SDK's, plus the reasoning the turn carried, replayed as it came. */
export interface AssistantMessage extends ChatCompletionAssistantMessageParam {
  reasoning_content?: string;
  reasoning?: string;
}

/** A tool call as an assistant message carries it. */
export interface AssistantToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** Default for `maxToolIterations`. */
export const DEFAULT_MAX_TOOL_ITERATIONS = 50;
