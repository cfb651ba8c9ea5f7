import type { RunEvent } from "@loopwright/events";
import { recordedError, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { twoRunsOnOneRuntime } from "../test/notices.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError } from "./errors.js";
import { runAgentLoop } from "./index.js";
import { createRuntime } from "./runtime.js";

// Review r89: a call a server parsed itself and named only with gpt-oss's Harmony markup
// (`assistant<|channel|>analysis`, as Ollama has handed over) went to `dispatch` under that
// markup. On the analysis channel it is the model's reasoning read as a call: answered, never run.
// On the commentary channel with no recipient it is a call, and the arguments say which tool, as
// `recoverToolCalls` reads the same call written as text. Over HTTP, through runAgentLoop.

const READ: ToolDefinition = {
  type: "function",
  function: {
    name: "read_file",
    description: "Read a file",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
};
const WEATHER: ToolDefinition = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { type: "string" } },
      required: ["city"],
    },
  },
};
const ask: ChatMessage[] = [{ role: "user", content: "Go on." }];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function called(name: string, args: string, tools: ToolDefinition[] = [READ, WEATHER]) {
  // A test calls this in a loop: the server of the call before is closed here (afterEach closes
  // only the last; the others stayed open for the worker's later files).
  await server?.close();
  server = await startServer({
    replies: [{ toolCalls: [{ id: "c1", name, arguments: args }] }, { content: "Done." }],
  });
  const events: RunEvent[] = [];
  const dispatched: string[] = [];
  const result = await runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim" },
    messages: ask,
    tools,
    dispatch: ({ name }) => {
      dispatched.push(name);
      return "ok";
    },
    onEvent: (event) => events.push(event),
  });
  const second = server.chatRequests[1]?.body as { messages: Array<Record<string, unknown>> };
  const notices = events.flatMap((e) => (e.kind === "notice" ? [e.text] : []));
  return { result, dispatched, notices, sent: second.messages.slice(1) };
}

describe("R89-1: a call named only with Harmony markup", () => {
  it("on the analysis channel names no tool: answered, never dispatched, replayed under a name the endpoint takes", async () => {
    for (const written of [
      "assistant<|channel|>analysis",
      "<|channel|>analysis",
      " assistant <|channel|>analysis\n",
    ]) {
      const { result, dispatched, sent } = await called(written, '{"path":"a.txt"}');
      expect(dispatched, written).toEqual([]);
      expect(sent[0]).toMatchObject({
        role: "assistant",
        tool_calls: [{ id: "c1", function: { name: "unnamed_tool", arguments: '{"path":"a.txt"}' } }],
      });
      expect(sent[1]).toMatchObject({ role: "tool", tool_call_id: "c1" });
      expect(String(sent[1]?.content)).toContain(`This call named no tool (only ${JSON.stringify(written)})`);
      expect(result.messages.at(-1)).toMatchObject({ role: "assistant", content: "Done." });
    }
  });

  it("on the commentary channel runs the one tool whose parameters take every argument sent, with a notice", async () => {
    for (const [written, args, tool] of [
      ["assistant<|channel|>commentary", '{"path":"a.txt"}', "read_file"],
      ["<|channel|>commentary <|constrain|>json", '{"city":"Oslo","unit":"C"}', "get_weather"],
    ] as const) {
      const { dispatched, notices, sent } = await called(written, args);
      expect(dispatched, written).toEqual([tool]);
      expect(sent[0]).toMatchObject({
        role: "assistant",
        tool_calls: [{ id: "c1", function: { name: tool } }],
      });
      expect(sent[1]).toMatchObject({ role: "tool", tool_call_id: "c1", content: "ok" });
      expect(notices).toContain(
        `The model's call was named only with gpt-oss's markup (${JSON.stringify(written)}); it ran as "${tool}", the one tool whose parameters take every argument it sent.`,
      );
    }
  });

  it("on the commentary channel runs nothing when the arguments fit no tool, or two", async () => {
    const SEARCH: ToolDefinition = {
      type: "function",
      function: {
        name: "search",
        description: "Search",
        parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
      },
    };
    for (const [args, tools] of [
      ['{"query":"x"}', [READ, WEATHER]],
      ['{"path":"a.txt"}', [READ, SEARCH]],
      ["not json", [READ, WEATHER]],
    ] as const) {
      const { dispatched, sent } = await called("assistant<|channel|>commentary", args, [...tools]);
      expect(dispatched, args).toEqual([]);
      expect(String(sent[1]?.content)).toContain("This call named no tool");
    }
  });

  it("a tool's own name before the markup still runs that tool, and a declared tool named like a Harmony word is that tool", async () => {
    const ASSISTANT: ToolDefinition = {
      type: "function",
      function: {
        name: "assistant",
        description: "Ask a person",
        parameters: { type: "object", properties: {} },
      },
    };
    expect((await called("read_file<|channel|>commentary", '{"path":"a.txt"}')).dispatched).toEqual([
      "read_file",
    ]);
    expect((await called("assistant<|channel|>analysis", "{}", [ASSISTANT, READ])).dispatched).toEqual([
      "assistant",
    ]);
  });
});

