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
const header = (id = "s") =>
  JSON.stringify({ type: "session", version: 1, id, createdAt: "2026-01-01T00:00:00.000Z" });
const line = (message: object) => JSON.stringify({ type: "message", message });

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
    // Open 3 drops nothing: the dropped-lines file is as it was.
    const before = readFileSync(dropped, "utf8");
    const three = await open("s1");
    expect(three.notices).toEqual([]);
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
      writeFileSync(path, `${kept}${line({ role: "user", content: `step ${crash}` })}\n${line(result)}\n`);
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
    writeFileSync(path, `${[header("s3"), line({ role: "user", content: "q" }), line(big)].join("\n")}\n`);
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
      `${[header("notes"), line({ role: "user", content: "q" }), "{broken NOTES-LOST"].join("\n")}\n`,
    );
    const notes = await open("notes");
    const dropped = join(root, "notes.jsonl.dropped");
    expect(notes.notices.at(-1)).toBe(`The 1 line(s) dropped from the session file are kept in ${dropped}.`);
    expect(readDropped(dropped).map((o) => o.lines)).toEqual([[{ line: 3, text: "{broken NOTES-LOST" }]]);
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
    const session = [header("foreign"), line({ role: "user", content: "q" }), "{broken FOREIGN-LOST"];
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
    // Moved aside, the open goes on (its lock was let go); a first header cut off by a crash is
    // still this module's file, appended after on a line of its own.
    writeFileSync(dropped, '{"type":"op');
    const opened = await open("foreign");
    expect(opened.count).toBe(1);
    const [torn, ...after] = readFileSync(dropped, "utf8").split("\n");
    expect(torn).toBe('{"type":"op');
    writeFileSync(dropped, after.join("\n"));
    expect(readDropped(dropped).map((o) => o.lines)).toEqual([[{ line: 3, text: "{broken FOREIGN-LOST" }]]);
  });
});
