// The Agent's host hooks read strictly, over HTTP with the testkit: a toolChoice or convertToLlm
// written async (refused by name, a rejection never unhandled), beforeToolCall answers of the wrong
// shape (fail closed), and a stop while transformContext is pending.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Agent, type AgentEvent, type AgentTool, type ChatMessageLike } from "./test-exports.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `body` with a spy on `unhandledRejection`, then answers what it caught (after a settle). */
async function unhandledDuring(body: () => Promise<void>): Promise<unknown[]> {
  const caught: unknown[] = [];
  const spy = (reason: unknown): void => {
    caught.push(reason);
  };
  process.on("unhandledRejection", spy);
  try {
    await body();
    await sleep(50);
  } finally {
    process.off("unhandledRejection", spy);
  }
  return caught;
}

describe("a hook that must answer synchronously, written async", () => {
  it("toolChoice: the run ends with an error naming it, and its rejection is never unhandled", async () => {
    server = await startServer({ replies: [{ content: "never asked" }] });
    let status: string | undefined;
    let error: string | undefined;
    const unhandled = await unhandledDuring(async () => {
      const agent = new Agent({
        config: { baseUrl: server!.baseUrl, model: "sim" },
        // A policy looked up in a store, and the store is down.
        toolChoice: (async () => {
          throw new Error("policy lookup failed");
        }) as never,
      });
      ({ status, error } = await agent.prompt("Hello"));
    });
    expect(unhandled).toEqual([]);
    expect(status).toBe("error");
    expect(error).toBe(
      'toolChoice returned a Promise; it must answer synchronously: "auto", "none", "required", { type: "function", function: { name } } or undefined.',
    );
    expect(server.chatRequests).toHaveLength(0);
  });

  it("convertToLlm: the run ends with an error naming it (a promise, or no array), never unhandled", async () => {
    server = await startServer({ replies: [{ content: "never asked" }] });
    const results: { status: string; error?: string | undefined }[] = [];
    const unhandled = await unhandledDuring(async () => {
      for (const convertToLlm of [
        async () => {
          throw new Error("store down");
        },
        async (messages: unknown) => messages,
        () => "not a list",
      ]) {
        const agent = new Agent({
          config: { baseUrl: server!.baseUrl, model: "sim" },
          convertToLlm: convertToLlm as never,
        });
        const { status, error } = await agent.prompt("Hello");
        results.push({ status, error });
      }
    });
    expect(unhandled).toEqual([]);
    expect(results).toEqual([
      {
        status: "error",
        error:
          "convertToLlm returned a Promise; it must answer synchronously, with the array of chat messages to send.",
      },
      {
        status: "error",
        error:
          "convertToLlm returned a Promise; it must answer synchronously, with the array of chat messages to send.",
      },
      {
        status: "error",
        error: 'convertToLlm must return an array of chat messages, and returned a string ("not a list").',
      },
    ]);
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("beforeToolCall answers of the wrong shape", () => {
  const cases: [string, unknown, RegExp][] = [
    ["a number", 42, /beforeToolCall answered a number \(42\)/],
    ["a string", "deny", /beforeToolCall answered a string \("deny"\)/],
    [
      "block: 1",
      { block: 1, reason: "no" },
      /Not run: beforeToolCall answered block: a number \(1\), not true or false, read as a block\./,
    ],
    [
      'block: "true"',
      { block: "true", reason: "no" },
      /block: a string \("true"\), not true or false, read as a block/,
    ],
    ["args as JSON text", { args: '{"path":"/tmp/safe"}' }, /args: a string .*not an object of arguments/],
    // A "no" in the host's own words, with a key the contract does not have: not run (r31 #4).
    [
      "{ blocked: true, reason }",
      { blocked: true, reason: "not allowed" },
      /Not run: beforeToolCall answered an object with "blocked", not a field it reads \(block, reason, terminate, args; did you mean "block"\?\)\.$/,
    ],
    [
      "{ Block: true }",
      { Block: true },
      /beforeToolCall answered an object with "Block", not a field it reads \(block, reason, terminate, args; did you mean "block"\?\)/,
    ],
    [
      "{ allow: false }",
      { allow: false },
      /beforeToolCall answered an object with "allow", not a field it reads \(block, reason, terminate, args\)/,
    ],
    [
      '{ decision: "deny" }',
      { decision: "deny", reason: "not allowed" },
      /beforeToolCall answered an object with "decision", not a field it reads \(block, reason, terminate, args\)/,
    ],
  ];
  for (const [label, answer, reads] of cases) {
    it(`${label}: the call is answered, not run, and the host and the model are told why`, async () => {
      server = await startServer({
        replies: [
          { toolCalls: [{ id: "c1", name: "rm", arguments: '{"path":"/etc/passwd"}' }] },
          { content: "I could not delete it." },
        ],
      });
      const ran: unknown[] = [];
      const rm: AgentTool = {
        name: "rm",
        description: "Deletes a file",
        parameters: { type: "object", properties: { path: { type: "string" } } },
        execute: (args) => {
          ran.push(args);
          return "deleted";
        },
      };
      const agent = new Agent({
        config: { baseUrl: server.baseUrl, model: "sim" },
        tools: [rm],
        beforeToolCall: () => answer as never,
      });
      const notices: string[] = [];
      agent.subscribe((event: AgentEvent) => {
        if (event.type === "notice") notices.push(event.text);
      });
      const result = await agent.prompt("Delete /etc/passwd");
      expect(result.status).toBe("ok");
      expect(ran).toEqual([]);
      const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
      const toolMessage = sent.find((m) => m.role === "tool") as { content: string };
      expect(toolMessage.content).toMatch(reads);
      expect(toolMessage.content).toMatch(/^Error: Not run: beforeToolCall answered /);
      expect(notices.some((text) => reads.test(text))).toBe(true);
    });
  }

  it("still runs a call for undefined, null, block: false and { args } given as an object", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "c1", name: "rm", arguments: '{"path":"a"}' },
            { id: "c2", name: "rm", arguments: '{"path":"b"}' },
            { id: "c3", name: "rm", arguments: '{"path":"c"}' },
            { id: "c4", name: "rm", arguments: '{"path":"d"}' },
          ],
        },
        { content: "Done." },
      ],
    });
    const ran: unknown[] = [];
    const answers: Record<string, unknown> = {
      c1: undefined,
      c2: null,
      // A policy engine's verdict spread in: its own `block` is read, its other keys named (r34 #4).
      c3: { block: false, reason: null, ruleId: "r-7" },
      c4: { args: { path: "/tmp/safe" } },
    };
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      toolExecution: "sequential",
      tools: [
        {
          name: "rm",
          description: "Deletes a file",
          parameters: { type: "object", properties: { path: { type: "string" } } },
          execute: (args) => {
            ran.push(args);
            return "deleted";
          },
        },
      ],
      beforeToolCall: ({ toolCall }) => answers[toolCall.id] as never,
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    const result = await agent.prompt("Delete them");
    expect(result.status).toBe("ok");
    expect(ran).toEqual([{ path: "a" }, { path: "b" }, { path: "c" }, { path: "/tmp/safe" }]);
    expect(notices).toEqual([
      'beforeToolCall answered an object with "ruleId", not a field it reads (block, reason, terminate, args); its block: false was read.',
    ]);
  });

  it("blocks with the host's reason for block: true beside keys it does not read, naming them", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "rm", arguments: '{"path":"/etc/passwd"}' }] },
        { content: "I could not delete it." },
      ],
    });
    const ran: unknown[] = [];
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        {
          name: "rm",
          description: "Deletes a file",
          parameters: { type: "object", properties: { path: { type: "string" } } },
          execute: (args) => {
            ran.push(args);
            return "deleted";
          },
        },
      ],
      beforeToolCall: () => ({ block: true, reason: "Policy forbids it.", auditId: "a-1" }) as never,
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    expect((await agent.prompt("Delete /etc/passwd")).status).toBe("ok");
    expect(ran).toEqual([]);
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    expect((sent.find((m) => m.role === "tool") as { content: string }).content).toBe(
      "Error: Policy forbids it.",
    );
    expect(notices).toEqual([
      'beforeToolCall answered an object with "auditId", not a field it reads (block, reason, terminate, args); its block: true was read.',
    ]);
  });
});

