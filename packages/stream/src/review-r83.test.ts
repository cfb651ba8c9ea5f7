import { describe, expect, it } from "vitest";
import { streamTurn } from "./stream-turn.js";
import { body, chunk, harness, sse } from "./test-support/http.js";
import { readUsage } from "./usage.js";

// Review r83, over real HTTP to the testkit.

/** The turn a stream answering "Hi" reads when its usage object is `usage`. */
async function turnWith(usage: unknown) {
  const { client } = await harness([
    {
      type: "raw",
      headers: sse,
      chunks: [
        chunk([{ index: 0, delta: { role: "assistant", content: "Hi" } }]),
        chunk([{ index: 0, delta: {}, finish_reason: "stop" }], { usage }),
        "data: [DONE]\n\n",
      ],
    },
  ]);
  return streamTurn(client, body());
}

// R83-2: readUsage took `prompt_tokens_details ?? input_tokens_details` (and the completion's the
// same way): a relay passing both spellings with a bad count in the chat one (negative, a string,
// a details field that is no object) read the cache as 0 beside a good `input_tokens_details`
// count — the prompt read as all uncached.
describe("R83-2: a good details count in either spelling wins over a bad one in the other", () => {
  it("reads the cache and reasoning counts from the spelling that holds a count, naming the bad one", async () => {
    for (const bad of [{ cached_tokens: -3 }, { cached_tokens: "40" }, "40"]) {
      const turn = await turnWith({
        prompt_tokens: 100,
        completion_tokens: 20,
        prompt_tokens_details: bad,
        input_tokens_details: { cached_tokens: 40 },
        completion_tokens_details: { reasoning_tokens: -1 },
        output_tokens_details: { reasoning_tokens: 8 },
      });
      expect(turn.usage, JSON.stringify(bad)).toEqual({
        prompt: 100,
        completion: 20,
        total: 120,
        cached: 40,
        uncached: 60,
        reasoningTokens: 8,
      });
      expect(
        turn.discardedUsage?.map((d) => d.field),
        JSON.stringify(bad),
      ).toEqual([
        typeof bad === "string" ? "prompt_tokens_details" : "prompt_tokens_details.cached_tokens",
        "completion_tokens_details.reasoning_tokens",
      ]);
    }
  });

  it("keeps the chat spelling first where both hold a count, and readUsage reads the same", async () => {
    const usage = {
      prompt_tokens: 100,
      completion_tokens: 20,
      prompt_tokens_details: { cached_tokens: 30 },
      input_tokens_details: { cached_tokens: 40 },
    };
    const turn = await turnWith(usage);
    expect(turn.usage.cached).toBe(30);
    expect(turn).not.toHaveProperty("discardedUsage");
    expect(readUsage({ ...usage, prompt_tokens_details: { cached_tokens: -1 } }).cached).toBe(40);
  });
});