describe("R89-2: llama.cpp's parser failing mid-stream again once the tools were relaxed", () => {
  // llama.cpp's "does not match the expected peg-native format" is what a schema's grammar letting
  // the model out of a string gives — and what a server started with --special gives on every
  // call (its parser meets the printed end-of-turn tokens). Relaxing the tools answers the first;
  // when the relaxed request fails the same way, the host is told the schemas do not explain it.
  const PEG_FAILURE = {
    code: 500,
    message: "The model produced output that does not match the expected peg-native format",
    type: "server_error",
  };

  it("is tried once relaxed, then fails typed with a notice that points at the server", async () => {
    const failing = {
      toolCalls: [{ id: "c1", name: "read_file", arguments: '{"path":"a.txt"}' }],
      errorMidStream: { afterChunk: 3, error: PEG_FAILURE },
    };
    server = await startServer({ replies: [failing, failing, { content: "never sent" }] });
    const notices: string[] = [];
    const dispatched: string[] = [];
    const error = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: ask,
      tools: [READ],
      dispatch: ({ name }) => {
        dispatched.push(name);
        return "ok";
      },
      onEvent: (event) => {
        if (event.kind === "notice") notices.push(event.text);
      },
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect(server.chatRequests).toHaveLength(2);
    expect(dispatched).toEqual([]);
    expect(
      notices.filter((n) => n.startsWith("The server failed on the tool schemas' grammar")),
    ).toHaveLength(1);
    expect(notices.filter((n) => n.startsWith("The server failed the same way with relaxed tools"))).toEqual([
      expect.stringMatching(/the schemas do not explain.*--special/),
    ]);
  });
});

describe("R89-3: a server whose chat template leaves the tools out", () => {
  // llama.cpp served with a template that takes no tools (`--chat-template chatml`, an old GGUF's
  // own) renders the request without them, says nothing, and counts the prompt so: the model never
  // sees a tool. Recorded live (b9749): 12 prompt tokens for "List the files." with a tool declared;
  // /props said chat_template_caps.supports_tools false. The count is also no calibration reading.
  const described = (name: string): ToolDefinition => ({
    type: "function",
    function: {
      name,
      description: `Does ${name} over the project: ${"a careful description of what it takes and gives back. ".repeat(4)}`,
      parameters: {
        type: "object",
        properties: { path: { type: "string", description: "Where, relative to the project root." } },
        required: ["path"],
      },
    },
  });
  const TOOLS = ["find", "grep", "read", "write"].map(described);

  async function run(prompts: number[], tools: ToolDefinition[] = TOOLS) {
    server = await startServer({
      replies: [
        ...prompts.slice(0, -1).map((prompt, i) => ({
          toolCalls: [{ id: `c${i}`, name: "read", arguments: '{"path":"a"}' }],
          usage: { prompt_tokens: prompt, completion_tokens: 5 },
        })),
        { content: "Done.", usage: { prompt_tokens: prompts.at(-1) as number, completion_tokens: 2 } },
      ],
    });
    const runtime = createRuntime();
    const notices: string[] = [];
    await runtime.runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: ask,
      tools,
      dispatch: () => "ok",
      onEvent: (event) => {
        if (event.kind === "notice") notices.push(event.text);
      },
    });
    const supports = runtime.capabilities.capabilitiesFor(server.baseUrl, undefined);
    return { notices, charsPerToken: runtime.calibration.charsPerTokenFor(supports, "sim") };
  }

  it("is told once when the count is fewer tokens than the tool definitions alone take, and is no calibration reading", async () => {
    const { notices, charsPerToken } = await run([20, 30]);
    const told = notices.filter((n) => n.includes("its chat template does not show the tools to sim"));
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(
      /^The server counted 20 prompt tokens for a request whose 4 tool definition\(s\) alone are \d+ characters/,
    );
    // Nothing learnt from it: the default, not the 30-odd characters a token the count would say.
    expect(charsPerToken).toBe(4);
  });

  it("says nothing for a count the tools fit in, and learns from it", async () => {
    const { notices, charsPerToken } = await run([400, 420]);
    expect(notices.some((n) => n.includes("does not show the tools"))).toBe(false);
    expect(charsPerToken).not.toBe(4);
  });
});

