import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession, listSessions } from "./test-exports.js";

const root = mkdtempSync(join(tmpdir(), "agent-dropped-"));
let server: TestServer;

beforeAll(async () => {
  server = await startServer({ replies: (_request, index) => ({ content: `reply ${index}` }) });
});

afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

const LIMIT = 4 * 1024 * 1024;
/** What an open says of a file that ends in a tool step's answers no turn followed (r95a). */
const UNANSWERED_RESULTS =
  "The conversation ends in tool results the model has not answered yet (the last run stopped, or the host did, before the model's next turn): the next prompt is sent after them, and session.agent.continue() has the model go on from them.";
const header = (id = "s") =>
  JSON.stringify({ type: "session", version: 1, id, createdAt: "2026-01-01T00:00:00.000Z" });
const line = (message: object) => JSON.stringify({ type: "message", message });
/** The answer after a fixture's prompt: a file ending in a prompt never answered drops it on opening. */
const ANSWER = line({ role: "assistant", content: "a" });

/** Opens `<root>/<id>.jsonl`, closes it, and gives back its notices and message count. */
async function open(id: string) {
  const session = await createSession({
    config: { baseUrl: server.baseUrl, model: "sim" },
    sessionDir: root,
    sessionId: id,
  });
  const notices = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
  const count = session.messages.length;
  await session.close();
  return { notices, count };
}

/** The dropped-lines file read back: its opens, each with its header and lines. */
function readDropped(path: string) {
  const records = readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { type: string; line?: number; text?: string; notices?: string[] });
  const opens: { header: (typeof records)[number]; lines: { line?: number; text?: string }[] }[] = [];
  for (const record of records) {
    if (record.type === "open") opens.push({ header: record, lines: [] });
    else opens.at(-1)?.lines.push({ line: record.line, text: record.text });
  }
  return opens;
}

