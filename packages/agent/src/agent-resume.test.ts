// What an Agent carries into its next run, over HTTP with the testkit: a restored transcript whose
// last assistant message's calls were never answered (continue() runs it), and the tools an
// on-demand run loaded (declared again on the next prompt).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  AgentError,
  type AgentEvent,
  type AgentMessage,
  type AgentTool,
  type ChatMessageLike,
  createSession,
  defaultConvertToLlm,
  readSessionFile,
} from "./test-exports.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function tool(name: string, execute: AgentTool["execute"]): AgentTool {
  return {
    name,
    description: `The ${name} tool`,
    parameters: { type: "object", properties: {} },
    execute,
  };
}

function sentMessages(s: TestServer, index: number): ChatMessageLike[] {
  return (s.chatRequests[index]!.body as { messages: ChatMessageLike[] }).messages;
}

/** Every tool call of `messages` answered by exactly one tool message right after its assistant message. */
function everyCallAnswered(messages: readonly ChatMessageLike[]): boolean {
  for (let at = 0; at < messages.length; at++) {
    const message = messages[at] as { role: string; tool_calls?: { id: string }[] };
    if (message.role !== "assistant" || !message.tool_calls?.length) continue;
    const answers: string[] = [];
    for (let next = at + 1; next < messages.length; next++) {
      const m = messages[next] as { role: string; tool_call_id?: string };
      if (m.role !== "tool") break;
      answers.push(m.tool_call_id as string);
    }
    const ids = message.tool_calls.map((call) => call.id);
    if (answers.length !== ids.length || !ids.every((id) => answers.includes(id))) return false;
  }
  return true;
}

const call = (id: string, name: string) => ({
  id,
  type: "function" as const,
  function: { name, arguments: "{}" },
});

