// A prompt the session's agent refuses after the session's own checks (fix139): refused before its
// run is shown, it leaves the timeline, the transcript and the session file as they were — no `user`
// entry behind that the next prompt would be sent after.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentError, type ChatMessageLike, createSession, type Session } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

let server: TestServer;
const tempDir = useTempDirs("agent-session-refused");
let dir: string;
beforeEach(async () => {
  server = await startServer({ replies: () => ({ content: "done" }) });
  dir = tempDir();
});
afterEach(async () => {
  await server.close();
});

/** What `promise` rejects with (undefined when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return undefined;
}

/** The user messages' texts the last chat request sent. */
const sentUsers = () => {
  const body = server.chatRequests.at(-1)?.body as { messages: ChatMessageLike[] } | undefined;
  return (body?.messages ?? []).filter((m) => m.role === "user").map((m) => m.content);
};

/** The timeline's user entries' texts. */
const userEntries = (session: Session) =>
  session
    .getSnapshot()
    .timeline.filter((entry) => entry.type === "user")
    .map((entry) => (entry as { text: string }).text);

describe("a prompt the session's agent refuses leaves no user entry (fix139)", () => {
  const paths: {
    name: string;
    code: string;
    message: RegExp;
    /** Options of the session, and what makes its agent refuse the next prompt and lets it go again. */
    setup: () => {
      options: Record<string, unknown>;
      refuse: (session: Session) => void;
      allow: (session: Session) => void;
    };
  }[] = [
    {
      name: "a convertToLlm that leaves the model nothing to answer",
      code: "invalid-input",
      message: /^Agent\.prompt: the messages given leave nothing for the model to answer/,
      setup: () => {
        let drop = false;
        return {
          options: { convertToLlm: (messages: unknown[]) => (drop ? [] : messages) },
          refuse: () => {
            drop = true;
          },
          allow: () => {
            drop = false;
          },
        };
      },
    },
    {
      name: "a system prompt given twice (config.prompt set after system)",
      code: "invalid-input",
      message: /^Agent\.prompt: the system prompt was given twice/,
      setup: () => ({
        options: { system: "Answer briefly." },
        refuse: (session) => {
          (session.agent.config as { prompt?: unknown }).prompt = [{ text: "Answer at length." }];
        },
        allow: (session) => {
          delete (session.agent.config as { prompt?: unknown }).prompt;
        },
      }),
    },
  ];

  for (const path of paths) {
    it(`${path.name}: refused, the timeline, transcript and file as they were; the next prompt sends no orphan`, async () => {
      const { options, refuse, allow } = path.setup();
      const session = await createSession({
        config: { baseUrl: server.baseUrl, model: "m" },
        sessionDir: dir,
        sessionId: "s",
        ...options,
      });
      expect((await session.prompt("first")).status).toBe("ok");
      const file = join(dir, "s.jsonl");
      const stored = readFileSync(file, "utf8");
      const timeline = session.getSnapshot().timeline;
      const messages = [...session.messages];
      const requests = server.chatRequests.length;
      refuse(session);
      const error = await rejection(session.prompt("second"));
      expect(AgentError.isInstance(error), String(error)).toBe(true);
      expect((error as AgentError).code).toBe(path.code);
      expect((error as AgentError).message).toMatch(path.message);
      expect(session.getSnapshot().timeline).toEqual(timeline);
      expect(session.messages).toEqual(messages);
      expect(readFileSync(file, "utf8")).toBe(stored);
      expect(server.chatRequests).toHaveLength(requests);
      expect(session.running).toBe(false);
      allow(session);
      expect((await session.prompt("third")).status).toBe("ok");
      expect(sentUsers()).toEqual(["first", "third"]);
      expect(userEntries(session)).toEqual(["first", "third"]);
      await session.close();
    });
  }

  it("a session closed by a listener of the prompt's user entry: refused closed, the snapshot as it was, nothing sent or written", async () => {
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      sessionDir: dir,
      sessionId: "s",
    });
    expect((await session.prompt("first")).status).toBe("ok");
    const file = join(dir, "s.jsonl");
    const stored = readFileSync(file, "utf8");
    const timeline = session.getSnapshot().timeline;
    const requests = server.chatRequests.length;
    let closing: Promise<void> | undefined;
    session.onEvent((event) => {
      if (event.type === "user" && event.text === "second") closing = session.close();
    });
    const error = await rejection(session.prompt("second"));
    expect(AgentError.isInstance(error), String(error)).toBe(true);
    expect((error as AgentError).code).toBe("closed");
    expect(session.getSnapshot().timeline).toEqual(timeline);
    expect(server.chatRequests).toHaveLength(requests);
    expect(readFileSync(file, "utf8")).toBe(stored);
    await closing;
    const reopened = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      sessionDir: dir,
      sessionId: "s",
    });
    expect((await reopened.prompt("third")).status).toBe("ok");
    expect(sentUsers()).toEqual(["first", "third"]);
    expect(userEntries(reopened)).toEqual(["first", "third"]);
    await reopened.close();
  });
});
