// Cases the combinations property (combinations.test.ts) left open in r88 and found in r89, each
// pinned as a plain test over HTTP against the testkit's scripted model and a strict endpoint.
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AgentTool,
  type ChatMessageLike,
  createSession,
  FINAL_TURN_NOTE,
  OPEN_TODOS_NOTE,
  readSessionFile,
  type Session,
} from "./test-exports.js";
import { requestFaults, STRICT_ENDPOINT } from "./test-support/strict-endpoint.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tempDir = useTempDirs("agent-r89");
let server: TestServer | undefined;
const open: Session[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  await server?.close();
  server = undefined;
});

type Body = { messages: ChatMessageLike[]; stream?: boolean };
const bodyOf = (request: { body: unknown }) => request.body as Body;
const text = (m: ChatMessageLike | undefined) => (typeof m?.content === "string" ? m.content : "");
const SUMMARY = "Summary: the user asked for pages and read them.";

/** A scripted model on a strict endpoint: the main turns in order, every summary request answered with SUMMARY. */
async function strictServer(turns: Reply[]): Promise<TestServer> {
  let next = 0;
  server = await startServer({
    personality: STRICT_ENDPOINT,
    replies: (request) =>
      bodyOf(request).stream === true ? (turns[next++] ?? { content: "More." }) : { content: SUMMARY },
  });
  return server;
}

const page: AgentTool = {
  name: "page",
  description: "A page of the given length",
  parameters: { type: "object", properties: { n: { type: "number" } } },
  execute: ({ n }) => "p".repeat(Number(n)),
};
const pageCall = (id: string, n: number): Reply => ({
  toolCalls: [{ id, name: "page", arguments: JSON.stringify({ n }) }],
});

/** A session with `autoCompact` over a 4000-token window and `maxTurns` tool turns a prompt, on its own file. */
async function compacting(srv: TestServer, maxTurns: number): Promise<Session> {
  const s = await createSession({
    config: { baseUrl: srv.baseUrl, model: "sim", maxRetries: 0, contextLength: 4000 },
    tools: [page],
    autoCompact: true,
    maxTurns,
    sessionDir: tempDir(),
    sessionId: "r89-compact",
  });
  open.push(s);
  return s;
}

