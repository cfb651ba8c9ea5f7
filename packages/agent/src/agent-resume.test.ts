// What an Agent carries into its next run, over HTTP with the testkit: a restored transcript whose
// last assistant message's calls were never answered (continue() runs it), and the tools an
// on-demand run loaded (declared again on the next prompt).
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Agent, AgentError, type AgentEvent, type AgentTool, type ChatMessageLike } from "./test-exports.js";

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

  it("still refuses a transcript that ends in an assistant message with nothing to run, saying so", async () => {
    server = await startServer({ replies: [{ content: "Hi." }] });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim" } });
    expect(() => agent.continue()).toThrow(/is empty/);
    await agent.prompt("Hello");
    let error: unknown;
    try {
      agent.continue();
    } catch (caught) {
      error = caught;
    }
    expect(AgentError.isInstance(error) && error.code).toBe("cannot-continue");
    expect((error as Error).message).toMatch(/ends in an assistant message/);
  });
});
