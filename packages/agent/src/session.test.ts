import { appendFileSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { readFixture, startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import {
  Agent,
  AgentError,
  answeredPrefix,
  type ChatMessageLike,
  createSession,
  FINAL_TURN_NOTE,
  listSessions,
  SessionBusyError,
  type SessionEvent,
  type SessionOptions,
  type TimelineEvent,
} from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

let server: TestServer | undefined;
const tempDir = useTempDirs("agent-session");
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function sent(s: TestServer, index: number): ChatMessageLike[] {
  return (s.chatRequests[index]!.body as { messages: ChatMessageLike[] }).messages;
}

/** Every event the session emits, in order. */
function eventsOf(session: { onEvent(listener: (event: SessionEvent) => void): unknown }): SessionEvent[] {
  const events: SessionEvent[] = [];
  session.onEvent((e) => events.push(e));
  return events;
}

/** A "look" tool with no declared parameters that answers `answer`. */
const lookTool = (answer: string) => ({
  name: "look",
  description: "Looks",
  parameters: { type: "object" },
  execute: () => answer,
});

/** The model's reply calling "look" once, with id `c<n>` and arguments `{"n":<n>}`. */
const lookCall = (n: number) => ({ toolCalls: [{ id: `c${n}`, name: "look", arguments: `{"n":${n}}` }] });

type Replies = NonNullable<Parameters<typeof startServer>[0]>["replies"];

/** Starts the server on `replies`, then a session on it (model "sim") with a "look" tool answering `answer`. */
async function lookSession(
  replies: Replies,
  answer: string,
  options: Omit<SessionOptions, "config"> = {},
  model = "sim",
) {
  server = await startServer({ replies });
  return createSession({ config: { baseUrl: server.baseUrl, model }, tools: [lookTool(answer)], ...options });
}

const QUESTIONS = JSON.stringify({
  questions: [
    { header: "Deploy", question: "Which environment?", options: [{ label: "prod" }, { label: "staging" }] },
    { question: "Notify on?", options: [{ label: "email" }, { label: "slack" }], multiSelect: true },
  ],
});

/** Starts the server with a model that asks the QUESTIONS, then replies `reply`; a session on it with AskUser. */
async function askUserSession(reply: string) {
  server = await startServer({
    replies: [{ toolCalls: [{ id: "a1", name: "AskUser", arguments: QUESTIONS }] }, { content: reply }],
  });
  return createSession({
    config: { baseUrl: server.baseUrl, model: "sim" },
    builtInTools: { askUser: true },
  });
}

describe("Session over HTTP", () => {
  it("pauses on AskUser until the host answers, and hands the model the answers by question", async () => {
    const session = await askUserSession("Deploying.");
    session.onEvent((e) => {
      if (e.type === "question") session.submitAnswer(e.id, ["prod", ["email", "slack"]]);
    });
    const result = await session.prompt("Deploy it");
    expect(result).toEqual({ status: "ok", reply: "Deploying." });
    expect(JSON.parse(sent(server!, 1).at(-1)!.content as string)).toEqual({
      "Which environment?": "prod",
      "Notify on?": ["email", "slack"],
    });
    const question = session.getSnapshot().timeline.find((e) => e.type === "question");
    expect(question).toMatchObject({ questions: [{ answer: "prod" }, { answer: ["email", "slack"] }] });
    expect(session.pendingQuestion).toBeUndefined();
  });

  it("sends skipped questions as empty answers", async () => {
    const session = await askUserSession("Fine.");
    let pendingWhenAsked: string | undefined;
    let wrongCount: unknown;
    session.onEvent((e) => {
      if (e.type !== "question") return;
      pendingWhenAsked = session.pendingQuestion?.id;
      try {
        session.submitAnswer(e.id, [""]);
      } catch (error) {
        wrongCount = error;
      }
      session.submitAnswer(e.id, ["", ""]);
    });
    await session.prompt("Deploy it");
    expect(pendingWhenAsked).toBe("q1");
    expect(String(wrongCount)).toMatch(/has 2 question/);
    expect(JSON.parse(sent(server!, 1).at(-1)!.content as string)).toEqual({
      "Which environment?": "",
      "Notify on?": "",
    });
  });

  it("answers a pending question with empty answers on abort, and the run ends aborted", async () => {
    const session = await askUserSession("never");
    session.onEvent((e) => {
      if (e.type === "question") setTimeout(() => session.abort(), 5);
    });
    const result = await session.prompt("Deploy it");
    expect(result.status).toBe("aborted");
    const timeline = session.getSnapshot().timeline;
    expect(timeline.find((e) => e.type === "question")).toMatchObject({
      questions: [{ answer: "" }, { answer: "" }],
    });
    expect(timeline.at(-1)).toEqual({ type: "interrupted" });
    expect(answeredPrefix(session.messages)).toBe(session.messages.length);
    expect(server!.chatRequests).toHaveLength(1);
  });

  it("stops a run that repeats the same tool calls past the stall threshold", async () => {
    const same = { toolCalls: [{ id: "x", name: "look", arguments: '{"at":"door"}' }] };
    const session = await lookSession([same, same, same, same, { content: "never" }], "a door", {
      stallThreshold: 3,
    });
    const result = await session.prompt("Find the key");
    expect(result.status).toBe("stalled");
    expect(server!.chatRequests).toHaveLength(3);
    expect(answeredPrefix(session.messages)).toBe(session.messages.length);
  });

  it("does not count the loop's preselection exchange as a tool turn: a follow-up run keeps the prompt's budget", async () => {
    const look = (id: string, at: string) => ({
      toolCalls: [
        { id, name: "call_tool", arguments: JSON.stringify({ name: "look_door", arguments: { at } }) },
      ],
    });
    const main = [{ content: "Seen." }, look("l1", "front"), look("l2", "back"), { content: "Both seen." }];
    const isSelection = (body: unknown) =>
      JSON.stringify((body as { messages: unknown[] }).messages[0]).includes("You choose which tools");
    server = await startServer({
      replies: (request) =>
        isSelection(request.body)
          ? { content: '{"tools":["look_door"]}' }
          : (main.shift() ?? { content: "extra" }),
    });
    const session = await createSession({
      config: {
        baseUrl: server.baseUrl,
        model: "sim",
        toolDiscovery: "proxy",
        preselect: true,
        toolSelectModel: "sim",
      },
      tools: [
        {
          name: "look_door",
          description: "Looks at a door",
          parameters: { type: "object", properties: { at: { type: "string" } } },
          execute: () => "a door",
        },
      ],
      maxTurns: 2,
    });
    session.agent.followUp({ role: "user", content: "Now look at the front door and the back door." });
    const result = await session.prompt("Look at the door");
    const turns = server.chatRequests.filter((r) => !isSelection(r.body));
    expect(result.status).toBe("ok");
    expect(result.reply).toBe("Both seen.");
    expect(turns).toHaveLength(4);
    // The preselection's load_tools exchange is in the transcript the model is sent.
    expect(JSON.stringify(turns[0]!.body)).toContain("call_preselected_");
    // The follow-up's two tool turns fit the budget of 2: neither request is the reserved final turn.
    for (const turn of turns.slice(1, 3)) {
      expect(JSON.stringify(turn.body)).not.toContain(FINAL_TURN_NOTE.slice(0, 40));
      expect((turn.body as { tool_choice?: unknown }).tool_choice).toBeUndefined();
    }
  });

  it("calls it stalled when the same tool call comes back between text replies while todos are open", async () => {
    const todos = JSON.stringify({ todos: [{ content: "find the key", status: "inProgress" }] });
    const look = { toolCalls: [{ id: "x", name: "look", arguments: '{"at":"door"}' }] };
    const text = { content: "Looking around." };
    const session = await lookSession(
      [
        { toolCalls: [{ id: "t1", name: "TodoWrite", arguments: todos }] },
        ...Array.from({ length: 12 }, () => [look, text]).flat(),
      ],
      "a door",
      { builtInTools: { todoWrite: true }, stallThreshold: 3, maxTurns: 12 },
    );
    const result = await session.prompt("Find the key");
    expect(result.status).toBe("stalled");
    // TodoWrite, look, text, look, text, look: the third identical call set ends the run.
    expect(server!.chatRequests).toHaveLength(6);
    expect(answeredPrefix(session.messages)).toBe(session.messages.length);
  });

  it("nudges text-only replies while todos are open, and calls it stalled past the threshold", async () => {
    const todos = JSON.stringify({ todos: [{ content: "write tests", status: "inProgress" }] });
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "t1", name: "TodoWrite", arguments: todos }] },
        { content: "I will do it." },
        { content: "Still on it." },
        { content: "Soon." },
        { content: "never" },
      ],
    });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      builtInTools: { todoWrite: true },
      stallThreshold: 3,
    });
    const changed: SessionEvent[] = [];
    session.onEvent((e) => {
      if (e.type === "todos_changed") changed.push(e);
    });
    const result = await session.prompt("Write the tests");
    expect(result.status).toBe("stalled");
    expect(server.chatRequests).toHaveLength(4);
    expect(sent(server, 2).at(-1)).toMatchObject({
      role: "user",
      content: expect.stringContaining("unfinished"),
    });
    expect(changed).toEqual([
      { type: "todos_changed", todos: [{ content: "write tests", status: "inProgress" }] },
    ]);
    expect(session.getSnapshot().todos).toEqual([{ content: "write tests", status: "inProgress" }]);
  });

  it("reserves the turn after maxTurns for the answer, and ends with maxTurns when the model still calls", async () => {
    const session = await lookSession(
      [lookCall(1), lookCall(2), lookCall(3), { content: "never" }],
      "nothing",
      {
        maxTurns: 2,
      },
    );
    const result = await session.prompt("Search");
    expect(result.status).toBe("maxTurns");
    expect(server!.chatRequests).toHaveLength(3);
    expect(sent(server!, 2).at(-1)).toEqual({ role: "user", content: FINAL_TURN_NOTE });
    expect(session.messages.some((m) => (m as ChatMessageLike).content === FINAL_TURN_NOTE)).toBe(false);
    expect(answeredPrefix(session.messages)).toBe(session.messages.length);
  });

  it("answers on the reserved turn with status ok", async () => {
    const session = await lookSession([lookCall(1), { content: "Here is what I found." }], "nothing", {
      maxTurns: 1,
    });
    expect(await session.prompt("Search")).toEqual({ status: "ok", reply: "Here is what I found." });
    expect(sent(server!, 1).at(-1)).toEqual({ role: "user", content: FINAL_TURN_NOTE });
  });

  it("sends the reserved turn with tool_choice none (and the note: a server may ignore it), earlier turns without", async () => {
    const session = await lookSession([lookCall(1), lookCall(2), { content: "Done looking." }], "nothing", {
      maxTurns: 2,
    });
    expect(await session.prompt("Search")).toEqual({ status: "ok", reply: "Done looking." });
    const choices = server!.chatRequests.map((r) => (r.body as { tool_choice?: unknown }).tool_choice);
    expect(choices).toEqual([undefined, undefined, "none"]);
    expect(sent(server!, 2).at(-1)).toEqual({ role: "user", content: FINAL_TURN_NOTE });
  });

  it("answers on the reserved turn when the server refuses tool_choice: re-sent without it, the note kept, every call answered", async () => {
    // OpenRouter's 404 when no provider of the model takes tool_choice, as recorded.
    const refused = {
      type: "error",
      status: 404,
      body: readFixture("errors/openrouter/404-no-endpoints-support-tool-choice.message.txt"),
    } as const;
    const session = await lookSession(
      [lookCall(1), refused, { content: "Found nothing." }, lookCall(2), { content: "Still nothing." }],
      "nothing",
      { maxTurns: 1 },
      "z-ai/glm-4.5-air",
    );
    expect(await session.prompt("Search")).toEqual({ status: "ok", reply: "Found nothing." });
    // The next prompt: the model's latch sends its reserved turn without tool_choice and without tools.
    expect(await session.prompt("Again")).toEqual({ status: "ok", reply: "Still nothing." });
    const bodies = server!.chatRequests.map((r) => r.body as { tool_choice?: unknown; tools?: unknown[] });
    expect(bodies.map((b) => b.tool_choice)).toEqual([undefined, "none", undefined, undefined, undefined]);
    expect(bodies.map((b) => b.tools?.length)).toEqual([1, 1, undefined, 1, undefined]);
    for (const at of [1, 2, 4])
      expect(sent(server!, at).at(-1)).toEqual({ role: "user", content: FINAL_TURN_NOTE });
    expect(
      session.getSnapshot().timeline.some((e) => e.type === "notice" && /refused tool_choice/.test(e.text)),
    ).toBe(true);
    expect(answeredPrefix(session.messages)).toBe(session.messages.length);
    expect(session.messages.some((m) => (m as ChatMessageLike).content === FINAL_TURN_NOTE)).toBe(false);
  });

  /** A session with maxTurns 2 whose model opens a todo, pauses with text (nudged), then goes on as `rest`. */
  async function nudged(rest: object[]) {
    const todos = JSON.stringify({ todos: [{ content: "write tests", status: "inProgress" }] });
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "t1", name: "TodoWrite", arguments: todos }] },
        { content: "Pausing here." },
        ...rest,
      ],
    });
    const looked: number[] = [];
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      builtInTools: { todoWrite: true },
      tools: [
        {
          name: "look",
          description: "Looks",
          parameters: { type: "object" },
          execute: (args) => {
            looked.push(Number((args as { n: number }).n));
            return "nothing";
          },
        },
      ],
      maxTurns: 2,
    });
    return { session, looked, result: await session.prompt("Write the tests") };
  }

  it("counts maxTurns over the whole prompt: a nudge about open todos starts no fresh tool budget", async () => {
    const { result, looked } = await nudged([
      lookCall(2),
      { content: "Out of turns; here is where it stands." },
      lookCall(3),
      { content: "never" },
    ]);
    // Two tool turns (TodoWrite, then look after the nudge), then the reserved turn; its answer is the
    // end, though a todo is open: the budget of the prompt is spent, so no nudge asks for more work.
    expect(result).toEqual({ status: "ok", reply: "Out of turns; here is where it stands." });
    expect(looked).toEqual([2]);
    const s = server as TestServer;
    expect(s.chatRequests).toHaveLength(4);
    const choices = s.chatRequests.map((r) => (r.body as { tool_choice?: unknown }).tool_choice);
    expect(choices).toEqual([undefined, undefined, undefined, "none"]);
    expect(sent(s, 2).at(-1)).toMatchObject({
      role: "user",
      content: expect.stringMatching(/\[notice\] 1 tool turn\(s\) left for this request; plan to finish\.$/),
    });
    expect(sent(s, 3).at(-1)).toEqual({ role: "user", content: FINAL_TURN_NOTE });
  });

  it("ends with maxTurns, the call unrun, when the model calls on the reserved turn of a nudged prompt", async () => {
    const { result, looked, session } = await nudged([lookCall(2), lookCall(3), { content: "never" }]);
    expect(result.status).toBe("maxTurns");
    expect(looked).toEqual([2]);
    expect((server as TestServer).chatRequests).toHaveLength(4);
    expect(answeredPrefix(session.messages)).toBe(session.messages.length);
  });

  it("tells its listeners when a late </think> takes streamed answer text back (assistant_retract)", async () => {
    server = await startServer({ replies: [{ content: "Plan it.</think>Hi!", chunkChars: 3 }] });
    const session = await createSession({ config: { baseUrl: server.baseUrl, model: "sim" } });
    const events = eventsOf(session);
    await session.prompt("Hello");
    let drawn = "";
    for (const e of events) {
      if (e.type === "assistant_delta") drawn += e.text;
      if (e.type === "assistant_retract") drawn = drawn.slice(0, drawn.length - e.chars);
    }
    expect(events.filter((e) => e.type === "assistant_retract")).toHaveLength(1);
    expect(drawn).toBe("Hi!");
    expect(session.getSnapshot().timeline.at(-1)).toEqual({ type: "assistant", text: "Hi!" });
    await session.close();
  });

  it("shows a call's arguments that could not be read as the model wrote them, not as {}", async () => {
    const session = await lookSession(
      [{ toolCalls: [{ id: "c1", name: "look", arguments: "{bad json" }] }, { content: "Sorry." }],
      "a door",
    );
    const events = eventsOf(session);
    await session.prompt("Look");
    expect(events.find((e) => e.type === "tool_start")).toMatchObject({ argsSummary: "{bad json" });
    await session.close();
  });

  it("tells its listeners when reasoning drawn for a tool call's markup is taken back (thinking_retract)", async () => {
    const call = `<tool_call>\n${JSON.stringify({ name: "note", arguments: { text: "x <think> y </think> z" } })}\n</tool_call>`;
    server = await startServer({
      replies: [{ content: `<think>plan</think>Noting.\n${call}`, chunkChars: 4 }, { content: "Noted." }],
    });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        {
          name: "note",
          description: "Notes a text.",
          parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
          execute: async () => "ok",
        },
      ],
    });
    const events = eventsOf(session);
    await session.prompt("Note it");
    let reasoning = "";
    for (const e of events) {
      if (e.type === "tool_start") break;
      if (e.type === "thinking_delta") reasoning += e.text;
      if (e.type === "thinking_retract") reasoning = reasoning.slice(0, reasoning.length - e.chars);
    }
    expect(events.some((e) => e.type === "thinking_retract")).toBe(true);
    expect(reasoning).toBe("plan");
    await session.close();
  });

  it("counts a template-opened scratchpad a late </think> takes back as thinking time, not reply time (run_metrics)", async () => {
    // The scratchpad streams as content for about 30 slow chunks; the answer after </think> takes two.
    const scratchpad = "Think about how to greet them. ".repeat(2);
    server = await startServer({
      replies: [{ content: `${scratchpad}</think>Hi!`, chunkChars: 2, chunkDelayMs: 15 }],
    });
    const session = await createSession({ config: { baseUrl: server.baseUrl, model: "sim" } });
    const events = eventsOf(session);
    await session.prompt("Hello");
    expect(events.filter((e) => e.type === "assistant_retract")).toHaveLength(1);
    const last = events.filter((e) => e.type === "run_metrics").at(-1);
    expect(last).toMatchObject({ running: false });
    const { thinkingElapsed, replyElapsed } = last as Extract<SessionEvent, { type: "run_metrics" }>;
    // The first answer token is "Hi", well after the scratchpad: most of the run was thinking.
    expect(thinkingElapsed).toBeGreaterThan(replyElapsed * 2);
    await session.close();
  });

  it("keeps an earlier turn's answer text as the first answer token when a later turn's text is all taken back", async () => {
    // Turn 1 answers at once and calls a tool; turn 2 is a slow scratchpad, then the answer.
    const scratchpad = "Think about what the tool said. ".repeat(2);
    const session = await lookSession(
      [
        { content: "Let me look.", toolCalls: [{ id: "c1", name: "look", arguments: "{}" }] },
        { content: `${scratchpad}</think>A door.`, chunkChars: 2, chunkDelayMs: 15 },
      ],
      "a door",
    );
    const events = eventsOf(session);
    await session.prompt("What is there?");
    expect(events.filter((e) => e.type === "assistant_retract")).toHaveLength(1);
    const last = events.filter((e) => e.type === "run_metrics").at(-1);
    const { thinkingElapsed, replyElapsed } = last as Extract<SessionEvent, { type: "run_metrics" }>;
    // "Let me look." came first and stays: the slow scratchpad after it is reply time.
    expect(replyElapsed).toBeGreaterThan(thinkingElapsed * 2);
    await session.close();
  });

  it("runs one prompt at a time, and keeps the timeline apart from stream events", async () => {
    server = await startServer({
      replies: [{ content: "Hello back.", chunkChars: 4, firstByteDelayMs: 30 }],
    });
    const session = await createSession({ config: { baseUrl: server.baseUrl, model: "sim" } });
    const events = eventsOf(session);
    let snapshots = 0;
    session.subscribe(() => snapshots++);
    const before = session.getSnapshot();
    const running = session.prompt("Hello");
    expect(session.running).toBe(true);
    await expect(session.prompt("again")).rejects.toSatisfy((e: unknown) => SessionBusyError.isInstance(e));
    await running;
    expect(session.getSnapshot()).not.toBe(before);
    const once = session.getSnapshot();
    const twice = session.getSnapshot();
    expect(once).toBe(twice);
    expect(session.getSnapshot().timeline).toEqual([
      { type: "user", text: "Hello" },
      { type: "assistant", text: "Hello back." },
    ]);
    expect(
      events
        .filter((e) => e.type === "assistant_delta")
        .map((e) => (e as { text: string }).text)
        .join(""),
    ).toBe("Hello back.");
    const metrics = events.filter((e) => e.type === "run_metrics");
    expect(metrics[0]).toMatchObject({ running: true });
    expect(metrics.at(-1)).toMatchObject({ running: false, outputTokens: expect.any(Number) });
    expect(snapshots).toBeGreaterThan(1);
  });

  it("reports a failed run as error with the reason, without rejecting", async () => {
    server = await startServer({
      replies: [{ type: "error", status: 400, body: { error: { message: "bad model" } } }],
    });
    const session = await createSession({ config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 } });
    const result = await session.prompt("Hi");
    expect(result.status).toBe("error");
    expect(result.error).toMatch(/bad model/);
    // The prompt nobody answered is not kept (the next one would be joined onto it), and the timeline says so.
    expect(session.getSnapshot().timeline.slice(-2)).toMatchObject([
      { type: "error" },
      { type: "notice", text: expect.stringMatching(/not kept.*send it again/) },
    ]);
    expect(session.messages).toEqual([]);
  });

  it("goes on after a failed or stopped prompt on a chat template that makes roles alternate", async () => {
    // Gemma's and Mistral's templates on llama.cpp refuse two user messages in a row (a 400,
    // recorded from b9749). A prompt that failed, or was stopped before any answer, leaves its
    // question unanswered; the next one went as a second user message and was refused — and so was
    // every later prompt of the session, resumed or not.
    const refusal = readFixture("errors/llamacpp/roles-must-alternate-jinja-b9749.json");
    server = await startServer({
      personality: {
        name: "alternating-roles",
        check(request) {
          const messages = (request.body as { messages?: { role?: unknown }[] }).messages ?? [];
          const twice = messages.some(
            (m, i) => i > 0 && m.role === "user" && messages[i - 1]?.role === "user",
          );
          return twice ? { type: "error", status: 400, body: JSON.parse(refusal) } : undefined;
        },
      },
      replies: [
        { type: "error", status: 400, body: { error: { message: "bad request" } } },
        { content: "Never seen.", firstByteDelayMs: 30_000 },
        { content: "Both answered." },
      ],
    });
    const dir = tempDir();
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "alt",
    });
    expect((await session.prompt("What is 6 * 7?")).status).toBe("error");
    const stopped = session.prompt("Are you there?");
    // Stopped while the server thinks, before any answer: was refused at once instead.
    while (server.chatRequests.length < 2) await new Promise((r) => setTimeout(r, 20));
    session.abort();
    expect((await stopped).status).toBe("aborted");
    session.dispose();

    const resumed = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "alt",
    });
    const result = await resumed.prompt("Answer all three, please.");
    expect(result).toEqual({ status: "ok", reply: "Both answered." });
    // The questions nobody answered were not kept, in the session or its file (each run said so):
    // the new one goes alone, not joined onto them.
    const last = sent(server, server.chatRequests.length - 1);
    expect(last.filter((m) => m.role === "user")).toEqual([
      expect.objectContaining({ content: "Answer all three, please." }),
    ]);
    expect(JSON.stringify(last)).not.toMatch(/What is 6|Are you there/);
    expect(resumed.messages.filter((m) => (m as ChatMessageLike).role === "user")).toHaveLength(1);
  });

  it("keeps a stopped prompt's streamed answer text as its reply, and the next prompt goes as a new turn", async () => {
    server = await startServer({
      replies: [
        { content: "Slow answer ".repeat(40), chunkChars: 4, chunkDelayMs: 20 },
        { content: "Four." },
      ],
    });
    const dir = tempDir();
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "stop",
    });
    let streamed = "";
    session.onEvent((event) => {
      if (event.type === "assistant_delta") streamed += event.text;
    });
    const stopped = session.prompt("Write an essay");
    while (streamed.length < 12) await new Promise((r) => setTimeout(r, 10));
    session.abort();
    expect((await stopped).status).toBe("aborted");
    const shown = streamed;
    expect(session.getSnapshot().timeline.at(-1)).toMatchObject({
      type: "notice",
      text: expect.stringMatching(/kept/),
    });
    expect((await session.prompt("what is 2+2")).status).toBe("ok");
    const last = sent(server, server.chatRequests.length - 1);
    // What the user saw is the assistant's turn; the new question follows it, alone.
    expect(last.filter((m) => m.role !== "system").map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(last.at(-1)).toMatchObject({ role: "user", content: "what is 2+2" });
    const kept = last.find((m) => m.role === "assistant") as { content: string };
    expect(kept.content).toBe(shown);
    session.dispose();
    // The file holds the same: a resumed session sends the kept answer too.
    const resumed = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "stop",
    });
    expect(resumed.messages.map((m) => (m as ChatMessageLike).role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
    resumed.dispose();
  });

  it("writes the session as JSONL and resumes it, dropping a torn last line with a notice", async () => {
    const dir = tempDir();
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "look", arguments: "{}" }] },
        { content: "Found it." },
        { content: "Yes." },
      ],
    });
    const tools = [lookTool("a key")];
    const config = { baseUrl: server.baseUrl, model: "sim" };
    const first = await createSession({ config, tools, sessionDir: dir, sessionId: "s1" });
    await first.prompt("Find the key");
    const path = join(dir, "s1.jsonl");
    expect(readFileSync(path, "utf8").trim().split("\n")).toHaveLength(5);
    const torn = '{"type":"message","message":{"role":"us';
    appendFileSync(path, torn);
    // A session file is held by one open session at a time: the first lets go of it before the reopen.
    await first.close();
    const resumed = await createSession({ config, tools, sessionDir: dir, sessionId: "s1" });
    expect(resumed.messages).toEqual(first.messages);
    expect(resumed.getSnapshot().timeline).toContainEqual({ type: "assistant", text: "Found it." });
    // The torn line's notice, then where the torn line is kept, as it was.
    expect(resumed.getSnapshot().timeline.slice(-2)).toEqual([
      { type: "notice", text: expect.stringMatching(/cut off/) },
      { type: "notice", text: `The 1 line(s) dropped from the session file are kept in ${path}.dropped.` },
    ]);
    expect(readFileSync(`${path}.dropped`, "utf8")).toContain(
      JSON.stringify({ type: "line", line: 6, text: torn }),
    );
    await resumed.prompt("Sure?");
    expect(sent(server, 2).slice(0, 4)).toEqual(first.messages);
    expect(listSessions(dir)).toEqual([
      { id: "s1", title: "Find the key", createdAt: expect.any(String), updatedAt: expect.any(String) },
    ]);
    const imported = await createSession({ config, importPath: path, sessionDir: dir, sessionId: "s2" });
    expect(imported.messages).toEqual(resumed.messages);
    await expect(createSession({ config, sessionDir: dir, sessionId: "../x" })).rejects.toThrow(
      /one path segment/,
    );
  });

  it("streams a recorded reasoning model's thinking and runs the call it makes", async () => {
    server = await startServer({
      replies: [
        { type: "replay", fixture: "wire/deepseek/deepseek-reasoner-reasoning-then-tool-call.sse" },
        { content: "It is sunny." },
      ],
    });
    const calls: unknown[] = [];
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "deepseek-reasoner" },
      tools: [
        {
          name: "weather",
          description: "The weather in a city",
          parameters: { type: "object", properties: { city: { type: "string" } } },
          execute: (args) => {
            calls.push(args);
            return "sunny";
          },
        },
      ],
    });
    const events = eventsOf(session);
    const result = await session.prompt("Weather?");
    expect(result).toEqual({ status: "ok", reply: "It is sunny." });
    expect(calls).toHaveLength(1);
    expect(events.filter((e) => e.type === "thinking_delta").length).toBeGreaterThan(0);
    const tool = session.getSnapshot().timeline.find((e) => e.type === "tool");
    expect(tool).toMatchObject({ name: "weather", result: "sunny", isError: false });
    expect(events.map((e) => e.type).filter((t) => t === "tool_start" || t === "tool_end")).toEqual([
      "tool_start",
      "tool_end",
    ]);
  });

  it("tells a failed write as an error entry without failing the run", async () => {
    const dir = tempDir();
    server = await startServer({ replies: [{ content: "Answered anyway." }] });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      sessionDir: dir,
      sessionId: "broken",
    });
    // The file becomes a directory: every append now fails.
    rmSync(join(dir, "broken.jsonl"));
    mkdirSync(join(dir, "broken.jsonl"));
    const result = await session.prompt("Hi");
    expect(result).toEqual({ status: "ok", reply: "Answered anyway." });
    expect(session.getSnapshot().timeline).toContainEqual({
      type: "error",
      text: expect.stringMatching(/Could not append to the session file/),
    });
  });
});

