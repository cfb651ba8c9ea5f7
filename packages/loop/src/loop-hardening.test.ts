import { getEventListeners } from "node:events";
import { getClient } from "@loopwright/client";
import type { RunEvent } from "@loopwright/events";
import { buildBody, ContextOverflow, createCapabilityStore } from "@loopwright/negotiate";
import { readFixtureJson, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ReadMessage as Read } from "../test/read-message.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { continueTurn } from "./continue-turn.js";
import { AgentLoopError, failedRun, ToolIterationLimit } from "./errors.js";
import { createRuntime } from "./index.js";
import { NOT_RUN, STOPPED_DURING } from "./run-calls.js";
import { runTurn } from "./run-turn.js";
import { ADD_TOOL, QUESTION, unanswered } from "./test-support/transcript.js";

const TOOLS: ToolDefinition[] = [ADD_TOOL];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const question = QUESTION;

describe("a continued turn is measured on its first request", () => {
  it("records the first request's prompt in the ledger, context and beforeStep's used, not the pieces' sum", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "add", arguments: '{"a":2,"b":3}' }], usage: { prompt_tokens: 50 } },
        {
          content: "The sum is",
          finishReason: "length",
          usage: { prompt_tokens: 100, completion_tokens: 5, cached_tokens: 50 },
        },
        { content: " five.", usage: { prompt_tokens: 105, completion_tokens: 2, cached_tokens: 100 } },
      ],
    });
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "llama", maxTokens: 5, maxContinuations: 1 },
      messages: question,
      tools: TOOLS,
      dispatch: () => 5,
      onEvent: (e) => events.push(e),
    });
    expect(result.turn.content).toBe("The sum is five.");
    // The turn's own usage is the pieces summed (what was billed) …
    expect(result.turn.usage.prompt).toBe(205);
    // … but what the request weighed is the first request's prompt.
    expect(result.ledger.map((e) => e.prompt)).toEqual([50, 100]);
    const usage = events.filter((e) => e.kind === "usage");
    const last = usage.at(-1);
    expect(last?.kind === "usage" && last.turn.context?.total).toBe(100);
    // The first piece hit 50 of the previous 50-token prompt: no broken cache.
    expect(last?.kind === "usage" && last.turn.cacheBroken).toBe(false);
  });

  it("counts the tokens of a continuation the model started over, which were spent all the same", async () => {
    server = await startServer({
      replies: [
        {
          content: "The answer is, I think,",
          finishReason: "length",
          usage: { prompt_tokens: 10, completion_tokens: 5 },
        },
        // Begun again: the opening repeated, then a different answer.
        { content: "The answer is forty-two.", usage: { prompt_tokens: 14, completion_tokens: 7 } },
      ],
    });
    const store = createCapabilityStore();
    const client = getClient({ baseUrl: server.baseUrl });
    const supports = store.capabilitiesFor(server.baseUrl);
    const build = () => buildBody({ model: "gpt-4o", maxTokens: 5 }, supports, undefined, question);
    const first = await runTurn(client, supports, build, { model: "gpt-4o" });
    const whole = await continueTurn(client, supports, build, first, { model: "gpt-4o" });
    expect(whole.content).toBe("The answer is, I think,");
    expect(whole.usage.prompt).toBe(24);
    expect(whole.usage.completion).toBe(12);
    expect(whole.continuations).toBe(1);
  });
});

describe("continuing with startInReasoning", () => {
  it("reads the continuation as answer: the prefilled answer is past the scratchpad the template opened", async () => {
    server = await startServer({
      replies: [
        { content: "The user asks.</think>The answer is", finishReason: "length" },
        { content: " forty-two." },
      ],
    });
    const store = createCapabilityStore();
    const client = getClient({ baseUrl: server.baseUrl });
    const supports = store.capabilitiesFor(server.baseUrl);
    const build = () => buildBody({ model: "r1", maxTokens: 5 }, supports, undefined, question);
    const output: string[] = [];
    const options = { model: "r1", startInReasoning: true, onOutput: (t: string) => output.push(t) };
    const first = await runTurn(client, supports, build, options);
    expect(first).toMatchObject({ content: "The answer is", reasoning: "The user asks." });
    const whole = await continueTurn(client, supports, build, first, options);
    expect(whole).toMatchObject({ content: "The answer is forty-two.", reasoning: "The user asks." });
    expect(output.join("")).toBe("The answer is forty-two.");
  });
});

