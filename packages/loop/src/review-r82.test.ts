import type { RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime } from "./index.js";
import { answerWithUsage, question, runWithUsage as runUsage } from "./test-support/usage-answer.js";

// Review r82: the usage counts a stream discarded reach the host as a notice.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const runWithUsage = (usage: object) =>
  runUsage(usage, (started) => {
    server = started;
  });

describe("R82-1: a usage count the stream read as none is told as a notice, with the value sent", () => {
  it("a negative prompt count: the run's prompt is 0 and the notice names prompt_tokens -5", async () => {
    const { result, notices } = await runWithUsage({
      prompt_tokens: -5,
      completion_tokens: 5,
      total_tokens: 5,
    });
    expect(result.usage).toEqual({ prompt: 0, completion: 5, total: 5, cached: 0 });
    expect(result.turn.discardedUsage).toEqual([{ field: "prompt_tokens", sent: "-5" }]);
    expect(notices).toEqual([
      "The server's token usage for this turn was not one it can be: a count no token count can be (prompt_tokens -5) was read as none.",
    ]);
  });

  it("several, beside the loop's own correction, in one notice", async () => {
    const { result, notices } = await runWithUsage({
      prompt_tokens: "120",
      completion_tokens: 5,
      total_tokens: 1e308,
      prompt_tokens_details: { cached_tokens: 40 },
    });
    expect(result.usage).toEqual({ prompt: 0, completion: 5, total: 5, cached: 0 });
    expect(notices).toEqual([
      'The server\'s token usage for this turn was not one it can be: its cached count (40) is more than the prompt it is part of (0), so it was cut to it; counts no token count can be (prompt_tokens "120", total_tokens 1e+308) were read as none.',
    ]);
  });

  it("a well-formed usage tells nothing", async () => {
    const { notices } = await runWithUsage({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
    expect(notices).toEqual([]);
  });

  it("a continued turn keeps what each piece's usage discarded, each told when its piece came back", async () => {
    server = await startServer({
      replies: [
        answerWithUsage({ prompt_tokens: -5, completion_tokens: 5 }, "The answer is", "length"),
        answerWithUsage({ prompt_tokens: 16, completion_tokens: "3" }, " forty-two."),
      ],
    });
    const notices: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxTokens: 5, maxContinuations: 1 },
      messages: question,
      dispatch: () => "",
      onEvent: (event: RunEvent) => {
        if (event.kind === "notice") notices.push(event.text);
      },
    });
    expect(result.turn.content).toBe("The answer is forty-two.");
    expect(result.turn.discardedUsage).toEqual([
      { field: "prompt_tokens", sent: "-5" },
      { field: "completion_tokens", sent: '"3"' },
    ]);
    expect(notices.filter((n) => n.includes("no token count can be"))).toHaveLength(2);
  });
});
