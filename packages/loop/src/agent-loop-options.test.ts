import type { RunEvent } from "@loopwright/events";
import { readFixture, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, failedRun, LoopOptionError } from "./errors.js";
import { runAgentLoop } from "./index.js";

const tool = (name: string, properties: Record<string, unknown> = {}): ToolDefinition => ({
  type: "function",
  function: { name, description: name, parameters: { type: "object", properties } },
});
const TOOLS = [
  tool("add", { a: { type: "number" }, b: { type: "number" } }),
  tool("sleep"),
  tool("send_email"),
];
const question: ChatMessage[] = [{ role: "user", content: "go" }];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("runAgentLoop options", () => {
  it("runs a call the server's parser left in the reply as text, with a notice", async () => {
    server = await startServer({
      replies: [
        { content: 'Let me add.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>' },
        { content: "It is 5." },
      ],
    });
    const events: RunEvent[] = [];
    const seen: unknown[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      dispatch: ({ name, args }) => {
        seen.push({ name, args });
        return 5;
      },
      onEvent: (e) => events.push(e),
    });
    expect(seen).toEqual([{ name: "add", args: { a: 2, b: 3 } }]);
    expect(result.messages[1]).toMatchObject({
      role: "assistant",
      content: "Let me add.",
      tool_calls: [{ id: "call_recovered_0", function: { name: "add", arguments: '{"a":2,"b":3}' } }],
    });
    expect(events.some((e) => e.kind === "notice" && /written into the reply as text/.test(e.text))).toBe(
      true,
    );
  });

  it("never runs a call written as text that the token ceiling cut (its brackets closed up)", async () => {
    // {"a": 2, "b": 3 cut from {"a": 2, "b": 300}: recovered, closed up and run with b = 3.
    const cut = 'Adding.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3';
    server = await startServer({ replies: [{ content: cut, finishReason: "length" }, { content: "again" }] });
    const seen: unknown[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      dispatch: ({ args }) => {
        seen.push(args);
        return 5;
      },
    });
    expect(seen).toEqual([]);
    expect(result.toolCalls).toEqual([]);
    expect(result.turn.content).toBe(cut);
  });

  it("recovers the Hermes call a real vLLM build left in content, and leaves text alone when told not to", async () => {
    // Stored JSON-escaped, as it was pasted: unescape it into the content string the server sent.
    const escaped = readFixture("wire/vllm/hermes-2-pro-raw-tool-call-markup-in-content.txt").trim();
    const recorded = JSON.parse(`"${escaped}"`) as string;
    const name = /"name":\s*"([^"]+)"/.exec(recorded)?.[1] ?? "";
    server = await startServer({
      replies: [{ content: recorded }, { content: "done" }, { content: recorded }],
    });
    const tools = [tool(name)];
    const ran = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools,
      dispatch: () => "ok",
    });
    expect(ran.toolCalls).toHaveLength(1);
    const plain = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools,
      recoverToolCalls: false,
      dispatch: () => "never",
    });
    expect(plain.toolCalls).toEqual([]);
    expect(plain.turn.content).toContain("<tool_call>");
  });

  it("runs a step's calls together with parallel, keeping the transcript in the calls' order", async () => {
    const calls = [0, 1, 2].map((i) => ({ id: `s${i}`, name: "sleep", arguments: `{"n":${i}}` }));
    server = await startServer({ replies: [{ toolCalls: calls }, { content: "slept" }] });
    const finished: string[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      parallel: true,
      dispatch: async ({ args }) => {
        await new Promise((r) => setTimeout(r, 150 - 50 * (args.n as number)));
        return `woke ${args.n}`;
      },
      onToolResult: (r) => finished.push(r.id),
    });
    // Finishing in reverse order is only possible when all three ran at once.
    expect(finished).toEqual(["s2", "s1", "s0"]);
    expect(result.messages.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([
      "woke 0",
      "woke 1",
      "woke 2",
    ]);
  });

  it("dispatches every identical call when dedupe is off for that tool", async () => {
    const twice = [
      { id: "e1", name: "send_email", arguments: '{"to":"a"}' },
      { id: "e2", name: "send_email", arguments: '{"to":"a"}' },
      { id: "a1", name: "add", arguments: '{"a":1,"b":1}' },
      { id: "a2", name: "add", arguments: '{"a":1,"b":1}' },
    ];
    server = await startServer({ replies: [{ toolCalls: twice }, { content: "sent" }] });
    const ran: string[] = [];
    await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      dedupeToolCalls: (r) => r.name !== "send_email",
      dispatch: ({ id }) => {
        ran.push(id);
        return "ok";
      },
    });
    expect(ran).toEqual(["e1", "e2", "a1"]);
  });

  it("awaits onMessage for every appended message before the tools run, and a throw there ends the run answered", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "x1", name: "add", arguments: '{"a":1,"b":2}' }] }, { content: "3" }],
    });
    const order: string[] = [];
    const result = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      dispatch: () => {
        order.push("dispatch");
        return 3;
      },
      onMessage: async (message, step, turn) => {
        await new Promise((r) => setTimeout(r, 10));
        order.push(`${message.role}@${step}${turn ? "+turn" : ""}`);
      },
    });
    expect(order).toEqual(["assistant@1+turn", "dispatch", "tool@1", "assistant@2+turn"]);
    expect(result.messages).toHaveLength(4);

    server.enqueue({ toolCalls: [{ id: "y1", name: "add", arguments: "{}" }] });
    const error = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      tools: TOOLS,
      dispatch: () => "never",
      onMessage: () => {
        throw new Error("database is down");
      },
    }).catch((e: unknown) => e);
    expect((error as Error).message).toBe("onMessage threw: database is down");
    const run = failedRun(error)!;
    expect(run.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "y1",
      content: "Not run: the run stopped first.",
    });
  });
});

describe("the ledger option", () => {
  it("refuses a ledger that is not one before anything is sent, naming ledger, with the caller's messages", async () => {
    server = await startServer({ replies: () => ({ content: "never sent" }) });
    const bad: unknown[] = [
      {}, // an object, not an array
      "[]", // kept as JSON beside the session and passed without JSON.parse
      [{ through: "0", prompt: "40", epoch: "0" }], // entries read back as strings
      [{ through: 0, prompt: 40 }], // no epoch
      [null],
    ];
    for (const ledger of bad) {
      const error = await runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: question,
        dispatch: () => "",
        ledger: ledger as never,
      }).catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error)).toBe(true);
      const cause = (error as AgentLoopError).cause;
      expect(LoopOptionError.isInstance(cause)).toBe(true);
      expect(cause).toMatchObject({ code: "invalid-option", option: "ledger" });
      expect((cause as Error).message).toMatch(/^runAgentLoop: ledger /);
      expect(failedRun(error)?.messages).toEqual(question);
    }
    expect(server.chatRequests).toHaveLength(0);
  });

  it("takes a ledger a previous run handed back, an empty one, and none (null included)", async () => {
    server = await startServer({ replies: () => ({ content: "ok", usage: { prompt_tokens: 30 } }) });
    const first = await runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
      dispatch: () => "",
    });
    expect(first.ledger).toHaveLength(1);
    for (const ledger of [first.ledger, [], undefined, null]) {
      const result = await runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: [...first.messages, { role: "user", content: "again" }],
        dispatch: () => "",
        ledger: ledger as never,
      });
      expect(result.turn.content).toBe("ok");
    }
  });
});
