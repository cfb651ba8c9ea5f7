// The findings of the loop's review (issue 12), each pinned over HTTP against the testkit.
import type { RunEvent } from "@loopwright/events";
import { createCalibration } from "@loopwright/ledger";
import { buildBody, createCapabilityStore } from "@loopwright/negotiate";
import { readFixtureJson, readRecordedResponse, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ReadMessage as Read } from "../test/read-message.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, failedRun, type LoopOptionError, ToolIterationLimit } from "./errors.js";
import { createRuntime } from "./index.js";
import type { DispatchRequest } from "./run-calls.js";
import { runTurn } from "./run-turn.js";
import { ADD_TOOL, QUESTION, unanswered } from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const SHELL: ToolDefinition = {
  type: "function",
  function: {
    name: "shell",
    description: "Run a command",
    parameters: { type: "object", properties: { cmd: { type: "string" } }, required: ["cmd"] },
  },
};

const WEATHER: ToolDefinition = {
  type: "function",
  function: {
    name: "weather",
    description: "The weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, zone: { type: "string" } },
      required: ["city"],
    },
  },
};

const FS_READ: ToolDefinition = {
  type: "function",
  function: {
    name: "fs.read",
    description: "Read a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
};

function body(server: TestServer, at: number) {
  return server.chatRequests[at]?.body as { messages: Read[]; tools?: ToolDefinition[] };
}

describe("cut-off tool calls are never run (finding 1)", () => {
  /** Streams `rm -rf /tmp/build` cut off (the user meant /tmp/build-cache), then an answer. */
  async function cutOff(finishReason: string | null | undefined) {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "shell", arguments: '{"cmd": "rm -rf /tmp/build' }], finishReason },
        { content: "I will ask again." },
      ],
    });
    const dispatched: DispatchRequest[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [SHELL],
      dispatch: (request) => {
        dispatched.push(request);
        return "done";
      },
    });
    return { dispatched, result };
  }

  it("answers, without dispatching, a call whose turn ended with no finish reason", async () => {
    const { dispatched, result } = await cutOff(null);
    expect(dispatched).toEqual([]);
    expect(result.messages.find((m) => m.role === "tool")?.content).toMatch(/cut off/i);
    expect(result.toolCalls).toEqual([{ id: "c1", name: "shell", source: "refused", ok: false }]);
  });

  it("answers, without dispatching, arguments that end inside a string even when the turn says it finished", async () => {
    const { dispatched, result } = await cutOff(undefined);
    expect(dispatched).toEqual([]);
    expect(result.messages.find((m) => m.role === "tool")?.content).toMatch(/cut off/i);
  });
});

describe("optional parameters (finding 2)", () => {
  it("drops the null the model wrote for a parameter the host's schema left optional before dispatch", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "weather", arguments: '{"city": "Paris", "zone": null}' }] },
        { content: "Sunny." },
      ],
    });
    const dispatched: Record<string, unknown>[] = [];
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [WEATHER],
      dispatch: ({ args }) => {
        dispatched.push(args);
        return "sunny";
      },
    });
    expect(dispatched).toEqual([{ city: "Paris" }]);
  });
});