// Automatic compaction through the loop's `compact`, over HTTP with the testkit.
const text = (messages: ChatMessageLike[]) => JSON.stringify(messages);

// About 900 tokens at four characters a token: past 75 % of a 1,000-token window on its own.
const LONG = `The first question, at length: ${"a detail worth keeping in mind ".repeat(120)}`;

describe("automatic compaction (autoCompact)", () => {
  it("folds the earlier talk into a summary once the window passes 75 %, and stores the folded transcript", async () => {
    server = await startServer({
      replies: [
        { content: "The first answer." },
        { content: "SUMMARY: the user asked a long first question and got the first answer." },
        { content: "The second answer." },
      ],
    });
    const dir = tempDir();
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", contextLength: 1000 },
      autoCompact: true,
      sessionDir: dir,
      sessionId: "c",
    });
    expect((await session.prompt(LONG)).status).toBe("ok");
    expect(server.chatRequests).toHaveLength(1); // nothing to fold yet: one request

    const second = await session.prompt("And the second question?");
    expect(second).toEqual({ status: "ok", reply: "The second answer." });
    expect(server.chatRequests).toHaveLength(3);
    // The summary was asked for with the stretch it folds, then the request carried the summary, not the stretch.
    expect(text(sent(server, 1))).toContain("a detail worth keeping in mind");
    const request = sent(server, 2);
    expect(text(request)).toContain("SUMMARY: the user asked a long first question");
    expect(text(request)).not.toContain("a detail worth keeping in mind");
    expect(text(request)).toContain("And the second question?");

    // The session keeps the folded transcript (the next prompt starts from it) and so does its file.
    expect(text(session.messages as ChatMessageLike[])).not.toContain("a detail worth keeping in mind");
    expect(session.messages.at(-1)).toMatchObject({ role: "assistant", content: "The second answer." });
    const file = readFileSync(join(dir, "c.jsonl"), "utf8");
    expect(file).toContain("SUMMARY: the user asked a long first question");
    expect(file).not.toContain("a detail worth keeping in mind");
    await session.close();
    const resumed = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", contextLength: 1000 },
      sessionDir: dir,
      sessionId: "c",
    });
    expect(resumed.messages).toEqual(session.messages);
  });

  it("leaves a transcript under 75 % of the window whole", async () => {
    server = await startServer({
      replies: [{ content: "The first answer." }, { content: "The second answer." }],
    });
    // The same talk is about half of a 2,000-token window.
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", contextLength: 2000 },
      autoCompact: true,
    });
    await session.prompt(LONG);
    expect(await session.prompt("And the second question?")).toEqual({
      status: "ok",
      reply: "The second answer.",
    });
    expect(server.chatRequests).toHaveLength(2);
    expect(text(sent(server, 1))).toContain("a detail worth keeping in mind");
  });

  it("keeps a message only its transformContext sent out of the folded transcript it adopts", async () => {
    // A short question with a long answer, then a second question: the fold comes before the second request.
    server = await startServer({
      replies: [
        { content: LONG },
        { content: "SUMMARY: a short question with a long answer." },
        { content: "The second answer." },
      ],
    });
    const note = { role: "user" as const, content: "[note] shown to the model, never stored" };
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "m", contextLength: 1000 },
      autoCompact: { model: "summariser" },
      transformContext: (view) => [...view, note],
    });
    const compacted: number[] = [];
    agent.subscribe((event) => {
      if (event.type === "compacted") compacted.push(event.messages.length);
    });
    await agent.prompt("A short first question?");
    expect(compacted).toHaveLength(0);
    const result = await agent.prompt("And the second question?");
    expect(result.status).toBe("ok");
    expect((server.chatRequests[1]!.body as { model: string }).model).toBe("summariser");
    expect(text(sent(server, 2))).toContain("[note] shown to the model");
    expect(text(sent(server, 2))).not.toContain("a detail worth keeping in mind");
    expect(compacted).toHaveLength(1);
    const kept = text(agent.messages as ChatMessageLike[]);
    expect(kept).toContain("SUMMARY: a short question with a long answer.");
    expect(kept).not.toContain("[note]");
    expect(kept).not.toContain("a detail worth keeping in mind");
    expect(agent.messages.at(-2)).toMatchObject({ role: "user", content: "And the second question?" });
    expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "The second answer." });
  });

  it("folds before a tool result takes the next request past the window, where the last prompt alone was under 75 %", async () => {
    // A 4,096-token window with a 1,024-token reply ceiling: the first request reports 2,800 prompt
    // tokens, and the 3,000-character result it asked for takes the next one past the window.
    server = await startServer({
      replies: [
        {
          toolCalls: [{ id: "r1", name: "read_file", arguments: '{"path":"notes.md"}' }],
          usage: { prompt_tokens: 2800, completion_tokens: 20 },
        },
        { content: "SUMMARY: the user asked about the project." },
        { content: "Done.", usage: { prompt_tokens: 1500, completion_tokens: 5 } },
      ],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, apiKey: "k", model: "m", contextLength: 4096, maxTokens: 1024 },
      autoCompact: true,
      tools: [
        {
          name: "read_file",
          description: "Read a file",
          parameters: { type: "object", properties: { path: { type: "string" } } },
          execute: () => "z".repeat(3000),
        },
      ],
      messages: [
        { role: "user", content: `Tell me about the project. ${"x".repeat(6000)}` },
        { role: "assistant", content: `It is a library. ${"y".repeat(4000)}` },
      ],
    });
    const compacted: number[] = [];
    agent.subscribe((event) => {
      if (event.type === "compacted") compacted.push(event.messages.length);
    });
    const result = await agent.prompt("Now read notes.md.");
    expect(result.status).toBe("ok");
    expect(agent.errorMessage).toBeUndefined();
    expect(compacted).toHaveLength(1);
    expect(server.chatRequests).toHaveLength(3);
    const request = sent(server, 2);
    expect(text(request)).toContain("SUMMARY: the user asked about the project.");
    expect(text(request)).not.toContain("x".repeat(100));
    expect(text(request)).toContain("z".repeat(3000));
    expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "Done." });
  });

  it("recovers from a request the endpoint refuses as too big: the loop folds once (forced) and sends it again", async () => {
    // The talk is about half of a 2,000-token window by the loop's count, so no fold is planned;
    // the endpoint refuses the second request anyway (llama.cpp's captured refusal).
    const refusal = JSON.parse(
      readFixture("errors/llamacpp/exceed-context-size-new-format-8708-of-8192.json"),
    );
    server = await startServer({
      replies: [
        { content: "The first answer." },
        { type: "error", status: 400, body: refusal },
        { content: "SUMMARY: the user asked a long first question and got the first answer." },
        { content: "The second answer." },
      ],
    });
    const dir = tempDir();
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", contextLength: 2000 },
      autoCompact: { model: "summariser" },
      sessionDir: dir,
      sessionId: "f",
    });
    const agent = session.agent;
    const compacted: ChatMessageLike[][] = [];
    const notices: string[] = [];
    agent.subscribe((event) => {
      if (event.type === "compacted") compacted.push(event.messages as ChatMessageLike[]);
      if (event.type === "notice") notices.push(event.text);
    });
    expect((await session.prompt(LONG)).status).toBe("ok");
    const second = await session.prompt("And the second question?");
    expect(second).toEqual({ status: "ok", reply: "The second answer." });
    expect(agent.errorMessage).toBeUndefined();
    // Refused, summarised, sent again folded: four requests in all, the summary by the compaction model.
    expect(server.chatRequests).toHaveLength(4);
    expect(text(sent(server, 1))).toContain("a detail worth keeping in mind");
    expect((server.chatRequests[2]!.body as { model: string }).model).toBe("summariser");
    const request = sent(server, 3);
    expect(text(request)).toContain("SUMMARY: the user asked a long first question");
    expect(text(request)).not.toContain("a detail worth keeping in mind");
    expect(request.at(-1)).toMatchObject({ role: "user", content: "And the second question?" });
    expect(notices.some((t) => t.startsWith("The request was refused as too big"))).toBe(true);
    // The agent took the fold as its own, once: the summary, the question, the answer.
    expect(compacted).toHaveLength(1);
    expect(compacted[0]?.[0]?.role).toBe("system");
    expect(text(compacted[0]!)).toContain("SUMMARY: the user asked a long first question");
    const kept = agent.messages as ChatMessageLike[];
    expect(kept).toHaveLength(3);
    expect(text(kept)).not.toContain("a detail worth keeping in mind");
    expect(kept.at(-2)).toMatchObject({ role: "user", content: "And the second question?" });
    expect(kept.at(-1)).toMatchObject({ role: "assistant", content: "The second answer." });
    // The session's file holds the folded transcript, and a resumed session starts from it.
    await session.close();
    const resumed = await createSession({
      config: { baseUrl: server.baseUrl, model: "m", contextLength: 2000 },
      sessionDir: dir,
      sessionId: "f",
    });
    expect(resumed.messages).toEqual(session.messages);
  });

  it("refuses autoCompact without a window to measure, naming contextLength", () => {
    const make = () =>
      new Agent({ config: { baseUrl: "http://127.0.0.1:1/v1", model: "m" }, autoCompact: true });
    expect(make).toThrow(AgentError);
    expect(make).toThrow(/contextLength/);
  });
});

