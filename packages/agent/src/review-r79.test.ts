import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Agent, AgentError, createSession } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

// Review round r79: what r77d left of the agent's transcript, session file and runs.

let server: TestServer | undefined;
const tmpDir = useTempDirs("r79");
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("agent.messages changed in place while a run's loop goes", () => {
  it("a push from a session tool's execute is refused (busy) as an assignment is; the prompt and the next go on", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "note", arguments: "{}" }] },
        { content: "After the note." },
        { content: "Next answer." },
      ],
    });
    const dir = tmpDir();
    let session: Awaited<ReturnType<typeof createSession>> | undefined;
    let refused: unknown;
    session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "p",
      tools: [
        {
          name: "note",
          description: "Adds a note to the conversation",
          parameters: { type: "object", properties: {} },
          execute: () => {
            try {
              (session as NonNullable<typeof session>).agent.messages.push({
                role: "user",
                content: "pushed",
              });
            } catch (error) {
              refused = error;
              throw error;
            }
            return "noted";
          },
        },
      ],
    });
    expect(await session.prompt("Go")).toEqual({ status: "ok", reply: "After the note." });
    expect(refused).toBeInstanceOf(AgentError);
    expect((refused as AgentError).code).toBe("busy");
    expect((refused as AgentError).message).toMatch(
      /^Agent\.messages was changed in place while a run is going/,
    );
    expect(session.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    // Between runs an in-place change is taken, as before.
    session.agent.messages.push({ role: "user", content: "Added between runs" });
    expect(await session.prompt("And now?")).toEqual({ status: "ok", reply: "Next answer." });
    expect(session.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
      "user",
      "assistant",
    ]);
    await session.close();
  });
});

/** A session file at `dir/<id>.jsonl` holding a header and these messages. */
function sessionFile(dir: string, id: string, messages: readonly string[]): string {
  const header = JSON.stringify({ type: "session", version: 1, id, createdAt: "2026-01-01T00:00:00.000Z" });
  const file = join(dir, `${id}.jsonl`);
  writeFileSync(
    file,
    `${[header, ...messages.map((m) => `{"type":"message","message":${m}}`)].join("\n")}\n`,
  );
  return file;
}

/** The notices of a session's timeline. */
function noticesOf(session: { getSnapshot(): { timeline: readonly { type: string }[] } }): string[] {
  return session
    .getSnapshot()
    .timeline.filter((e): e is { type: "notice"; text: string } => e.type === "notice")
    .map((e) => e.text);
}

describe("message fields a session file holds that no endpoint takes", () => {
  it("are read without them, named in a notice, and never reach the wire (a __proto__ key included)", async () => {
    server = await startServer({ replies: () => ({ content: "ok" }) });
    const dir = tmpDir();
    const file = sessionFile(dir, "f", [
      '{"role":"user","content":"hi","__proto__":{"polluted":1},"timestamp":5}',
      '{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","index":0,"function":{"name":"t","arguments":"{}","extra":1}}],"reasoning_content":"why"}',
      '{"role":"tool","tool_call_id":"c1","content":"r","isError":false}',
      '{"role":"assistant","content":"done"}',
    ]);
    const written = readFileSync(file, "utf8");
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "f",
    });
    const notices = noticesOf(session);
    expect(notices).toContain(
      'Line 2 of the session file holds a user message with field(s) "__proto__", "timestamp" that no endpoint takes of it; it was read without them (they would have been sent to the model).',
    );
    expect(notices.some((n) => n.includes('"tool_calls[0].index", "tool_calls[0].function.extra"'))).toBe(
      true,
    );
    expect(
      notices.some((n) =>
        n.startsWith('Line 4 of the session file holds a tool message with field(s) "isError"'),
      ),
    ).toBe(true);
    expect(await session.prompt("next")).toEqual({ status: "ok", reply: "ok" });
    const sent = (server.chatRequests[0]?.body as { messages?: unknown[] } | undefined)?.messages;
    expect(sent).toEqual([
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: "c1", type: "function", function: { name: "t", arguments: "{}" } }],
        reasoning_content: "why",
      },
      { role: "tool", tool_call_id: "c1", content: "r" },
      { role: "assistant", content: "done" },
      { role: "user", content: "next" },
    ]);
    expect(server.chatRequests[0]?.raw).not.toMatch(/__proto__|polluted|timestamp|isError|"index"|"extra"/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    await session.close();
    // The lines as they were are kept beside the file.
    expect(readFileSync(`${file}.dropped`, "utf8")).toContain('\\"__proto__\\":{\\"polluted\\":1}');
    expect(written).toContain("timestamp");
  });
});

