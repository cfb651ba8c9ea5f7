import { isToolChoice } from "@loopwright/negotiate";
import { readFixture, startServer, type TestServer, vllmPersonality } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import type { StepPlan } from "./agent-loop.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, LoopOptionError } from "./errors.js";
import { createRuntime } from "./index.js";
import { readPlan } from "./step-plan.js";
import { ADD_TOOL, QUESTION, transcriptFaults } from "./test-support/transcript.js";

const call = (id: string, name: string, args: Record<string, unknown>) => ({
  toolCalls: [{ id, name, arguments: JSON.stringify(args) }],
});
const MUL_TOOL: ToolDefinition = {
  type: "function",
  function: {
    name: "mul",
    description: "Multiply two numbers",
    parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } },
  },
};
const READ_TOOL: ToolDefinition = {
  type: "function",
  function: { name: "fs.read", parameters: { type: "object", properties: { path: { type: "string" } } } },
};

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Body = { tool_choice?: unknown; tools?: Array<{ function: { name: string } }> };
const bodies = (): Body[] => (server?.chatRequests ?? []).map((r) => r.body as Body);
const named = (name: string) => ({ type: "function" as const, function: { name } });

describe("beforeStep's plan: a step's tool_choice", () => {
  it("sends each step's tool_choice as planned, and none on a step that plans none", async () => {
    server = await startServer({
      replies: [call("c1", "add", { a: 1, b: 2 }), call("c2", "add", { a: 3, b: 4 }), { content: "7" }],
    });
    const plans: Record<number, StepPlan> = { 2: { toolChoice: "required" }, 3: { toolChoice: "none" } };
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: ({ args }) => Number(args.a) + Number(args.b),
      beforeStep: (_messages, step) => plans[step],
    });
    expect(bodies().map((b) => b.tool_choice)).toEqual([undefined, "required", "none"]);
    // The tools still go with "none": the server is told, not left to guess.
    expect(bodies()[2]?.tools?.map((t) => t.function.name)).toEqual(["add"]);
    expect(result).toMatchObject({ stopReason: "answered", steps: 3 });
  });

  it("sends a named choice under the wire's name of a renamed tool; dispatch sees the host's", async () => {
    server = await startServer({ replies: [call("c1", "fs_read", { path: "a.txt" }), { content: "read" }] });
    const dispatched: string[] = [];
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [READ_TOOL, ADD_TOOL],
      dispatch: ({ name }) => {
        dispatched.push(name);
        return "text";
      },
      beforeStep: (_messages, step) => (step === 1 ? { toolChoice: named("fs.read") } : undefined),
    });
    expect(bodies()[0]?.tool_choice).toEqual(named("fs_read"));
    expect(bodies()[1]?.tool_choice).toBeUndefined();
    expect(dispatched).toEqual(["fs.read"]);
  });

  it("refuses a bad plan before anything is sent, naming what was wrong", async () => {
    server = await startServer({ replies: [{ content: "never" }] });
    const cases: Array<[unknown, RegExp]> = [
      [{ toolChoice: "never" }, /toolChoice must be "auto", "none", "required" or/],
      [{ toolChoice: { type: "function", function: {} } }, /toolChoice must be/],
      [{ toolChoice: named("nope") }, /names the tool "nope", which this run does not have \(add\)/],
      [{ toolchoice: "none" }, /unknown field "toolchoice"/],
      [{ stop: "yes" }, /stop must be true or false/],
      [{ messages: "hi" }, /messages must be an array/],
      [42, /must return an array of messages, a step plan/],
    ];
    for (const [plan, words] of cases) {
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "sim" },
          messages: QUESTION,
          tools: [ADD_TOOL],
          dispatch: () => 0,
          beforeStep: () => plan as StepPlan,
        })
        .catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error), String(plan)).toBe(true);
      expect((error as Error).message).toMatch(words);
    }
    expect(server.chatRequests).toHaveLength(0);
  });

  it("refuses a plan before any hook of the step is asked", async () => {
    server = await startServer({ replies: [{ content: "never" }] });
    const asked: string[] = [];
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: () => 0,
        hooks: {
          run: async (event) => {
            asked.push(event);
            return [];
          },
        },
        beforeStep: () => ({ toolChoice: named("nope") }),
      })
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/"nope"/);
    expect(asked).toEqual([]);
    expect(server.chatRequests).toHaveLength(0);
  });

  it("on demand, refuses a named choice the first step of an exclusive shortlist does not declare", async () => {
    server = await startServer({ replies: [{ content: "never" }] });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: "ondemand" },
        messages: QUESTION,
        tools: [ADD_TOOL, MUL_TOOL],
        preselected: ["add"],
        dispatch: () => 0,
        beforeStep: (_messages, step) => (step === 1 ? { toolChoice: named("mul") } : undefined),
      })
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/"mul", which the first step of an exclusive preselection/);
    expect(server.chatRequests).toHaveLength(0);
  });

  it("refuses 'required' on a step that declares no tools", async () => {
    server = await startServer({ replies: [{ content: "never" }] });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        dispatch: () => 0,
        beforeStep: () => ({ toolChoice: "required" }),
      })
      .catch((e: unknown) => e);
    expect(LoopOptionError.isInstance((error as Error).cause)).toBe(true);
    expect((error as Error).message).toMatch(/"required" on a step that declares no tools/);
    expect(server.chatRequests).toHaveLength(0);
  });

  it("on demand, loads a catalogued tool a named choice asks for, and declares it on that step", async () => {
    server = await startServer({ replies: [call("c1", "mul", { a: 2, b: 3 }), { content: "6" }] });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: "ondemand" },
      messages: QUESTION,
      tools: [ADD_TOOL, MUL_TOOL],
      dispatch: ({ args }) => Number(args.a) * Number(args.b),
      beforeStep: (_messages, step) => (step === 1 ? { toolChoice: named("mul") } : undefined),
    });
    expect(bodies()[0]?.tool_choice).toEqual(named("mul"));
    expect(bodies()[0]?.tools?.map((t) => t.function.name)).toEqual(["load_tools", "mul"]);
    expect(result.loaded).toEqual(["mul"]);
    expect(result.metrics.toolsLoaded).toBe(1);
  });

  it("proxied, sends a named choice as call_tool: the tool is reached only through it", async () => {
    server = await startServer({
      replies: [call("c1", "call_tool", { name: "mul", arguments: { a: 2, b: 3 } }), { content: "6" }],
    });
    const dispatched: string[] = [];
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: "proxy" },
      messages: QUESTION,
      tools: [ADD_TOOL, MUL_TOOL],
      dispatch: ({ name, args }) => {
        dispatched.push(name);
        return Number(args.a) * Number(args.b);
      },
      beforeStep: (_messages, step) => (step === 1 ? { toolChoice: named("mul") } : undefined),
    });
    expect(bodies()[0]?.tool_choice).toEqual(named("call_tool"));
    expect(bodies()[0]?.tools?.map((t) => t.function.name)).toEqual(["call_tool", "load_tools"]);
    expect(dispatched).toEqual(["mul"]);
  });

  it("on a 'none' step, does not run tool calls the model wrote into its answer as text", async () => {
    // llama.cpp renders the tools under tool_choice "none" too, and a model may write the markup.
    const markup = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>';
    server = await startServer({ replies: [{ content: markup }] });
    const dispatched: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: ({ name }) => {
        dispatched.push(name);
        return 5;
      },
      beforeStep: () => ({ toolChoice: "none" }),
    });
    expect(dispatched).toEqual([]);
    expect(result.turn.content).toBe(markup);
    expect(result.steps).toBe(1);
  });
});

