/**
 * Why the model stopped, as the server said it in `finish_reason`.
 *
 * The named values are the ones OpenAI-compatible servers send; other servers' spellings of the
 * same reasons (TGI's `eos_token`, Anthropic's `end_turn` / `max_tokens`, Gemini's `MAX_TOKENS`, …)
 * are read as these, and any other string is kept as sent. `FinishReason.Unknown` (`""`) means the
 * server never said.
 */
export const FinishReason = {
  /** The model finished on its own. */
  Stop: "stop",
  /** Cut off at the token ceiling: prose may be truncated and a tool call's arguments may stop mid-JSON. */
  Length: "length",
  /** The model asked for tool calls. */
  ToolCalls: "tool_calls",
  /** The server's content filter stopped the reply. */
  ContentFilter: "content_filter",
  /** The legacy single function call. */
  FunctionCall: "function_call",
  /** The stream ended without a finish reason. */
  Unknown: "",
} as const;

/** A `finish_reason` value: one of {@link FinishReason}'s, or whatever other string a server sent. */
export type FinishReason = (typeof FinishReason)[keyof typeof FinishReason] | (string & {});

/**
 * One tool call as it goes back into a transcript on the assistant message.
 *
 * `arguments` is the text the model wrote, unparsed (it may be cut off or almost-JSON; see
 * `@loopwright/tool-calls`). `id` is unique among a turn's calls: `call_<position>` where the
 * server gave none (`streamTurn`'s `idPrefix` in place of `call_`, given one), and `<id>_<position>`
 * on a later call the server gave an earlier call's id.
 */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/**
 * Token counts of one turn.
 *
 * `prompt`, `completion`, `total` and `cached` are always present and zero where the server sent
 * nothing. `uncached` is present only where the server reported a cache count (so a cold cache and
 * no report read differently), and `reasoningTokens` only where it reported
 * `reasoning_tokens` — absent, never zero, when unmeasured; never estimated from the thinking text.
 */
export interface TurnUsage {
  prompt: number;
  completion: number;
  total: number;
  cached: number;
  uncached?: number;
  reasoningTokens?: number;
}

/**
 * A count in a server's usage object that no token count can be — a negative, a string, a number
 * past 2^53 − 1 — and that the turn therefore read none from. `field` is where it was sent
 * (`prompt_tokens`, `prompt_tokens_details.cached_tokens`, or `prompt_tokens_details` for a details
 * field that is no object) and `sent` the value as the server wrote it, as JSON text cut to 40
 * characters and `…`.
 */
export interface DiscardedCount {
  field: string;
  sent: string;
}

/**
 * Where a turn's time went, as the server measured it (llama.cpp's `timings`): milliseconds spent
 * reading the prompt and generating the reply, and speculative decoding's drafted and accepted
 * tokens. Each field is present only where the server reported it.
 */
export interface TurnTimings {
  prefillMs?: number;
  decodeMs?: number;
  draftTokens?: number;
  draftAccepted?: number;
}

/**
 * One streamed turn read back: answer, tool calls, token counts, why it stopped, and the scratchpad.
 *
 * `finishReason` is `"length"` when the reply was cut off at the token ceiling and `""` when the
 * server never said. `reasoning` is everything `onThinking` was told: the server's reasoning
 * fields and text found inside a fence in the content, and `reasoningField` the field it came in.
 * `timings` is present only where the server
 * measured them (llama.cpp); it never changes `usage`.
 */
export interface Turn {
  content: string;
  toolCalls: ToolCall[];
  usage: TurnUsage;
  finishReason: FinishReason;
  reasoning: string;
  /**
   * The delta field the server streamed the scratchpad in (`reasoning_content`: DeepSeek, llama.cpp,
   * vLLM; `reasoning`: Ollama, OpenRouter, newer vLLM) — the one to send it back in. Absent where
   * none carried it (no scratchpad, or one read from a fence or content parts).
   */
  reasoningField?: "reasoning_content" | "reasoning";
  /**
   * Present (`true`) when a closing marker arrived with no opening one: the chat template opened the
   * scratchpad in the prompt and the reply began inside it (said up front with `startInReasoning`
   * or not), so everything before the marker is in `reasoning` and `content` is only what followed.
   * A caller that sent an answer so far as a prefill (a continuation) reads it to move that answer
   * to reasoning too. Absent otherwise.
   */
  scratchpadClosed?: true;
  /**
   * The content as the model wrote it, scratchpad markers and all: present only where the fences
   * took text out of it, so `content` differs. A call the model wrote into its text is read from
   * this (a `<think>` inside the call's string argument is that argument's text, which the fences
   * would have moved into `reasoning`).
   */
  rawContent?: string;
  timings?: TurnTimings;
  /**
   * The usage counts the server sent that no token count can be, which `usage` reads as none (zero,
   * or the other spelling's count where one was sent), each with its value as sent. Present only
   * where there is one; a field another usage object of the stream gave a count is not named.
   */
  discardedUsage?: DiscardedCount[];
}

/**
 * Spellings of a finish reason other servers use, mapped onto OpenAI's (keys lower-case).
 *
 * TGI says `eos_token` / `stop_sequence`; Anthropic's vocabulary (`end_turn`, `tool_use`,
 * `max_tokens`, `model_context_window_exceeded`), Gemini's (`STOP`, `MAX_TOKENS`, `SAFETY`,
 * `RECITATION`, …) and Bedrock's (`guardrail_intervened`, `content_filtered`) leak through
 * relays and proxies that pass the upstream value on; Zhipu GLM says `sensitive` for its content
 * filter and `model_context_window_exceeded` for a reply cut off at the window.
 */
const FINISH_SYNONYMS: ReadonlyMap<string, FinishReason> = new Map<string, FinishReason>([
  ["stop", "stop"],
  ["eos", "stop"],
  ["eos_token", "stop"],
  ["end_turn", "stop"],
  ["stop_sequence", "stop"],
  ["length", "length"],
  ["max_tokens", "length"],
  ["model_context_window_exceeded", "length"],
  ["tool_calls", "tool_calls"],
  ["tool_use", "tool_calls"],
  ["function_call", "function_call"],
  ["content_filter", "content_filter"],
  ["content_filtered", "content_filter"],
  ["guardrail_intervened", "content_filter"],
  ["safety", "content_filter"],
  ["recitation", "content_filter"],
  ["blocklist", "content_filter"],
  ["prohibited_content", "content_filter"],
  ["spii", "content_filter"],
  ["sensitive", "content_filter"],
]);

/**
 * A server's `finish_reason` in OpenAI's vocabulary: known spellings of the same reason (any case)
 * become the named {@link FinishReason} value, anything else is kept as sent.
 */
export function normalizeFinishReason(raw: string): FinishReason {
  return FINISH_SYNONYMS.get(raw.toLowerCase()) ?? raw;
}
