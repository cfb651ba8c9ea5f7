import type { Endpoint } from "@loopwright/client";
import type { ModelParams, ToolDefinition, ToolOrder } from "@loopwright/negotiate";
import type { ToolCallRequest } from "@loopwright/tool-calls";
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";

export type { Endpoint, ModelParams, ToolDefinition, ToolOrder };

/**
 * Whether an identical call (same name, same repaired arguments) in one step is run once and its
 * answer shared: `true` (default) for every tool, `false` for none, or asked per call — a tool
 * whose second call is a second effect (`send_email`) answers `false`.
 */
export type DedupePolicy = boolean | ((request: ToolCallRequest) => boolean);

/** What the loop does with the model's tool calls. */
export interface ToolPolicy {
  /** How many steps may run tools before the run stops with `ToolIterationLimit` (default 50). */
  maxToolIterations?: number;
  /** Declare tools in name order (default), the caller's order with `false`, or by a comparator. */
  toolOrder?: ToolOrder;
  /** Run a step's tool calls together rather than one after another (default false). */
  parallel?: boolean;
  /** Share one answer between identical calls of a step (default true); see `DedupePolicy`. */
  dedupeToolCalls?: DedupePolicy;
  /** Look for tool calls a server's parser left in the reply as text (default true). */
  recoverToolCalls?: boolean;
  /** How the run's tools reach the model. Only `"eager"` (every tool declared) is built; others are refused. */
  toolDiscovery?: "eager" | "ondemand" | "proxy";
  /** Shortlist tools with a side task before the first turn. Not built: `true` is refused. */
  preselect?: boolean;
}

/**
 * The parts of a resolved agent config (`@loopwright/spec`'s `resolveAgentSpec`) that are not
 * endpoint, model, tool or retry settings. `prompt` is read as the system prompt when `system` is
 * absent; `hooks` are not built (a non-empty list is refused); the rest is the host's to act on
 * and never read here.
 */
export interface AgentParts {
  /** System prompt parts in order, joined with blank lines. */
  prompt?: ReadonlyArray<{ id?: string; text: string }>;
  /** Hooks to gather onto the question. Not built: a non-empty list is refused. */
  hooks?: readonly unknown[];
  /** Run compaction inside the loop. Not built: `true` is refused (compact in `beforeStep`). */
  compact?: boolean;
  /** The host's: names, servers to connect, side tasks. */
  name?: string;
  description?: string;
  servers?: readonly string[];
  mcpServers?: readonly unknown[];
  tasks?: Readonly<Record<string, unknown>>;
  preselectKeywords?: boolean;
  preselectRouting?: "exclusive" | "append";
}

/** How hard the loop tries before a failure reaches the caller. */
export interface RetryPolicy {
  /** Re-sends of a turn after a transient failure before anything was produced (default 2). */
  maxRetries?: number;
  /** How long to wait for a server still loading the model (default 120; 0 turns it off). */
  loadingTimeoutSeconds?: number;
  /** The operator's context window: requests that cannot fit it are refused before sending. */
  contextLength?: number;
  /**
   * How many extra requests may carry on an answer cut off at `maxTokens` (`continueTurn`); default
   * 0, since each spends a request — and, on a server that does not continue, one to find out.
   */
  maxContinuations?: number;
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
