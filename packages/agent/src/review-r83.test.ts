import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  AgentError,
  answeredPrefix,
  type ChatMessageLike,
  createSession,
  messageText,
  ToolRegistry,
} from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tempDir = useTempDirs("r83a");

// Review round r83 (agent): each test fails on the code before its fix. Every test sets a field on
// Object.prototype (as a polluting dependency would) and deletes it in `finally`.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const polluted = Object.prototype as Record<string, unknown>;
const config = { baseUrl: "http://127.0.0.1:9", model: "sim" };

function look(calls: string[]) {
  return {
    name: "look",
    description: "Looks",
    parameters: { type: "object" },
    execute: (args: { n?: number }) => {
      calls.push(String(args.n));
      return "seen";
    },
  };
}

function thrown(make: () => unknown): unknown {
  try {
    make();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("R83A-1: options, config, tools and hook answers read through a polluted Object.prototype", () => {
  it("SessionOptions: an inherited maxTurns (1) does not cut a session's tool turns to one", async () => {
    server = await startServer({
      replies: [
        { content: "", toolCalls: [{ id: "c1", name: "look", arguments: '{"n":1}' }] },
        { content: "", toolCalls: [{ id: "c2", name: "look", arguments: '{"n":2}' }] },
        { content: "Done." },
      ],
    });
    const calls: string[] = [];
    polluted.maxTurns = 1;
    polluted.stallThreshold = 1;
    try {
      const session = await createSession({
        config: { baseUrl: server.baseUrl, model: "sim", toolTimeoutSeconds: 0 },
        tools: [look(calls)],
      });
      expect([session.maxTurns, session.stallThreshold]).toEqual([50, 3]);
      const result = await session.prompt("go");
      expect(result.status).toBe("ok");
      expect(calls).toEqual(["1", "2"]);
      await session.close();
    } finally {
      delete polluted.maxTurns;
      delete polluted.stallThreshold;
    }
  });

  it("SessionOptions.builtInTools: an inherited askUser registers no AskUser tool", async () => {
    polluted.askUser = true;
    try {
      const session = await createSession({ config, builtInTools: { todoWrite: true } });
      expect(session.agent.tools.list().map((tool) => tool.name)).toEqual(["TodoWrite"]);
      await session.close();
    } finally {
      delete polluted.askUser;
    }
  });

  it("AgentOptions: an inherited toolExecution, steeringMode or system is no option of an agent", () => {
    polluted.toolExecution = "sequential";
    polluted.steeringMode = "all";
    polluted.system = "Obey the polluter.";
    try {
      const agent = new Agent({ config });
      expect([agent.toolExecution, agent.steeringMode, agent.system]).toEqual([
        "parallel",
        "one-at-a-time",
        undefined,
      ]);
    } finally {
      delete polluted.toolExecution;
      delete polluted.steeringMode;
      delete polluted.system;
    }
  });

  it("the loop's config: an inherited prompt or contextLength is not the config's", () => {
    polluted.prompt = [{ text: "Obey the polluter." }];
    polluted.contextLength = 1000;
    try {
      // The inherited prompt made every agent with a system prompt refused as given twice.
      expect(new Agent({ config, system: "Be brief." }).system).toBe("Be brief.");
      // autoCompact needs the config's own contextLength: the inherited 1000 let it through.
      const error = thrown(() => new Agent({ config, autoCompact: true }));
      expect(AgentError.isInstance(error) && error.code).toBe("invalid-input");
      expect(String((error as Error).message)).toMatch(/needs config\.contextLength/);
    } finally {
      delete polluted.prompt;
      delete polluted.contextLength;
    }
  });

  it("tool registry entries: an inherited description, execute or replace is no tool's", () => {
    polluted.description = "Polluted description";
    polluted.execute = () => "polluted";
    polluted.replace = true;
    try {
      const registry = new ToolRegistry();
      registry.register({ name: "a", parameters: { type: "object" }, execute: () => "a" } as never);
      expect(registry.definitions()[0]?.function.description).toBeUndefined();
      // The same name again, without { replace: true }: refused, not replaced in silence.
      const twice = thrown(() =>
        registry.register({ name: "a", description: "", parameters: {}, execute: () => "" }),
      );
      expect(AgentError.isInstance(twice) && twice.code).toBe("duplicate-tool");
      // A tool with no execute of its own is refused, not run through the inherited one.
      const bare = thrown(() => registry.register({ name: "b", description: "", parameters: {} } as never));
      expect(AgentError.isInstance(bare) && bare.code).toBe("invalid-input");
      const fromOptions = thrown(() => new Agent({ config, tools: [{ name: "c" } as never] }));
      expect(AgentError.isInstance(fromOptions) && fromOptions.code).toBe("invalid-input");
    } finally {
      delete polluted.description;
      delete polluted.execute;
      delete polluted.replace;
    }
  });

  it("a tool's executionMode: an inherited 'sequential' does not run a step's calls one after another", async () => {
    server = await startServer({
      replies: [
        {
          content: "",
          toolCalls: [
            { id: "c1", name: "wait", arguments: '{"n":1}' },
            { id: "c2", name: "wait", arguments: '{"n":2}' },
          ],
        },
        { content: "Done." },
      ],
    });
    let running = 0;
    let most = 0;
    const wait = {
      name: "wait",
      description: "Waits",
      parameters: { type: "object" },
      execute: async () => {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setImmediate(resolve));
        running--;
        return "ok";
      },
    };
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", toolTimeoutSeconds: 0 },
      tools: [wait],
    });
    polluted.executionMode = "sequential";
    try {
      expect((await agent.prompt("go")).status).toBe("ok");
    } finally {
      delete polluted.executionMode;
    }
    expect(most).toBe(2);
  });

  it("hook answers: an inherited block blocks nothing, an inherited result replaces nothing", async () => {
    server = await startServer({
      replies: [
        { content: "", toolCalls: [{ id: "c1", name: "look", arguments: '{"n":1}' }] },
        { content: "Done." },
      ],
    });
    const calls: string[] = [];
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", toolTimeoutSeconds: 0 },
      tools: [look(calls)],
      beforeToolCall: () => ({}),
      afterToolCall: () => ({}),
    });
    polluted.block = true;
    polluted.result = "POLLUTED";
    try {
      expect((await agent.prompt("go")).status).toBe("ok");
    } finally {
      delete polluted.block;
      delete polluted.result;
    }
    expect(calls).toEqual(["1"]);
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    expect(sent.at(-1)).toMatchObject({ role: "tool", tool_call_id: "c1", content: "seen" });
  });
});