describe("continue() after a restore that stopped between a tool call and its answer", () => {
  it("answers the unanswered calls 'Not run', sends a transcript an endpoint takes, and finishes", async () => {
    server = await startServer({ personality: "openai", replies: [{ content: "Let me look again." }] });
    let ran = 0;
    const clock = tool("clock", () => {
      ran++;
      return "noon";
    });
    // What a host that stores on message_end holds after a crash: the call, stored before its tool ran.
    const stored = [
      { role: "user" as const, content: "What time is it?" },
      {
        role: "assistant" as const,
        content: null,
        tool_calls: [call("call_1", "clock"), call("call_2", "clock")],
      },
    ];
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "gpt-4o" }, tools: [clock] });
    agent.messages = stored;
    const ended: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "message_end") ended.push((event.message as { role: string }).role);
    });
    const result = await agent.continue();
    expect(result.status).toBe("ok");
    expect(ran).toBe(0); // a call of an earlier run is not run unasked
    expect(server.chatRequests).toHaveLength(1);
    const sent = sentMessages(server, 0);
    expect(everyCallAnswered(sent)).toBe(true);
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool"]);
    expect(sent.slice(2)).toEqual([
      { role: "tool", tool_call_id: "call_1", content: "Not run: the run stopped first." },
      { role: "tool", tool_call_id: "call_2", content: "Not run: the run stopped first." },
    ]);
    // The agent's transcript carries the answers, and the listeners were told of them.
    expect(agent.messages.map((m) => (m as { role: string }).role)).toEqual([
      "user",
      "assistant",
      "tool",
      "tool",
      "assistant",
    ]);
    expect(everyCallAnswered(agent.messages as ChatMessageLike[])).toBe(true);
    expect(ended).toEqual(["tool", "tool", "assistant"]);
    expect(result.messages.map((m) => (m as { role: string }).role)).toEqual(["tool", "tool", "assistant"]);
  });

  it("answers only the calls left open when some were answered before the stop", async () => {
    server = await startServer({ personality: "openai", replies: [{ content: "ok" }] });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "gpt-4o" },
      tools: [tool("clock", () => "noon")],
      messages: [
        { role: "user", content: "Two clocks?" },
        { role: "assistant", content: null, tool_calls: [call("a", "clock"), call("b", "clock")] },
        { role: "tool", tool_call_id: "a", content: "noon" },
      ],
    });
    expect((await agent.continue()).status).toBe("ok");
    expect(sentMessages(server, 0).slice(2)).toEqual([
      { role: "tool", tool_call_id: "a", content: "noon" },
      { role: "tool", tool_call_id: "b", content: "Not run: the run stopped first." },
    ]);
    expect(agent.messages.slice(2)).toEqual([
      { role: "tool", tool_call_id: "a", content: "noon" },
      { role: "tool", tool_call_id: "b", content: "Not run: the run stopped first." },
      { role: "assistant", content: "ok" },
    ]);
  });

  it("answers them the same way when the host prompts instead, before the new question", async () => {
    server = await startServer({ personality: "openai", replies: [{ content: "Noon." }] });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "gpt-4o" },
      tools: [tool("clock", () => "noon")],
      messages: [
        { role: "user", content: "What time is it?" },
        { role: "assistant", content: null, tool_calls: [call("call_1", "clock")] },
      ],
    });
    expect((await agent.prompt("And now?")).status).toBe("ok");
    const answered = [
      { role: "user", content: "What time is it?" },
      { role: "assistant", content: null, tool_calls: [call("call_1", "clock")] },
      { role: "tool", tool_call_id: "call_1", content: "Not run: the run stopped first." },
      { role: "user", content: "And now?" },
    ];
    expect(sentMessages(server, 0)).toEqual(answered);
    expect(agent.messages).toEqual([...answered, { role: "assistant", content: "Noon." }]);
  });

  it("answers a call an app-only message follows in the agent's own transcript, so a later prompt is told nothing", async () => {
    server = await startServer({ personality: "openai", replies: () => ({ content: "ok" }) });
    const stored = [
      { role: "user", content: "What time is it?" },
      { role: "assistant", content: null, tool_calls: [call("call_1", "clock")] },
      { role: "ui-note", text: "interrupted" }, // app-only: the default convertToLlm leaves it out
    ] as unknown as AgentMessage[];
    for (const how of ["continue", "prompt"] as const) {
      const agent = new Agent({
        config: { baseUrl: server.baseUrl, model: "gpt-4o" },
        tools: [tool("clock", () => "noon")],
        messages: stored,
      });
      const notices: string[] = [];
      agent.subscribe((event: AgentEvent) => {
        if (event.type === "notice") notices.push(event.text);
      });
      const first = server.chatRequests.length;
      const result = how === "continue" ? await agent.continue() : await agent.prompt("And now?");
      expect(result.status).toBe("ok");
      expect(notices).toHaveLength(1);
      expect(notices[0]).toMatch(/call_1/);
      // The answer follows the app-only note: what the model is sent has it right after the call.
      const answer = { role: "tool", tool_call_id: "call_1", content: "Not run: the run stopped first." };
      expect(agent.messages.slice(0, 4)).toEqual([...stored, answer]);
      expect(result.messages[0]).toEqual(answer);
      expect(everyCallAnswered(defaultConvertToLlm(agent.messages))).toBe(true);
      expect(everyCallAnswered(sentMessages(server, first))).toBe(true);
      // The next prompt sends the same answer and says nothing about it.
      expect((await agent.prompt("Again?")).status).toBe("ok");
      expect(notices).toHaveLength(1);
      const again = sentMessages(server, server.chatRequests.length - 1);
      expect(again.filter((m) => m.role === "tool")).toEqual([answer]);
      expect(everyCallAnswered(again)).toBe(true);
    }
  });

  it("leaves the answer to the loop when the host's convertToLlm sends what follows the call", async () => {
    server = await startServer({ personality: "openai", replies: () => ({ content: "ok" }) });
    // The note is sent as a user message: an answer appended after it would answer no call right
    // before it, so the agent adds none and the loop answers the call in its request, as before.
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "gpt-4o" },
      tools: [tool("clock", () => "noon")],
      convertToLlm: (messages) =>
        messages.map((m) =>
          (m as { role: string }).role === "ui-note"
            ? { role: "user" as const, content: (m as unknown as { text: string }).text }
            : (m as ChatMessageLike),
        ),
      messages: [
        { role: "user", content: "What time is it?" },
        { role: "assistant", content: null, tool_calls: [call("call_1", "clock")] },
        { role: "ui-note", text: "interrupted" } as unknown as AgentMessage,
      ],
    });
    expect((await agent.continue()).status).toBe("ok");
    const sent = sentMessages(server, 0);
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"]);
    expect(everyCallAnswered(sent)).toBe(true);
    expect(agent.messages.map((m) => (m as { role: string }).role)).toEqual([
      "user",
      "assistant",
      "ui-note",
      "assistant",
    ]);
  });

  it("still refuses a transcript that ends in an assistant message with nothing to run, saying so", async () => {
    server = await startServer({ replies: [{ content: "Hi." }] });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim" } });
    await expect(agent.continue()).rejects.toThrow(/is empty/);
    await agent.prompt("Hello");
    let error: unknown;
    try {
      await agent.continue();
    } catch (caught) {
      error = caught;
    }
    expect(AgentError.isInstance(error) && error.code).toBe("cannot-continue");
    expect((error as Error).message).toMatch(/ends in an assistant message/);
  });
});