describe("every call answered, truthfully, on every path", () => {
  it("keeps the real results of calls that ran when onMessage fails while they are appended", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "a1", name: "add", arguments: '{"a":1,"b":1}' },
            { id: "a2", name: "add", arguments: '{"a":2,"b":2}' },
          ],
        },
      ],
    });
    let ran = 0;
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: question,
        tools: TOOLS,
        dispatch: ({ args }) => {
          ran++;
          return (args.a as number) + (args.b as number);
        },
        onMessage: (message) => {
          if (message.role === "tool") throw new Error("database is down");
        },
      })
      .catch((e: unknown) => e);
    expect(ran).toBe(2);
    const run = failedRun(error)!;
    expect(run.messages.slice(-2)).toEqual([
      { role: "tool", tool_call_id: "a1", content: "2" },
      { role: "tool", tool_call_id: "a2", content: "4" },
    ]);
  });

  it("a throwing onToolCall or onToolResult neither escapes raw nor leaves a call unanswered", async () => {
    for (const which of ["onToolCall", "onToolResult"] as const) {
      server = await startServer({
        replies: [{ toolCalls: [{ id: "t1", name: "add", arguments: '{"a":1,"b":2}' }] }, { content: "3" }],
      });
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: question,
        tools: TOOLS,
        dispatch: () => 3,
        [which]: () => {
          throw new Error("the card renderer broke");
        },
      });
      expect(result.turn.content).toBe("3");
      expect(unanswered(result.messages)).toEqual([]);
      await server.close();
      server = undefined;
    }
  });

  it("an async watcher that rejects does not become an unhandled rejection", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "t1", name: "add", arguments: '{"a":1,"b":2}' }] }, { content: "3" }],
    });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: question,
        tools: TOOLS,
        dispatch: () => 3,
        onToolResult: async () => {
          throw new Error("async watcher broke");
        },
        onEvent: async () => {
          throw new Error("async event sink broke");
        },
      });
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
    expect(unhandled).toEqual([]);
  });

  it("tells watchers of the calls the step limit left unrun, with the answer the model reads", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "s1", name: "add", arguments: '{"a":1,"b":1}' }] },
        { toolCalls: [{ id: "s2", name: "add", arguments: '{"a":2,"b":2}' }] },
      ],
    });
    const events: RunEvent[] = [];
    const told: string[] = [];
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", maxToolIterations: 1 },
        messages: question,
        tools: TOOLS,
        dispatch: () => 2,
        onEvent: (e) => events.push(e),
        onToolCall: (r) => told.push(`call ${r.id}`),
        onToolResult: (r) => told.push(`result ${r.id} ${r.ok}`),
      })
      .catch((e: unknown) => e);
    expect(ToolIterationLimit.isInstance(error)).toBe(true);
    expect(told).toEqual(["call s1", "result s1 true", "call s2", "result s2 false"]);
    const results = events.filter((e) => e.kind === "tool-result");
    expect(results.at(-1)).toMatchObject({
      id: "s2",
      ok: false,
      content: expect.stringMatching(/tool-step limit/),
    });
  });
});

