import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type ChatMessageLike, createSession, NOT_RECORDED, readSessionFile } from "./test-exports.js";

// Review round r68: what a session file edited by hand (or by another program) resumes into, and
// what a session does at the edges of a run.

let server: TestServer | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "agent-r68-"));
  dirs.push(dir);
  return dir;
}

/** A session file `<dir>/s.jsonl` holding a header and these messages. */
function sessionFile(dir: string, messages: readonly unknown[]): string {
  const file = join(dir, "s.jsonl");
  writeFileSync(
    file,
    [
      { type: "session", version: 1, id: "s", createdAt: "2026-01-01T00:00:00.000Z" },
      ...messages.map((message) => ({ type: "message", message })),
    ]
      .map((record) => `${JSON.stringify(record)}\n`)
      .join(""),
  );
  return file;
}

function lastSent(s: TestServer): ChatMessageLike[] {
  return (s.chatRequests.at(-1)!.body as { messages: ChatMessageLike[] }).messages;
}

const call = {
  role: "assistant",
  content: null,
  tool_calls: [{ id: "c1", type: "function", function: { name: "look", arguments: "{}" } }],
};

describe("a session file line the loop would refuse", () => {
  const cases: [string, unknown[], string][] = [
    [
      "a tool message without content",
      [{ role: "user", content: "q" }, call, { role: "tool", tool_call_id: "c1" }],
      "a tool message without content",
    ],
    [
      "a tool message with null content",
      [{ role: "user", content: "q" }, call, { role: "tool", tool_call_id: "c1", content: null }],
      "a tool message without content",
    ],
    [
      "a user message without content",
      [{ role: "user" }, { role: "assistant", content: "a" }],
      "a user message without content",
    ],
    [
      "a system message with null content",
      [
        { role: "system", content: null },
        { role: "user", content: "q" },
        { role: "assistant", content: "a" },
      ],
      "a system message without content",
    ],
    [
      "a message with an empty role",
      [
        { role: "user", content: "q" },
        { role: "", content: "x" },
        { role: "assistant", content: "a" },
      ],
      "a message without a role",
    ],
  ];
  for (const [name, messages, said] of cases) {
    it(`${name} is dropped with a notice, and the resumed session's next prompt is answered`, async () => {
      server = await startServer({ replies: () => ({ content: "Fine." }) });
      const dir = tempDir();
      const file = sessionFile(dir, messages);
      expect(readSessionFile(file).notices.join("\n")).toContain(said);
      const session = await createSession({
        config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
        sessionDir: dir,
        sessionId: "s",
      });
      try {
        const result = await session.prompt("next");
        expect(result.error).toBeUndefined();
        expect(result).toMatchObject({ status: "ok", reply: "Fine." });
        // What was sent: every message with content but an assistant's, every call answered.
        const sent = lastSent(server);
        for (const m of sent) if (m.role !== "assistant") expect(m.content ?? null).not.toBeNull();
        if (sent.some((m) => m.role === "assistant" && m.tool_calls)) {
          expect(sent).toContainEqual({ role: "tool", tool_call_id: "c1", content: NOT_RECORDED });
        }
        // The line as it was is kept beside the file.
        const kept = readFileSync(`${file}.dropped`, "utf8").trim().split("\n").slice(1);
        expect(kept.length).toBeGreaterThan(0);
      } finally {
        await session.close();
      }
    });
  }
});