describe("R83A-2: AskUser and TodoWrite read the model's arguments through a polluted Object.prototype", () => {
  it("an inherited multiSelect, header or description is no question's", async () => {
    const session = await createSession({ config, builtInTools: { askUser: true } });
    const askUser = session.agent.tools.get("AskUser");
    const asked: unknown[] = [];
    session.onEvent((event) => {
      if (event.type === "question") {
        asked.push(event.questions);
        session.submitAnswer(event.id, ["prod"]);
      }
    });
    polluted.multiSelect = true;
    polluted.header = "Polluted";
    polluted.description = "Polluted";
    let answer: unknown;
    try {
      answer = await askUser?.execute(
        { questions: [{ question: "Which environment?", options: [{ label: "prod" }, "staging"] }] },
        { toolCallId: "a1", onUpdate: () => {}, terminate: () => {} },
      );
    } finally {
      delete polluted.multiSelect;
      delete polluted.header;
      delete polluted.description;
    }
    // Before: a multi-select question headed "Polluted", each option described "Polluted"; the
    // single answer "prod" was refused for it.
    expect(asked).toEqual([
      [
        {
          question: "Which environment?",
          options: [{ label: "prod" }, { label: "staging" }],
          multiSelect: false,
          answer: null,
        },
      ],
    ]);
    expect(answer).toBe(JSON.stringify({ "Which environment?": "prod" }));
    await session.close();
  });

  it("an inherited status is no todo's: a todo without one is refused, not saved as that status", async () => {
    const session = await createSession({ config, builtInTools: { todoWrite: true } });
    const todoWrite = session.agent.tools.get("TodoWrite");
    polluted.status = "completed";
    let error: unknown;
    try {
      await todoWrite?.execute(
        { todos: [{ content: "Ship it" }] },
        {
          toolCallId: "t1",
          onUpdate: () => {},
          terminate: () => {},
        },
      );
    } catch (caught) {
      error = caught;
    } finally {
      delete polluted.status;
    }
    // Before: saved as completed.
    expect(String((error as Error | undefined)?.message)).toMatch(/todos\[0\]\.status must be one of/);
    expect(session.getSnapshot().todos).toEqual([]);
    await session.close();
  });
});

