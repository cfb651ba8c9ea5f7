import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { failedRun, LoopOptionError } from "./errors.js";
import { createRuntime } from "./index.js";
import { ADD_TOOL } from "./test-support/transcript.js";

const call = (id: string) => ({ id, type: "function" as const, function: { name: "add", arguments: "{}" } });

/** Runs one loop against a loopback server answering "done"; the error it throws, or the chat bodies sent. */
async function attempt(options: Record<string, unknown>) {
  const server = await startServer({ replies: [{ content: "done" }, { content: "done" }] });
  try {
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "m" },
        tools: [ADD_TOOL],
        dispatch: () => "5",
        ...options,
      } as never)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    return { error, sent: server.chatRequests.length };
  } finally {
    await server.close();
  }
}

describe("r74: two calls of one assistant message with one id", () => {
  // An endpoint refuses it (Anthropic behind OpenRouter: tool_use ids must be unique), and the one
  // tool message answering "x" cannot be told to be either call's answer.
  const shared: ChatMessage[] = [
    { role: "user", content: "Add twice." },
    { role: "assistant", content: null, tool_calls: [call("x"), call("x")] },
    { role: "tool", tool_call_id: "x", content: "5" },
    { role: "user", content: "And now?" },
  ];

  it("in the messages given is refused before anything is sent, naming the index and the id", async () => {
    const { error, sent } = await attempt({ messages: shared });
    expect(sent).toBe(0);
    const cause = (error as Error).cause;
    expect(LoopOptionError.isInstance(cause)).toBe(true);
    expect((cause as LoopOptionError).option).toBe("messages");
    expect((cause as Error).message).toContain('messages[1] holds two tool calls with the id "x"');
    expect(failedRun(error)?.messages).toEqual(shared);
  });

  it("left unanswered in the messages given is refused too, not answered once for both", async () => {
    const { error, sent } = await attempt({ messages: shared.filter((m) => m.role !== "tool") });
    expect(sent).toBe(0);
    expect(((error as Error).cause as Error).message).toContain(
      'messages[1] holds two tool calls with the id "x"',
    );
  });

  it("in a transcript beforeStep returns is refused before the step's request", async () => {
    const { error, sent } = await attempt({
      messages: [{ role: "user", content: "Add twice." }],
      beforeStep: (messages: readonly ChatMessage[]) => [...messages, ...shared.slice(1)],
    });
    expect(sent).toBe(0);
    expect((error as Error).message).toContain("two of whose tool calls share an id (x)");
  });
});