describe("errors keep what the endpoint said", () => {
  it("carries an endpoint's overflow in the body's own words, not the client's status line", async () => {
    const body = readFixtureJson("errors/openai/context-length-exceeded-requested-with-completion.json") as {
      error: { message: string };
    };
    server = await startServer({ replies: [{ type: "error", status: 400, body }] });
    const store = createCapabilityStore();
    const error = await runTurn(
      getClient({ baseUrl: server.baseUrl }),
      store.capabilitiesFor(server.baseUrl),
      (supports, model) => buildBody({ model: "gpt-4o" }, supports, model, question),
    ).catch((e: unknown) => e);
    expect(ContextOverflow.isInstance(error)).toBe(true);
    expect((error as ContextOverflow).serverMessage).toBe(body.error.message);
    expect((error as Error).cause).toBeDefined();
  });
});

describe("a long run under one signal", () => {
  it("leaves no abort listener behind on the host's signal after many steps", async () => {
    const steps = 12;
    server = await startServer({
      replies: [
        ...Array.from({ length: steps }, (_, i) => ({
          toolCalls: [{ id: `l${i}`, name: "add", arguments: `{"a":${i},"b":1}` }],
        })),
        { content: "done" },
      ],
    });
    const controller = new AbortController();
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      dispatch: async ({ args }) => (args.a as number) + 1,
      signal: controller.signal,
    });
    expect(result.steps).toBe(steps + 1);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});

describe("what the next request is built from", () => {
  it("gives each call of a step its own id when the server repeats one (DeepSeek, GLM), so every result pairs with its call", async () => {
    // Reported for DeepSeek and Zhipu GLM parallel calls: HKUDS/nanobot#3943; repeated "edit:22": openclaw/openclaw#40996.
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "call_0", name: "add", arguments: '{"a":1,"b":1}' },
            { id: "call_0", name: "add", arguments: '{"a":2,"b":2}' },
          ],
        },
        { content: "2 and 4" },
      ],
    });
    const ids: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      dispatch: ({ args }) => (args.a as number) + (args.b as number),
      onToolResult: (r) => ids.push(r.id),
    });
    const second = server.chatRequests[1]!.body as { messages: Read[] };
    const asked = second.messages.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id));
    const answered = second.messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m.content]);
    expect(new Set(asked).size).toBe(2);
    expect(answered).toEqual([
      [asked[0], "2"],
      [asked[1], "4"],
    ]);
    expect(asked[0]).toBe("call_0");
    expect(ids).toEqual(asked);
    expect(unanswered(result.messages)).toEqual([]);
  });

  it("hands beforeStep no used when the last request reported no prompt, rather than an older one", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "u1", name: "add", arguments: '{"a":1,"b":1}' }], usage: { prompt_tokens: 40 } },
        { toolCalls: [{ id: "u2", name: "add", arguments: '{"a":2,"b":2}' }], usage: false },
        { content: "done", usage: false },
      ],
    });
    const seen: (number | undefined)[] = [];
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      dispatch: () => 2,
      beforeStep: (_messages, _step, { used }) => {
        seen.push(used);
        return undefined;
      },
    });
    expect(seen).toEqual([undefined, 40, undefined]);
  });
});

describe("a stop racing the run", () => {
  it("answers parallel calls on a stop: finished ones keep their result, running ones and their shared repeat are stopped", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "p1", name: "add", arguments: '{"a":1,"b":1}' },
            { id: "p2", name: "add", arguments: '{"a":9,"b":9}' },
            { id: "p3", name: "add", arguments: '{"a":9,"b":9}' },
          ],
        },
      ],
    });
    const controller = new AbortController();
    let dispatched = 0;
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: question,
        tools: TOOLS,
        parallel: true,
        signal: controller.signal,
        dispatch: ({ args }) => {
          dispatched++;
          if (args.a === 1) return 2;
          setTimeout(() => controller.abort(new Error("stop")), 30);
          return new Promise(() => {}); // a tool that ignores the signal
        },
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe("stop");
    expect(dispatched).toBe(2);
    const run = failedRun(error)!;
    expect(unanswered(run.messages)).toEqual([]);
    expect(run.messages.filter((m) => m.role === "tool").map((m) => [m.tool_call_id, m.content])).toEqual([
      ["p1", "2"],
      ["p2", STOPPED_DURING],
      ["p3", STOPPED_DURING],
    ]);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("stops during a retry's wait at once, without sending again and without a listener left", async () => {
    server = await startServer({
      replies: [
        {
          type: "error",
          status: 429,
          body: { error: { message: "Rate limit reached", type: "rate_limit" } },
          headers: { "retry-after": "30" },
        },
        { content: "never" },
      ],
    });
    const controller = new AbortController();
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: question,
        signal: controller.signal,
        dispatch: () => "",
        onEvent: (e) => {
          if (e.kind === "notice" && /retrying/.test(e.text))
            setTimeout(() => controller.abort(new Error("stop")), 20);
        },
      })
      .catch((e: unknown) => e);
    expect((error as Error).message).toBe("stop");
    // No clock: a run that waited out the 30 s retry-after would end at vitest's test timeout.
    expect(server.chatRequests).toHaveLength(1);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});

