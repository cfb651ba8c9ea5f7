import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { createRuntime } from "./index.js";

// Review round r80: the cost of keeping tool-call ids distinct across a long transcript.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("tool-call ids reused across many messages", () => {
  it("20,000 steps all calling call_0 are sent with distinct ids in linear time", async () => {
    server = await startServer({ replies: [{ content: "done" }] });
    const steps = 20_000;
    const given: ChatMessage[] = [{ role: "user", content: "q" }];
    for (let i = 0; i < steps; i++) {
      given.push({
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_0", type: "function", function: { name: "t", arguments: "{}" } }],
      });
      given.push({ role: "tool", tool_call_id: "call_0", content: `r${i}` });
    }
    given.push({ role: "user", content: "and now?" });
    const started = performance.now();
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: given,
      tools: [{ type: "function", function: { name: "t", parameters: { type: "object" } } }],
      dispatch: () => "R",
    });
    const ms = performance.now() - started;
    const sent = (server.chatRequests[0]?.body as { messages: ChatMessage[] } | undefined)?.messages ?? [];
    const ids = sent.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : []));
    expect(ids).toHaveLength(steps);
    expect(new Set(ids).size).toBe(steps);
    expect(ids.slice(0, 3)).toEqual(["call_0", "call_0_2", "call_0_3"]);
    // Each answer follows its call under the call's id.
    const answers = sent.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : []));
    expect(answers).toEqual(ids);
    // Each repeat searched the suffixes from _2 up: 10,000 steps took 6.6 s a request (r80a
    // profiled it), 20,000 about four times that. Linear now: well under a second of the run.
    expect(ms).toBeLessThan(8_000);
  }, 60_000);
});
