import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AssistantToolCall } from "./config.js";
import { DEFAULT_TOOL_TIMEOUT_MS, runCalls } from "./run-calls.js";
import { createRuntime } from "./runtime.js";
import { ADD_TOOL, QUESTION } from "./test-support/transcript.js";

const call = (id: string, name: string, args: string): AssistantToolCall => ({
  id,
  type: "function",
  function: { name, arguments: args },
});

let server: TestServer | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await server?.close();
  server = undefined;
});

describe("a tool that never finishes", () => {
  it("is stopped at the default allowance when none is given, and answered so the run can go on", async () => {
    vi.useFakeTimers();
    let seen: AbortSignal | undefined;
    const ran = runCalls([call("a", "hang", "{}")], {
      dispatch: (_request, signal) => {
        seen = signal;
        return new Promise(() => undefined);
      },
    });
    await vi.advanceTimersByTimeAsync(DEFAULT_TOOL_TIMEOUT_MS - 1000);
    expect(seen?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(2000);
    const result = await ran;
    expect(DEFAULT_TOOL_TIMEOUT_MS).toBe(300_000);
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toMatchObject({ name: "TimeoutError" });
    expect(result.results).toEqual([
      { role: "tool", tool_call_id: "a", content: expect.stringMatching(/did not finish within 300 s/) },
    ]);
    expect(result.stopped).toBeUndefined();
  });

  it("with toolTimeoutSeconds, is answered with the timeout and the run reaches the model's answer", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ name: "add", arguments: '{"a": 2, "b": 3}' }] },
        { content: "The tool timed out." },
      ],
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m", toolTimeoutSeconds: 0.3 },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => new Promise(() => undefined),
    });
    // No clock: the tool never settles, so a run that did not time it out would end only at vitest's
    // test timeout; the answer below names the 0.3 s.
    expect(result.turn.content).toBe("The tool timed out.");
    const tool = server.chatRequests[1]?.body as { messages: Array<{ role: string; content: string }> };
    expect(tool.messages.find((m) => m.role === "tool")?.content).toMatch(/did not finish within 0\.3 s/);
  });

  it("runs for ever only where toolTimeoutSeconds is written as 0", async () => {
    vi.useFakeTimers();
    let seen: AbortSignal | undefined;
    let settled = false;
    void runCalls([call("a", "hang", "{}")], {
      timeoutMs: 0,
      dispatch: (_request, signal) => {
        seen = signal;
        return new Promise(() => undefined);
      },
    }).then(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(DEFAULT_TOOL_TIMEOUT_MS * 10);
    expect(settled).toBe(false);
    expect(seen).toBeUndefined();
  });
});
