// llama.cpp's refusal of a prompt over its window (`-c`), as its server words it: the tests that
// have a model served with a smaller window than `contextLength` answer with it (review-r79,
// step-model, review-r99a).
import type { Reply } from "@loopwright/testkit";
import type { ChatMessage } from "../config.js";

/** llama.cpp's 400 for a prompt of `tokens` over a window of `window` tokens, naming both (`n_ctx`). */
export function llamaOverflow(tokens: number, window: number): Reply {
  return {
    type: "error",
    status: 400,
    body: {
      error: {
        code: 400,
        message: `request (${tokens} tokens) exceeds the available context size (${window} tokens), try increasing it`,
        type: "exceed_context_size_error",
        n_prompt_tokens: tokens,
        n_ctx: window,
      },
    },
  };
}

/**
 * A run of "big" under a `contextLength` of 4,000 with compact on (summaries by "summ"), as the
 * tests of a model served with a smaller window set it (step-model, review-r99a).
 */
export function compactingConfig(baseUrl: string) {
  return {
    baseUrl,
    model: "big",
    maxRetries: 0,
    contextLength: 4000,
    compact: true,
    tasks: { compaction: { model: "summ", maxTokens: 64 } },
  };
}

/** A transcript long enough to overflow a 300-token window, ending in `question`. */
export function oldThings(question: string): ChatMessage[] {
  return [
    { role: "user", content: `Question 0: ${"tell me about old things ".repeat(30)}` },
    { role: "assistant", content: "old things ".repeat(60) },
    { role: "user", content: question },
  ];
}
