// The Agent options a session reads besides its own (r10 #1): each reaches the session's Agent, the
// hooks the session has too composed with its own, over HTTP with the testkit's scripted model.
import { fileURLToPath } from "node:url";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  AgentError,
  type AgentTool,
  type ChatMessageLike,
  createSession,
  defineTool,
  FINAL_TURN_NOTE,
  type SessionOptions,
} from "./test-exports.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function body(s: TestServer, index: number): { messages: ChatMessageLike[]; tool_choice?: unknown } {
  return s.chatRequests[index]!.body as { messages: ChatMessageLike[]; tool_choice?: unknown };
}

function texts(s: TestServer, index: number): string[] {
  return body(s, index).messages.map((m) => (typeof m.content === "string" ? m.content : ""));
}

/** A tool that counts its runs. */
function counted(name: string, result = "done"): { tool: AgentTool; runs: () => number } {
  let runs = 0;
  const tool = defineTool({
    name,
    description: `The ${name} tool`,
    parameters: { type: "object", properties: { path: { type: "string" } } },
    execute: () => {
      runs++;
      return result;
    },
  });
  return { tool, runs: () => runs };
}

/** A model that calls `name` (`calls` times in one step, with `args`) until a tool has answered, when asked "please …"; else answers "done". */
async function callsOnce(name: string, args = "{}", calls = 1): Promise<TestServer> {
  return startServer({
    replies: (request) => {
      const messages = (request.body as { messages: ChatMessageLike[] }).messages;
      const asked = messages.some((m) => m.role === "user" && String(m.content).startsWith("please"));
      return asked && !messages.some((m) => m.role === "tool")
        ? { toolCalls: Array.from({ length: calls }, () => ({ name, arguments: args })) }
        : { content: "done" };
    },
  });
}

function tools(s: TestServer, index: number): string[] {
  const list = (s.chatRequests[index]!.body as { tools?: { function: { name: string } }[] }).tools ?? [];
  return list.map((t) => t.function.name);
}

describe("createSession hands the Agent's hooks to its agent", () => {
  it("runs beforeToolCall: a blocked call never runs its tool, and the model reads the reason", async () => {
    server = await callsOnce("delete_file", '{"path":"/tmp/x.txt"}');
    const del = counted("delete_file", "deleted");
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      tools: [del.tool],
      beforeToolCall: () => ({ block: true, reason: "needs approval" }),
    });
    const result = await session.prompt("please delete /tmp/x.txt");
    expect(result.status).toBe("ok");
    expect(del.runs()).toBe(0);
    const answer = session.messages.find((m) => (m as ChatMessageLike).role === "tool") as ChatMessageLike;
    expect(String(answer.content)).toContain("needs approval");
    expect(texts(server, 1).join("\n")).toContain("needs approval");
  });

  it("runs afterToolCall: the model reads the result it returns", async () => {
    server = await callsOnce("delete_file", '{"path":"/tmp/x.txt"}');
    const del = counted("delete_file", "deleted");
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      tools: [del.tool],
      afterToolCall: () => ({ result: "REPLACED" }),
    });
    await session.prompt("please delete /tmp/x.txt");
    expect(del.runs()).toBe(1);
    expect(texts(server, 1)).toContain("REPLACED");
  });

  it("runs dispatch for a call of a tool the session does not hold", async () => {
    server = await callsOnce("remote_lookup", '{"q":1}');
    const seen: string[] = [];
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      dispatch: (request) => {
        seen.push(request.name);
        return "from the host's dispatch";
      },
    });
    await session.prompt("please look it up");
    expect(seen).toEqual(["remote_lookup"]);
    expect(texts(server, 1)).toContain("from the host's dispatch");
  });

  it("sends what convertToLlm makes of the transcript", async () => {
    server = await startServer({ replies: [{ content: "hi" }] });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      convertToLlm: (messages) =>
        (messages as ChatMessageLike[]).map((m) =>
          m.role === "user" ? { ...m, content: `[converted] ${String(m.content)}` } : m,
        ) as never,
    });
    await session.prompt("hello");
    expect(texts(server, 0)).toContain("[converted] hello");
  });

  it("reads steeringMode and followUpMode: 'all' delivers every queued message at once", async () => {
    server = await callsOnce("clock");
    const clock = counted("clock", "noon");
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      tools: [clock.tool],
      steeringMode: "all",
      followUpMode: "all",
    });
    expect(session.agent.steeringMode).toBe("all");
    expect(session.agent.followUpMode).toBe("all");
    session.agent.steer("steer one");
    session.agent.steer("steer two");
    await session.prompt("please tell the time");
    // Queued before the prompt, both steered messages ride on its first request, after it;
    // one-at-a-time sends one. (Adjacent user messages go out merged into one.)
    expect(texts(server, 0).at(-1)).toMatch(/please tell the time[\s\S]*steer one[\s\S]*steer two/);
    expect(server.chatRequests).toHaveLength(2);
    const before = server.chatRequests.length;
    session.agent.followUp("follow one");
    session.agent.followUp("follow two");
    await session.prompt("what now");
    // The answer, then both follow-ups in one request.
    expect(server.chatRequests.length - before).toBe(2);
    expect(texts(server, before + 1).at(-1)).toMatch(/follow one[\s\S]*follow two/);
  });

  it("reads dedupeToolCalls: false runs identical calls of a step each", async () => {
    server = await callsOnce("clock", "{}", 2);
    const clock = counted("clock", "noon");
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      tools: [clock.tool],
      dedupeToolCalls: false,
    });
    await session.prompt("please tell the time twice");
    expect(clock.runs()).toBe(2);
    // The default shares one answer: the option is what made the difference.
    server.chatRequests.length = 0;
    const shared = counted("clock", "noon");
    const plain = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      tools: [shared.tool],
    });
    await plain.prompt("please tell the time twice");
    expect(shared.runs()).toBe(1);
  });
});

