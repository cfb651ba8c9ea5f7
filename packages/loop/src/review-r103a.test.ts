/**
 * r103a: the loop against the seed and against hostile input. A dedupe predicate that throws ends
 * the step with nothing run, and the run's error says it was the predicate. The loop's own words in
 * an answer name a tool as the model was told it (the wire's name, not the host's), and a name the
 * model made up is echoed cut and escaped, never whole. The seed's `onTurn` is an option the loop
 * reads: each step's turn, as the result's `turn` reads it, not awaited. What `beforeStep` answered that
 * cannot even be read (a revoked Proxy, a throwing getter) is refused naming `beforeStep`.
 */
import type { Turn } from "@loopwright/stream";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError, failedRun, LoopOptionError } from "./errors.js";
import { createRuntime } from "./index.js";
import { NOT_RUN } from "./run-calls.js";
import { tool } from "./test-support/discovery.js";
import { ADD_TOOL, QUESTION, unanswered } from "./test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a dedupeToolCalls predicate that throws", () => {
  it("ends the run with an error naming the predicate, its own error the cause, every call answered not run", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "d1", name: "add", arguments: '{"a":1,"b":1}' },
            { id: "d2", name: "add", arguments: '{"a":2,"b":2}' },
          ],
        },
      ],
    });
    const thrown = new Error("the annotations lookup failed");
    let ran = 0;
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        tools: [ADD_TOOL],
        dispatch: () => ++ran,
        dedupeToolCalls: () => {
          throw thrown;
        },
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe("dedupeToolCalls threw: the annotations lookup failed");
    expect((error as Error).cause).toBe(thrown);
    expect(ran).toBe(0);
    const run = failedRun(error)!;
    expect(unanswered(run.messages)).toEqual([]);
    expect(run.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([NOT_RUN, NOT_RUN]);
  });
});

/** The tool messages of a request the server received (the second by default): what the model read back. */
function answersSent(server: TestServer, request = 1): string[] {
  const body = server.chatRequests[request]?.body as
    | { messages: { role: string; content: string }[] }
    | undefined;
  return (body?.messages ?? []).filter((m) => m.role === "tool").map((m) => m.content);
}

describe("the loop's own words about a tool the host named otherwise on the wire", () => {
  it("name it as the request declared it (fs_read), never by the host's name the model never saw (fs.read)", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "f1", name: "fs_read", arguments: '{"path":"a"}' },
            { id: "f2", name: "fs_read", arguments: '{"path":"b"}' },
          ],
        },
        { toolCalls: [{ id: "f3", name: "fs_read", arguments: '{"path":"c' }], finishReason: null },
        { content: "done" },
      ],
    });
    const dispatched: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [tool("fs.read", "Read a file", { path: { type: "string" } })],
      dispatch: ({ name, args }) => {
        dispatched.push(name);
        if (args.path === "a") return 1n;
        throw "";
      },
    });
    // dispatch, and the transcript handed back, keep the host's name.
    expect(dispatched).toEqual(["fs.read", "fs.read"]);
    expect(result.toolCalls.map((c) => c.name)).toEqual(["fs.read", "fs.read", "fs.read"]);
    const sent = answersSent(server, 2);
    expect(sent).toEqual([
      "Error: the fs_read tool returned a bigint, which JSON cannot hold; return a string or plain data.",
      "Error: the fs_read tool failed without saying why.",
      expect.stringContaining("the arguments for the fs_read call may be cut off"),
    ]);
  });
});

describe("a tool name the model made up, echoed in the loop's own words", () => {
  it("leaves a declared tool's name whole, however long: only a name no tool has is cut", async () => {
    const long = `read_${"x".repeat(59)}`;
    server = await startServer({
      replies: [{ toolCalls: [{ id: "w1", name: long, arguments: "{}" }] }, { content: "done" }],
    });
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [tool(long, "Read")],
      dispatch: () => {
        throw "";
      },
    });
    expect(answersSent(server)).toEqual([`Error: the ${long} tool failed without saying why.`]);
  });

  it("is cut with its length said, never sent back whole: a call named with Harmony markup and 100,000 characters after it", async () => {
    const name = `<|${"x".repeat(100_000)}`;
    server = await startServer({
      replies: [{ toolCalls: [{ id: "h1", name, arguments: "{}" }] }, { content: "done" }],
    });
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 1,
    });
    const [answer] = answersSent(server);
    expect(answer).toBe(
      `This call named no tool (only "<|${"x".repeat(58)}… (100002 characters)"), so nothing was run. Call one of the declared tools by its name.`,
    );
  });

  it("has its bidirectional and control characters written \\uXXXX, so they cannot turn the loop's words around", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "b1", name: "add\u202e", arguments: '{"a":1,"b":1}' },
            { id: "b2", name: "<|\u2066\u001b[2J", arguments: "{}" },
          ],
        },
        { content: "done" },
      ],
    });
    await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => {
        throw "";
      },
    });
    expect(answersSent(server)).toEqual([
      'Error: the "add\\u202e" tool failed without saying why.',
      'This call named no tool (only "<|\\u2066\\u001b[2J"), so nothing was run. Call one of the declared tools by its name.',
    ]);
  });
});