describe("where an open's dropped lines go", () => {
  it("appends only the lines the rewrite leaves out to <file>.dropped, a header per open; writes no .bak copy", async () => {
    const path = join(root, "s1.jsonl");
    const dropped = `${path}.dropped`;
    // Open 1: a garbled line in the middle is dropped; the file is rewritten without it.
    writeFileSync(
      path,
      `${[
        header(),
        line({ role: "user", content: "first question" }),
        "{garbled FIRST-LOST-LINE",
        line({ role: "assistant", content: "first answer" }),
      ].join("\n")}\n`,
    );
    const one = await open("s1");
    expect(one.count).toBe(2);
    expect(one.notices).toEqual([
      "Line 3 of the session file is not JSON and was dropped.",
      `The 1 line(s) dropped from the session file are kept in ${dropped}.`,
    ]);
    expect(readFileSync(path, "utf8")).not.toContain("FIRST-LOST-LINE");
    expect(readDropped(dropped)).toEqual([
      {
        header: expect.objectContaining({ type: "open", pid: process.pid, notices: [one.notices[0]] }),
        lines: [{ line: 3, text: "{garbled FIRST-LOST-LINE" }],
      },
    ]);
    // Open 2: a record the reader refuses, then a cut-off tool step (a call never answered).
    const call = {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "c1", type: "function", function: { name: "pay", arguments: '{"invoice":"A"}' } },
        { id: "c2", type: "function", function: { name: "pay", arguments: '{"invoice":"B"}' } },
      ],
    };
    const answer = { role: "tool", tool_call_id: "c1", content: "SECOND-LOST paid A" };
    const refused = '{"type":"message","message":{"content":"no role"}}';
    writeFileSync(
      path,
      `${readFileSync(path, "utf8")}${refused}\n${line({ role: "user", content: "pay both" })}\n${line(call)}\n${line(answer)}\n`,
    );
    const two = await open("s1");
    // The cut-off step is kept (its unanswered call answered as not recorded); the refused record
    // is the one line dropped.
    expect(two.count).toBe(6);
    expect(two.notices.at(-1)).toBe(`The 1 line(s) dropped from the session file are kept in ${dropped}.`);
    expect(readFileSync(path, "utf8")).toContain("SECOND-LOST paid A");
    const opens = readDropped(dropped);
    expect(opens).toHaveLength(2);
    // The first open's drop is still there; the second's line is there as written.
    expect(opens[0]?.lines).toEqual([{ line: 3, text: "{garbled FIRST-LOST-LINE" }]);
    expect(opens[1]?.lines).toEqual([{ line: 4, text: refused }]);
    // Open 3 drops nothing: the dropped-lines file is as it was. (The file still ends in the cut
    // step's answers, which no turn followed: that, and only that, is said.)
    const before = readFileSync(dropped, "utf8");
    const three = await open("s1");
    expect(three.notices).toEqual([UNANSWERED_RESULTS]);
    expect(readFileSync(dropped, "utf8")).toBe(before);
    // No whole-file copies, and listSessions lists the session only.
    expect(readdirSync(root).filter((n) => n.startsWith("s1.") && n.includes(".bak"))).toEqual([]);
    expect(listSessions(root).map((s) => s.id)).toEqual(["s1"]);
  });

  it("stays under 4 MiB over many crashes: the oldest opens' drops go first, the newest is always kept whole", async () => {
    const path = join(root, "s2.jsonl");
    const dropped = `${path}.dropped`;
    const messages = [line({ role: "user", content: "hello" }), line({ role: "assistant", content: "hi" })];
    // 30 opens after crashes, each leaving a 300 KB tool result whose call was lost: 9 MB of
    // lost lines in all (the old whole-file copies took 30 × the file).
    let removedSaid = 0;
    for (let crash = 0; crash < 30; crash++) {
      // A tool result that answers no call before it (its call's line lost in the crash): the
      // reader drops it.
      const result = {
        role: "tool",
        tool_call_id: `a${crash}`,
        content: `CRASH-${crash} ${"x".repeat(300_000)}`,
      };
      const kept = existsSync(path)
        ? readFileSync(path, "utf8")
        : `${[header("s2"), ...messages].join("\n")}\n`;
      writeFileSync(
        path,
        `${kept}${line({ role: "user", content: `step ${crash}` })}\n${line({ role: "assistant", content: "ok" })}\n${line(result)}\n`,
      );
      const { notices } = await open("s2");
      const said = notices.at(-1) ?? "";
      expect(said).toMatch(
        new RegExp(`^The 1 line\\(s\\) dropped from the session file are kept in ${dropped}\\.`),
      );
      if (said.includes("oldest open")) removedSaid++;
      expect(statSync(dropped).size).toBeLessThanOrEqual(LIMIT);
    }
    const opens = readDropped(dropped);
    // Each block is about 300 KB: the last 13 or so are there, newest last, each whole.
    expect(opens.length).toBeGreaterThanOrEqual(12);
    expect(opens.length).toBeLessThan(30);
    const last = opens.map((o) => /CRASH-(\d+)/.exec(o.lines[0]?.text ?? "")?.[1]).map(Number);
    expect(last).toEqual(Array.from({ length: opens.length }, (_, i) => 30 - opens.length + i));
    expect(removedSaid).toBe(30 - opens.length);
    // The session file itself kept only what answers its calls.
    expect(readFileSync(path, "utf8")).not.toContain("CRASH-");
  }, 60_000);

  it("keeps the newest drop whole even when it alone is over the limit", async () => {
    const path = join(root, "s3.jsonl");
    const dropped = `${path}.dropped`;
    // Before: an older open's drop, and a last line cut off mid-write (by a crash while appending).
    writeFileSync(dropped, `${JSON.stringify({ type: "open", at: "x", pid: 1, notices: [] })}\n{"type":"li`);
    const big = { role: "tool", tool_call_id: "z", content: `BIG ${"y".repeat(LIMIT)}` };
    writeFileSync(
      path,
      `${[header("s3"), line({ role: "user", content: "q" }), ANSWER, line(big)].join("\n")}\n`,
    );
    const { notices } = await open("s3");
    expect(notices.at(-1)).toMatch(/the drops of its 1 oldest open\(s\) were removed from it\.$/);
    const opens = readDropped(dropped);
    expect(opens).toHaveLength(1);
    expect(JSON.parse(opens[0]?.lines[0]?.text ?? "").message).toEqual(big);
  }, 30_000);

  it("drops lines into <id>.jsonl.dropped, a name no session file has: session `notes.jsonl.dropped` keeps its transcript (r22 #1)", async () => {
    // The session whose file was the old dropped-lines name of `notes` (notes.jsonl.dropped.jsonl).
    const other = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      sessionDir: root,
      sessionId: "notes.jsonl.dropped",
    });
    expect((await other.prompt("remember 42")).status).toBe("ok");
    await other.close();
    const otherFile = join(root, "notes.jsonl.dropped.jsonl");
    const otherText = readFileSync(otherFile, "utf8");
    // `notes` drops a line.
    const path = join(root, "notes.jsonl");
    writeFileSync(
      path,
      `${[header("notes"), line({ role: "user", content: "q" }), ANSWER, "{broken NOTES-LOST"].join("\n")}\n`,
    );
    const notes = await open("notes");
    const dropped = join(root, "notes.jsonl.dropped");
    expect(notes.notices.at(-1)).toBe(`The 1 line(s) dropped from the session file are kept in ${dropped}.`);
    expect(readDropped(dropped).map((o) => o.lines)).toEqual([[{ line: 4, text: "{broken NOTES-LOST" }]]);
    // The other session's file is untouched, and it reopens whole, with no notice.
    expect(readFileSync(otherFile, "utf8")).toBe(otherText);
    const again = await open("notes.jsonl.dropped");
    expect(again).toEqual({ notices: [], count: 2 });
    expect(
      listSessions(root)
        .map((s) => s.id)
        .filter((id) => id.startsWith("notes")),
    ).toEqual(expect.arrayContaining(["notes", "notes.jsonl.dropped"]));
  });

  it("never appends to or trims a <file>.dropped it did not write: the open is refused (storage, naming it), both files as they were (r22 #1)", async () => {
    const path = join(root, "foreign.jsonl");
    const dropped = `${path}.dropped`;
    const session = [header("foreign"), line({ role: "user", content: "q" }), ANSWER, "{broken FOREIGN-LOST"];
    writeFileSync(path, `${session.join("\n")}\n`);
    // Someone's own notes under that name: its first line is no `open` header.
    const mine = "my notes about this session\nsecond line\n";
    writeFileSync(dropped, mine);
    const refused = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      sessionDir: root,
      sessionId: "foreign",
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({
      code: "storage",
      message: expect.stringContaining(`${dropped} is not a dropped-lines file`),
    });
    expect(readFileSync(dropped, "utf8")).toBe(mine);
    expect(readFileSync(path, "utf8")).toBe(`${session.join("\n")}\n`);
    // Moved aside, the open goes on (its lock was let go).
    rmSync(dropped);
    const opened = await open("foreign");
    expect(opened.count).toBe(2);
    expect(readDropped(dropped).map((o) => o.lines)).toEqual([[{ line: 4, text: "{broken FOREIGN-LOST" }]]);
  });

  it("takes only a file whose first line is a whole `open` header for its own: a pretty-printed JSON over 4 MiB, `{`, or a cut-off header is refused, never appended to or trimmed (r25 #4)", async () => {
    const path = join(root, "pretty.jsonl");
    const dropped = `${path}.dropped`;
    const session = [header("pretty"), line({ role: "user", content: "q" }), ANSWER, "{broken PRETTY-LOST"];
    writeFileSync(path, `${session.join("\n")}\n`);
    // The user's own JSON document, pretty-printed (its first line `{`), past the 4 MiB limit: the
    // old code took it for a dropped-lines file and, to keep under the limit, deleted it all.
    const pretty = `${JSON.stringify({ type: "open", notes: "x".repeat(LIMIT + 1024) }, null, 2)}\n`;
    const cutHeader = JSON.stringify({
      type: "open",
      at: "2026-01-01T00:00:00.000Z",
      pid: 1,
      notices: [],
    }).slice(0, 30);
    for (const foreign of [
      pretty,
      "{",
      "{\n",
      '{"type":',
      cutHeader,
      `${cutHeader}\n{"type":"line"}\n`,
      // A whole JSON line, but not the header this module writes.
      `${JSON.stringify({ type: "open" })}\n`,
      `${JSON.stringify({ type: "open", at: 1, pid: 1, notices: [] })}\n`,
    ]) {
      writeFileSync(dropped, foreign);
      const refused = await createSession({
        config: { baseUrl: server.baseUrl, model: "sim" },
        sessionDir: root,
        sessionId: "pretty",
      }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused, JSON.stringify(foreign.slice(0, 40))).toMatchObject({
        code: "storage",
        message: expect.stringContaining(`${dropped} is not a dropped-lines file`),
      });
      expect(readFileSync(dropped, "utf8") === foreign).toBe(true);
      expect(readFileSync(path, "utf8")).toBe(`${session.join("\n")}\n`);
    }
    // A file this module wrote (a whole header first, a last line torn) is appended to.
    const own = `${JSON.stringify({ type: "open", at: "2026-01-01T00:00:00.000Z", pid: 1, notices: ["n"] })}\n{"type":"li`;
    writeFileSync(dropped, own);
    const opened = await open("pretty");
    expect(opened.count).toBe(2);
    const text = readFileSync(dropped, "utf8");
    expect(text.startsWith(`${own}\n`)).toBe(true);
    const appended = text
      .slice(own.length + 1)
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as unknown);
    expect(appended).toEqual([
      expect.objectContaining({ type: "open" }),
      { type: "line", line: 4, text: "{broken PRETTY-LOST" },
    ]);
  }, 60_000);
});