describe("createSession composes toolChoice, transformContext and shouldStopAfterTurn with its own", () => {
  it("sends the host's per-step toolChoice, and 'none' on the reserved final turn", async () => {
    server = await callsOnce("clock");
    const clock = counted("clock", "noon");
    const asked: number[] = [];
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      tools: [clock.tool],
      toolChoice: ({ step }) => {
        asked.push(step);
        return step === 1 ? { type: "function", function: { name: "clock" } } : "required";
      },
    });
    await session.prompt("please tell the time");
    expect(body(server, 0).tool_choice).toEqual({ type: "function", function: { name: "clock" } });
    expect(body(server, 1).tool_choice).toBe("required");
    // The reserved final turn is the session's: "none", whatever the host would say.
    const before = server.chatRequests.length;
    const tight = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      tools: [clock.tool],
      maxTurns: 1,
      toolChoice: () => "required",
    });
    await tight.prompt("please tell the time");
    expect(body(server, before).tool_choice).toBe("required");
    expect(body(server, before + 1).tool_choice).toBe("none");
    expect(asked).toEqual([1, 2]);
  });

  it("runs the host's transformContext after its own in-band step, for the request only", async () => {
    server = await callsOnce("clock");
    const clock = counted("clock", "noon");
    const views: string[][] = [];
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      tools: [clock.tool],
      maxTurns: 1,
      transformContext: async (messages, _signal, { step }) => {
        views.push((messages as ChatMessageLike[]).map((m) => String(m.content ?? "")));
        return [...messages, { role: "user", content: `[host context for step ${step}]` }];
      },
    });
    await session.prompt("please tell the time");
    // (Adjacent user messages go out merged into one.)
    expect(texts(server, 0).at(-1)).toMatch(/^please tell the time\s+\[host context for step 1\]$/);
    // Step 2 is the reserved turn: the host sees the session's note and adds after it.
    expect(views[1]?.at(-1)).toBe(FINAL_TURN_NOTE);
    const last = texts(server, 1).at(-1) ?? "";
    expect(last.indexOf(FINAL_TURN_NOTE)).toBeGreaterThanOrEqual(0);
    expect(last.indexOf("[host context for step 2]")).toBeGreaterThan(last.indexOf(FINAL_TURN_NOTE));
    expect(session.messages.map((m) => String((m as ChatMessageLike).content))).not.toContain(
      "[host context for step 1]",
    );
  });

  it("stops when the host's shouldStopAfterTurn says so, as 'stopped'", async () => {
    server = await callsOnce("clock");
    const clock = counted("clock", "noon");
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      tools: [clock.tool],
      shouldStopAfterTurn: ({ toolResults }) => toolResults.length > 0,
    });
    const result = await session.prompt("please tell the time");
    expect(clock.runs()).toBe(1);
    expect(server.chatRequests).toHaveLength(1);
    expect(result.status).toBe("stopped");
    // The session's own stall check still counts: it is asked, and a stall is still a stall.
    const timeline = session.getSnapshot().timeline;
    expect(timeline.some((e) => e.type === "notice" && /stalled/.test(e.text))).toBe(false);
  });

  it("refuses these options of the wrong shape, as new Agent does", async () => {
    server = await startServer({ replies: [{ content: "hi" }] });
    const refused = async (options: Record<string, unknown>) => {
      const error = await createSession({
        config: { baseUrl: server!.baseUrl, model: "m" },
        ...options,
      } as SessionOptions).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(AgentError.isInstance(error), JSON.stringify(Object.keys(options))).toBe(true);
      expect((error as AgentError).code).toBe("invalid-input");
      return (error as AgentError).message;
    };
    expect(await refused({ toolChoice: "none" })).toMatch(/^createSession: toolChoice must be a function/);
    expect(await refused({ transformContext: {} })).toMatch(
      /^createSession: transformContext must be a function/,
    );
    expect(await refused({ shouldStopAfterTurn: true })).toMatch(
      /^createSession: shouldStopAfterTurn must be a function/,
    );
    expect(await refused({ beforeToolCall: "ask" })).toMatch(
      /^createSession: beforeToolCall must be a function/,
    );
    expect(await refused({ afterToolCall: 1 })).toMatch(/^createSession: afterToolCall must be a function/);
    expect(await refused({ dispatch: [] })).toMatch(/^createSession: dispatch must be a function/);
    expect(await refused({ convertToLlm: "x" })).toMatch(/^createSession: convertToLlm must be a function/);
    expect(await refused({ steeringMode: "some" })).toMatch(/^createSession: steeringMode must be/);
    expect(await refused({ followUpMode: 2 })).toMatch(/^createSession: followUpMode must be/);
    expect(await refused({ dedupeToolCalls: "yes" })).toMatch(/^createSession: dedupeToolCalls must be/);
    expect(server.chatRequests).toHaveLength(0);
  });
});

