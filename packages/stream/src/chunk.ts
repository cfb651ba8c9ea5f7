/**
 * The shapes of a streamed chat-completion chunk that this package reads, declared structurally so
 * that the openai SDK's `ChatCompletionChunk` (and any server's extra fields) fit them.
 */

/**
 * One part of a content array: Mistral's `text` and `thinking` parts, and the `output_text` /
 * `reasoning` parts some relays pass through.
 */
export interface ContentPartLike {
  type?: string;
  text?: string | null;
  thinking?: string | readonly ContentPartLike[] | null;
  reasoning?: string | null;
}

/** One piece of a tool call in a streamed delta; every field may be missing from any piece. */
export interface ToolCallDeltaLike {
  index?: number | null;
  id?: string | null;
  type?: string | null;
  /** `arguments` is a string on the wire; older TGI and some relays send a JSON object. */
  function?: { name?: string | null; arguments?: string | Record<string, unknown> | null } | null;
}

/** One entry of OpenRouter-style `reasoning_details`. */
export interface ReasoningDetailLike {
  type?: string;
  text?: string | null;
  summary?: string | null;
}

/** The `delta` of a streamed choice, with every field servers use for text, reasoning and calls. */
export interface DeltaLike {
  content?: string | readonly ContentPartLike[] | ContentPartLike | null;
  /** OpenAI's refusal text (structured outputs): the model's answer, read as content. */
  refusal?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | { text?: string | null; content?: string | null; summary?: string | null } | null;
  reasoning_details?: readonly ReasoningDetailLike[] | null;
  /** An array on the wire; older TGI sent one call as a bare object. */
  tool_calls?: readonly ToolCallDeltaLike[] | ToolCallDeltaLike | null;
  /** The legacy single function call (`functions` / `function_call` requests). */
  function_call?: { name?: string | null; arguments?: string | Record<string, unknown> | null } | null;
}

/** One streamed choice. Only choice 0 (or one without an index) is read. */
export interface ChoiceLike {
  index?: number | null;
  delta?: DeltaLike | null;
  /** A whole message some servers put in a stream event instead of a `delta` (read as one). */
  message?: DeltaLike | null;
  finish_reason?: string | null;
  /** Usage some servers put on the choice rather than the chunk. */
  usage?: UsageLike | null;
}

/**
 * Token counts as servers report them, OpenAI's shape and the variants other servers use.
 *
 * DeepSeek's `prompt_cache_hit_tokens`/`prompt_cache_miss_tokens`, and a top-level `cached_tokens`
 * or `reasoning_tokens` some servers send instead of the details objects.
 */
export interface UsageLike {
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  total_tokens?: number | null;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
  prompt_cache_hit_tokens?: number | null;
  prompt_cache_miss_tokens?: number | null;
  cached_tokens?: number | null;
  reasoning_tokens?: number | null;
  /** The Responses-API spelling some relays pass through. */
  input_tokens?: number | null;
  output_tokens?: number | null;
  input_tokens_details?: { cached_tokens?: number | null } | null;
  output_tokens_details?: { reasoning_tokens?: number | null } | null;
}

/** llama.cpp's per-chunk `timings` (cumulative for the request so far). */
export interface TimingsLike {
  prompt_n?: number | null;
  prompt_ms?: number | null;
  predicted_n?: number | null;
  predicted_ms?: number | null;
  cache_n?: number | null;
  draft_n?: number | null;
  draft_n_accepted?: number | null;
}

/**
 * One chunk of a streamed chat completion, as far as this package reads it.
 *
 * `object`, `message`, `type`, `code` and `error` are read only to recognise an error the server
 * sent in the stream in a shape the SDK passed on as a chunk (vLLM's bare `{"object":"error",…}`,
 * an `event: error` whose data has no `error` member).
 */
export interface ChunkLike {
  choices?: readonly ChoiceLike[] | null;
  usage?: UsageLike | null;
  timings?: TimingsLike | null;
  x_groq?: { usage?: UsageLike | null } | null;
  object?: string | null;
  message?: unknown;
  type?: unknown;
  code?: unknown;
  error?: unknown;
}
