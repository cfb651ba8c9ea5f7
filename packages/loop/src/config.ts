/**
 * The structural shapes the loop reads. A caller satisfies them with whatever it already has — a
 * settings row, a resolved agent document, a zod-inferred config — rather than building ours.
 */

/** Where requests go: the part of a config that names and reaches an endpoint. */
export interface Endpoint {
  /** Base URL of the OpenAI-compatible API, e.g. `http://127.0.0.1:8080/v1`. */
  baseUrl: string;
  /** API key; absent or empty for a keyless local server. */
  apiKey?: string;
  /** Extra HTTP headers sent with every request. */
  headers?: Record<string, string>;
  /** How long to wait for a model to speak; absent or 0 waits for ever. Also the stream's idle allowance. */
  requestTimeoutSeconds?: number;
  /** Allowance for the first chunk (prefill); five times `requestTimeoutSeconds` where absent. */
  firstTokenSeconds?: number;
}

/** What to ask the model for. */
export interface ModelParams {
  /** The model name as the endpoint knows it. */
  model: string;
  /** Sampling temperature; absent leaves it to the server. */
  temperature?: number;
  /** Reply ceiling; absent or 0 sends none. */
  maxTokens?: number;
  /** Reasoning effort (`none` … `high`); absent or `off` sends none. */
  reasoningEffort?: string;
  /** Fields this interface cannot spell (`top_k`, `min_p`, `id_slot`, …), merged into the body last. */
  extraBody?: Record<string, unknown>;
}

/** The loop's own limits. */
export interface ToolPolicy {
  /** How many steps may run tools before the run stops with `ToolIterationLimit` (default 25). */
  maxToolIterations?: number;
  /** Declare tools in name order (default), the caller's order with `false`, or by a comparator. */
  toolOrder?: boolean | ((a: string, b: string) => number);
}

/** Everything `runAgentLoop` reads off `config`. */
export type LoopConfig = Endpoint & ModelParams & ToolPolicy;

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

/** A tool as a request declares it (OpenAI function-tool shape). */
export interface ToolDefinition {
  type: "function";
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

/** Default for `maxToolIterations`. */
export const DEFAULT_MAX_TOOL_ITERATIONS = 25;
