// A case the r89 round left: the session's own open-todos reminder, taken out of the transcript
// after the run it was delivered to was stopped unanswered, still showed on the live timeline as a
// user entry the person never typed, until the session was opened again. Over HTTP against the
// testkit's scripted model and a strict endpoint.
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type ChatMessageLike, createSession, OPEN_TODOS_NOTE, type Session } from "./test-exports.js";
import { STRICT_ENDPOINT } from "./test-support/strict-endpoint.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tempDir = useTempDirs("agent-r90");
let server: TestServer | undefined;
const open: Session[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  await server?.close();
  server = undefined;
});

const text = (m: ChatMessageLike | undefined) => (typeof m?.content === "string" ? m.content : "");

describe("the open-todos reminder taken out after a stopped run", () => {
  const todo = JSON.stringify({ todos: [{ content: "Check the numbers", status: "pending" }] });
  it.each(["Session.prompt", "agent.prompt", "agent.continue"] as const)(
    "leaves the live timeline after %s as a reopened session shows it",
    async (how) => {
      const turns: Reply[] = [
        { toolCalls: [{ id: "t1", name: "TodoWrite", arguments: todo }] },
        // A text answer while the todo is open: the session queues its reminder as a follow-up.
        { content: "Working on it." },
        // The reminder's request: the model is slow to say anything.
        { content: "Let me see.", firstByteDelayMs: 1_500 },
      ];
      let next = 0;
      server = await startServer({
        personality: STRICT_ENDPOINT,
        replies: () => turns[next++] ?? { content: "More." },
      });
      const dir = tempDir();
      const options = {
        config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
        builtInTools: { todoWrite: true },
        sessionDir: dir,
        sessionId: `r90-nudge-${how}`,
      };
      const s = await createSession(options);
      open.push(s);
      let shownWhileAsked = false;
      s.agent.subscribe((event) => {
        if (event.type === "message_end" && text(event.message as ChatMessageLike) === OPEN_TODOS_NOTE) {
          setTimeout(() => {
            shownWhileAsked = s
              .getSnapshot()
              .timeline.some((e) => e.type === "user" && e.text === OPEN_TODOS_NOTE);
            if (how === "Session.prompt") s.abort();
            else s.agent.abort();
          }, 30);
        }
      });
      if (how === "agent.continue") {
        s.agent.messages = [{ role: "user", content: "Do it." }];
        expect((await s.agent.continue()).status).toBe("aborted");
      } else {
        const run = how === "Session.prompt" ? s.prompt("Do it.") : s.agent.prompt("Do it.");
        expect((await run).status).toBe("aborted");
      }
      // While it was being asked, the reminder was on the timeline, as a delivered follow-up is.
      expect(shownWhileAsked).toBe(true);
      const users = (timeline: readonly { type: string; text?: string }[]) =>
        timeline.filter((e) => e.type === "user").map((e) => e.text);
      // Before: the live timeline still ended with the reminder as a user entry.
      expect(users(s.getSnapshot().timeline)).not.toContain(OPEN_TODOS_NOTE);
      await s.close();
      const reopened = await createSession(options);
      open.push(reopened);
      // (agent.continue ran on a transcript the host wrote to `agent.messages` itself, which the
      // live timeline never showed and a reopened one does: the question, before the reminder.)
      const resumed = users(reopened.getSnapshot().timeline);
      expect(users(s.getSnapshot().timeline)).toEqual(how === "agent.continue" ? resumed.slice(1) : resumed);
      expect(resumed).not.toContain(OPEN_TODOS_NOTE);
    },
  );
});

describe("a session's subscribe, getSnapshot and onEvent handed on unbound", () => {
  it("work as useSyncExternalStore(session.subscribe, session.getSnapshot) calls them", async () => {
    server = await startServer({ personality: STRICT_ENDPOINT, replies: () => ({ content: "Hello." }) });
    const s = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: tempDir(),
      sessionId: "r90-unbound",
    });
    open.push(s);
    // As React holds them: taken off the session, called with no `this`.
    const { subscribe, getSnapshot, onEvent } = s;
    let changes = 0;
    const kinds: string[] = [];
    const stop = subscribe(() => changes++);
    const stopEvents = onEvent((event) => kinds.push(event.type));
    const before = getSnapshot();
    expect(getSnapshot()).toBe(before);
    await s.prompt("Hi?");
    expect(changes).toBeGreaterThan(0);
    expect(kinds.length).toBeGreaterThan(0);
    const after = getSnapshot();
    expect(after).not.toBe(before);
    expect(after.timeline.map((e) => e.type)).toEqual(["user", "assistant"]);
    stop();
    stopEvents();
    const seen = changes;
    await s.prompt("Again?");
    expect(changes).toBe(seen);
  });
});