describe("afterToolCall answers with keys it does not read (r31 #4)", () => {
  it("tells the host of keys it does not read and uses the fields it does (a redacting hook's result with its own audit field); a bare value is not used", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "c1", name: "get", arguments: '{"n":1}' },
            { id: "c2", name: "get", arguments: '{"n":2}' },
            { id: "c3", name: "get", arguments: '{"n":3}' },
            { id: "c4", name: "get", arguments: '{"n":4}' },
          ],
        },
        { content: "Done." },
      ],
    });
    const answers: Record<string, unknown> = {
      // A misspelt replacement: nothing it can read, so the result stands.
      c1: { results: "REPLACED" },
      c2: { Result: "REPLACED", error: true },
      c3: "REPLACED",
      // A redacting hook with its own audit field: the result it gives is used (r34 #1).
      c4: { result: "REPLACED", auditId: "a-1" },
    };
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        {
          name: "get",
          description: "Gets it",
          parameters: { type: "object", properties: {} },
          execute: () => "got",
        },
      ],
      afterToolCall: ({ toolCall }) => answers[toolCall.id] as never,
    });
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    const result = await agent.prompt("Get them");
    expect(result.status).toBe("ok");
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    const results = sent.filter((m) => m.role === "tool").map((m) => (m as { content: string }).content);
    expect(results).toEqual(["got", "got", "got", "REPLACED"]);
    expect(notices).toEqual([
      'afterToolCall answered an object with "results", not a field it reads (result, isError, terminate; did you mean "result"?) for the call to get; its result, isError and terminate were read.',
      'afterToolCall answered an object with "Result", "error", not fields it reads (result, isError, terminate; did you mean "result" for "Result", "isError" for "error"?) for the call to get; its result, isError and terminate were read.',
      'afterToolCall answered a string ("REPLACED"), not undefined or { result, isError, terminate } for the call to get; the tool\'s result is kept.',
      'afterToolCall answered an object with "auditId", not a field it reads (result, isError, terminate) for the call to get; its result, isError and terminate were read.',
    ]);
  });
});

