import type { RunEvent } from "@loopwright/events";
import { SUMMARISER_SYSTEM } from "@loopwright/side-task";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { createRuntime } from "./index.js";
import { llamaOverflow } from "./test-support/llama-overflow.js";
import { question, runWithUsage as runUsage } from "./test-support/usage-answer.js";

// Review round r79: what the loop takes from a server's usage, tool-call ids across messages, the
// summary request's usage, and the window it learnt.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const runWithUsage = (usage: object) =>
  runUsage(usage, (started) => {
    server = started;
  });

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

const tools = [
  { type: "function" as const, function: { name: "t", parameters: { type: "object", properties: {} } } },
];

/** The tool-call ids each request carried, message by message (assistant: its calls'; tool: the one it answers). */
function sentIds(request: { body: unknown } | undefined): unknown[] {
  const messages = (request?.body as { messages?: ChatMessage[] } | undefined)?.messages ?? [];
  return messages.map((m) =>
    m.role === "assistant"
      ? (m.tool_calls ?? []).map((c) => c.id)
      : m.role === "tool"
        ? m.tool_call_id
        : m.role,
  );
}

describe("tool-call ids across a transcript's messages", () => {
  it("an id a host's transcript uses in two assistant messages goes as a distinct one in the later (and its answer), the same on every request", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "c1", name: "t", arguments: "{}" }] }, { content: "done" }],
    });
    const call = (args: string) => ({
      role: "assistant" as const,
      content: null,
      tool_calls: [{ id: "c1", type: "function" as const, function: { name: "t", arguments: args } }],
    });
    const given: ChatMessage[] = [
      { role: "user", content: "q" },
      call("{}"),
      { role: "tool", tool_call_id: "c1", content: "r1" },
      call('{"x":1}'),
      { role: "tool", tool_call_id: "c1", content: "r2" },
      { role: "assistant", content: "ok" },
      { role: "user", content: "again" },
    ];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: given,
      tools,
      dispatch: () => "R",
    });
    const head = ["user", ["c1"], "c1", ["c1_2"], "c1_2", [], "user"];
    expect(sentIds(server.chatRequests[0])).toEqual(head);
    // The loop's own new call (c1_2 in its transcript, beside the host's c1) is distinct on the wire too.
    expect(sentIds(server.chatRequests[1])).toEqual([...head, ["c1_2_2"], "c1_2_2"]);
    // The transcript is the host's, ids as given.
    expect(result.messages.slice(0, given.length)).toEqual(given);
  });

  it("a 100,000-character id from the server is replaced by a short one, with a notice, not replayed", async () => {
    const long = "x".repeat(100_000);
    server = await startServer({
      replies: [{ toolCalls: [{ id: long, name: "t", arguments: "{}" }] }, { content: "done" }],
    });
    const notices: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools,
      dispatch: () => "R",
      onEvent: (event: RunEvent) => {
        if (event.kind === "notice") notices.push(event.text);
      },
    });
    expect(sentIds(server.chatRequests[1])).toEqual(["user", ["call_long"], "call_long"]);
    expect((server.chatRequests[1]?.raw.length ?? Infinity) < 2_000).toBe(true);
    expect(result.toolCalls.map((c) => c.id)).toEqual(["call_long"]);
    expect(notices).toEqual([
      "The server gave a tool call id longer than 128 characters (100000); it was replaced by a short one (call_long…) in the transcript: kept, it would be sent again with every later request.",
    ]);
  });
});

describe("a window smaller than contextLength that a refusal named (llama.cpp's n_ctx)", () => {
  it("is the run's window from then on: beforeStep's limit says it, so a host that prunes against it finishes", async () => {
    const N_CTX = 1024;
    const seen: string[] = [];
    let step = 0;
    server = await startServer({
      replies: (request) => {
        const messages = (request.body as { messages: ChatMessage[] }).messages;
        if (messages[0]?.content === SUMMARISER_SYSTEM)
          return { content: "Notes: four chapters summarised." };
        const tokens = Math.ceil(request.raw.length / 4);
        if (tokens > N_CTX) {
          seen.push("refused");
          return llamaOverflow(tokens, N_CTX);
        }
        seen.push("answered");
        step++;
        return step <= 3
          ? { toolCalls: [{ id: `p${step}`, name: "read_page", arguments: `{"n":${step}}` }] }
          : { content: "Done." };
      },
    });
    const history: ChatMessage[] = [];
    for (const chapter of ["one", "two", "three", "four"]) {
      history.push(
        { role: "user", content: `Summarise chapter ${chapter}.` },
        { role: "assistant", content: `Chapter ${chapter}: ${"lorem ".repeat(150).trim()}` },
      );
    }
    history.push({ role: "user", content: "Read pages 1 to 3." });
    const limits: unknown[] = [];
    const result = await createRuntime().runAgentLoop({
      config: {
        baseUrl: server.baseUrl,
        model: "sim",
        maxRetries: 0,
        contextLength: 8000,
        compact: true,
        tasks: { compaction: { model: "sim" } },
      },
      messages: history,
      tools: [
        {
          type: "function",
          function: {
            name: "read_page",
            parameters: { type: "object", properties: { n: { type: "number" } } },
          },
        },
      ],
      dispatch: ({ args }) => `page ${args.n}: ${"ipsum ".repeat(250).trim()}`,
      // A host that clears older tool results once the last request took half the window.
      beforeStep: (messages, _step, { used, limit }) => {
        limits.push(limit);
        if (used === undefined || limit === undefined || used < limit / 2) return undefined;
        const last = messages.findLastIndex((m) => m.role === "tool");
        return messages.map((m, at) =>
          m.role === "tool" && at !== last ? { ...m, content: "(cleared)" } : m,
        );
      },
    });
    expect(result.turn.content).toBe("Done.");
    expect(limits).toEqual([8000, N_CTX, N_CTX, N_CTX]);
    // One refusal, the first request's (folded for and sent again); none after the window was known.
    expect(seen).toEqual(["refused", "answered", "answered", "answered", "answered"]);
  });
});
