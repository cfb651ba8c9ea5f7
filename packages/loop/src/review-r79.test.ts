import type { RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { createRuntime } from "./index.js";

// Review round r79: what the loop takes from a server's usage, tool-call ids across messages, the
// summary request's usage, and the window it learnt.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const question: ChatMessage[] = [{ role: "user", content: "Hello?" }];

/** A streamed answer "hi" whose last chunk carries `usage` as the server wrote it. */
function answerWithUsage(usage: object): { type: "raw"; chunks: string[] } {
  const chunk = (body: object) =>
    `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", ...body })}\n\n`;
  return {
    type: "raw",
    chunks: [
      chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "hi" }, finish_reason: null }] }),
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }),
      chunk({ choices: [], usage }),
      "data: [DONE]\n\n",
    ],
  };
}

/** One run answered with `usage`: its result and the notices it told. */
async function runWithUsage(usage: object) {
  server = await startServer({ replies: [answerWithUsage(usage)] });
  const notices: string[] = [];
  const result = await createRuntime().runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", contextLength: 8000 },
    messages: question,
    dispatch: () => "",
    onEvent: (event: RunEvent) => {
      if (event.kind === "notice") notices.push(event.text);
    },
  });
  return { result, notices };
}

describe("a server's usage no token counts can be", () => {
  it("a cached count above the prompt is cut to it, with a notice: the cache hit ratio is at most 1", async () => {
    const { result, notices } = await runWithUsage({
      prompt_tokens: 100,
      completion_tokens: 5,
      total_tokens: 105,
      prompt_tokens_details: { cached_tokens: 500 },
    });
    expect(result.usage).toEqual({ prompt: 100, completion: 5, total: 105, cached: 100 });
    expect(result.metrics.cacheHitRatio).toBe(1);
    expect(notices).toEqual([
      "The server's token usage for this turn was not one it can be: its cached count (500) is more than the prompt it is part of (100), so it was cut to it.",
    ]);
  });

  it("fractional counts are rounded, with a notice, before the ledger and the metrics read them", async () => {
    const { result, notices } = await runWithUsage({
      prompt_tokens: 100.7,
      completion_tokens: 5.2,
      total_tokens: 105.9,
    });
    expect(result.usage).toEqual({ prompt: 101, completion: 5, total: 106, cached: 0 });
    expect(result.ledger).toEqual([{ through: 0, prompt: 101, epoch: 0 }]);
    expect(result.metrics.largestPrompt?.tokens).toBe(101);
    expect(notices).toEqual([
      "The server's token usage for this turn was not one it can be: counts that are not whole numbers (prompt 100.7, completion 5.2, total 105.9) were rounded.",
    ]);
  });

  it("a total below the prompt and completion is taken as their sum, with a notice", async () => {
    const { result, notices } = await runWithUsage({
      prompt_tokens: 100,
      completion_tokens: 5,
      total_tokens: 3,
    });
    expect(result.usage.total).toBe(105);
    expect(result.metrics.tokens.total).toBe(105);
    expect(notices).toHaveLength(1);
  });

  it("a well-formed usage is taken as it is, no notice", async () => {
    const { result, notices } = await runWithUsage({
      prompt_tokens: 100,
      completion_tokens: 5,
      total_tokens: 105,
      prompt_tokens_details: { cached_tokens: 64 },
    });
    expect(result.usage).toEqual({ prompt: 100, completion: 5, total: 105, cached: 64 });
    expect(notices).toEqual([]);
  });
});