describe("tool names the wire cannot carry (finding 3)", () => {
  it("declares fs.read as fs_read from the first request, and hands dispatch, watchers and the transcript fs.read", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "fs_read", arguments: '{"path": "a.txt"}' }] },
        { content: "It says hi." },
      ],
    });
    const names: string[] = [];
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [FS_READ],
      dispatch: ({ name }) => {
        names.push(name);
        return name === "fs.read" ? "hi" : `no tool named ${name}`;
      },
      onToolCall: (request) => names.push(`told:${request.name}`),
      onEvent: (event) => events.push(event),
    });
    expect(body(server, 0).tools?.map((t) => t.function.name)).toEqual(["fs_read"]);
    expect(names).toEqual(["told:fs.read", "fs.read"]);
    expect(events.filter((e) => e.kind === "tool-call").map((e) => e.kind === "tool-call" && e.name)).toEqual(
      ["fs.read"],
    );
    expect(result.toolCalls.map((c) => c.name)).toEqual(["fs.read"]);
    expect((result.messages[1] as Read | undefined)?.tool_calls?.[0]?.function.name).toBe("fs.read");
    expect(result.messages[2]?.content).toBe("hi");
    // The wire carries the legal name in the replayed call.
    expect(body(server, 1).messages.find((m) => m.role === "assistant")?.tool_calls?.[0]?.function.name).toBe(
      "fs_read",
    );
  });

  it("refuses at the start two tools whose names become one on the wire, naming both", async () => {
    server = await startServer({ replies: [{ content: "never sent" }] });
    const twin: ToolDefinition = { ...FS_READ, function: { ...FS_READ.function, name: "fs_read" } };
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        tools: [FS_READ, twin],
        dispatch: () => "",
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/fs\.read/);
    expect((error as Error).message).toMatch(/fs_read/);
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("tool names in other scripts (r5 finding 4)", () => {
  const named = (name: string, description: string): ToolDefinition => ({
    type: "function",
    function: {
      name,
      description,
      parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
    },
  });
  const TOOLS = [
    named("検索", "Search documents"),
    named("翻訳", "Translate text"),
    named("search_🙂", "Smile"),
  ];

  it("declares each under a distinct, stable wire name with a hash of the original, and hands dispatch the host's", async () => {
    // The model calls the tool described as translating, by whatever name the request declared it under.
    server = await startServer({
      replies: (request, index) => {
        const tools = (request.body as { tools?: ToolDefinition[] }).tools ?? [];
        const translate = tools.find((t) => t.function.description === "Translate text")?.function.name;
        return index % 2 === 0
          ? { toolCalls: [{ id: `c${index}`, name: translate ?? "missing", arguments: '{"q": "hi"}' }] }
          : { content: "Done." };
      },
    });
    const dispatched: string[] = [];
    const first = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: TOOLS,
      dispatch: ({ name }) => {
        dispatched.push(name);
        return "ok";
      },
    });
    const wire = body(server, 0).tools?.map((t) => t.function.name) ?? [];
    expect(wire).toHaveLength(3);
    expect(new Set(wire).size).toBe(3);
    for (const name of wire) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(wire.filter((name) => /^tool_[0-9a-f]{8}$/.test(name))).toHaveLength(2);
    expect(wire.filter((name) => /^search_[0-9a-f]{8}$/.test(name))).toHaveLength(1);
    const translate = body(server, 0).tools?.find((t) => t.function.description === "Translate text");
    expect(dispatched).toEqual(["翻訳"]);
    expect((first.messages[1] as Read | undefined)?.tool_calls?.[0]?.function.name).toBe("翻訳");
    // Resumed on another runtime: the same wire names, and the stored call replayed under its own.
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: [...first.messages, { role: "user", content: "Again." }],
      tools: [...TOOLS].reverse(),
      dispatch: ({ name }) => {
        dispatched.push(name);
        return "ok";
      },
    });
    expect(body(server, 2).tools?.map((t) => t.function.name)).toEqual(wire);
    const replayed = body(server, 2).messages.find((m) => m.role === "assistant")?.tool_calls?.[0];
    expect(replayed?.function.name).toBe(translate?.function.name);
    expect(dispatched).toEqual(["翻訳", "翻訳"]);
  });
});

describe("a continuation that overflows (finding 5)", () => {
  it("keeps the cut-off answer, with a notice, when the continuation is refused as too long", async () => {
    const overflow = readFixtureJson("errors/vllm/context-length-legacy-top-level-object-error.json");
    server = await startServer({
      replies: [
        { content: "The answer is", finishReason: "length" },
        { type: "error", status: 400, body: overflow },
      ],
    });
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxContinuations: 1 },
      messages: QUESTION,
      dispatch: () => "",
      onEvent: (event) => events.push(event),
    });
    expect(result.turn.content).toBe("The answer is");
    expect(result.messages.at(-1)).toEqual({ role: "assistant", content: "The answer is" });
    const notices = events.flatMap((e) => (e.kind === "notice" ? [e.text] : []));
    expect(notices.some((n) => /kept/.test(n) && /context|long|window/i.test(n))).toBe(true);
  });
});