describe("R89-4: hooks and a step's request-only note", () => {
  // Left by r89a: an Agent's final-turn note, appended for one request and counted in the plan's
  // requestOnly, was taken by the hooks as the user's question — asked about, and the context put on
  // it rather than on the question.
  const NOTE = "[notice] This is your final turn; answer now without tools.";

  it("asks the hooks about the question before the note, and puts their context on it", async () => {
    server = await startServer({ replies: [{ content: "Done." }] });
    const prompts: unknown[] = [];
    const question: ChatMessage = { role: "user", content: "What changed in the build?" };
    await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: [question],
      dispatch: () => "",
      beforeStep: (messages) => ({
        messages: [...messages, { role: "user", content: NOTE }],
        requestOnly: 1,
      }),
      hooks: {
        run: (event, input) => {
          if (event === "afterTurn") return [];
          prompts.push((input as { prompt?: unknown }).prompt);
          return [{ id: "memory", context: "The build moved to tsup last week." }];
        },
      },
    });
    expect(prompts).toEqual(["What changed in the build?", "What changed in the build?"]);
    // The question and the note go as one user message (two in a row are joined); the context is on
    // the question, ahead of it, and the note still comes last.
    const body = server.chatRequests[0]?.body as { messages?: Array<{ role: string; content: unknown }> };
    const sent = body?.messages ?? [];
    const last = String(sent.at(-1)?.content);
    const at = (text: string) => last.indexOf(text);
    expect(at("The build moved to tsup last week.")).toBeGreaterThan(-1);
    expect(at("The build moved to tsup last week.")).toBeLessThan(at("What changed in the build?"));
    expect(at("What changed in the build?")).toBeLessThan(at(NOTE));
    expect(last.endsWith(NOTE)).toBe(true);
  });
});

describe("R89-5: what a refusal changed that negotiate latches silently, told", () => {
  // Found by r89e's side-task model (side tasks now tell these) and left for turns: a run whose
  // temperature, strict tool schemas or stream usage a refusal took away went on without a word —
  // the host's setting still read 0, and nothing said it had stopped meaning it.
  async function refusedOnce(file: string, config: Record<string, unknown> = {}) {
    server = await startServer({
      replies: [
        recordedError(400, file),
        { content: "Fine.", usage: false },
        { content: "Again.", usage: false },
      ],
    });
    // Asked strict, as a host does for OpenAI's structured tool calls.
    return twoRunsOnOneRuntime(server, [{ ...READ, function: { ...READ.function, strict: true } }], config);
  }

  it("a temperature the model does not let the caller pick", async () => {
    const { notices, bodies } = await refusedOnce("openai/temperature-0-unsupported-value.json", {
      temperature: 0,
    });
    expect(bodies.map((b) => "temperature" in b)).toEqual([true, false, false]);
    expect(notices).toEqual([
      // r91: told by negotiate itself, in its words (once, as the refusal latches it).
      "sim refused the temperature asked (it takes only its own default); sending requests without one from now on.",
    ]);
  });

  it("tool schemas refused in strict form", async () => {
    const { notices, bodies } = await refusedOnce("openai/strict-schema-root-additionalproperties-chat.json");
    const strict = (b: Record<string, unknown>) => JSON.stringify(b.tools).includes('"strict":true');
    expect(bodies.map(strict)).toEqual([true, false, false]);
    expect(notices).toEqual([
      // r91: told by negotiate itself, in its words (once, as the call that latched it ends).
      "The server refused the request's schemas in strict form; sending tool and response_format schemas relaxed from now on (their patterns and bounds are described to the model, no longer enforced by the server).",
    ]);
  });

  it("stream_options refused by name", async () => {
    const { notices, bodies } = await refusedOnce(
      "relay-new-api/unknown-parameter-stream-options-with-request-ids.json",
    );
    expect(bodies.map((b) => "stream_options" in b)).toEqual([true, false, false]);
    expect(notices).toEqual([
      "The server refused stream_options; streaming without it from now on (token usage is counted only where the server reports it unasked).",
    ]);
  });
});
