// A reply that stopped with finish_reason "length": the notice names the cause the request shows —
// the maxTokens ceiling it carried, or, with none, the server's own limit, and the context window by
// name where contextLength shows it full (then no continuation is spent on it). r53 F2: a real
// llama.cpp with no maxTokens stops with "length" when the window fills, and the notice blamed
// maxTokens.
import type { RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createRuntime } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The notice's words for a reply cut off at the server's own limit (no ceiling in the request). */
const SERVER_LIMIT =
  "The reply was cut off at the server's length limit (no maxTokens was set: the context window is full, " +
  "or the server caps replies by default)";

const cut = (content: string, prompt: number, completion: number) => ({
  content,
  finishReason: "length",
  usage: { prompt_tokens: prompt, completion_tokens: completion, cached_tokens: 0 },
});

async function run(
  replies: NonNullable<Parameters<typeof startServer>[0]>["replies"],
  config: { maxTokens?: number; contextLength?: number; maxContinuations?: number },
) {
  server = await startServer({ replies });
  const events: RunEvent[] = [];
  const result = await createRuntime().runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "tiny", ...config },
    messages: [{ role: "user", content: "word ".repeat(20) }],
    dispatch: () => "",
    onEvent: (e) => events.push(e),
  });
  const notices = events.flatMap((e) => (e.kind === "notice" ? [e.text] : []));
  const bodies = server.chatRequests.map((r) => r.body as Record<string, unknown>);
  return { result, notices, bodies };
}

describe("the notice for a reply cut off with finish_reason length", () => {
  it("names the server's limit, not maxTokens, when the request carried no ceiling", async () => {
    const { result, notices, bodies } = await run([cut("word word", 1020, 4)], {});
    expect(result.turn.finishReason).toBe("length");
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).not.toHaveProperty("max_tokens");
    expect(bodies[0]).not.toHaveProperty("max_completion_tokens");
    expect(notices).toEqual([`${SERVER_LIMIT}.`]);
  });

  it("still names maxTokens when the request carried it", async () => {
    const { notices, bodies } = await run([cut("word word", 30, 8)], { maxTokens: 8 });
    expect(bodies[0]?.max_tokens).toBe(8);
    expect(notices).toEqual(["The reply was cut off at the token ceiling (maxTokens)."]);
  });

  it("names the full window and spends no continuation on it when contextLength shows prompt and reply filled it", async () => {
    const { result, notices, bodies } = await run([cut("word word", 1020, 4), { content: " never sent" }], {
      contextLength: 1024,
      maxContinuations: 1,
    });
    expect(bodies).toHaveLength(1);
    expect(result.turn.content).toBe("word word");
    expect(notices).toEqual([
      "The reply was cut off with the context window full: the prompt and the reply's answer took 1024 of its 1024 " +
        "tokens (contextLength); compact or shorten the transcript, or raise the window. It is not carried " +
        "on: a continuation cannot fit.",
    ]);
  });

  it("carries on a reply whose reasoning filled the window: a continuation sends the answer so far, not the reasoning (r55-3)", async () => {
    const thought = {
      content: "The answer is",
      reasoning: "thinking ".repeat(40),
      finishReason: "length",
      usage: { prompt_tokens: 500, completion_tokens: 524, reasoning_tokens: 520, cached_tokens: 0 },
    };
    const { result, notices, bodies } = await run([thought, { content: " forty-two." }], {
      contextLength: 1024,
      maxContinuations: 1,
    });
    expect(bodies).toHaveLength(2);
    expect(result.turn.content).toBe("The answer is forty-two.");
    expect(notices).toEqual([`${SERVER_LIMIT}; carrying it on.`]);
  });

  it("stops carrying on once a continuation's own usage filled the window (r55-4)", async () => {
    const { result, notices, bodies } = await run(
      [cut("The answer is", 10, 5), cut(" forty", 1015, 9), { content: " never sent" }],
      { contextLength: 1024, maxContinuations: 2 },
    );
    expect(bodies).toHaveLength(2);
    expect(result.turn.content).toBe("The answer is forty");
    expect(notices).toEqual([
      `${SERVER_LIMIT}; carrying it on.`,
      "The continuation filled the context window (its prompt and answer took 1024 of 1024 tokens); the answer " +
        "is not carried on further: another continuation cannot fit.",
      `${SERVER_LIMIT}.`,
    ]);
  });

  it("carries on a reply cut off at the server's limit when the window is not known full, in those words", async () => {
    const { result, notices, bodies } = await run([cut("The answer is", 10, 5), { content: " forty-two." }], {
      contextLength: 1024,
      maxContinuations: 1,
    });
    expect(bodies).toHaveLength(2);
    expect(result.turn.content).toBe("The answer is forty-two.");
    expect(notices).toEqual([`${SERVER_LIMIT}; carrying it on.`]);
  });
});