describe("the scratchpad behind a tool call (finding 6)", () => {
  it("sends reasoning_content back on the assistant message that called tools, in the field the server used", async () => {
    server = await startServer({
      replies: [
        {
          reasoning: "I should add them.",
          toolCalls: [{ id: "c1", name: "add", arguments: '{"a":2,"b":3}' }],
        },
        { reasoning: "Done.", content: "5" },
      ],
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 5,
    });
    const replayed = body(server, 1).messages.find((m) => m.role === "assistant");
    expect(replayed?.reasoning_content).toBe("I should add them.");
    expect((result.messages[1] as Read | undefined)?.reasoning_content).toBe("I should add them.");
    // The answer carries none: it is dropped once the model has answered.
    expect(result.messages.at(-1)).toEqual({ role: "assistant", content: "5" });
  });

  it("uses the reasoning field for a server that streamed it there", async () => {
    server = await startServer({
      replies: [
        {
          reasoning: "Plan: add.",
          reasoningAs: "reasoning",
          toolCalls: [{ id: "c1", name: "add", arguments: '{"a":2,"b":3}' }],
        },
        { content: "5" },
      ],
    });
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 5,
    });
    const replayed = body(server, 1).messages.find((m) => m.role === "assistant");
    expect(replayed?.reasoning).toBe("Plan: add.");
    expect(replayed?.reasoning_content).toBeUndefined();
  });
});

describe("runTurn learns characters per token (finding 7)", () => {
  it("sizes a later request with what the endpoint reported for an earlier one", async () => {
    const long: ChatMessage[] = [{ role: "user", content: "x".repeat(4000) }];
    server = await startServer({
      replies: [
        { content: "one", usage: { prompt_tokens: 600, completion_tokens: 1 } },
        { content: "two", usage: { prompt_tokens: 600, completion_tokens: 1 } },
      ],
    });
    const supports = createCapabilityStore().capabilitiesFor(server.baseUrl);
    const calibration = createCalibration();
    const client = createRuntime().clients.getClient({ baseUrl: server.baseUrl });
    const build = () => buildBody({ model: "sim" }, supports, undefined, long);
    await runTurn(client, supports, build, { model: "sim", calibration });
    // About 1000 tokens at 4 characters a token, about 600 at what the endpoint reported.
    const second = await runTurn(client, supports, build, { model: "sim", contextLimit: 900, calibration });
    expect(second.content).toBe("two");
  });
});

describe("toolCalls are per-call entries (finding 8)", () => {
  it("tells a dispatched call from a shared repeat and a refused one, with ids", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "a", name: "add", arguments: '{"a":1,"b":2}' },
            { id: "b", name: "add", arguments: '{"a":1,"b":2}' },
            { id: "c", name: "add", arguments: "not json at all" },
          ],
        },
        { content: "3" },
      ],
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 3,
    });
    expect(result.toolCalls).toEqual([
      { id: "a", name: "add", source: "dispatched", ok: true, ms: expect.any(Number) },
      { id: "b", name: "add", source: "repeat", ok: true },
      { id: "c", name: "add", source: "refused", ok: false },
    ]);
  });

  it("carries the entries on the step limit's error, the unrun calls refused", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "a", name: "add", arguments: '{"a":1,"b":2}' }] }],
    });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", maxToolIterations: 0 },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: () => 3,
      })
      .catch((e: unknown) => e);
    expect(ToolIterationLimit.isInstance(error)).toBe(true);
    expect(failedRun(error)?.toolCalls).toEqual([{ id: "a", name: "add", source: "refused", ok: false }]);
    expect(unanswered(failedRun(error)?.messages ?? [])).toEqual([]);
  });
});

describe("cacheBreakReason system-changed (finding 9)", () => {
  it("says system-changed when beforeStep rewrote the leading system message and the cache missed", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [{ id: "c1", name: "add", arguments: '{"a":2,"b":3}' }],
          usage: { prompt_tokens: 100, completion_tokens: 5, cached_tokens: 0 },
        },
        { content: "5", usage: { prompt_tokens: 120, completion_tokens: 1, cached_tokens: 0 } },
      ],
    });
    const events: RunEvent[] = [];
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: [{ role: "system", content: "You add." }, ...QUESTION],
      tools: [ADD_TOOL],
      dispatch: () => 5,
      beforeStep: (messages, step) =>
        step === 2 ? [{ role: "system", content: "You add, briefly." }, ...messages.slice(1)] : undefined,
      onEvent: (event) => events.push(event),
    });
    const usage = events.filter((e) => e.kind === "usage");
    const last = usage.at(-1);
    expect(last?.kind === "usage" && last.turn.cacheBreakReason).toBe("system-changed");
  });
});