describe("bad options are named before anything is sent", () => {
  it("refuses a maxToolIterations, maxContinuations or maxRetries that is not a whole number from 0, naming it", async () => {
    server = await startServer({ replies: [{ content: "never" }] });
    const bad: [string, Record<string, unknown>][] = [
      ["maxToolIterations", { maxToolIterations: Number.NaN }],
      ["maxToolIterations", { maxToolIterations: -1 }],
      ["maxContinuations", { maxContinuations: 1.5 }],
      ["maxRetries", { maxRetries: -2 }],
    ];
    for (const [name, extra] of bad) {
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "sim", ...extra },
          messages: question,
          tools: TOOLS,
          dispatch: () => 2,
        })
        .catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error)).toBe(true);
      expect((error as Error).message).toContain(name);
      expect((error as Error).cause).toBeInstanceOf(RangeError);
    }
    const noDispatch = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: question,
        tools: TOOLS,
        dispatch: undefined as never,
      })
      .catch((e: unknown) => e);
    expect((noDispatch as Error).message).toMatch(/dispatch/);
    const noMessages = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: "hi" as never,
        dispatch: () => "",
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(noMessages)).toBe(true);
    expect((noMessages as Error).message).toMatch(/messages must be an array/);
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("what the seed's loop hands a host besides the answer", () => {
  it("hands onRequest each step's request as the client is sent it, and returns the run's metrics", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [{ id: "m1", name: "add", arguments: '{"a":1,"b":1}' }],
          usage: { prompt_tokens: 40, completion_tokens: 8, cached_tokens: 0 },
        },
        { content: "2", usage: { prompt_tokens: 60, completion_tokens: 2, cached_tokens: 40 } },
      ],
    });
    const requests: { step: number; roles: string[]; tools: string[] }[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", contextLength: 1000 },
      system: "Add.",
      messages: question,
      tools: TOOLS,
      dispatch: () => {
        throw new Error("the adder is broken");
      },
      onRequest: (request, step) =>
        requests.push({
          step,
          roles: request.messages.map((m) => m.role),
          tools: request.tools.map((t) => t.function.name),
        }),
    });
    expect(requests).toEqual([
      { step: 1, roles: ["system", "user"], tools: ["add"] },
      { step: 2, roles: ["system", "user", "assistant", "tool"], tools: ["add"] },
    ]);
    const sent = server.chatRequests.map((r) => (r.body as { messages: ChatMessage[] }).messages.length);
    expect(sent).toEqual([2, 4]);
    expect(result.metrics).toMatchObject({
      turns: 2,
      toolCalls: 1,
      toolErrors: 1,
      outcome: "completed",
      tokens: { prompt: 100, completion: 10, cached: 40 },
      toolErrorsByName: { add: 1 },
      largestPrompt: { turn: 2, tokens: 60 },
    });
  });
});

