import { type AgentSpec, SPEC_TOKEN } from "@loopwright/spec";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  type AgentBackend,
  type AgentEvent,
  type AgentOptions,
  type AgentTool,
  type ChatMessageLike,
  loopBackend,
} from "./test-exports.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function tool(name: string, execute: AgentTool["execute"], extra: Partial<AgentTool> = {}): AgentTool {
  return {
    name,
    description: `The ${name} tool`,
    parameters: { type: "object", properties: { n: { type: "number" } } },
    execute,
    ...extra,
  };
}

/** The model's reply calling each [id, name, arguments] in one step (arguments "{}" when not given). */
function calling(...calls: [id: string, name: string, args?: string][]) {
  return { toolCalls: calls.map(([id, name, args = "{}"]) => ({ id, name, arguments: args })) };
}

/** An Agent on the testkit server, model "sim" (with `config`'s other fields), and `options`. */
function simAgent(
  options: Omit<AgentOptions, "config"> = {},
  config: Partial<NonNullable<AgentOptions["config"]>> = {},
): Agent {
  return new Agent({ config: { baseUrl: server!.baseUrl, model: "sim", ...config }, ...options });
}

function record(agent: Agent): AgentEvent[] {
  const events: AgentEvent[] = [];
  agent.subscribe((event) => {
    events.push(event);
  });
  return events;
}

/** The event types with runs of message_update collapsed, as a UI sees the sequence. */
function sequence(events: AgentEvent[]): string[] {
  return events
    .filter((e) => e.type !== "usage")
    .map((e) => {
      if (e.type === "message_start" || e.type === "message_end")
        return `${e.type}:${(e.message as { role: string }).role}`;
      return e.type;
    })
    .filter((t, i, all) => !(t === "message_update" && all[i - 1] === "message_update"));
}

function sentMessages(s: TestServer, index: number): ChatMessageLike[] {
  return (s.chatRequests[index]!.body as { messages: ChatMessageLike[] }).messages;
}

