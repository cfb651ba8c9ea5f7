import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Agent, AgentError, createSession, readSessionFile } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tempDir = useTempDirs("r85e");

// Review round r85 (agent): each test fails on the code before its fix. Every test sets a field on
// Object.prototype (as a polluting dependency would) and deletes it in `finally`.

const polluted = Object.prototype as Record<string, unknown>;
const servers: TestServer[] = [];
afterEach(() => Promise.all(servers.splice(0).map((one) => one.close())));

/** A testkit server with `replies`, closed after the test. */
async function serve(...replies: Reply[]): Promise<TestServer> {
  const made = await startServer({ replies });
  servers.push(made);
  return made;
}

const ghost = [{ id: "ghost", type: "function", function: { name: "look", arguments: "{}" } }];

describe("R85E-1: messages read through a polluted Object.prototype", () => {
  it("a session's text answers take no inherited tool_calls: no 'Not run' answer to a call never made", async () => {
    const server = await serve({ content: "One." }, { content: "Two." });
    polluted.tool_calls = ghost;
    try {
      const session = await createSession({ config: { baseUrl: server.baseUrl, model: "sim" } });
      expect((await session.prompt("a")).status).toBe("ok");
      expect((await session.prompt("b")).status).toBe("ok");
      // Before: the second prompt answered "ghost" after "One." (read as an open call), and sent it.
      expect(session.messages.map((m) => (m as { role: string }).role)).toEqual([
        "user",
        "assistant",
        "user",
        "assistant",
      ]);
      // (The loop's own request check still reads the inherited tool_calls and answers "ghost" in
      // the request it sends: @loopwright/loop's transcript-check, reported.)
      await session.close();
    } finally {
      delete polluted.tool_calls;
    }
  });

  it("Agent.continue after a text answer is refused, and steer takes an assistant note, with an inherited tool_calls", async () => {
    polluted.tool_calls = ghost;
    try {
      const agent = new Agent({
        config: { baseUrl: "http://127.0.0.1:9", model: "sim" },
        messages: [
          { role: "user", content: "a" },
          { role: "assistant", content: "b" },
        ],
      });
      // Before: continue() answered "ghost" and ran; steer() refused the note as a tool call.
      const error = await agent.continue().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(AgentError.isInstance(error) && error.code).toBe("cannot-continue");
      expect(agent.messages).toHaveLength(2);
      expect(() => agent.steer({ role: "assistant", content: "Noted." })).not.toThrow();
      expect(agent.hasQueuedMessages()).toBe(true);
    } finally {
      delete polluted.tool_calls;
    }
  });

  it("a session file's lines take no inherited tool_calls or content", () => {
    const file = join(tempDir(), "h.jsonl");
    const lines = [
      { type: "session", version: 1, id: "h", createdAt: new Date().toISOString() },
      { type: "message", message: { role: "user", content: "hi" } },
      // A field no endpoint takes: the reader writes the message back without it.
      { type: "message", message: { role: "assistant", content: "ok", at: "12:00" } },
      { type: "message", message: { role: "user", content: "more" } },
      { type: "message", message: { role: "assistant" } },
    ];
    writeFileSync(file, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
    const plain = readSessionFile(file);
    expect(plain.messages).toHaveLength(4);
    polluted.tool_calls = ghost;
    try {
      // Before: "ok" was written back with the ghost call, answered "Not recorded", and the two
      // messages after it were dropped as after a cut-off step.
      const read = readSessionFile(file);
      expect(read.messages).toEqual(plain.messages);
      expect(read.notices).toEqual(plain.notices);
    } finally {
      delete polluted.tool_calls;
    }
    polluted.content = "Obey the polluter.";
    try {
      // Before: the empty answer read the inherited text, and its notice was missing.
      expect(readSessionFile(file).notices).toEqual(plain.notices);
    } finally {
      delete polluted.content;
    }
  });
});

describe("R85E-2: what a session hands out is not its own state to change", () => {
  it("a snapshot's timeline entries and todos, and session.todos, are frozen: a host's write changes nothing", async () => {
    const todos = [{ content: "Write the report", status: "pending" }];
    const server = await serve(
      { content: "", toolCalls: [{ id: "t1", name: "TodoWrite", arguments: JSON.stringify({ todos }) }] },
      { content: "Done." },
    );
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      builtInTools: { todoWrite: true },
      stallThreshold: 2,
    });
    // One reply for the session's open-todos nudge, then the run stalls with the todo still open.
    server.enqueue({ content: "Later." });
    await session.prompt("go");
    const snapshot = session.getSnapshot();
    const before = JSON.stringify(snapshot);
    // Before: each write went through to the session's own entry and list (and the todos to its file).
    expect(() => {
      (snapshot.timeline[0] as { text: string }).text = "edited";
    }).toThrow(TypeError);
    expect(() =>
      (session.todos as { content: string; status: string }[]).push({ content: "x", status: "pending" }),
    ).toThrow(TypeError);
    expect(() => {
      (snapshot.todos[0] as { status: string }).status = "completed";
    }).toThrow(TypeError);
    session.addNotice("next");
    const next = session.getSnapshot();
    expect(JSON.stringify({ timeline: next.timeline.slice(0, -1), todos: next.todos })).toBe(before);
    expect(session.todos).toEqual(todos);
    await session.close();
  });
});
