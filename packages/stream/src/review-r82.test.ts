import { describe, expect, it } from "vitest";
import { streamTurn } from "./stream-turn.js";
import { body, chunk, harness, sse } from "./test-support/http.js";

// Review r82: the usage values a stream discarded, over real HTTP to the testkit.

/** The turn a stream answering "Hi" reads when its usage objects are `usages`, one chunk each. */
async function turnWith(...usages: unknown[]) {
  const { client } = await harness([
    {
      type: "raw",
      headers: sse,
      chunks: [
        chunk([{ index: 0, delta: { role: "assistant", content: "Hi" } }]),
        chunk([{ index: 0, delta: {}, finish_reason: "stop" }]),
        ...usages.map((usage) => chunk([], { usage })),
        "data: [DONE]\n\n",
      ],
    },
  ]);
  return streamTurn(client, body());
}

describe("R82-1: a usage count no token count can be is named on the turn, with the value as sent", () => {
  it("a negative, a string, 1e308 and a details field that is no object read as none, each named", async () => {
    const turn = await turnWith({
      prompt_tokens: -5,
      completion_tokens: "12",
      total_tokens: 1e308,
      prompt_tokens_details: { cached_tokens: -1 },
      completion_tokens_details: 7,
    });
    expect(turn.usage).toEqual({ prompt: 0, completion: 0, total: 0, cached: 0 });
    expect(turn.discardedUsage).toEqual([
      { field: "prompt_tokens", sent: "-5" },
      { field: "completion_tokens", sent: '"12"' },
      { field: "total_tokens", sent: "1e+308" },
      { field: "prompt_tokens_details.cached_tokens", sent: "-1" },
      { field: "completion_tokens_details", sent: "7" },
    ]);
  });

  it("names only what the turn has no count for: one sent before or after in another object is kept", async () => {
    const turn = await turnWith(
      { prompt_tokens: 100, completion_tokens: -1 },
      { prompt_tokens: -5, completion_tokens: 3, reasoning_tokens: -2 },
    );
    expect(turn.usage).toEqual({ prompt: 100, completion: 3, total: 103, cached: 0 });
    expect(turn.discardedUsage).toEqual([{ field: "reasoning_tokens", sent: "-2" }]);
  });

  it("the last value a field was sent is the one named; null is a count left out, not discarded", async () => {
    const turn = await turnWith({ prompt_tokens: -5 }, { prompt_tokens: -7, completion_tokens: null });
    expect(turn.discardedUsage).toEqual([{ field: "prompt_tokens", sent: "-7" }]);
  });

  it("a long value is cut to 40 characters and '…', never inside a character", async () => {
    const turn = await turnWith({
      prompt_tokens: `${"9".repeat(38)}😀${"9".repeat(1_000_000)}`,
      completion_tokens: 2,
    });
    const [discarded] = turn.discardedUsage ?? [];
    expect(discarded?.field).toBe("prompt_tokens");
    expect(discarded?.sent).toBe(`"${"9".repeat(38)}…`);
    expect(discarded?.sent.isWellFormed()).toBe(true);
    expect(turn.usage.completion).toBe(2);
  });

  it("a well-formed usage leaves the field out", async () => {
    const turn = await turnWith({ prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 });
    expect(turn).not.toHaveProperty("discardedUsage");
    expect(turn.usage).toEqual({ prompt: 10, completion: 2, total: 12, cached: 0 });
  });
});