describe("what a session shows and what it resumes to", () => {
  it("shows a message steered in during a tool, and a follow-up, in the live timeline as the resumed one does", async () => {
    const dir = tempDir();
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "look", arguments: "{}" }] },
        { content: "Found it under the mat." },
        { content: "Nothing in the shed." },
      ],
    });
    const config = { baseUrl: server.baseUrl, model: "sim" };
    let session: Awaited<ReturnType<typeof createSession>> | undefined;
    const tools = [
      {
        name: "look",
        description: "Looks",
        parameters: { type: "object" },
        execute: () => {
          session?.agent.steer("Also look under the mat.");
          session?.agent.followUp("And the shed?");
          return "a key";
        },
      },
    ];
    session = await createSession({ config, tools, sessionDir: dir, sessionId: "s1" });
    const result = await session.prompt("Find the key");
    expect(result.status).toBe("ok");
    const shown = (s: { getSnapshot(): { timeline: readonly { type: string }[] } }) =>
      s.getSnapshot().timeline.filter((e) => e.type === "user" || e.type === "assistant");
    await session.close();
    const resumed = await createSession({ config, tools, sessionDir: dir, sessionId: "s1" });
    expect(resumed.messages).toEqual(session.messages);
    expect(shown(session)).toEqual(shown(resumed));
    expect(shown(session)).toContainEqual({ type: "user", text: "Also look under the mat." });
    expect(shown(session)).toContainEqual({ type: "user", text: "And the shed?" });
  });
});