describe("a refused tool_choice", () => {
  // OpenRouter's 404 when no provider of the model takes the value, as recorded.
  const refused = {
    type: "error",
    status: 404,
    body: readFixture("errors/openrouter/404-no-endpoints-support-tool-choice.message.txt"),
  } as const;

  it("is re-sent without it, and the model's latch keeps the next run from sending it ('none' then goes without tools)", async () => {
    server = await startServer();
    server.enqueue(refused, call("c1", "add", { a: 1, b: 2 }), { content: "3" }, { content: "done" });
    const runtime = createRuntime();
    const notices: string[] = [];
    const run = (choice: StepPlan["toolChoice"]) =>
      runtime.runAgentLoop({
        config: { baseUrl: (server as TestServer).baseUrl, model: "z-ai/glm-4.5-air" },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: ({ args }) => Number(args.a) + Number(args.b),
        onEvent: (e) => (e.kind === "notice" ? notices.push(e.text) : undefined),
        beforeStep: () => ({ toolChoice: choice }),
      });
    const first = await run("required");
    expect(first.turn.content).toBe("3");
    expect(bodies().map((b) => b.tool_choice)).toEqual(["required", undefined, undefined]);
    expect(bodies()[1]?.tools).toHaveLength(1);
    expect(notices.join("\n")).toMatch(/refused tool_choice/);
    // Every earlier call of a transcript is answered, so a step without tools is still a request it takes.
    const second = await run("none");
    expect(second.turn.content).toBe("done");
    expect(bodies()[3]).not.toHaveProperty("tool_choice");
    expect(bodies()[3]).not.toHaveProperty("tools");
    expect(server.chatRequests).toHaveLength(4);
  });
});