describe("an assistant message in a session file that says nothing", () => {
  it("is kept, and a notice says the user turns around it reach the model as one", async () => {
    server = await startServer({ replies: () => ({ content: "ok" }) });
    const dir = tmpDir();
    sessionFile(dir, "e", [
      '{"role":"user","content":"first"}',
      '{"role":"assistant","content":""}',
      '{"role":"user","content":"second"}',
      '{"role":"assistant","content":"answer"}',
    ]);
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "e",
    });
    expect(noticesOf(session)).toEqual([
      "Line 3 of the session file holds an assistant message that says nothing (no text, no tool calls): kept, but never sent to the model (endpoints refuse an empty answer), so the user messages on either side of it — or the next prompt — reach the model as one message.",
    ]);
    expect(session.messages).toHaveLength(4);
    expect(await session.prompt("third")).toEqual({ status: "ok", reply: "ok" });
    // What the notice said: the two questions went as one.
    const sent = (server.chatRequests[0]?.body as { messages?: unknown[] } | undefined)?.messages;
    expect(sent?.[0]).toEqual({ role: "user", content: "first\n\nsecond" });
    await session.close();
  });
});

describe("a stop that comes once the model's answer is whole", () => {
  it("ends the prompt ok, the answer kept (agent, session and its file), no interruption shown, a notice", async () => {
    server = await startServer({ replies: [{ content: "The full answer." }, { content: "Next." }] });
    const dir = tmpDir();
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "a",
    });
    let once = true;
    session.agent.subscribe((event) => {
      // The stop button pressed as the answer ended: after its message_end, before the run's end.
      if (once && event.type === "message_end" && (event.message as { role?: string }).role === "assistant") {
        once = false;
        session.abort();
      }
    });
    expect(await session.prompt("Q")).toEqual({ status: "ok", reply: "The full answer." });
    expect(session.getSnapshot().timeline.map((e) => e.type)).toEqual(["user", "assistant", "notice"]);
    expect(await session.prompt("Q2")).toEqual({ status: "ok", reply: "Next." });
    await session.close();
    const lines = readFileSync(join(dir, "a.jsonl"), "utf8").trim().split("\n").slice(1);
    expect(lines.map((l) => (JSON.parse(l) as { message: { content: string } }).message.content)).toEqual([
      "Q",
      "The full answer.",
      "Q2",
      "Next.",
    ]);
  });

  it("on an Agent: in a turn_end listener, the run ends ok with a notice", async () => {
    server = await startServer({ replies: [{ content: "Whole." }] });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 } });
    const notices: string[] = [];
    agent.subscribe((event) => {
      if (event.type === "turn_end") agent.abort();
      if (event.type === "notice") notices.push(event.text);
    });
    const result = await agent.prompt("Q");
    expect(result.status).toBe("ok");
    expect(result.messages).toEqual([
      { role: "user", content: "Q" },
      { role: "assistant", content: "Whole." },
    ]);
    expect(notices).toEqual([
      "The stop came after the model's answer was complete: the answer is kept and the run ended ok.",
    ]);
  });
});

describe("session ids that differ only by case", () => {
  it("a new id differing from a stored session's only by case is refused, nothing created; each pair already apart opens", async () => {
    server = await startServer({ replies: () => ({ content: "ok" }) });
    const dir = tmpDir();
    const config = { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 };
    const first = await createSession({ config, sessionDir: dir, sessionId: "Chat" });
    await first.prompt("Private question");
    await first.close();
    for (const sessionId of ["chat", "CHAT"]) {
      let refused: unknown;
      try {
        await createSession({ config, sessionDir: dir, sessionId });
      } catch (error) {
        refused = error;
      }
      expect(refused).toBeInstanceOf(AgentError);
      expect((refused as AgentError).code).toBe("invalid-input");
      expect((refused as AgentError).message).toBe(
        `Session id ${JSON.stringify(sessionId)} differs from the session "Chat" in ${dir} only by case (or Unicode normalization): a file system that ignores case opens that session's file for it, so it is refused everywhere. Open "Chat", or choose an id that differs by more than case.`,
      );
    }
    expect(readdirSync(dir).sort()).toEqual(["Chat.jsonl"]);
    // The stored session opens as before, and so does a pair a case-telling file system already holds apart.
    const again = await createSession({ config, sessionDir: dir, sessionId: "Chat" });
    expect(again.messages).toHaveLength(2);
    await again.close();
    sessionFile(dir, "chat", ['{"role":"user","content":"mine"}', '{"role":"assistant","content":"yours"}']);
    const apart = await createSession({ config, sessionDir: dir, sessionId: "chat" });
    expect(apart.messages.map((m) => (m as { content: string }).content)).toEqual(["mine", "yours"]);
    await apart.close();
  });
});