describe("a stop while the host stores a message", () => {
  it("answers every call Not run, announced through onMessage, when the stop lands while the assistant row is written", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "w1", name: "add", arguments: '{"a":1,"b":1}' },
            { id: "w2", name: "add", arguments: '{"a":2,"b":2}' },
          ],
        },
      ],
    });
    const controller = new AbortController();
    const stored: ChatMessage[] = [];
    let dispatched = 0;
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: question,
        tools: TOOLS,
        signal: controller.signal,
        dispatch: () => {
          dispatched++;
          return 0;
        },
        onMessage: async (message) => {
          stored.push(message);
          if (message.role === "assistant") controller.abort(new Error("stop"));
          await new Promise((r) => setTimeout(r, 5));
        },
      })
      .catch((e: unknown) => e);
    expect(dispatched).toBe(0);
    expect((error as Error).message).toBe("stop");
    expect(stored.map((m) => [m.role, m.content])).toEqual([
      ["assistant", null],
      ["tool", NOT_RUN],
      ["tool", NOT_RUN],
    ]);
    expect(failedRun(error)!.messages.slice(1)).toEqual(stored);
  });
});

describe("a refused body is not what the endpoint measured", () => {
  it("measures the ledger and the tool block on the body the endpoint answered, after it refused strict schemas", async () => {
    const refusal = readFixtureJson("errors/openai/strict-schema-root-additionalproperties-chat.json");
    const strictTools: ToolDefinition[] = [
      {
        type: "function",
        function: {
          name: "add",
          description: "Add two numbers",
          strict: true,
          parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } },
        },
      },
    ];
    server = await startServer({
      replies: [
        { type: "error", status: 400, body: refusal },
        { toolCalls: [{ id: "r1", name: "add", arguments: '{"a":1,"b":1}' }], usage: { prompt_tokens: 50 } },
        { content: "2", usage: { prompt_tokens: 70 } },
      ],
    });
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "gpt-4o" },
      messages: question,
      tools: strictTools,
      dispatch: () => 2,
      onEvent: (e) => events.push(e),
    });
    const sentTools = server.chatRequests.map((r) => JSON.stringify((r.body as { tools: unknown }).tools));
    expect(sentTools[0]).not.toBe(sentTools[1]); // the refused request was strict, the answered one relaxed
    expect(sentTools[1]).toBe(sentTools[2]);
    // Both answered requests sent the same tool block: one epoch, so the step between them is measured.
    expect(result.ledger).toHaveLength(2);
    expect(new Set(result.ledger.map((e) => e.epoch)).size).toBe(1);
    const usage = events.filter((e) => e.kind === "usage");
    expect(usage.at(-1)).toMatchObject({ turn: { cacheExpected: expect.any(Number) } });
  });
});

describe("a continuation that starts over is not shown", () => {
  it("holds back a continuation's opening until it is known to carry on, so a restarted answer is not printed twice", async () => {
    server = await startServer({
      replies: [
        { content: "The answer is, I think,", finishReason: "length", chunkChars: 4 },
        { content: "The answer is forty-two.", chunkChars: 4 },
        { content: "Next it is", finishReason: "length", chunkChars: 3 },
      ],
    });
    const runtime = createRuntime();
    const output: string[] = [];
    const result = await runtime.runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "gpt-4o", maxTokens: 5, maxContinuations: 1 },
      messages: question,
      dispatch: () => "",
      onEvent: (e) => e.kind === "output" && output.push(e.text),
    });
    expect(result.turn.content).toBe("The answer is, I think,");
    expect(output.join("")).toBe("The answer is, I think,");
  });

  it("shows a real continuation whole, including an opening that only looked like the answer so far", async () => {
    server = await startServer({
      replies: [
        { content: "The", finishReason: "length", chunkChars: 2 },
        { content: " Th", chunkChars: 1 },
      ],
    });
    const output: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "llama", maxTokens: 5, maxContinuations: 1 },
      messages: question,
      dispatch: () => "",
      onEvent: (e) => e.kind === "output" && output.push(e.text),
    });
    expect(result.turn.content).toBe("The Th");
    expect(output.join("")).toBe("The Th");
  });
});