describe("a vLLM started without --enable-auto-tool-choice", () => {
  it("refuses a run whose tools go with the default choice, and answers one whose steps plan 'none'", async () => {
    server = await startServer({
      personality: vllmPersonality({ autoToolChoice: false }),
      replies: () => ({ content: "Five." }),
    });
    const run = (plan?: StepPlan) =>
      createRuntime().runAgentLoop({
        config: { baseUrl: (server as TestServer).baseUrl, model: "sim", maxRetries: 0 },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: () => 5,
        ...(plan ? { beforeStep: () => plan } : {}),
      });
    await expect(run()).rejects.toThrow(/400/);
    const answered = await run({ toolChoice: "none" });
    expect(answered.turn.content).toBe("Five.");
    expect(bodies().at(-1)?.tool_choice).toBe("none");
  });
});

describe("beforeStep's plan: ending the run after a step", () => {
  const three = {
    toolCalls: [
      { id: "c1", name: "add", arguments: '{"a":1,"b":1}' },
      { id: "c2", name: "add", arguments: '{"a":2,"b":2}' },
      { id: "c3", name: "add", arguments: '{"a":3,"b":3}' },
    ],
  };

  it("ends after a step's parallel calls, every one run and answered, with the normal result", async () => {
    server = await startServer({ replies: [three, { content: "never asked" }] });
    let stopAsked = false;
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      parallel: true,
      // The quickest call asks for the stop while the others still run.
      dispatch: async ({ args }) => {
        const a = Number(args.a);
        await new Promise((resolve) => setTimeout(resolve, a === 1 ? 0 : 30 * a));
        if (a === 1) stopAsked = true;
        return a + Number(args.b);
      },
      beforeStep: () => (stopAsked ? { stop: true } : undefined),
    });
    expect(result.stopReason).toBe("stopped");
    expect(result.steps).toBe(1);
    expect(result.turn.finishReason).toBe("tool_calls");
    expect(server.chatRequests).toHaveLength(1);
    const answers = result.messages.filter(
      (m): m is Extract<ChatMessage, { role: "tool" }> => m.role === "tool",
    );
    expect(answers.map((m) => [m.tool_call_id, m.content])).toEqual([
      ["c1", "2"],
      ["c2", "4"],
      ["c3", "6"],
    ]);
    expect(transcriptFaults(result.messages)).toEqual([]);
    expect(result.toolCalls.map((c) => c.ok)).toEqual([true, true, true]);
  });

  it("lets the step's later calls run when the stop is asked during the step (it ends after, not inside)", async () => {
    server = await startServer({ replies: [three, { content: "never asked" }] });
    const ran: string[] = [];
    let stopAsked = false;
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: ({ id, args }) => {
        ran.push(id);
        stopAsked = true;
        return Number(args.a) + Number(args.b);
      },
      beforeStep: () => (stopAsked ? { stop: true } : undefined),
    });
    expect(ran).toEqual(["c1", "c2", "c3"]);
    expect(result).toMatchObject({ stopReason: "stopped", steps: 1 });
    expect(server.chatRequests).toHaveLength(1);
  });

  it("refuses a stop before the first request, and a stop that also plans the request it cancels", async () => {
    server = await startServer({ replies: [call("c1", "add", { a: 1, b: 2 }), { content: "never" }] });
    const cases: Array<[(step: number) => StepPlan | undefined, RegExp, number]> = [
      [() => ({ stop: true }), /stop before the first request/, 0],
      [(step) => (step === 2 ? { stop: true, toolChoice: "none" } : undefined), /sends no request/, 1],
    ];
    for (const [plan, words, sent] of cases) {
      const before = server.chatRequests.length;
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "sim" },
          messages: QUESTION,
          tools: [ADD_TOOL],
          dispatch: () => 3,
          beforeStep: (_messages, step) => plan(step),
        })
        .catch((e: unknown) => e);
      expect((error as Error).message).toMatch(words);
      expect(server.chatRequests.length - before).toBe(sent);
    }
  });
});