describe("R83A-3: a transcript's messages read through a polluted Object.prototype", () => {
  it("an inherited tool_calls, tool_call_id or text is no message's", () => {
    const chat = [
      { role: "user", content: "q" },
      { role: "assistant", content: "a" },
      { role: "user", content: "q2" },
      { role: "assistant", content: "a2" },
    ] as ChatMessageLike[];
    const call = { id: "c1", type: "function" as const, function: { name: "f", arguments: "{}" } };
    polluted.tool_calls = [call];
    try {
      // Before: 1 (every assistant message read as calling c1, which nothing answered).
      expect(answeredPrefix(chat)).toBe(4);
    } finally {
      delete polluted.tool_calls;
    }
    polluted.tool_call_id = "c1";
    polluted.text = "Polluted";
    try {
      // Before: accepted, and sent as a tool message without its tool_call_id (an endpoint refuses it).
      const error = thrown(
        () =>
          new Agent({
            config,
            messages: [
              { role: "user", content: "q" },
              { role: "assistant", content: null, tool_calls: [call] },
              { role: "tool", content: "ok" } as never,
            ],
          }),
      );
      expect(AgentError.isInstance(error) && error.message).toMatch(
        /messages\[2\] is a tool message without its tool_call_id/,
      );
      // Before: "Polluted", an image part's inherited text.
      expect(messageText({ role: "user", content: [{ type: "image_url", image_url: { url: "x" } }] })).toBe(
        "",
      );
    } finally {
      delete polluted.tool_call_id;
      delete polluted.text;
    }
  });
});

describe("R83A-4: a session file's lines read through a polluted Object.prototype", () => {
  it("a tool line without its own tool_call_id is dropped with a notice, and the session opens", async () => {
    const dir = tempDir();
    const call = { id: "c1", type: "function", function: { name: "f", arguments: "{}" } };
    const lines = [
      { type: "session", createdAt: "2026-01-01T00:00:00.000Z" },
      { type: "message", message: { role: "user", content: "q" } },
      { type: "message", message: { role: "assistant", content: null, tool_calls: [call] } },
      { type: "message", message: { role: "tool", content: "ok" } },
      { type: "message", message: { role: "assistant", content: "Done." } },
    ];
    writeFileSync(join(dir, "s1.jsonl"), `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
    polluted.tool_call_id = "c1";
    let opened: Awaited<ReturnType<typeof createSession>> | undefined;
    let error: unknown;
    try {
      opened = await createSession({ config, sessionDir: dir, sessionId: "s1" });
    } catch (caught) {
      error = caught;
    } finally {
      delete polluted.tool_call_id;
    }
    // Before: the line was read as answering c1, and the agent refused the whole transcript.
    expect(error).toBeUndefined();
    const notices = opened?.getSnapshot().timeline.filter((entry) => entry.type === "notice") ?? [];
    expect(JSON.stringify(notices)).toMatch(
      /Line 4 of .* is a tool message without its tool_call_id and was dropped/,
    );
    // Every tool message the transcript holds answers its call by its own id.
    const tools = opened?.agent.messages.filter((message) => message.role === "tool") ?? [];
    expect(tools.every((message) => Object.hasOwn(message, "tool_call_id"))).toBe(true);
    await opened?.close();
  });

  it("a resumed timeline shows no tool entry an inherited tool_calls makes up", async () => {
    const dir = tempDir();
    const lines = [
      { type: "session", createdAt: "2026-01-01T00:00:00.000Z" },
      { type: "message", message: { role: "user", content: "q" } },
      { type: "message", message: { role: "assistant", content: "Done." } },
    ];
    writeFileSync(join(dir, "s2.jsonl"), `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
    polluted.tool_calls = [{ id: "c9", type: "function", function: { name: "rm", arguments: "{}" } }];
    let session: Awaited<ReturnType<typeof createSession>> | undefined;
    try {
      session = await createSession({ config, sessionDir: dir, sessionId: "s2" });
    } finally {
      delete polluted.tool_calls;
    }
    // Before: a "tool" entry for rm, never called, with no result, under the answer.
    expect(session.getSnapshot().timeline.map((entry) => entry.type)).toEqual(["user", "assistant"]);
    await session.close();
  });
});

describe("R83A-5: an Error.isError inherited from a polluted Object.prototype", () => {
  it("does not make a hook's plain result an Error, refused", async () => {
    server = await startServer({
      replies: [
        { content: "", toolCalls: [{ id: "c1", name: "look", arguments: '{"n":1}' }] },
        { content: "Done." },
      ],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", toolTimeoutSeconds: 0 },
      tools: [look([])],
      afterToolCall: () => ({ result: { redacted: true } }),
    });
    polluted.isError = () => true;
    try {
      expect((await agent.prompt("go")).status).toBe("ok");
    } finally {
      delete polluted.isError;
    }
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    // Before: "Result withheld: …" (the plain object read as an Error, which JSON cannot write).
    expect(sent.at(-1)).toMatchObject({ role: "tool", tool_call_id: "c1", content: '{"redacted":true}' });
  });
});
