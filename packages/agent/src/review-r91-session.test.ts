// Findings of the r91 session model (session-model.test.ts), each pinned as a user meets it.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type ChatMessageLike, createSession, type Session } from "./test-exports.js";
import { STRICT_ENDPOINT } from "./test-support/strict-endpoint.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tempDir = useTempDirs("agent-review-r91-session");
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const look = { name: "look", description: "Looks", parameters: { type: "object" }, execute: () => "looked" };

/** A session on a strict endpoint (it refuses a transcript that opens with an answer) answering `replies`. */
async function open(dir: string, replies: Reply[]): Promise<Session> {
  server ??= await startServer({ personality: STRICT_ENDPOINT, replies: [] });
  server.enqueue(...replies);
  return createSession({
    config: { baseUrl: server.baseUrl, model: "sim" },
    tools: [look],
    sessionDir: dir,
    sessionId: "chat",
  });
}

/** The file's lines with line `index` (0 = the session header) made unreadable, as a torn sector leaves it. */
function corruptLine(file: string, index: number): void {
  const lines = readFileSync(file, "utf8").split("\n");
  lines[index] = (lines[index] as string).slice(0, 20);
  writeFileSync(file, lines.join("\n"));
}

const lastRequest = () =>
  ((server?.chatRequests.at(-1)?.body ?? { messages: [] }) as { messages: ChatMessageLike[] }).messages;

describe("r91 session: an answer whose prompt's line was dropped goes with it", () => {
  it("a corrupted first prompt no longer leaves a conversation that opens with an answer, refused at every prompt", async () => {
    const dir = tempDir();
    let session = await open(dir, [
      { toolCalls: [{ id: "c1", name: "look", arguments: "{}" }] },
      { content: "Looked." },
    ]);
    expect((await session.prompt("Look around")).status).toBe("ok");
    await session.close();
    const file = join(dir, "chat.jsonl");
    corruptLine(file, 1);
    session = await open(dir, [{ content: "Hello again." }]);
    // Before: the answer and its tool step stayed, the transcript opened with them, and the strict
    // endpoint refused this prompt — and every later one — with a 400.
    const result = await session.prompt("Are you there?");
    expect(result).toEqual({ status: "ok", reply: "Hello again." });
    expect(lastRequest().map((m) => m.role)).toEqual(["user"]);
    const texts = session.getSnapshot().timeline.map((e) => ("text" in e ? e.text : e.type));
    expect(texts.some((t) => /answer to a prompt whose line was dropped/.test(t))).toBe(true);
    // Nothing lost for good: the dropped answer's lines are in the .dropped file.
    const dropped = readFileSync(`${file}.dropped`, "utf8");
    expect(dropped).toContain("Looked.");
    expect(dropped).toContain('\\"tool_call_id\\":\\"c1\\"');
    await session.close();
  });

  it("a corrupted later prompt leaves no two answers in a row (an alternating template's 400)", async () => {
    const dir = tempDir();
    let session = await open(dir, [{ content: "First answer." }, { content: "Second answer." }]);
    await session.prompt("one");
    await session.prompt("two");
    await session.close();
    corruptLine(join(dir, "chat.jsonl"), 3);
    session = await open(dir, [{ content: "Third answer." }]);
    expect(session.messages.map((m) => (m as ChatMessageLike).role)).toEqual(["user", "assistant"]);
    await session.prompt("three");
    // Before: ["user", "assistant", "assistant", "user"] — "Second answer." with no question before it.
    expect(lastRequest().map((m) => [m.role, m.content])).toEqual([
      ["user", "one"],
      ["assistant", "First answer."],
      ["user", "three"],
    ]);
    await session.close();
  });

  it("keeps what needs no question: a later tool step after an unreadable line, and a host's greeting first", async () => {
    const dir = tempDir();
    let session = await open(dir, [
      { toolCalls: [{ id: "c1", name: "look", arguments: "{}" }] },
      { toolCalls: [{ id: "c2", name: "look", arguments: "{}" }] },
      { content: "Done." },
    ]);
    await session.prompt("look twice");
    await session.close();
    const file = join(dir, "chat.jsonl");
    // An unreadable line between a tool result and the next step of the same turn.
    const lines = readFileSync(file, "utf8").split("\n");
    lines.splice(4, 0, "{not json");
    writeFileSync(file, lines.join("\n"));
    session = await open(dir, []);
    expect(session.messages.map((m) => (m as ChatMessageLike).role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
    ]);
    // A greeting the host put first is its choice, read back as written.
    session.agent.messages = [{ role: "assistant", content: "Hi! Ask me anything." }];
    await session.save();
    await session.close();
    session = await open(dir, []);
    expect(session.messages).toEqual([{ role: "assistant", content: "Hi! Ask me anything." }]);
    await session.close();
  });
});