describe("Agent over HTTP", () => {
  it("tells a plain prompt as agent/turn/message events a UI can render from alone", async () => {
    server = await startServer({ replies: [{ content: "Hello there, friend.", chunkChars: 5 }] });
    const agent = simAgent({ system: "Be brief." });
    const events = record(agent);
    const result = await agent.prompt("Hello!");
    expect(result.status).toBe("ok");
    expect(sequence(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    const text = events.flatMap((e) => (e.type === "message_update" ? [e.delta.text] : [])).join("");
    expect(text).toBe("Hello there, friend.");
    expect(agent.messages).toEqual([
      { role: "user", content: "Hello!" },
      { role: "assistant", content: "Hello there, friend." },
    ]);
    expect(sentMessages(server, 0)[0]).toEqual({ role: "system", content: "Be brief." });
  });

  it("takes back answer text a late </think> turns into reasoning (message_retract), so the streamed message ends as the answer", async () => {
    // A template that opened <think> in the prompt: the server's content starts inside it.
    server = await startServer({
      replies: [{ content: "The user greets me.</think>Hello!", chunkChars: 4 }],
    });
    const agent = simAgent();
    const events = record(agent);
    expect((await agent.prompt("Hi")).status).toBe("ok");
    const retracts = events.filter((e) => e.type === "message_retract");
    expect(retracts).toHaveLength(1);
    const shown = events
      .filter((e) => e.type === "message_update" || e.type === "message_retract")
      .at(-1) as Extract<AgentEvent, { type: "message_update" | "message_retract" }>;
    expect(shown.message.content).toBe("Hello!");
    // What a UI drew from the deltas and the retraction is the answer alone.
    let drawn = "";
    for (const e of events) {
      if (e.type === "message_update" && e.delta.type === "text") drawn += e.delta.text;
      if (e.type === "message_retract") drawn = drawn.slice(0, drawn.length - e.chars);
    }
    expect(drawn).toBe("Hello!");
    expect(agent.messages.at(-1)).toEqual({ role: "assistant", content: "Hello!" });
  });

  it("takes back reasoning drawn for a tool call written as text with <think> in its arguments (thinking_retract)", async () => {
    const call = `<tool_call>\n${JSON.stringify({ name: "double", arguments: { n: 1, note: "a <think> b </think> c" } })}\n</tool_call>`;
    server = await startServer({
      replies: [{ content: `<think>plan</think>Doing it.\n${call}`, chunkChars: 5 }, { content: "2." }],
    });
    const agent = simAgent({
      tools: [tool("double", ({ n }) => (n as number) * 2)],
    });
    const events = record(agent);
    expect((await agent.prompt("Hi")).status).toBe("ok");
    // What a UI drew as reasoning for the first reply, from the updates and the retraction.
    let reasoning = "";
    for (const e of events) {
      if (e.type === "message_end" && e.message.role === "assistant") break;
      if (e.type === "message_update" && e.delta.type === "thinking") reasoning += e.delta.text;
      if (e.type === "thinking_retract") reasoning = reasoning.slice(0, reasoning.length - e.chars);
    }
    expect(events.filter((e) => e.type === "thinking_retract").length).toBeGreaterThan(0);
    expect(reasoning).toBe("plan");
    expect(agent.messages[2]).toMatchObject({ role: "tool", content: "2" });
  });

  it("tells a tool prompt: the call's start and end, its result message, and a second turn", async () => {
    server = await startServer({
      replies: [calling(["c1", "double", '{"n":21}']), { content: "42." }],
    });
    const agent = simAgent({
      tools: [tool("double", ({ n }) => (n as number) * 2)],
    });
    const events = record(agent);
    const result = await agent.prompt("Double 21");
    expect(result.status).toBe("ok");
    expect(sequence(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_end:assistant",
      "tool_execution_start",
      "tool_execution_end",
      "message_start:tool",
      "message_end:tool",
      "turn_end",
      "turn_start",
      "message_start:assistant",
      "message_update",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    expect(events.find((e) => e.type === "tool_execution_start")).toMatchObject({
      toolCallId: "c1",
      toolName: "double",
      args: { n: 21 },
    });
    expect(events.find((e) => e.type === "tool_execution_end")).toMatchObject({
      result: "42",
      isError: false,
    });
    expect(sentMessages(server, 1).at(-1)).toEqual({ role: "tool", tool_call_id: "c1", content: "42" });
  });

  it("delivers a steering message after the running tool step, before the next request", async () => {
    server = await startServer({
      replies: [calling(["c1", "slow"]), calling(["c2", "slow", '{"n":2}']), { content: "Done." }],
    });
    let agent: Agent | undefined;
    agent = simAgent({
      tools: [
        tool("slow", async () => {
          if (agent && server?.chatRequests.length === 1) {
            agent.steer("Use the blue one instead.");
            agent.steer("And be quick.");
          }
          await sleep(20);
          return "ok";
        }),
      ],
    });
    const events = record(agent);
    await agent.prompt("Paint it.");
    // One at a time: the first steer reaches the second request, the second one the third.
    const second = sentMessages(server, 1);
    expect(second.slice(-3)).toEqual([
      expect.objectContaining({ role: "assistant" }),
      { role: "tool", tool_call_id: "c1", content: "ok" },
      { role: "user", content: "Use the blue one instead." },
    ]);
    expect(sentMessages(server, 2).at(-1)).toEqual({ role: "user", content: "And be quick." });
    const steerAt = events.findIndex(
      (e) =>
        e.type === "message_start" &&
        (e.message as { content?: unknown }).content === "Use the blue one instead.",
    );
    expect(events[steerAt - 1]?.type).toBe("turn_start");
    expect(events[steerAt - 2]?.type).toBe("turn_end");
  });

  it("delivers every queued steering message at once in 'all' mode", async () => {
    server = await startServer({
      replies: [calling(["c1", "slow"]), { content: "Done." }],
    });
    let agent: Agent | undefined;
    agent = simAgent({
      steeringMode: "all",
      tools: [
        tool("slow", () => {
          agent?.steer("one");
          agent?.steer("two");
          return "ok";
        }),
      ],
    });
    await agent.prompt("Go.");
    // Both in the next request, in order (side by side they go as one user message, which chat
    // templates that make roles alternate take); the transcript keeps each.
    expect(sentMessages(server, 1).at(-1)).toEqual({ role: "user", content: "one\n\ntwo" });
    expect(agent.messages.slice(-3, -1)).toEqual([
      { role: "user", content: "one" },
      { role: "user", content: "two" },
    ]);
    expect(agent.hasQueuedMessages()).toBe(false);
  });

  it("runs a follow-up after the run would have stopped", async () => {
    server = await startServer({ replies: [{ content: "First answer." }, { content: "Summary." }] });
    const agent = simAgent();
    const events = record(agent);
    agent.subscribe((event) => {
      if (
        event.type === "message_end" &&
        (event.message as { content?: unknown }).content === "First answer."
      ) {
        agent.followUp("Also summarise it.");
      }
    });
    const result = await agent.prompt("Question?");
    expect(server.chatRequests).toHaveLength(2);
    expect(sentMessages(server, 1).slice(-2)).toEqual([
      { role: "assistant", content: "First answer." },
      { role: "user", content: "Also summarise it." },
    ]);
    expect(result.messages.map((m) => (m as { content?: unknown }).content)).toEqual([
      "Question?",
      "First answer.",
      "Also summarise it.",
      "Summary.",
    ]);
    expect(events.filter((e) => e.type === "agent_start")).toHaveLength(1);
  });

  it("answers a blocked call with the reason the hook gave, without running the tool", async () => {
    server = await startServer({
      replies: [calling(["c1", "bash", '{"n":1}']), { content: "Understood." }],
    });
    const ran: unknown[] = [];
    const agent = simAgent({
      tools: [tool("bash", (args) => ran.push(args))],
      beforeToolCall: ({ toolCall }) =>
        toolCall.name === "bash" ? { block: true, reason: "bash is disabled here" } : undefined,
    });
    const events = record(agent);
    await agent.prompt("Run ls");
    expect(ran).toEqual([]);
    expect(sentMessages(server, 1).at(-1)).toEqual({
      role: "tool",
      tool_call_id: "c1",
      content: "Error: bash is disabled here",
    });
    expect(events.find((e) => e.type === "tool_execution_end")).toMatchObject({ isError: true });
  });

  it("runs a call with the arguments beforeToolCall rewrote", async () => {
    server = await startServer({
      replies: [calling(["c1", "double", '{"n":1}']), { content: "ok" }],
    });
    const agent = simAgent({
      tools: [tool("double", ({ n }) => (n as number) * 2)],
      beforeToolCall: () => ({ args: { n: 50 } }),
    });
    await agent.prompt("Double 1");
    expect(sentMessages(server, 1).at(-1)).toMatchObject({ content: "100" });
  });

  it("ends the run after a step whose every call asked to terminate, with no further request", async () => {
    server = await startServer({
      replies: [calling(["c1", "notify_done"], ["c2", "notify_done", '{"n":2}']), { content: "never asked" }],
    });
    const agent = simAgent({
      tools: [tool("notify_done", () => "sent")],
      afterToolCall: ({ toolCall }) =>
        toolCall.name === "notify_done" ? { terminate: true, result: "sent!" } : undefined,
    });
    const result = await agent.prompt("Notify me");
    expect(result.status).toBe("terminated");
    expect(server.chatRequests).toHaveLength(1);
    expect(agent.messages.slice(-2)).toEqual([
      { role: "tool", tool_call_id: "c1", content: "sent!" },
      { role: "tool", tool_call_id: "c2", content: "sent!" },
    ]);
  });

  it("hands its backend a terminated or stopped run as a finished run, never a failure to log", async () => {
    const calls = calling(["c1", "notify_done"], ["c2", "notify_done", '{"n":2}']);
    server = await startServer({ replies: [calls, calls, { content: "never asked" }] });
    const seen: string[] = [];
    const asked: number[] = [];
    const loop = loopBackend();
    const backend: AgentBackend = {
      run: (options) =>
        loop.run(options).then(
          (result) => {
            seen.push(`finished: ${result.stopReason}`);
            return result;
          },
          (error: unknown) => {
            seen.push(`failed: ${String(error)}`);
            throw error;
          },
        ),
    };
    const terminating = simAgent({
      backend,
      tools: [
        tool("notify_done", (_args, { terminate }) => {
          terminate();
          return "sent";
        }),
      ],
    });
    expect((await terminating.prompt("Notify me")).status).toBe("terminated");
    const stopping = simAgent({
      backend,
      tools: [tool("notify_done", () => "sent")],
      shouldStopAfterTurn: () => true,
      toolChoice: ({ step }) => {
        asked.push(step);
        return undefined;
      },
    });
    expect((await stopping.prompt("Notify me")).status).toBe("stopped");
    // Asked for the request that was sent, not for the step the stop ended.
    expect(asked).toEqual([1]);
    expect(seen).toEqual(["finished: stopped", "finished: stopped"]);
    expect(server.chatRequests).toHaveLength(2);
    expect(stopping.messages.filter((m) => (m as ChatMessageLike).role === "tool")).toHaveLength(2);
  });

  it("asks shouldStopAfterTurn after a text answer too, before a queued follow-up: true ends the run without it", async () => {
    server = await startServer({ replies: [{ content: "First answer." }, { content: "never asked" }] });
    const asked: { message: unknown; toolResults: unknown[] }[] = [];
    const agent = simAgent({
      shouldStopAfterTurn: ({ message, toolResults }) => {
        asked.push({ message, toolResults });
        return true;
      },
    });
    const events = record(agent);
    agent.followUp("And then this.");
    const result = await agent.prompt("Question");
    expect(result.status).toBe("stopped");
    expect(server.chatRequests).toHaveLength(1);
    expect(asked).toEqual([{ message: { role: "assistant", content: "First answer." }, toolResults: [] }]);
    // Kept, as a stop after a tool step keeps it: nothing queued is delivered.
    expect(agent.hasQueuedMessages()).toBe(true);
    expect(sequence(events).slice(-3)).toEqual(["message_end:assistant", "turn_end", "agent_end"]);
    expect(sequence(events).filter((t) => t === "turn_start")).toHaveLength(1);
  });

  it("sends a step's tool_choice as its toolChoice option says", async () => {
    server = await startServer({
      replies: [calling(["c1", "a"]), { content: "Done." }],
    });
    const told: number[] = [];
    const agent = simAgent({
      tools: [tool("a", () => "A")],
      toolChoice: ({ step }) => {
        told.push(step);
        return step === 1 ? { type: "function", function: { name: "a" } } : "none";
      },
    });
    expect((await agent.prompt("Do it")).status).toBe("ok");
    const choices = server.chatRequests.map((r) => (r.body as { tool_choice?: unknown }).tool_choice);
    expect(choices).toEqual([{ type: "function", function: { name: "a" } }, "none"]);
    expect(told).toEqual([1, 2]);
  });

  it("keeps going when only some calls of a step ask to terminate", async () => {
    server = await startServer({
      replies: [calling(["c1", "a"], ["c2", "b"]), { content: "Both done." }],
    });
    const agent = simAgent({
      tools: [tool("a", () => "A"), tool("b", () => "B")],
      afterToolCall: ({ toolCall }) => (toolCall.name === "a" ? { terminate: true } : undefined),
    });
    const result = await agent.prompt("Do both");
    expect(result.status).toBe("ok");
    expect(server.chatRequests).toHaveLength(2);
  });

  it("runs calls in parallel, reports them as they finish, and keeps results in the model's order", async () => {
    server = await startServer({
      replies: [calling(["c1", "slow"], ["c2", "fast"]), { content: "ok" }],
    });
    const agent = simAgent({
      tools: [
        tool("slow", async () => {
          await sleep(80);
          return "slow result";
        }),
        tool("fast", () => "fast result"),
      ],
    });
    const events = record(agent);
    await agent.prompt("Both");
    const ended = events.flatMap((e) => (e.type === "tool_execution_end" ? [e.toolCallId] : []));
    expect(ended).toEqual(["c2", "c1"]);
    expect(sentMessages(server, 1).slice(-2)).toEqual([
      { role: "tool", tool_call_id: "c1", content: "slow result" },
      { role: "tool", tool_call_id: "c2", content: "fast result" },
    ]);
  });

  it("runs a step one call at a time when one of its tools is sequential", async () => {
    server = await startServer({
      replies: [calling(["c1", "write"], ["c2", "read"]), { content: "ok" }],
    });
    const log: string[] = [];
    const agent = simAgent({
      tools: [
        tool(
          "write",
          async () => {
            log.push("write start");
            await sleep(50);
            log.push("write end");
            return "w";
          },
          { executionMode: "sequential" },
        ),
        tool("read", () => {
          log.push("read");
          return "r";
        }),
      ],
    });
    await agent.prompt("Both");
    expect(log).toEqual(["write start", "write end", "read"]);
  });

  it("leaves app-only messages out of what the model is sent, and lets transformContext add context", async () => {
    server = await startServer({ replies: [{ content: "ok" }] });
    const agent = simAgent({
      messages: [{ role: "notification", text: "UI only" } as never],
      transformContext: (messages) => [{ role: "user", content: "Context: today is Tuesday." }, ...messages],
    });
    await agent.prompt("What day is it?");
    // The added context goes first, in the same user message as the question (side by side, user
    // messages go as one).
    expect(sentMessages(server, 0)).toEqual([
      { role: "user", content: "Context: today is Tuesday.\n\nWhat day is it?" },
    ]);
    expect(agent.messages[0]).toEqual({ role: "notification", text: "UI only" });
  });

  it("aborts a run: the status says so and every tool call stays answered", async () => {
    server = await startServer({
      replies: [calling(["c1", "wait"]), { content: "never" }],
    });
    let agent: Agent | undefined;
    agent = simAgent({
      tools: [
        tool("wait", async (_args, { signal }) => {
          setTimeout(() => agent?.abort(), 10);
          await new Promise((resolve) => signal?.addEventListener("abort", resolve));
          return "late";
        }),
      ],
    });
    const result = await agent.prompt("Wait");
    expect(result.status).toBe("aborted");
    expect(agent.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "c1" });
    expect(agent.isRunning).toBe(false);
  });

  it("refuses a second prompt while a run is going, and continue() with nothing to answer", async () => {
    server = await startServer({ replies: [{ content: "slow", firstByteDelayMs: 50 }] });
    const agent = simAgent();
    const first = agent.prompt("one");
    // Through the promise, never thrown: a UI's `void agent.prompt(text).catch(show)` sees it.
    await expect(agent.prompt("two")).rejects.toThrow(/while a run is going/);
    await first;
    await expect(agent.continue()).rejects.toThrow(/nothing is queued/);
    expect(() => new Agent({} as never)).toThrow(/exactly one of config/);
  });

  it("runs the parallel calls of a recorded gpt-4o stream and answers them in the stream's order", async () => {
    server = await startServer({
      replies: [
        { type: "replay", fixture: "wire/openai/gpt-4o-parallel-tool-calls-usage-chunk.sse" },
        { content: "You are in France, using Loopwright." },
      ],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "gpt-4o" },
      tools: [
        tool("get_country", async () => {
          await sleep(40);
          return "France";
        }),
        tool("get_product_name", () => "Loopwright"),
      ],
    });
    const events = record(agent);
    const result = await agent.prompt("Where am I and what am I using?");
    expect(result.status).toBe("ok");
    expect(events.flatMap((e) => (e.type === "tool_execution_start" ? [e.toolName] : []))).toEqual([
      "get_country",
      "get_product_name",
    ]);
    expect(events.flatMap((e) => (e.type === "tool_execution_end" ? [e.toolName] : []))).toEqual([
      "get_product_name",
      "get_country",
    ]);
    expect(sentMessages(server, 1).slice(-2)).toEqual([
      { role: "tool", tool_call_id: "call_q2UyBRP7eXNTzAoR8lEhjc9Z", content: "France" },
      { role: "tool", tool_call_id: "call_b51ijcpFkDiTQG1bQzsrmtW5", content: "Loopwright" },
    ]);
    expect(events.some((e) => e.type === "usage")).toBe(true);
  });

  it("reports a tool's progress as tool_execution_update events between its start and end", async () => {
    server = await startServer({
      replies: [calling(["c1", "download"]), { content: "Done." }],
    });
    const agent = simAgent({
      tools: [
        tool("download", (_args, { onUpdate }) => {
          onUpdate("50%");
          onUpdate("100%");
          return "saved";
        }),
      ],
    });
    const events = record(agent);
    await agent.prompt("Fetch it");
    const toolEvents = events.filter((e) => e.type.startsWith("tool_execution"));
    expect(toolEvents.map((e) => (e.type === "tool_execution_update" ? e.partialResult : e.type))).toEqual([
      "tool_execution_start",
      "50%",
      "100%",
      "tool_execution_end",
    ]);
  });

  it("continues after a failed run from the transcript as it stands", async () => {
    server = await startServer({
      replies: [
        { type: "error", status: 400, body: { error: { message: "model is busy" } } },
        { content: "Now it works." },
      ],
    });
    const agent = simAgent({}, { maxRetries: 0 });
    const failed = await agent.prompt("Try");
    expect(failed.status).toBe("error");
    expect(agent.errorMessage).toMatch(/model is busy/);
    const retried = await agent.continue();
    expect(retried.status).toBe("ok");
    expect(agent.messages).toEqual([
      { role: "user", content: "Try" },
      { role: "assistant", content: "Now it works." },
    ]);
    expect(sentMessages(server, 1)).toEqual([{ role: "user", content: "Try" }]);
  });

  it("takes its endpoint, model and system prompt from an agent spec", async () => {
    server = await startServer({ replies: [{ content: "Four." }] });
    const agent = new Agent({
      spec: {
        spec: SPEC_TOKEN,
        model: { name: "spec-model", endpoint: { baseUrl: server.baseUrl } },
        prompt: [{ id: "role", text: "You add numbers." }],
      } as AgentSpec,
    });
    expect((await agent.prompt("2+2?")).status).toBe("ok");
    const body = server.chatRequests[0]!.body as { model: string; messages: ChatMessageLike[] };
    expect(body.model).toBe("spec-model");
    expect(body.messages[0]).toEqual({ role: "system", content: "You add numbers." });
  });

  it("tells transformContext the step, the prompt tokens used, the window and the model they are of, where compaction would decide", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "a", arguments: "{}" }], usage: { prompt_tokens: 700 } },
        { content: "ok" },
      ],
    });
    const seen: unknown[] = [];
    const agent = simAgent(
      {
        tools: [tool("a", () => "A")],
        transformContext: (messages, _signal, info) => {
          seen.push(info);
          return messages;
        },
      },
      { contextLength: 1000 },
    );
    await agent.prompt("Go");
    expect(seen).toEqual([{ step: 1 }, { step: 2, used: 700, limit: 1000, model: "sim" }]);
  });

  it("ends the run after a step whose tools themselves asked to terminate", async () => {
    server = await startServer({
      replies: [calling(["c1", "finish"]), { content: "never asked" }],
    });
    const agent = simAgent({
      tools: [
        tool("finish", (_args, { terminate }) => {
          terminate();
          return "finished";
        }),
      ],
    });
    expect((await agent.prompt("Finish")).status).toBe("terminated");
    expect(server.chatRequests).toHaveLength(1);
    expect(agent.messages.at(-1)).toEqual({ role: "tool", tool_call_id: "c1", content: "finished" });
  });
});

