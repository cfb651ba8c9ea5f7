// r103c: an id refused as another session's twin by Unicode normalization alone ("e" and a
// combining acute against "é") was named in the message as JSON quotes it, which leaves both as the
// same-looking "é": the message named two ids that read alike, and said they differ only by case.
// And a message JSON cannot write (a BigInt, a cycle) put into a session's transcript was left to
// fail its write: a `storage` error naming no message, at every write, and no message after it
// reached the file — the conversation since was lost at the next open.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentError, type AgentMessage, createSession, readSessionFile } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tmpDir = useTempDirs("loopwright-r103c");
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const header = JSON.stringify({
  type: "session",
  version: 1,
  id: "x",
  createdAt: "2026-01-01T00:00:00.000Z",
});

describe("an id refused as a session's twin by Unicode normalization", () => {
  it("is named with its code points and the stored one's, so the two can be told apart", async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, "\u00e9t\u00e9.jsonl"), `${header}\n`);
    let refused: unknown;
    try {
      await createSession({
        config: { baseUrl: "http://127.0.0.1:9/v1", model: "m" },
        sessionDir: dir,
        sessionId: "e\u0301te\u0301",
      });
    } catch (error) {
      refused = error;
    }
    expect(AgentError.isInstance(refused)).toBe(true);
    const { code, message } = refused as AgentError;
    expect(code).toBe("invalid-input");
    expect(message).toContain(
      'Session id "e\u0301te\u0301" (U+0065 U+0301 U+0074 U+0065 U+0301) differs from the session "\u00e9t\u00e9" (U+00E9 U+0074 U+00E9)',
    );
  });

  it("an id that differs by case alone is named as before, without code points", async () => {
    const dir = tmpDir();
    writeFileSync(join(dir, "Chat.jsonl"), `${header}\n`);
    const refused = await createSession({
      config: { baseUrl: "http://127.0.0.1:9/v1", model: "m" },
      sessionDir: dir,
      sessionId: "chat",
    }).then(
      () => undefined,
      (error: unknown) => error as AgentError,
    );
    expect(refused?.message).toContain('Session id "chat" differs from the session "Chat" in');
  });
});

describe("a message JSON cannot write, in a session's transcript", () => {
  it("is refused where it is given, naming it; one pushed in place is told and left out, and the rest is written", async () => {
    server = await startServer({ replies: () => ({ content: "fine" }) });
    const dir = tmpDir();
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      sessionDir: dir,
      sessionId: "unwritable",
    });
    try {
      const counted = { role: "tally", count: 12n } as unknown as AgentMessage;
      const looped: Record<string, unknown> = { role: "tally" };
      looped.self = looped;
      // Was taken without a word; each write after failed.
      expect(() => {
        session.agent.messages = [counted];
      }).toThrow(
        /^Agent\.messages\[0\] \(the message with role "tally"\) holds a BigInt, which JSON cannot write/,
      );
      expect(session.agent.messages).toEqual([]);
      // Around the checks (the live list pushed onto): told, left out of the file, the rest written.
      session.agent.messages.push(looped as unknown as AgentMessage);
      expect(await session.prompt("Still there?")).toEqual({ status: "ok", reply: "fine" });
      expect(session.getSnapshot().timeline).toContainEqual({
        type: "error",
        text: expect.stringMatching(
          /^Message 0 of the transcript \(the message with role "tally"\) was not written to the session file: it holds a cycle/,
        ),
      });
      // Was the header alone: the cycle's write failed, and every message after it waited behind it.
      expect(readSessionFile(join(dir, "unwritable.jsonl")).messages).toEqual([
        { role: "user", content: "Still there?" },
        expect.objectContaining({ role: "assistant", content: "fine" }),
      ]);
    } finally {
      await session.close();
    }
  });
});
