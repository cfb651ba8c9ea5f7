import type { Endpoint } from "@loopwright/client";
import type { ModelParams, ToolDefinition, ToolOrder } from "@loopwright/negotiate";

export type { Endpoint, ModelParams, ToolDefinition, ToolOrder };

/** What the loop does with the model's tool calls. */
export interface ToolPolicy {
  /** How many steps may run tools before the run stops with `ToolIterationLimit` (default 50). */
  maxToolIterations?: number;
  /** Declare tools in name order (default), the caller's order with `false`, or by a comparator. */
  toolOrder?: ToolOrder;
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

/** Everything `runAgentLoop` reads off `config`. */
export type LoopConfig = Endpoint & ModelParams & ToolPolicy & RetryPolicy;

/** A chat message as the endpoint takes it (OpenAI chat-completions shape). */
export interface ChatMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool";
  content?: string | null | ReadonlyArray<Record<string, unknown>>;
  tool_calls?: ReadonlyArray<AssistantToolCall>;
  tool_call_id?: string;
  name?: string;
  [extra: string]: unknown;
}

/** A tool call as an assistant message carries it. */
export interface AssistantToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** Default for `maxToolIterations`. */
export const DEFAULT_MAX_TOOL_ITERATIONS = 50;