const twoCalls = calling(["c1", "write", '{"n":1}'], ["c2", "write", '{"n":2}']);

describe("a sequential step", () => {
  it("never starts a queued call after the run was stopped", async () => {
    server = await startServer({ replies: [twoCalls, { content: "never" }] });
    const ran: number[] = [];
    let agent: Agent | undefined;
    agent = simAgent({
      tools: [
        tool(
          "write",
          async ({ n }) => {
            ran.push(Number(n));
            if (n === 1) {
              agent?.abort();
              await sleep(30); // a write that finishes what it started
            }
            return `wrote ${String(n)}`;
          },
          { executionMode: "sequential" },
        ),
      ],
    });
    const result = await agent.prompt("Write both");
    await sleep(60);
    expect(result.status).toBe("aborted");
    expect(ran).toEqual([1]);
    const answers = agent.messages.filter((m) => (m as ChatMessageLike).role === "tool");
    expect(answers).toHaveLength(2);
  });

  it("gives each call its own time limit, not one that runs while it waits for the call before it", async () => {
    server = await startServer({ replies: [twoCalls, { content: "done" }] });
    const agent = simAgent(
      {
        tools: [
          tool(
            "write",
            async ({ n }) => {
              await sleep(200);
              return `wrote ${String(n)}`;
            },
            { executionMode: "sequential" },
          ),
        ],
      },
      { toolTimeoutSeconds: 0.3 },
    );
    const result = await agent.prompt("Write both");
    expect(result.status).toBe("ok");
    const answers = agent.messages
      .filter((m) => (m as ChatMessageLike).role === "tool")
      .map((m) => (m as { content: string }).content);
    expect(answers).toEqual(["wrote 1", "wrote 2"]);
  });
});

describe("terminate and the dedupe together", () => {
  it("ends the run when a tool asked to terminate and the step's other call was its repeat", async () => {
    server = await startServer({
      replies: [calling(["c1", "finish"], ["c2", "finish"]), { content: "never asked" }],
    });
    let runs = 0;
    const agent = simAgent({
      tools: [
        tool("finish", (_args, { terminate }) => {
          runs++;
          terminate();
          return "finished";
        }),
      ],
    });
    expect((await agent.prompt("Finish")).status).toBe("terminated");
    expect(runs).toBe(1); // the repeat shared the first call's answer
    expect(server.chatRequests).toHaveLength(1);
  });
});
