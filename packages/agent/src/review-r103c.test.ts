// r103c: an id refused as another session's twin by Unicode normalization alone ("e" and a
// combining acute against "é") was named in the message as JSON quotes it, which leaves both as the
// same-looking "é": the message named two ids that read alike, and said they differ only by case.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AgentError, createSession } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tmpDir = useTempDirs("loopwright-r103c");

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