describe("readPlan (what beforeStep returned)", () => {
  it("names a bigint or a self-referring value in the LoopOptionError instead of failing to show it", () => {
    const loop: Record<string, unknown> = { type: "function" };
    loop.function = loop;
    const refusals = [{ stop: 1n }, { toolChoice: 5n }, { toolChoice: loop }].map((plan) => {
      try {
        readPlan(plan, 2);
      } catch (error) {
        return error;
      }
      return undefined;
    });
    expect(refusals.map((e) => LoopOptionError.isInstance(e))).toEqual([true, true, true]);
    expect((refusals[0] as Error).message).toContain("stop: 1n");
    expect((refusals[1] as Error).message).toContain("it was 5n");
    expect((refusals[2] as Error).message).toContain("[Circular *1]");
  });

  it("reads anything into a plan or refuses it: a record with LoopOptionError, anything else with the loop's TypeError; a choice it keeps is one buildBody takes", () => {
    const circular = fc.constant(null).map(() => {
      const value: Record<string, unknown> = { type: "function" };
      value.function = value;
      return value;
    });
    const odd = fc.oneof(fc.bigInt(), circular, fc.anything({ withBigInt: true }));
    const choice = fc.oneof(
      fc.constantFrom("auto", "none", "required", "never", ""),
      fc.record({ type: fc.constantFrom("function", "tool"), function: fc.record({ name: fc.string() }) }),
      odd,
    );
    const plan = fc.oneof(
      odd,
      fc.record(
        {
          messages: fc.oneof(fc.constant([]), odd),
          toolChoice: choice,
          stop: fc.oneof(fc.boolean(), odd),
        },
        { requiredKeys: [] },
      ),
    );
    fc.assert(
      fc.property(plan, fc.integer({ min: 1, max: 3 }), (value, step) => {
        let read: ReturnType<typeof readPlan> | undefined;
        let thrown: unknown;
        try {
          read = readPlan(value, step);
        } catch (error) {
          thrown = error;
        }
        // Refused with the error the loop documents for what it got, never a crash from inside.
        const isRecord = typeof value === "object" && value !== null && !Array.isArray(value);
        if (thrown !== undefined && isRecord) expect(LoopOptionError.isInstance(thrown)).toBe(true);
        if (thrown !== undefined && !isRecord) {
          expect(thrown).toBeInstanceOf(TypeError);
          expect((thrown as Error).message).toMatch(/^beforeStep must return/);
        }
        // What it read is what a request can carry.
        const choice = read?.toolChoice;
        expect(choice === undefined || isToolChoice(choice)).toBe(true);
        expect(read?.stop !== true || step > 1).toBe(true);
        expect(read?.messages === undefined || Array.isArray(read.messages)).toBe(true);
      }),
    );
  });
});
