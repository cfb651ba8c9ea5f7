/**
 * The shapes of a streamed chat-completion chunk that this package reads, declared structurally so
 * that the openai SDK's `ChatCompletionChunk` (and any server's extra fields) fit them.
 */

/**
 * One part of a content array: Mistral's `text` and `thinking` parts, and the `output_text` /
 * `reasoning` parts some relays pass through.
 */
export interface ContentPartLike {
  type?: string | undefined;
  text?: string | null | undefined;
  thinking?: string | readonly ContentPartLike[] | null | undefined;
  reasoning?: string | null | undefined;
}

/** One piece of a tool call in a streamed delta; every field may be missing from any piece. */
export interface ToolCallDeltaLike {
  /** A number on the wire; a string of digits (`"1"`) some servers send is read as that number. */
  index?: number | string | null | undefined;
  id?: string | null | undefined;
  type?: string | null | undefined;
  /** `arguments` is a string on the wire; older TGI and some relays send a JSON object. */
  function?:
    | { name?: string | null | undefined; arguments?: string | Record<string, unknown> | null | undefined }
    | null
    | undefined;
}

/** One entry of OpenRouter-style `reasoning_details`. */
export interface ReasoningDetailLike {
  type?: string | undefined;
  text?: string | null | undefined;
  summary?: string | null | undefined;
}

/** The `delta` of a streamed choice, with every field servers use for text, reasoning and calls. */
export interface DeltaLike {
  content?: string | readonly ContentPartLike[] | ContentPartLike | null | undefined;
  /** OpenAI's refusal text (structured outputs): the model's answer, read as content. */
  refusal?: string | null | undefined;
  reasoning_content?: string | null | undefined;
  reasoning?:
    | string
    | {
        text?: string | null | undefined;
        content?: string | null | undefined;
        summary?: string | null | undefined;
      }
    | null
    | undefined;
  reasoning_details?: readonly ReasoningDetailLike[] | null | undefined;
  /** An array on the wire; older TGI sent one call as a bare object. */
  tool_calls?: readonly ToolCallDeltaLike[] | ToolCallDeltaLike | null | undefined;
  /** The legacy single function call (`functions` / `function_call` requests). */
  function_call?:
    | { name?: string | null | undefined; arguments?: string | Record<string, unknown> | null | undefined }
    | null
    | undefined;
}

/** One streamed choice. Only choice 0 (or one without an index) is read; `"1"` is choice 1. */
export interface ChoiceLike {
  index?: number | string | null | undefined;
  delta?: DeltaLike | null | undefined;
  /** A whole message some servers put in a stream event instead of a `delta` (read as one). */
  message?: DeltaLike | null | undefined;
  finish_reason?: string | null | undefined;
  /** Usage some servers put on the choice rather than the chunk. */
  usage?: UsageLike | null | undefined;
  /** An error on the choice (OpenRouter's, beside `finish_reason: "error"`): read as the server's error. */
  error?: unknown | undefined;
}

/**
 * Token counts as servers report them, OpenAI's shape and the variants other servers use.
 *
 * DeepSeek's `prompt_cache_hit_tokens`/`prompt_cache_miss_tokens`, and a top-level `cached_tokens`
 * or `reasoning_tokens` some servers send instead of the details objects.
 */
export interface UsageLike {
  prompt_tokens?: number | null | undefined;
  completion_tokens?: number | null | undefined;
  total_tokens?: number | null | undefined;
  prompt_tokens_details?: { cached_tokens?: number | null | undefined } | null | undefined;
  completion_tokens_details?: { reasoning_tokens?: number | null | undefined } | null | undefined;
  prompt_cache_hit_tokens?: number | null | undefined;
  prompt_cache_miss_tokens?: number | null | undefined;
  cached_tokens?: number | null | undefined;
  reasoning_tokens?: number | null | undefined;
  /** The Responses-API spelling some relays pass through. */
  input_tokens?: number | null | undefined;
  output_tokens?: number | null | undefined;
  input_tokens_details?: { cached_tokens?: number | null | undefined } | null | undefined;
  output_tokens_details?: { reasoning_tokens?: number | null | undefined } | null | undefined;
}

/** llama.cpp's per-chunk `timings` (cumulative for the request so far). */
export interface TimingsLike {
  prompt_n?: number | null | undefined;
  prompt_ms?: number | null | undefined;
  predicted_n?: number | null | undefined;
  predicted_ms?: number | null | undefined;
  cache_n?: number | null | undefined;
  draft_n?: number | null | undefined;
  draft_n_accepted?: number | null | undefined;
}

/**
 * One chunk of a streamed chat completion, as far as this package reads it.
 *
 * `object`, `message`, `type`, `code` and `error` are read only to recognise an error the server
 * sent in the stream in a shape the SDK passed on as a chunk (vLLM's bare `{"object":"error",…}`,
 * an `event: error` whose data has no `error` member).
 */
export interface ChunkLike {
  choices?: readonly ChoiceLike[] | null | undefined;
  usage?: UsageLike | null | undefined;
  timings?: TimingsLike | null | undefined;
  x_groq?: { usage?: UsageLike | null | undefined } | null | undefined;
  object?: string | null | undefined;
  message?: unknown | undefined;
  type?: unknown | undefined;
  code?: unknown | undefined;
  error?: unknown | undefined;
}
