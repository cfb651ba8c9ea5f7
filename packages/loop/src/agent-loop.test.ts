import { fold, type RunEvent } from "@loopwright/events";
import { tokensBetween } from "@loopwright/ledger";
import { ContextOverflow } from "@loopwright/negotiate";
import { readFixtureJson, readRecordedResponse, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ReadMessage as Read } from "../test/read-message.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, AgentLoopOverflow, failedRun, ToolIterationLimit } from "./errors.js";
import { runAgentLoop } from "./index.js";
import { STOPPED_DURING } from "./run-calls.js";
import { ADD_TOOL, QUESTION, unanswered } from "./test-support/transcript.js";

const TOOLS: ToolDefinition[] = [
  ADD_TOOL,
  {
    type: "function",
    function: {
      name: "wait",
      description: "Waits a long time",
      parameters: { type: "object", properties: {} },
    },
  },
];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const question = QUESTION;

describe("runAgentLoop over HTTP", () => {
  it("takes back, with a retract event, answer text a late lone </think> turns into reasoning: fold draws the reasoning once and the answer alone", async () => {
    // A template that opened <think> in the prompt, served with no reasoning parser: the
    // scratchpad streams in content and only its closing marker says it was one.
    const plan = "The user greets me, I should greet back.";
    server = await startServer({ replies: [{ content: `${plan}</think>Hello!`, chunkChars: 6 }] });
    const events: RunEvent[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: [],
      dispatch: () => "unused",
      onEvent: (e) => events.push(e),
    });
    expect(result.turn).toMatchObject({ content: "Hello!", reasoning: plan });
    const retracts = events.filter((e) => e.kind === "retract");
    const shownBefore = events
      .slice(
        0,
        events.findIndex((e) => e.kind === "retract"),
      )
      .flatMap((e) => (e.kind === "output" ? [e.text] : []))
      .join("");
    expect(retracts).toEqual([{ kind: "retract", chars: shownBefore.length }]);
    expect(plan.startsWith(shownBefore) && shownBefore.length > 0).toBe(true);
    expect(fold(events)).toEqual([
      { kind: "reasoning", text: plan },
      { kind: "text", text: "Hello!" },
    ]);
    expect(result.messages.at(-1)).toEqual({ role: "assistant", content: "Hello!" });
  });

  it("runs a two-step tool run: the call is dispatched, answered in the transcript, and the answer streamed", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [{ id: "call_1", name: "add", arguments: '{"a": 2, "b": 3}' }],
          chunkChars: 3,
          usage: { prompt_tokens: 140, completion_tokens: 10 },
        },
        { content: "2 + 3 is 5.", usage: { prompt_tokens: 160, completion_tokens: 6, cached_tokens: 140 } },
      ],
    });
    const events: RunEvent[] = [];
    const dispatched: unknown[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      system: "You add numbers.",
      messages: question,
      tools: TOOLS,
      dispatch: ({ name, args }) => {
        dispatched.push({ name, args });
        return (args.a as number) + (args.b as number);
      },
      onEvent: (e) => events.push(e),
    });

    expect(dispatched).toEqual([{ name: "add", args: { a: 2, b: 3 } }]);
    expect(result.turn.content).toBe("2 + 3 is 5.");
    expect(result.steps).toBe(2);
    expect(result.toolCalls).toEqual([
      { id: "call_1", name: "add", source: "dispatched", ok: true, ms: expect.any(Number) },
    ]);
    expect(result.usage).toEqual({ prompt: 300, completion: 16, total: 316, cached: 140 });
    expect(result.messages).toEqual([
      ...question,
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "add", arguments: '{"a":2,"b":3}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "5" },
      { role: "assistant", content: "2 + 3 is 5." },
    ]);
    // The second request carried the system prompt, the call and its answer, and tools in name order.
    const second = server.chatRequests[1]!.body as { messages: ChatMessage[]; tools: ToolDefinition[] };
    expect(second.messages[0]).toEqual({ role: "system", content: "You add numbers." });
    expect(second.messages.at(-1)).toEqual({ role: "tool", tool_call_id: "call_1", content: "5" });
    expect(second.tools.map((t) => t.function.name)).toEqual(["add", "wait"]);
    // What a watcher saw, in order.
    expect(events.map((e) => e.kind).filter((k, i, all) => k !== all[i - 1])).toEqual([
      "turn",
      "usage",
      "tool-call",
      "tool-result",
      "turn",
      "output",
      "usage",
    ]);
    const output = events.flatMap((e) => (e.kind === "output" ? [e.text] : [])).join("");
    expect(output).toBe("2 + 3 is 5.");
    const usage = events.filter((e) => e.kind === "usage");
    expect(usage.at(-1)).toMatchObject({
      usage: { prompt: 300, completion: 16, total: 316, cached: 140 },
      turn: { finishReason: "stop", toolsDeclared: 2, context: { total: 160 } },
    });
  });

  it("keeps a ledger of measured prompts and reports cache expectations on each usage event", async () => {
    server = await startServer({
      prefixCache: true,
      replies: [{ toolCalls: [{ id: "t1", name: "add", arguments: '{"a":2,"b":3}' }] }, { content: "5." }],
    });
    const events: RunEvent[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      system: "You add numbers.",
      messages: question,
      tools: TOOLS,
      dispatch: () => 5,
      onEvent: (e) => events.push(e),
    });
    const usage = events.flatMap((e) => (e.kind === "usage" ? [e] : []));
    const [first, second] = usage;
    // Both requests were measured, in one epoch, at the transcript index of their last message.
    expect(result.ledger.map((e) => e.through)).toEqual([0, 2]);
    expect(new Set(result.ledger.map((e) => e.epoch)).size).toBe(1);
    expect(second?.ledger).toEqual(result.ledger);
    // What the assistant call and its result cost, by subtraction of the two reported prompts.
    const cost = tokensBetween(result.ledger, 1, 3, result.messages);
    expect(cost).toBe(second!.turn.usage.prompt - first!.turn.usage.prompt);
    expect(second?.turn.cacheExpected).toBe(first!.turn.usage.prompt + first!.turn.usage.completion);
    expect(second?.turn.cacheBroken).toBe(false);
    expect(first?.turn.cacheExpected).toBeUndefined();
    const toolResult = events.find((e) => e.kind === "tool-result");
    expect(toolResult).toMatchObject({ id: "t1", ok: true, content: "5" });
    expect(typeof (toolResult as { ms?: number }).ms).toBe("number");
  });

  it("passes a llama.cpp server's own prefill and decode timings through to the usage event", async () => {
    const { body: sse } = readRecordedResponse("llamacpp-live/05-chat-stream-usage.response.txt");
    server = await startServer({ replies: [{ type: "raw", chunks: [sse] }] });
    const events: RunEvent[] = [];
    await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      dispatch: () => "",
      onEvent: (e) => events.push(e),
    });
    const usage = events.find((e) => e.kind === "usage");
    expect(usage).toMatchObject({ turn: { timings: { prefillMs: 2.481, decodeMs: 2.054 } } });
    expect((usage as { turn: { timings: { totalMs: number } } }).turn.timings.totalMs).toBeGreaterThanOrEqual(
      0,
    );
  });

  it("marks a cache the server dropped on an append-only request as broken for no known reason", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [{ id: "t1", name: "add", arguments: '{"a":1,"b":1}' }],
          usage: { prompt_tokens: 100, completion_tokens: 5, cached_tokens: 0 },
        },
        { content: "2.", usage: { prompt_tokens: 120, completion_tokens: 2, cached_tokens: 10 } },
      ],
    });
    const events: RunEvent[] = [];
    await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      dispatch: () => 2,
      onEvent: (e) => events.push(e),
    });
    const last = events.filter((e) => e.kind === "usage").at(-1);
    expect(last).toMatchObject({
      turn: { cacheExpected: 105, cacheBroken: true, cacheBreakReason: "none-known" },
    });
  });

  it("stops at maxToolIterations with ToolIterationLimit, every call in the carried transcript answered", async () => {
    const call = { name: "add", arguments: '{"a":1,"b":1}' };
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", ...call }] },
        {
          toolCalls: [
            { id: "c2", ...call },
            { id: "c3", name: "wait", arguments: "{}" },
          ],
        },
      ],
    });
    let calls = 0;
    const error = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxToolIterations: 1 },
      messages: question,
      tools: TOOLS,
      dispatch: () => {
        calls++;
        return 2;
      },
    }).catch((e: unknown) => e);
    expect(ToolIterationLimit.isInstance(error)).toBe(true);
    expect((error as ToolIterationLimit).message).toMatch(/after 1 tool step \(maxToolIterations\)/);
    expect(calls).toBe(1);
    const run = failedRun(error)!;
    expect(run.toolCalls).toHaveLength(3);
    expect(unanswered(run.messages)).toEqual([]);
    expect(run.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([
      "2",
      expect.stringMatching(/^Not run/),
      expect.stringMatching(/^Not run/),
    ]);
  });

  it("aborts mid-stream promptly: the run rejects with the signal's reason as an AgentLoopError", async () => {
    server = await startServer({
      replies: [{ content: "This answer never finishes.", chunkChars: 4, silentAfterChunk: 3 }],
    });
    const controller = new AbortController();
    const stop = new Error("user pressed stop");
    const error = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      dispatch: () => "",
      signal: controller.signal,
      onEvent: (e) => {
        if (e.kind === "output") setTimeout(() => controller.abort(stop), 20);
      },
    }).catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as AgentLoopError).cause).toBe(stop);
    // No clock: the server stays silent for ever, so a run that missed the stop would end only at
    // vitest's test timeout, and one ended by anything else would not have the stop as its cause.
    expect(failedRun(error)?.messages).toEqual(question);
  });

  it("answers a call the stop interrupted, so the transcript can be sent again", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "w1", name: "wait", arguments: "{}" },
            { id: "a1", name: "add", arguments: '{"a":1,"b":2}' },
          ],
        },
      ],
    });
    const controller = new AbortController();
    const error = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      signal: controller.signal,
      dispatch: ({ name }) => {
        if (name === "wait") {
          setTimeout(() => controller.abort(new Error("stop")), 10);
          return new Promise(() => {});
        }
        return 3;
      },
    }).catch((e: unknown) => e);
    const run = failedRun(error)!;
    expect(unanswered(run.messages)).toEqual([]);
    expect(run.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([
      STOPPED_DURING,
      "Not run: the run stopped first.",
    ]);
  });

  it("answers unreadable arguments with the reason instead of dispatching, and replays them as {}", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "bad", name: "add", arguments: "this is not json" }] },
        { content: "Sorry." },
      ],
    });
    let dispatched = 0;
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      dispatch: () => {
        dispatched++;
        return "";
      },
    });
    expect(dispatched).toBe(0);
    const assistant = result.messages[1] as Read;
    expect(assistant.tool_calls?.[0]?.function.arguments).toBe("{}");
    const answer = result.messages[2]!;
    expect(answer.role).toBe("tool");
    expect(String(answer.content)).toMatch(/add/);
  });

  it("re-sends without stream_options when the server refuses it by name", async () => {
    server = await startServer({
      replies: [
        {
          type: "error",
          status: 400,
          body: readFixtureJson(
            "errors/relay-new-api/unknown-parameter-stream-options-with-request-ids.json",
          ),
        },
        { content: "Fine.", usage: false },
      ],
    });
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      dispatch: () => "",
    });
    expect(result.turn.content).toBe("Fine.");
    const bodies = server.chatRequests.map((r) => r.body as Record<string, unknown>);
    expect(bodies[0]).toHaveProperty("stream_options");
    expect(bodies[1]).not.toHaveProperty("stream_options");
  });

  it("retries a rate-limited request after the server's own wait", async () => {
    server = await startServer({
      replies: [
        {
          type: "error",
          status: 429,
          body: { error: { message: "Rate limit", type: "rate_limit" } },
          headers: { "retry-after-ms": "20" },
        },
        { content: "Done." },
      ],
    });
    const notices: string[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      dispatch: () => "",
      onEvent: (e) => e.kind === "notice" && notices.push(e.text),
    });
    expect(result.turn.content).toBe("Done.");
    expect(server.chatRequests).toHaveLength(2);
    expect(notices.join("\n")).toMatch(/retrying/);
  });

  it("re-sends a turn whose connection dropped before anything was shown, never one that had started answering", async () => {
    server = await startServer({
      replies: [
        { content: "Hello there.", dropAfterChunk: 0 },
        { content: "Hello there.", usage: false },
        { content: "Half an ans", chunkChars: 4, dropAfterChunk: 2 },
      ],
    });
    const first = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 1 },
      messages: question,
      dispatch: () => "",
    });
    expect(first.turn.content).toBe("Hello there.");
    expect(server.chatRequests).toHaveLength(2);

    const error = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 3 },
      messages: question,
      dispatch: () => "",
    }).catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect(server.chatRequests).toHaveLength(3);
  });

  it("raises the endpoint's context overflow as AgentLoopOverflow, which is a ContextOverflow carrying the run", async () => {
    const body = readFixtureJson("errors/vllm/context-length-legacy-top-level-object-error.json");
    server = await startServer({ replies: [{ type: "error", status: 400, body }] });
    const error = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      dispatch: () => "",
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentLoopOverflow);
    expect(ContextOverflow.isInstance(error)).toBe(true);
    expect((error as ContextOverflow).serverMessage).toMatch(/maximum context length is 6048 tokens/);
    expect(failedRun(error)?.messages).toEqual(question);
  });

  it("refuses a request that cannot fit contextLength before sending it", async () => {
    server = await startServer({ replies: [{ content: "never sent" }] });
    const error = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", contextLength: 8, maxTokens: 100 },
      messages: question,
      dispatch: () => "",
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentLoopOverflow);
    expect(server.chatRequests).toHaveLength(0);
  });
});