it("declares the tools the session holds (sanity for the helpers above)", async () => {
  server = await callsOnce("clock");
  const clock = counted("clock", "noon");
  const session = await createSession({
    config: { baseUrl: server.baseUrl, model: "m" },
    tools: [clock.tool],
  });
  await session.prompt("please tell the time");
  expect(tools(server, 0)).toEqual(["clock"]);
});

describe("dedupeToolCalls with MCP servers", { timeout: 30_000 }, () => {
  const EVERYTHING = fileURLToPath(
    new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
  );

  /** How many of a step's two identical calls of `name` were dispatched (a shared answer is not). */
  async function dispatched(name: string, dedupeToolCalls?: boolean): Promise<number> {
    server = await callsOnce(name, "{}", 2);
    let calls = 0;
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      mcpServers: { mcpServers: { everything: { command: process.execPath, args: [EVERYTHING, "stdio"] } } },
      beforeToolCall: ({ toolCall }) => {
        if (toolCall.name === name) calls++;
        return undefined;
      },
      ...(dedupeToolCalls !== undefined ? { dedupeToolCalls } : {}),
    });
    try {
      await session.mcpReady();
      expect((await session.prompt("please run it twice")).status).toBe("ok");
      expect(texts(server, 1).filter((text) => text !== "")).not.toHaveLength(0);
    } finally {
      await session.close();
      await server.close();
      server = undefined;
    }
    return calls;
  }

  it("shares an MCP tool's answer when the host's policy or the pool's allows it", async () => {
    // toggle-simulated-logging is neither read-only nor idempotent: the pool runs each call.
    expect(await dispatched("everything__toggle-simulated-logging")).toBe(2);
    expect(await dispatched("everything__toggle-simulated-logging", true)).toBe(1);
    // echo is read-only: the pool shares it, whatever the host's policy says.
    expect(await dispatched("everything__echo", false)).toBe(1);
  });
});