describe("onTurn, as the seed hands a host each turn", () => {
  it("is told each step's turn once, recovered calls folded in, under the ids and names the transcript keeps, never awaited", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "t", name: "add", arguments: "{'a': 1, 'b': 1}" },
            { id: "t", name: "add", arguments: '{"a":2,"b":2}' },
          ],
        },
        { content: '<tool_call>{"name": "add", "arguments": {"a": 3, "b": 3}}</tool_call>' },
        { content: "All done." },
      ],
    });
    const told: [Turn, number][] = [];
    const order: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: ({ args }) => {
        order.push("dispatch");
        return (args.a as number) + (args.b as number);
      },
      onTurn: (turn, step) => {
        order.push(`turn ${step}`);
        told.push([structuredClone(turn), step]);
        // Rewriting what it was told changes nothing the run keeps.
        turn.content = "rewritten";
        for (const call of turn.toolCalls) if (call.type === "function") call.function.name = "rewritten";
        return new Promise(() => {}); // never settles: not awaited
      },
    });
    expect(told.map(([, step]) => step)).toEqual([1, 2, 3]);
    expect(order).toEqual(["turn 1", "dispatch", "dispatch", "turn 2", "dispatch", "turn 3"]);
    expect(result.turn.content).toBe("All done.");
    const calls = (turn: Turn | undefined) =>
      (turn?.toolCalls ?? []).map((c) =>
        c.type === "function" ? [c.id, c.function.name, c.function.arguments] : [],
      );
    // Step 1: the repeated id made distinct, as the transcript keeps it; the arguments as the model wrote them.
    expect(calls(told[0]?.[0])).toEqual([
      ["t", "add", "{'a': 1, 'b': 1}"],
      ["t_1", "add", '{"a":2,"b":2}'],
    ]);
    // Step 2: the call written as text, recovered; the text what is left of it.
    expect(calls(told[1]?.[0])).toEqual([["call_recovered_0", "add", '{"a":3,"b":3}']]);
    expect(told[1]?.[0].content).toBe("");
    expect(told[2]?.[0].content).toBe("All done.");
    expect(server.chatRequests).toHaveLength(3);
    const secondSent = answersSent(server, 2);
    expect(secondSent).toEqual(["2", "4", "6"]);
  });

  it("a throwing onTurn neither ends the run nor leaves a call unanswered; one that is no function is named", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "x1", name: "add", arguments: '{"a":1,"b":2}' }] }, { content: "3" }],
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 3,
      onTurn: () => {
        throw new Error("the renderer broke");
      },
    });
    expect(result.turn.content).toBe("3");
    expect(unanswered(result.messages)).toEqual([]);
    const refused = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: QUESTION,
        onTurn: "log" as never,
      })
      .catch((e: unknown) => e);
    expect((refused as Error).message).toContain("onTurn must be a function");
  });
});

describe("a beforeStep answer that cannot be read", () => {
  const revoked = () => {
    const { proxy, revoke } = Proxy.revocable<unknown[]>([], {});
    revoke();
    return proxy;
  };
  it.each([
    ["a revoked Proxy", () => revoked()],
    ["a plan whose messages are a revoked Proxy", () => ({ messages: revoked() })],
    [
      "a plan whose messages getter throws",
      () => ({
        get messages(): never {
          throw new Error("the store is closed");
        },
      }),
    ],
    [
      "a transcript holding a message whose role getter throws",
      () => [
        {
          get role(): never {
            throw new Error("the store is closed");
          },
          content: "hi",
        },
      ],
    ],
  ])(
    "(%s) ends the run with a LoopOptionError naming beforeStep, before anything is sent",
    async (_, answer) => {
      server = await startServer({ replies: [{ content: "never asked" }] });
      const error = await createRuntime()
        .runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "sim" },
          messages: QUESTION,
          beforeStep: answer as never,
        })
        .catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error)).toBe(true);
      const cause = (error as Error).cause;
      expect(LoopOptionError.isInstance(cause)).toBe(true);
      expect((cause as LoopOptionError).option).toBe("beforeStep");
      expect((error as Error).message).toMatch(/^beforeStep returned a value that could not be read \(.+\)/);
      expect(server.chatRequests).toHaveLength(0);
      expect(failedRun(error)?.messages).toEqual(QUESTION);
    },
  );
});

describe("an onMessage that returns what cannot be read", () => {
  it("is ignored as any answer of onMessage is: the run goes on to its answer", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "m1", name: "add", arguments: '{"a":1,"b":2}' }] }, { content: "3" }],
    });
    const told: string[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: QUESTION,
      tools: [ADD_TOOL],
      dispatch: () => 3,
      onMessage: (message) => {
        told.push(message.role);
        const { proxy, revoke } = Proxy.revocable({}, {});
        revoke();
        return proxy;
      },
    });
    expect(result.turn.content).toBe("3");
    expect(told).toEqual(["assistant", "tool", "assistant"]);
  });
});

describe("messages that cannot be read", () => {
  type Config = { baseUrl: string; model: string };
  it.each([
    [
      "a revoked Proxy",
      (config: Config) => {
        const { proxy, revoke } = Proxy.revocable<unknown[]>([], {});
        revoke();
        return { config, messages: proxy };
      },
    ],
    [
      "a getter that throws",
      (config: Config) =>
        Object.defineProperty({ config }, "messages", {
          enumerable: true,
          get() {
            throw new Error("the session store is closed");
          },
        }),
    ],
  ])(
    "(%s) are refused as everything the loop throws is: an AgentLoopError carrying the run",
    async (_, given) => {
      server = await startServer({ replies: [{ content: "never asked" }] });
      const error = await createRuntime()
        .runAgentLoop(given({ baseUrl: server.baseUrl, model: "sim" }) as never)
        .catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error)).toBe(true);
      expect(failedRun(error)?.messages).toEqual([]);
      expect(server.chatRequests).toHaveLength(0);
    },
  );
});