const LOOKUP: ToolDefinition = {
  type: "function",
  function: {
    name: "lookup",
    description: "Look a code up",
    parameters: {
      type: "object",
      properties: { code: { type: "string", pattern: "abc" } },
      required: ["code"],
    },
  },
};

const PEG_FAILURE = {
  code: 500,
  message: "The model produced output that does not match the expected peg-native format",
  type: "server_error",
};

function declaresPattern(server: TestServer, at: number): boolean {
  return JSON.stringify(body(server, at).tools).includes('"pattern"');
}

describe("llama.cpp's grammar failure (finding 11)", () => {
  it("re-sends once with relaxed tools, and keeps them, when the failure came mid-stream after tool-call pieces only", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [{ id: "c1", name: "lookup", arguments: '{"code": "ab"c"}' }],
          errorMidStream: { afterChunk: 3, error: PEG_FAILURE },
        },
        { toolCalls: [{ id: "c2", name: "lookup", arguments: '{"code": "abc"}' }] },
        { content: "Found it." },
      ],
    });
    const dispatched: Record<string, unknown>[] = [];
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [LOOKUP],
      dispatch: ({ args }) => {
        dispatched.push(args);
        return "a code";
      },
      onEvent: (event) => events.push(event),
    });
    expect(result.turn.content).toBe("Found it.");
    expect(dispatched).toEqual([{ code: "abc" }]);
    expect(server.chatRequests).toHaveLength(3);
    expect(declaresPattern(server, 0)).toBe(true);
    expect(declaresPattern(server, 1)).toBe(false);
    expect(declaresPattern(server, 2)).toBe(false);
    const notices = events.flatMap((e) => (e.kind === "notice" ? [e.text] : []));
    expect(notices.some((n) => /relaxed tools/.test(n))).toBe(true);
  });

  it("does not re-send once the user was shown text", async () => {
    server = await startServer({
      replies: [
        {
          content: "Let me look that up for you.",
          toolCalls: [{ id: "c1", name: "lookup", arguments: '{"code": "ab"c"}' }],
          errorMidStream: { afterChunk: 8, error: PEG_FAILURE },
        },
        { content: "never sent" },
      ],
    });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        tools: [LOOKUP],
        dispatch: () => "",
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect(server.chatRequests).toHaveLength(1);
  });

  it("re-sends with relaxed tools when the failure is the reply", async () => {
    server = await startServer({
      replies: [{ type: "error", status: 500, body: { error: PEG_FAILURE } }, { content: "Relaxed." }],
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      messages: QUESTION,
      tools: [LOOKUP],
      dispatch: () => "",
    });
    expect(result.turn.content).toBe("Relaxed.");
    expect(declaresPattern(server, 0)).toBe(true);
    expect(declaresPattern(server, 1)).toBe(false);
  });

  it("still answers the recorded 400 for a pattern without anchors the same way", async () => {
    const recorded = readRecordedResponse("llamacpp-live/20-schema-rejected-pattern.response.txt");
    server = await startServer({
      replies: [
        { type: "error", status: recorded.status, body: JSON.parse(recorded.body) },
        { content: "Relaxed." },
      ],
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [LOOKUP],
      dispatch: () => "",
    });
    expect(result.turn.content).toBe("Relaxed.");
    expect(declaresPattern(server, 1)).toBe(false);
  });
});

describe("options the loop does not do are refused, not dropped (finding 4)", () => {
  const refusal = async (extra: Record<string, unknown>, config: Record<string, unknown> = {}) => {
    server ??= await startServer({ replies: [{ content: "never sent" }] });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", ...config },
        messages: QUESTION,
        dispatch: () => "",
        ...extra,
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    return (error as AgentLoopError).cause;
  };

  it("refuses an option it does not know by name", async () => {
    const cause = await refusal({ dispatcher: () => "" });
    expect((cause as LoopOptionError).code).toBe("unknown-option");
    expect((cause as Error).message).toContain('"dispatcher"');
  });

  it("takes eager discovery, no preselection and an empty hook list, as a resolved config states them", async () => {
    server = await startServer({ replies: [{ content: "fine" }] });
    const result = await createRuntime().runAgentLoop({
      config: {
        baseUrl: server.baseUrl,
        model: "sim",
        toolDiscovery: "eager",
        preselect: false,
        compact: false,
        hooks: [],
      },
      messages: QUESTION,
      dispatch: () => "",
    });
    expect(result.turn.content).toBe("fine");
  });
});
