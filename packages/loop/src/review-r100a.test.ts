// r100a: a run's final metrics put the largest prompt against the window of the model its turn went
// to, not config.contextLength whatever model a step's plan named. Over HTTP against the testkit.
import { countTokens, renderPrompt, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime } from "./index.js";
import { compactingConfig, llamaOverflow, oldThings } from "./test-support/llama-overflow.js";

/** "small" is served with a 300-token window (llama.cpp's -c), under a contextLength of 4,000. */
const SMALL = 300;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A server whose "small" refuses a prompt past its window, and answers any other request reporting `prompt` tokens. */
async function serving(prompt: number): Promise<TestServer> {
  return startServer({
    replies: (request) => {
      const body = request.body as { model?: string; stream?: boolean };
      if (body.stream !== true) return { content: "Summary: the user asked about old things." };
      const tokens = countTokens(renderPrompt(body as never));
      if (body.model === "small" && tokens >= SMALL) return llamaOverflow(tokens, SMALL);
      return { content: "Old things are old.", usage: { prompt_tokens: prompt, completion_tokens: 5 } };
    },
  });
}

describe("a run's largest prompt", () => {
  it("is a share of the window of the model its step went to, where a refusal named that model's window", async () => {
    server = await serving(250);
    const result = await createRuntime().runAgentLoop({
      config: compactingConfig(server.baseUrl),
      messages: oldThings("What are old things?"),
      beforeStep: () => ({ model: "small" }),
    });
    expect(result.stopReason).toBe("answered");
    // Before: 250 / 4,000 (contextLength) = 0.0625, for a model whose 300-token window was 83% full.
    expect(result.metrics.largestPrompt?.tokens).toBe(250);
    expect(result.metrics.largestPrompt?.share).toBeCloseTo(250 / SMALL, 6);
  });

  it("is a share of contextLength for the run's own model, and for a planned model no refusal named a window of", async () => {
    for (const model of [undefined, "other"]) {
      server = await serving(1000);
      const result = await createRuntime().runAgentLoop({
        config: compactingConfig(server.baseUrl),
        messages: [{ role: "user", content: "What are old things?" }],
        beforeStep: () => (model ? { model } : undefined),
      });
      expect(result.metrics.largestPrompt, String(model)).toMatchObject({ tokens: 1000, share: 0.25 });
      await server.close();
      server = undefined;
    }
  });
});
