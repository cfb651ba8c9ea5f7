/**
 * The shapes of a streamed chat-completion chunk that this package reads, declared structurally so
 * that the openai SDK's `ChatCompletionChunk` (and any server's extra fields) fit them.
 */

/** One part of a content array, as Mistral sends them (`text` parts and `thinking` parts). */
export interface ContentPartLike {
  type?: string;
  text?: string | null;
  thinking?: string | readonly ContentPartLike[] | null;
}

/** One piece of a tool call in a streamed delta; every field may be missing from any piece. */
export interface ToolCallDeltaLike {
  index?: number | null;
  id?: string | null;
  type?: string | null;
  function?: { name?: string | null; arguments?: string | null } | null;
}

/** One entry of OpenRouter-style `reasoning_details`. */
export interface ReasoningDetailLike {
  type?: string;
  text?: string | null;
  summary?: string | null;
}

/** The `delta` of a streamed choice, with every field servers use for text, reasoning and calls. */
export interface DeltaLike {
  content?: string | readonly ContentPartLike[] | null;
  reasoning_content?: string | null;
  reasoning?: string | { text?: string | null; content?: string | null; summary?: string | null } | null;
  reasoning_details?: readonly ReasoningDetailLike[] | null;
  tool_calls?: readonly ToolCallDeltaLike[] | null;
}

/** One streamed choice. Only choice 0 (or one without an index) is read. */
export interface ChoiceLike {
  index?: number | null;
  delta?: DeltaLike | null;
  finish_reason?: string | null;
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
}

/** One chunk of a streamed chat completion, as far as this package reads it. */
export interface ChunkLike {
  choices?: readonly ChoiceLike[] | null;
  usage?: UsageLike | null;
  x_groq?: { usage?: UsageLike | null } | null;
}