describe("a session's compaction and its in-band budget notes", () => {
  it("never cuts at the '[notice] … tool turn(s) left' note: the question stays with it, no summary takes it, the transcript stays sendable", async () => {
    // Three tool turns per prompt; the third step of the second prompt carries the view-only note
    // and is the first to fill three quarters of the 4000-token window.
    const srv = await strictServer([
      pageCall("c1", 1000),
      { content: "Answer 1." },
      pageCall("c2", 3000),
      pageCall("c3", 3000),
      { content: "Answer 2." },
      { content: "Answer 3." },
    ]);
    const s = await compacting(srv, 3);
    // Before: the third prompt was refused (400: the first message after the system prompt an
    // assistant message), the session's transcript [summary, "Answer 2."].
    for (const question of ["Question 1.", "Question 2.", "Question 3."]) {
      expect((await s.prompt(question)).status, question).toBe("ok");
    }
    const requests = srv.chatRequests.map(bodyOf);
    for (const [at, body] of requests.entries())
      expect(requestFaults(body.messages), `request ${at}`).toEqual([]);
    // The step that carried the note still asked the question with it (before: [summary, note]).
    const noted = requests.filter((b) => /tool turn\(s\) left/.test(text(b.messages.at(-1))));
    expect(noted).toHaveLength(1);
    expect((noted[0] as Body).messages.map(text)).toContain("Question 2.");
    // A fold happened, and no summary was asked to take the note as something the user said.
    const summaries = requests.filter((b) => b.stream !== true);
    expect(summaries.length).toBeGreaterThan(0);
    for (const body of summaries) {
      expect(JSON.stringify(body.messages)).not.toMatch(/tool turn\(s\) left|tool budget for this request/);
    }
    // The stored transcript: the summary, then a user's question; no note kept.
    const stored = s.messages as ChatMessageLike[];
    expect(stored[0]?.role).toBe("system");
    expect(stored[1]?.role).toBe("user");
    expect(stored.map(text).filter((t) => t.startsWith("[notice]") || t === FINAL_TURN_NOTE)).toEqual([]);
  });

  it("never cuts at the final-turn note either: a fold that has nowhere else to cut ends in the overflow, and the next prompt is taken", async () => {
    const srv = await strictServer([pageCall("c1", 200_000), pageCall("c2", 10), { content: "Answer 2." }]);
    const s = await compacting(srv, 1);
    const first = await s.prompt("Question 1.");
    // One long tool run under a single question: nothing of it can be folded (as for an Agent).
    expect(first.status).toBe("error");
    expect(s.agent.errorMessage).toMatch(/does not fit the model's context window/);
    for (const body of srv.chatRequests.map(bodyOf)) {
      // Before: the summary took the question and the model was sent the note alone.
      expect(body.messages.map(text)).not.toEqual([expect.stringContaining("[Summary"), FINAL_TURN_NOTE]);
      expect(requestFaults(body.messages)).toEqual([]);
    }
    // Before: the transcript was [summary, assistant(call), tool "Not run…"] and this was refused.
    const second = await s.prompt("Question 2.");
    for (const body of srv.chatRequests.map(bodyOf)) expect(requestFaults(body.messages)).toEqual([]);
    expect((s.messages as ChatMessageLike[]).find((m) => m.role !== "system")?.role).toBe("user");
    expect(second.status === "ok" || /context window/.test(s.agent.errorMessage ?? "")).toBe(true);
  });
});

describe("the open-todos reminder of a run the host started on the session's agent, stopped before it was answered", () => {
  const todo = JSON.stringify({ todos: [{ content: "Check the numbers", status: "pending" }] });
  it.each(["Session.prompt", "agent.prompt", "agent.continue"] as const)(
    "is not kept after %s: the next Session.prompt asks the user's question alone",
    async (how) => {
      const srv = await strictServer([
        { toolCalls: [{ id: "t1", name: "TodoWrite", arguments: todo }] },
        // A text answer while the todo is open: the session queues its reminder as a follow-up.
        { content: "Working on it." },
        // The reminder's request: the model is slow to say anything.
        { content: "Let me see.", firstByteDelayMs: 1_500 },
        { content: "Fine." },
      ]);
      const s = await createSession({
        config: { baseUrl: srv.baseUrl, model: "sim", maxRetries: 0 },
        builtInTools: { todoWrite: true },
        sessionDir: tempDir(),
        sessionId: `r89-nudge-${how}`,
      });
      open.push(s);
      // The stop button, pressed while the model is asked the reminder (before it says anything).
      s.agent.subscribe((event) => {
        if (event.type === "message_end" && text(event.message as ChatMessageLike) === OPEN_TODOS_NOTE) {
          setTimeout(() => (how === "Session.prompt" ? s.abort() : s.agent.abort()), 30);
        }
      });
      if (how === "agent.continue") {
        s.agent.messages = [{ role: "user", content: "Do it." }];
        expect((await s.agent.continue()).status).toBe("aborted");
      } else {
        const run = how === "Session.prompt" ? s.prompt("Do it.") : s.agent.prompt("Do it.");
        expect((await run).status).toBe("aborted");
      }
      // Before (the host's runs): the transcript ended in the reminder.
      expect((s.messages as ChatMessageLike[]).map(text)).not.toContain(OPEN_TODOS_NOTE);
      expect(readSessionFile(s.filePath as string).messages).toEqual([...s.messages]);
      await s.prompt("Next.");
      const asked = srv.chatRequests
        .map((r) => bodyOf(r).messages)
        .find((messages) => messages.some((m) => text(m).includes("Next.")));
      // Before: its last message was the reminder with "Next." joined on after a blank line.
      expect(asked?.at(-1)).toEqual({ role: "user", content: "Next." });
      expect(requestFaults(asked ?? [])).toEqual([]);
    },
  );
});