describe("a resumed session's tool entries", () => {
  it("shows a call the stop interrupted, and one it left unrun, as failed, as the live timeline did", async () => {
    const dir = tempDir();
    const twoCalls = (id: string) => ({
      toolCalls: [
        { id, name: "look", arguments: "{}" },
        { id: `${id}b`, name: "look", arguments: '{"n":2}' },
      ],
    });
    server = await startServer({ replies: [twoCalls("c1"), twoCalls("c2")] });
    const config = { baseUrl: server.baseUrl, model: "sim" };
    let session: Awaited<ReturnType<typeof createSession>> | undefined;
    let calls = 0;
    const tools = [
      {
        name: "look",
        description: "Looks",
        parameters: { type: "object", properties: { n: { type: "number" } } },
        execute: async () => {
          calls++;
          if (calls === 3) {
            session?.abort();
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          return "a key";
        },
      },
    ];
    session = await createSession({
      config,
      tools,
      sessionDir: dir,
      sessionId: "s1",
      toolExecution: "sequential",
    });
    expect((await session.prompt("Find the key")).status).toBe("aborted");
    const failed = (s: { getSnapshot(): { timeline: readonly TimelineEvent[] } }) =>
      s.getSnapshot().timeline.flatMap((e) => (e.type === "tool" ? [`${e.id}:${e.isError}`] : []));
    expect(failed(session)).toEqual(["c1:false", "c1b:false", "c2:true", "c2b:true"]);
    await session.close();
    const resumed = await createSession({ config, tools, sessionDir: dir, sessionId: "s1" });
    expect(failed(resumed)).toEqual(failed(session));
  });
});

describe("a session under random runs (fast-check)", () => {
  type Action = "none" | "steer" | "followUp" | "abort" | "throw";
  interface Step {
    calls: { action: Action; id: "given" | "none" | "dup"; n: number }[];
  }
  const stepArb: fc.Arbitrary<Step> = fc.record({
    calls: fc.array(
      fc.record({
        action: fc.constantFrom<Action>("none", "none", "steer", "followUp", "abort", "throw"),
        id: fc.constantFrom<"given" | "none" | "dup">("given", "none", "dup"),
        n: fc.integer({ min: 0, max: 1 }),
      }),
      { minLength: 1, maxLength: 3 },
    ),
  });
  const caseArb = fc.record({
    steps: fc.array(stepArb, { maxLength: 4 }),
    sequential: fc.boolean(),
    maxTurns: fc.integer({ min: 1, max: 4 }),
    stallThreshold: fc.integer({ min: 2, max: 3 }),
    todos: fc.boolean(),
  });

  it(
    "always stores, shows and resumes one transcript with every call answered, and delivers every queued message or names it in a notice",
    async () => {
      await fc.assert(
        fc.asyncProperty(caseArb, async (c) => {
          const dir = tempDir();
          const todo = {
            toolCalls: [
              {
                id: "todo",
                name: "TodoWrite",
                arguments: JSON.stringify({ todos: [{ content: "Finish", status: "pending" }] }),
              },
            ],
          };
          const script = [
            ...(c.todos ? [todo] : []),
            ...c.steps.map((step, s) => ({
              toolCalls: step.calls.map((call, i) => ({
                id: call.id === "given" ? `s${s}_${i}` : call.id === "dup" ? "dup" : "",
                name: "work",
                arguments: JSON.stringify({ n: call.n, action: call.action, tag: `${s}.${i}` }),
              })),
            })),
          ];
          const local = await startServer({
            replies: (_request, index) => script[index] ?? { content: `Done ${index}.` },
          });
          try {
            let session: Awaited<ReturnType<typeof createSession>> | undefined;
            const issued: string[] = [];
            const tools = [
              {
                name: "work",
                description: "Works",
                parameters: {
                  type: "object",
                  properties: { n: { type: "number" }, action: { type: "string" }, tag: { type: "string" } },
                },
                execute: async ({ action, tag }: Record<string, unknown>) => {
                  if (action === "steer" || action === "followUp") {
                    const text = `${action} from ${String(tag)}`;
                    issued.push(text);
                    if (action === "steer") session?.agent.steer(text);
                    else session?.agent.followUp(text);
                  }
                  if (action === "abort") session?.abort();
                  if (action === "throw") throw new Error(`failed at ${String(tag)}`);
                  await new Promise((resolve) => setTimeout(resolve, 1));
                  return `worked ${String(tag)}`;
                },
              },
            ];
            const config = { baseUrl: local.baseUrl, model: "sim" };
            session = await createSession({
              config,
              tools,
              sessionDir: dir,
              sessionId: "p",
              maxTurns: c.maxTurns,
              stallThreshold: c.stallThreshold,
              builtInTools: { todoWrite: true },
              ...(c.sequential ? { toolExecution: "sequential" as const } : {}),
            });
            const result = await session.prompt("Do the work.");
            expect(["ok", "aborted", "stalled", "maxTurns"]).toContain(result.status);
            const messages = session.messages;
            expect(answeredPrefix(messages)).toBe(messages.length);
            // Every message queued during the run was delivered once, or a notice says it was not kept
            // (none is left queued for the next prompt to be answered with).
            const texts = messages.map((m) => (m as { content?: unknown }).content);
            const told = session
              .getSnapshot()
              .timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []))
              .join("\n");
            for (const text of issued) {
              const delivered = texts.filter((t) => t === text).length;
              expect(delivered, text).toBeLessThanOrEqual(1);
              if (delivered === 0) expect(told, text).toContain(JSON.stringify(text));
            }
            expect(session.agent.hasQueuedMessages()).toBe(false);
            // What the file resumes to is what the session holds and shows.
            await session.close();
            const resumed = await createSession({ config, tools, sessionDir: dir, sessionId: "p" });
            expect(resumed.messages).toEqual(messages);
            const shown = (s: { getSnapshot(): { timeline: readonly TimelineEvent[] } }) =>
              s
                .getSnapshot()
                .timeline.flatMap((e) =>
                  e.type === "user" || e.type === "assistant"
                    ? [`${e.type}:${e.text}`]
                    : e.type === "tool"
                      ? [`tool:${e.id}:${e.result}:${e.isError}`]
                      : [],
                );
            expect(shown(session)).toEqual(shown(resumed));
          } finally {
            await local.close();
          }
        }),
        propertyRuns(Number(process.env.SESSION_COMBOS_RUNS ?? 25)),
      );
    },
    propertyTimeout(600_000),
  );
});