/** The names of the tools each request declared, from `from` on. */
function declared(s: TestServer, from = 0): string[] {
  return s.chatRequests.slice(from).map((request) =>
    ((request.body as { tools?: { function: { name: string } }[] }).tools ?? [])
      .map((t) => t.function.name)
      .sort()
      .join("+"),
  );
}

/** A model that calls the clock (unloaded: the loop loads it) when a question says "first", and answers otherwise. */
function clockModel(): Parameters<typeof startServer>[0] {
  return {
    replies: (request) => {
      const messages = (request.body as { messages: { role: string; content?: unknown }[] }).messages;
      const last = messages.at(-1);
      if (last?.role === "user" && /first/.test(String(last.content))) {
        return { toolCalls: [{ name: "clock", arguments: "{}" }] };
      }
      return { content: "It is noon." };
    },
  };
}

const onDemand = (baseUrl: string) => ({
  config: { baseUrl, model: "sim", toolDiscovery: "ondemand" as const },
  tools: [tool("clock", () => "noon"), tool("calc", () => "4"), tool("weather", () => "sun")],
});

describe("what an on-demand run loaded", () => {
  it("stays declared on the next prompt, as the loop's loaded carries it", async () => {
    server = await startServer(clockModel());
    const agent = new Agent(onDemand(server.baseUrl));
    expect(agent.loaded).toEqual([]);
    expect((await agent.prompt("first: what time is it?")).status).toBe("ok");
    expect(agent.loaded).toEqual(["clock"]);
    expect((await agent.prompt("second: and now?")).status).toBe("ok");
    // Prompt 1: load_tools alone, then clock loaded; prompt 2 starts with clock still declared.
    expect(declared(server)).toEqual(["load_tools", "clock+load_tools", "clock+load_tools"]);
  });

  it("carries it through a Session's prompts too", async () => {
    server = await startServer(clockModel());
    const session = await createSession(onDemand(server.baseUrl));
    await session.prompt("first: what time is it?");
    await session.prompt("second: and now?");
    expect(declared(server)).toEqual(["load_tools", "clock+load_tools", "clock+load_tools"]);
  });

  it("is stored in the session file, so a resumed session keeps it; clear() empties it", async () => {
    server = await startServer(clockModel());
    const dir = mkdtempSync(join(tmpdir(), "agent-loaded-"));
    try {
      const first = await createSession({ ...onDemand(server.baseUrl), sessionDir: dir, sessionId: "s" });
      await first.prompt("first: what time is it?");
      const file = join(dir, "s.jsonl");
      expect(readSessionFile(file).loaded).toEqual(["clock"]);
      // Written once: a prompt that loads nothing new adds no record.
      await first.prompt("second: and now?");
      const records = readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line.includes('"type":"loaded"'));
      expect(records).toEqual(['{"type":"loaded","loaded":["clock"]}']);
      await first.save();
      expect(readSessionFile(file).loaded).toEqual(["clock"]);
      await first.close();
      const from = server.chatRequests.length;
      const resumed = await createSession({ ...onDemand(server.baseUrl), sessionDir: dir, sessionId: "s" });
      expect(resumed.agent.loaded).toEqual(["clock"]);
      await resumed.prompt("third: and now?");
      expect(declared(server, from)).toEqual(["clock+load_tools"]);
      resumed.clear();
      expect(resumed.agent.loaded).toEqual([]);
      expect(readSessionFile(file).loaded).toEqual([]);
      await resumed.close();
      // A loaded record that is not a list of names is dropped, as any malformed line is.
      const bad = join(dir, "bad.jsonl");
      writeFileSync(
        bad,
        '{"type":"session","version":1,"id":"bad","createdAt":"2026-01-01T00:00:00.000Z"}\n' +
          '{"type":"loaded","loaded":["clock"]}\n{"type":"loaded","loaded":"calc"}\n',
      );
      const read = readSessionFile(bad);
      expect(read.loaded).toEqual(["clock"]);
      expect(read.notices).toEqual([
        "Line 3 of the session file is a loaded list that is not a list of tool names and was dropped.",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is kept from a run that failed after loading, and cleared by reset()", async () => {
    let n = 0;
    server = await startServer({
      replies: () => {
        n++;
        if (n === 1) return { toolCalls: [{ name: "clock", arguments: "{}" }] };
        if (n === 2) return { type: "error", status: 400, body: { error: { message: "model is busy" } } };
        return { content: "It is noon." };
      },
    });
    const agent = new Agent({
      ...onDemand(server.baseUrl),
      config: { ...onDemand(server.baseUrl).config, maxRetries: 0 },
    });
    expect((await agent.prompt("what time is it?")).status).toBe("error");
    expect(agent.loaded).toEqual(["clock"]);
    expect((await agent.continue()).status).toBe("ok");
    agent.reset();
    expect(agent.loaded).toEqual([]);
    expect((await agent.prompt("again?")).status).toBe("ok");
    expect(declared(server)).toEqual(["load_tools", "clock+load_tools", "clock+load_tools", "load_tools"]);
  });

  it("is dropped with a transcript assigned that no longer shows the loads, and kept with one that does", async () => {
    server = await startServer(clockModel());
    const agent = new Agent(onDemand(server.baseUrl));
    await agent.prompt("first: what time is it?");
    agent.messages = [...agent.messages]; // the same conversation: the clock call is still there
    expect(agent.loaded).toEqual(["clock"]);
    agent.messages = [
      { role: "user", content: "Start over." },
      { role: "assistant", content: "Sure." },
    ];
    expect(agent.loaded).toEqual([]);
    await agent.prompt("second: and now?");
    expect(declared(server).at(-1)).toBe("load_tools");
  });

  it("starts from the loaded option, a list of tool names, and refuses anything else", async () => {
    server = await startServer(clockModel());
    const agent = new Agent({ ...onDemand(server.baseUrl), loaded: ["weather"] });
    expect(agent.loaded).toEqual(["weather"]);
    await agent.prompt("second: what is the weather?");
    expect(declared(server)).toEqual(["load_tools+weather"]);
    expect(() => new Agent({ ...onDemand(server!.baseUrl), loaded: "weather" as never })).toThrow(
      /^new Agent: loaded must be a list of tool names; got a string/,
    );
  });
});