describe("a stop while transformContext is pending", () => {
  for (const step of [1, 2]) {
    it(`ends the run at once, "aborted", on step ${step}, whatever the hook does later`, async () => {
      server = await startServer({
        replies: [{ toolCalls: [{ id: "c1", name: "get", arguments: "{}" }] }, { content: "never asked" }],
      });
      let late = false;
      const agent = new Agent({
        config: { baseUrl: server.baseUrl, model: "sim" },
        tools: [
          {
            name: "get",
            description: "Gets it",
            parameters: { type: "object", properties: {} },
            execute: () => "got",
          },
        ],
        // A store read that ignores the signal and stalls, then fails.
        transformContext: (messages, _signal, info) =>
          info.step === step
            ? sleep(1_500).then(() => {
                late = true;
                throw new Error("late failure");
              })
            : messages,
      });
      const started = Date.now();
      const running = agent.prompt("Get it");
      setTimeout(() => agent.abort(), 200);
      const unhandled = await unhandledDuring(async () => {
        const result = await running;
        expect(result.status).toBe("aborted");
        expect(Date.now() - started).toBeLessThan(1_200);
        await sleep(1_500);
      });
      expect(late).toBe(true);
      expect(unhandled).toEqual([]);
      expect(server.chatRequests).toHaveLength(step - 1);
      // Every call the transcript holds is answered.
      const messages = agent.messages as ChatMessageLike[];
      const calls = messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : []));
      const answered = new Set(messages.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : [])));
      expect(calls.every((call) => answered.has(call.id))).toBe(true);
    });
  }
});