describe("what the reader drops or rewrites is what is copied, each line once", () => {
  const assistantCall = (id: string, type = "function") => ({
    id,
    type,
    function: { name: "pay", arguments: `{"invoice":"${id}"}` },
  });
  /** The `line` entries of the dropped-lines file (every open's), as written. */
  const copied = (path: string) =>
    readDropped(`${path}.dropped`).flatMap((o) => o.lines.map((l) => ({ line: l.line, text: l.text })));

  it("copies every kind of drop with its line number and text exactly once: not JSON, not a record, a refused record, a too-deep todo list, a dropped step and its answer, messages after a cut-off step, the torn last line", async () => {
    const path = join(root, "kinds.jsonl");
    // A todo list well-formed but for a field nested deeper than a session file holds: the reader
    // drops it (it would overflow the stack when written again).
    let deep: unknown = "bottom";
    for (let k = 0; k < 1001; k++) deep = [deep];
    const lines = [
      /* 1 */ `\uFEFF${header("kinds")}`,
      /* 2 */ line({ role: "user", content: "first" }),
      /* 3 */ "{not json KINDS-3",
      /* 4 */ "null",
      /* 5 */ '{"type":"message","message":{"content":"KINDS-5 no role"}}',
      /* 6 */ '{"type":"todos","todos":"KINDS-6"}',
      /* 7 */ JSON.stringify({ type: "todos", todos: [{ content: "KINDS-7", status: "pending", deep }] }),
      /* 8 */ line({ role: "assistant", content: null, tool_calls: "KINDS-8" }),
      /* 9 */ line({ role: "tool", tool_call_id: "d1", content: "KINDS-9 answers the dropped step" }),
      /* 10 */ line({ role: "user", content: "pay both" }),
      /* 11 */ line({
        role: "assistant",
        content: null,
        tool_calls: [assistantCall("a"), assistantCall("b")],
      }),
      /* 12 */ line({ role: "tool", tool_call_id: "a", content: "paid a" }),
      /* 13 */ line({ role: "user", content: "KINDS-13 before the step's end" }),
      // A call another client typed "tool": read as a function call, then dropped with what
      // follows the cut-off step — copied once, as dropped.
      /* 14 */ line({ role: "assistant", content: "KINDS-14", tool_calls: [assistantCall("z", "tool")] }),
    ];
    const torn = '{"type":"message","message":{"role":"assistant","content":"KINDS-15 cut';
    writeFileSync(path, `${lines.join("\n")}\n${torn}`);
    const opened = await open("kinds");
    // Kept: first, pay both, the step, its recorded answer and a NOT_RECORDED one.
    expect(opened.count).toBe(5);
    const expected = [3, 4, 5, 6, 7, 8, 9, 13, 14].map((n) => ({ line: n, text: lines[n - 1] }));
    expected.push({ line: 15, text: torn });
    expect(copied(path)).toEqual(expected);
    expect(readFileSync(`${path}.dropped`, "utf8")).not.toContain('"rewritten"');
    expect(opened.notices.at(-1)).toBe(
      `The ${expected.length} line(s) dropped from the session file are kept in ${path}.dropped.`,
    );
    // Nothing is dropped on the next open, and nothing more is copied (the step's answers no turn
    // followed are still the file's end, which is all it says).
    const again = await open("kinds");
    expect(again).toEqual({ notices: [UNANSWERED_RESULTS], count: 5 });
    expect(copied(path)).toEqual(expected);
  });

  it("copies a dropped line that equals a kept one (the same JSON twice), under its own line number", async () => {
    const path = join(root, "twice.jsonl");
    const same = line({ role: "tool", tool_call_id: "x", content: "TWICE the same answer" });
    const lines = [
      /* 1 */ header("twice"),
      /* 2 */ line({ role: "user", content: "go" }),
      // An assistant message the reader refuses: its answer on line 4 goes with it.
      /* 3 */ line({
        role: "assistant",
        content: [{ type: "text", text: 7 }],
        tool_calls: [assistantCall("x")],
      }),
      /* 4 */ same,
      /* 5 */ line({ role: "user", content: "again" }),
      /* 6 */ line({ role: "assistant", content: null, tool_calls: [assistantCall("x")] }),
      /* 7 */ same,
    ];
    writeFileSync(path, `${lines.join("\n")}\n`);
    const opened = await open("twice");
    expect(opened.count).toBe(4);
    expect(copied(path)).toEqual([
      { line: 3, text: lines[2] },
      { line: 4, text: same },
    ]);
    // The kept one is in the rewritten file.
    expect(readFileSync(path, "utf8")).toContain(same);
  });

  it("copies a line the reader kept but rewrote (a call's type normalised), as it was, marked rewritten", async () => {
    const path = join(root, "rewritten.jsonl");
    const odd = line({ role: "assistant", content: null, tool_calls: [assistantCall("c1", "tool")] });
    const lines = [
      header("rewritten"),
      line({ role: "user", content: "pay" }),
      odd,
      line({ role: "tool", tool_call_id: "c1", content: "paid" }),
      line({ role: "assistant", content: "done" }),
    ];
    writeFileSync(path, `${lines.join("\n")}\n`);
    const opened = await open("rewritten");
    expect(opened.count).toBe(4);
    expect(opened.notices).toEqual([
      'Line 3 of the session file has tool call "c1" with type "tool"; it was read as the function call it holds.',
      `The 1 line(s) dropped from the session file or rewritten on reading are kept, as they were, in ${path}.dropped.`,
    ]);
    expect(copied(path)).toEqual([{ line: 3, text: odd }]);
    const [block] = readDropped(`${path}.dropped`);
    expect(block?.lines).toHaveLength(1);
    expect(
      readFileSync(`${path}.dropped`, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { type: string; rewritten?: boolean })
        .filter((r) => r.type === "line")
        .map((r) => r.rewritten),
    ).toEqual([true]);
    // The rewritten file holds the normalised form.
    expect(readFileSync(path, "utf8")).not.toContain('"type":"tool"');
  });

  it("copies a kept line with fields this version does not write (a newer version's), as it was, marked rewritten", async () => {
    const path = join(root, "newer.jsonl");
    const newer = JSON.stringify({
      type: "message",
      message: { role: "user", content: "hi" },
      at: "2027-01-01",
    });
    const lines = [header("newer"), newer, line({ role: "assistant", content: "hello" })];
    writeFileSync(path, `${lines.join("\n")}\n`);
    const opened = await open("newer");
    expect(opened.count).toBe(2);
    expect(opened.notices).toEqual([
      'Line 2 of the session file has field(s) "at" that this version does not write; it was read without them.',
      `The 1 line(s) dropped from the session file or rewritten on reading are kept, as they were, in ${path}.dropped.`,
    ]);
    expect(copied(path)).toEqual([{ line: 2, text: newer }]);
    // The rewritten file holds the message without the field; the copy keeps it.
    expect(readFileSync(path, "utf8")).not.toContain("2027-01-01");
  });

  it("copies a torn last line even when it is all the reader dropped", async () => {
    const path = join(root, "torn.jsonl");
    const torn = '{"type":"message","message":{"role":"tool","tool_call_id":"c1","content":"TORN half a res';
    writeFileSync(
      path,
      `${[header("torn"), line({ role: "user", content: "hi" }), ANSWER].join("\n")}\n${torn}`,
    );
    const opened = await open("torn");
    expect(opened.count).toBe(2);
    expect(opened.notices).toEqual([
      `The last line of the session file was cut off mid-write (${torn.length} characters) and was dropped.`,
      `The 1 line(s) dropped from the session file are kept in ${path}.dropped.`,
    ]);
    expect(copied(path)).toEqual([{ line: 4, text: torn }]);
  });

  it("copies nothing for a file the reader keeps as written: a byte order mark, state records, an app-only message, answers out of call order, a cut-off step answered NOT_RECORDED", async () => {
    const path = join(root, "clean.jsonl");
    const lines = [
      `\uFEFF${header("clean")}`,
      line({ role: "user", content: "pay both" }),
      JSON.stringify({ type: "todos", todos: [{ content: "pay", status: "inProgress" }] }),
      line({ role: "assistant", content: null, tool_calls: [assistantCall("a"), assistantCall("b")] }),
      line({ role: "ui-note", text: "app-only" }),
      line({ role: "tool", tool_call_id: "b", content: "paid b" }),
      line({ role: "tool", tool_call_id: "a", content: "paid a" }),
      JSON.stringify({ type: "todos", todos: [{ content: "pay", status: "completed" }] }),
      JSON.stringify({ type: "loaded", loaded: ["pay"] }),
      "",
      line({ role: "user", content: "and c" }),
      line({ role: "assistant", content: null, tool_calls: [assistantCall("c")] }),
    ];
    writeFileSync(path, `${lines.join("\n")}\n`);
    const opened = await open("clean");
    // Every message, and the cut-off call answered as not recorded.
    expect(opened.count).toBe(8);
    expect(opened.notices).toHaveLength(1);
    expect(opened.notices[0]).toMatch(/^The host stopped in the middle of a tool step/);
    expect(existsSync(`${path}.dropped`)).toBe(false);
  });
});
