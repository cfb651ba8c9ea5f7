import { describe, expect, it } from "vitest";
import { streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";

// Review r84, over real HTTP to the testkit.

const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices, ...extra })}\n\n`;
const sse = { "content-type": "text/event-stream" };

/** The turn a stream answering "Hi" reads when it sends the usage objects `usages`, one a chunk. */
async function turnWith(...usages: unknown[]) {
  const { client } = await harness([
    {
      type: "raw",
      headers: sse,
      chunks: [
        chunk([{ index: 0, delta: { role: "assistant", content: "Hi" } }]),
        ...usages.map((usage) => chunk([], { usage })),
        chunk([{ index: 0, delta: {}, finish_reason: "stop" }]),
        "data: [DONE]\n\n",
      ],
    },
  ]);
  return streamTurn(client, body());
}

// R84-2: the turn keeps each count from the last usage object that reports it (README), but an
// earlier chat-spelling count was read before a later Responses-spelling one: a relay that sends
// `{prompt_tokens: 100, …}` early and the turn's final `{input_tokens: 120, …}` at the end read 100.
describe("R84-2: the later report of a count wins whichever spelling it is in", () => {
  it("reads the later Responses-spelling counts over earlier chat ones", async () => {
    const turn = await turnWith(
      {
        prompt_tokens: 100,
        completion_tokens: 1,
        prompt_tokens_details: { cached_tokens: 10 },
        completion_tokens_details: { reasoning_tokens: 1 },
      },
      {
        input_tokens: 120,
        output_tokens: 30,
        input_tokens_details: { cached_tokens: 90 },
        output_tokens_details: { reasoning_tokens: 12 },
      },
    );
    expect(turn.usage).toEqual({
      prompt: 120,
      completion: 30,
      total: 150,
      cached: 90,
      uncached: 30,
      reasoningTokens: 12,
    });
  });

  it("reads the later chat-spelling counts over earlier Responses ones, and a later DeepSeek cache count", async () => {
    const turn = await turnWith(
      { input_tokens: 100, output_tokens: 1, input_tokens_details: { cached_tokens: 10 } },
      { prompt_tokens: 120, completion_tokens: 30, prompt_tokens_details: { cached_tokens: 90 } },
    );
    expect(turn.usage).toEqual({ prompt: 120, completion: 30, total: 150, cached: 90, uncached: 30 });
    const deepSeek = await turnWith(
      { prompt_tokens: 100, prompt_tokens_details: { cached_tokens: 10 }, prompt_cache_miss_tokens: 90 },
      { prompt_tokens: 120, completion_tokens: 30, prompt_cache_hit_tokens: 100 },
    );
    expect(deepSeek.usage).toEqual({ prompt: 120, completion: 30, total: 150, cached: 100, uncached: 20 });
  });

  it("keeps an earlier count that a later object sends as none, in either spelling", async () => {
    const turn = await turnWith(
      { prompt_tokens: 100, completion_tokens: 5 },
      { input_tokens: -1, output_tokens: 30 },
    );
    expect(turn.usage).toEqual({ prompt: 100, completion: 30, total: 130, cached: 0 });
  });
});
