import { type ChildProcess, spawn } from "node:child_process";
import {
  closeSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import {
  AgentError,
  type AgentMessage,
  answeredPrefix,
  createSession,
  listSessions,
  MAX_RECORD_DEPTH,
  NOT_RECORDED,
  readSessionFile,
} from "./test-exports.js";
import { bundleChild } from "./test-support/bundle-child.js";
import { LONG_RUN_STEPS, longRunReplies, NOTE_TOOL } from "./test-support/long-run.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = mkdtempSync(join(tmpdir(), "agent-crash-"));
let server: TestServer;
let reference: AgentMessage[];
let referenceFile: string;

beforeAll(async () => {
  // The whole run, to completion, in-process: what every crashed file must be a prefix of.
  server = await startServer({ replies: longRunReplies() });
  const session = await createSession({
    config: { baseUrl: server.baseUrl, model: "sim" },
    tools: [NOTE_TOOL],
    sessionDir: root,
    sessionId: "reference",
    maxTurns: LONG_RUN_STEPS + 5,
  });
  const result = await session.prompt("Take notes.");
  expect(result.status).toBe("ok");
  reference = [...session.messages];
  referenceFile = readFileSync(join(root, "reference.jsonl"), "utf8");
}, 30_000);

afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

/**
 * A prefix of the reference run, except that the calls of the step it ends in (cut off) may be
 * answered `NOT_RECORDED` in place of the results the file did not hold yet.
 */
function isCutPrefix(messages: readonly AgentMessage[]): boolean {
  const step = messages.findLastIndex((m) => (m as { role: string }).role === "assistant");
  return messages.every((m, i) => {
    const own = reference[i] as { role?: string; tool_call_id?: string } | undefined;
    if (JSON.stringify(m) === JSON.stringify(own)) return true;
    const unrecorded = { role: "tool", tool_call_id: own?.tool_call_id, content: NOT_RECORDED };
    return i > step && own?.role === "tool" && JSON.stringify(m) === JSON.stringify(unrecorded);
  });
}

describe("session file", () => {
  it("reads back the whole run from an intact file", () => {
    expect(reference).toHaveLength(1 + LONG_RUN_STEPS * 3 + 1);
    expect(readSessionFile(join(root, "reference.jsonl"))).toMatchObject({
      messages: reference,
      notices: [],
    });
  });

  it("resumes any truncation of the file to a prefix of the messages with every tool call answered (a cut-off step's missing results as not recorded)", () => {
    const path = join(root, "cut.jsonl");
    let midStep = 0;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: referenceFile.length }), (offset) => {
        writeFileSync(path, referenceFile.slice(0, offset));
        const loaded = readSessionFile(path);
        expect(isCutPrefix(loaded.messages)).toBe(true);
        expect(answeredPrefix(loaded.messages)).toBe(loaded.messages.length);
        const cleanCut = offset === 0 || referenceFile[offset - 1] === "\n";
        expect(loaded.notices.some((n) => n.includes("cut off mid-write"))).toBe(!cleanCut);
        if (loaded.messages.some((m) => (m as { content?: unknown }).content === NOT_RECORDED)) midStep++;
      }),
      propertyRuns(300),
    );
    expect(midStep).toBeGreaterThan(0);
  });

  it("resumes a session whose writer was killed with SIGKILL mid-run", async () => {
    const child = await bundleChild(join(here, "test-support/kill-child.ts"));
    // Three writers at once, each killed at its own point: the rounds share nothing (a file each),
    // so they need not wait for each other's start-up.
    const procs: ChildProcess[] = [];
    const killRound = async (waitBytes: number, i: number) => {
      const id = `killed${i}`;
      const file = join(root, `${id}.jsonl`);
      const proc = spawn(process.execPath, [child.file, root, id], {
        cwd: join(here, ".."),
        stdio: ["ignore", "pipe", "inherit"],
      });
      procs.push(proc);
      // Kill once the file has grown past a point that varies per round, mid-write as it happens.
      await new Promise<void>((resolve, reject) => {
        const timer = setInterval(() => {
          let size = 0;
          try {
            size = statSync(file).size;
          } catch {}
          if (size >= waitBytes + Math.floor(Math.random() * 200)) {
            clearInterval(timer);
            proc.kill("SIGKILL");
            resolve();
          }
        }, 1);
        proc.on("exit", (code, signal) => {
          clearInterval(timer);
          if (signal !== "SIGKILL") reject(new Error(`child ended on its own (${code}) before the kill`));
        });
      });
      await new Promise((resolve) =>
        proc.exitCode !== null || proc.signalCode ? resolve(null) : proc.on("exit", resolve),
      );
      return { id, file };
    };
    let rounds: { id: string; file: string }[];
    try {
      rounds = await Promise.all([300, 2000, 4000].map(killRound));
    } finally {
      for (const proc of procs) if (proc.exitCode === null && !proc.signalCode) proc.kill("SIGKILL");
      await child.remove();
    }
    for (const { id, file } of rounds) {
      const resumed = await createSession({
        config: { baseUrl: server.baseUrl, model: "sim" },
        tools: [NOTE_TOOL],
        sessionDir: root,
        sessionId: id,
      });
      expect(resumed.messages.length).toBeGreaterThan(0);
      expect(isCutPrefix(resumed.messages)).toBe(true);
      expect(answeredPrefix(resumed.messages)).toBe(resumed.messages.length);
      // The repaired file reads back the same, with nothing left to drop.
      expect(readSessionFile(file)).toMatchObject({ messages: resumed.messages, notices: [] });
    }
  }, 60_000);
});

describe("a session file another writer garbled", () => {
  const garbled = [
    "null",
    "42",
    '"text"',
    "[]",
    '{"type":"message","message":null}',
    '{"type":"message","message":{"role":"assistant","content":"x","tool_calls":"call"}}',
    '{"type":"message","message":{"role":"assistant","content":"x","tool_calls":[{"id":"c9","type":"function","function":null}]}}',
    '{"type":"message","message":{"role":"tool","content":"x"}}',
    '{"type":"message","message":{"content":"no role"}}',
    '{"type":"message","message":{"role":"user","content":[42]}}',
    '{"type":"message","message":{"role":"user","content":[{"type":"text","text":7}]}}',
    '{"type":"message","message":{"role":"user","content":[{"type":"image_url","image_url":"x.png"}]}}',
    '{"type":"todos","todos":"write tests"}',
    '{"type":"todos","todos":[{"content":1,"status":"later"}]}',
  ];

  it("drops each record it could not have written with a notice naming the line, and the session still runs", async () => {
    const lines = referenceFile.split("\n").filter(Boolean);
    // The garbage goes between the session header and the first message.
    const text = [lines[0], ...garbled, ...lines.slice(1)].map((l) => `${l}\n`).join("");
    writeFileSync(join(root, "garbled.jsonl"), text);
    const loaded = readSessionFile(join(root, "garbled.jsonl"));
    expect(loaded.messages).toEqual(reference);
    expect(loaded.todos).toEqual([]);
    expect(loaded.notices).toHaveLength(garbled.length);
    garbled.forEach((_, i) => {
      expect(loaded.notices[i]).toMatch(new RegExp(`^Line ${i + 2} of the session file `));
    });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [NOTE_TOOL],
      sessionDir: root,
      sessionId: "garbled",
    });
    expect(session.messages).toEqual(reference);
    // One per dropped line, then where the dropped lines are kept.
    const notices = session.getSnapshot().timeline.filter((e) => e.type === "notice");
    expect(notices).toHaveLength(garbled.length + 1);
    expect(notices.at(-1)).toMatchObject({
      text: `The ${garbled.length} line(s) dropped from the session file are kept in ${join(root, "garbled.jsonl")}.dropped.`,
    });
  });

  it("never throws for any JSON a line may hold, and keeps only answered messages", () => {
    const path = join(root, "fuzzed.jsonl");
    const lines = referenceFile.split("\n").filter(Boolean);
    const record = fc.oneof(
      fc.jsonValue(),
      fc.record({ type: fc.constant("message"), message: fc.jsonValue() }),
      fc.record({
        type: fc.constant("message"),
        message: fc.record({
          role: fc.constantFrom("assistant", "tool", "user"),
          content: fc.jsonValue(),
          tool_calls: fc.jsonValue(),
          tool_call_id: fc.jsonValue(),
        }),
      }),
      fc.record({ type: fc.constant("todos"), todos: fc.jsonValue() }),
    );
    fc.assert(
      fc.property(fc.array(record, { maxLength: 4 }), fc.nat(lines.length), (extra, at) => {
        const all = [...lines.slice(0, at), ...extra.map((r) => JSON.stringify(r)), ...lines.slice(at)];
        writeFileSync(path, all.map((l) => `${l}\n`).join(""));
        const loaded = readSessionFile(path);
        expect(answeredPrefix(loaded.messages)).toBe(loaded.messages.length);
        for (const todo of loaded.todos) expect(typeof todo.content).toBe("string");
      }),
      propertyRuns(300),
    );
  });
});

describe("a session file whose tool calls were stored without their type", () => {
  it("opens with the calls on its timeline, as the loop reads them (function calls), and goes on", async () => {
    const own = await startServer({ replies: [{ content: "Still here." }] });
    try {
      const header = referenceFile.split("\n")[0];
      const records = [
        { role: "user", content: "Note it." },
        {
          role: "assistant",
          content: null,
          // One row read back with no type, one with a null column.
          tool_calls: [
            { id: "c1", function: { name: "note", arguments: '{"text":"a"}' } },
            { id: "c2", type: null, function: { name: "note", arguments: '{"text":"b"}' } },
          ],
        },
        { role: "tool", tool_call_id: "c1", content: "noted" },
        { role: "tool", tool_call_id: "c2", content: "noted" },
        { role: "assistant", content: "Done." },
      ].map((message) => JSON.stringify({ type: "message", message }));
      writeFileSync(join(root, "untyped.jsonl"), [header, ...records].map((l) => `${l}\n`).join(""));
      const session = await createSession({
        config: { baseUrl: own.baseUrl, model: "sim" },
        tools: [NOTE_TOOL],
        sessionDir: root,
        sessionId: "untyped",
      });
      const tools = session.getSnapshot().timeline.filter((e) => e.type === "tool");
      expect(tools).toMatchObject([
        { id: "c1", name: "note", result: "noted" },
        { id: "c2", name: "note", result: "noted" },
      ]);
      expect((await session.prompt("Still there?")).status).toBe("ok");
      expect(own.chatRequests).toHaveLength(1);
    } finally {
      await own.close();
    }
  });
});

describe("a session file with one malformed tool step in the middle", () => {
  const header = () => referenceFile.split("\n")[0];
  const healthy = [1, 2, 3].flatMap((n) => [
    { role: "user", content: `Question ${n}` },
    { role: "assistant", content: `Answer ${n}` },
  ]);
  const write = (name: string, step: object[]) =>
    writeFileSync(
      join(root, `${name}.jsonl`),
      [header(), ...[...step, ...healthy].map((message) => JSON.stringify({ type: "message", message }))]
        .map((l) => `${l}\n`)
        .join(""),
    );

  it("reads a call another client stored with another type as the function call it holds, keeping every later message", async () => {
    const step = [
      { role: "user", content: "Note it." },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "tool", function: { name: "note", arguments: '{"text":"a"}' } }],
      },
      { role: "tool", tool_call_id: "c1", content: "noted" },
    ];
    write("other-type", step);
    const loaded = readSessionFile(join(root, "other-type.jsonl"));
    expect(loaded.messages).toHaveLength(step.length + healthy.length);
    expect(loaded.messages[1]).toMatchObject({ tool_calls: [{ id: "c1", type: "function" }] });
    expect(loaded.notices).toEqual([
      'Line 3 of the session file has tool call "c1" with type "tool"; it was read as the function call it holds.',
    ]);
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [NOTE_TOOL],
      sessionDir: root,
      sessionId: "other-type",
    });
    expect(session.messages).toHaveLength(step.length + healthy.length);
    // The file the session rewrote on opening still holds every message.
    expect(readSessionFile(join(root, "other-type.jsonl")).messages).toHaveLength(
      step.length + healthy.length,
    );
    await session.close();
  });

  it("drops an assistant message it cannot read together with its answers, not everything after it", () => {
    const step = [
      { role: "user", content: "Note it." },
      {
        role: "assistant",
        content: [{ type: "text", text: 7 }],
        tool_calls: [{ id: "c1", type: "function", function: { name: "note", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c1", content: "noted" },
    ];
    write("bad-step", step);
    const loaded = readSessionFile(join(root, "bad-step.jsonl"));
    expect(loaded.messages).toEqual([step[0], ...healthy]);
    expect(loaded.notices).toHaveLength(2);
    expect(loaded.notices[0]).toMatch(
      /^Line 3 of the session file is a message with a content part .* and was dropped\.$/,
    );
    expect(loaded.notices[1]).toBe(
      'Line 4 of the session file answers tool call "c1" of a message that was dropped, and was dropped with it.',
    );
  });

  it("keeps the answer of a later healthy call that reuses a dropped call's id", () => {
    const step = [
      { role: "user", content: "Note it." },
      {
        role: "assistant",
        content: [{ type: "text", text: 7 }],
        tool_calls: [{ id: "call_0", type: "function", function: { name: "note", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "call_0", content: "noted" },
      { role: "user", content: "Again." },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_0", type: "function", function: { name: "note", arguments: '{"text":"b"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_0", content: "noted again" },
      { role: "assistant", content: "Done." },
    ];
    write("reused-id", step);
    const loaded = readSessionFile(join(root, "reused-id.jsonl"));
    expect(loaded.messages).toEqual([step[0], ...step.slice(3), ...healthy]);
    expect(loaded.notices).toHaveLength(2);
  });

  it("drops the answer of a dropped call whose id is a number, leaving nothing that cuts the file", () => {
    const step = [
      { role: "user", content: "Note it." },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: 7, type: "function", function: { name: "note", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "7", content: "noted" },
    ];
    write("numeric-id", step);
    const loaded = readSessionFile(join(root, "numeric-id.jsonl"));
    expect(loaded.messages).toEqual([step[0], ...healthy]);
    expect(loaded.notices).toEqual([
      "Line 3 of the session file is an assistant message with a tool call without a string id and was dropped.",
      'Line 4 of the session file answers tool call "7" of a message that was dropped, and was dropped with it.',
    ]);
  });
});

describe("a session whose open call was answered behind an app-only message", () => {
  it("round-trips the Agent's own order (call, app-only note, answer) through its file", async () => {
    const talk = await startServer({ replies: () => ({ content: "ok" }) });
    try {
      const open = () =>
        createSession({
          config: { baseUrl: talk.baseUrl, model: "sim" },
          tools: [NOTE_TOOL],
          sessionDir: root,
          sessionId: "note-after-call",
        });
      const session = await open();
      const call = { id: "call_1", type: "function", function: { name: "note", arguments: '{"text":"a"}' } };
      // The host restores a transcript whose last run never answered its call, and noted so.
      session.agent.messages = [
        { role: "user", content: "Note it." },
        { role: "assistant", content: null, tool_calls: [call] },
        { role: "ui-note", text: "interrupted" },
      ] as unknown as AgentMessage[];
      expect((await session.prompt("Go on.")).status).toBe("ok");
      const roles = session.messages.map((m) => (m as { role: string }).role);
      expect(roles).toEqual(["user", "assistant", "ui-note", "tool", "user", "assistant"]);
      const written = [...session.messages];
      await session.close();
      const path = join(root, "note-after-call.jsonl");
      const before = readFileSync(path, "utf8");
      const loaded = readSessionFile(path);
      expect(loaded.notices).toEqual([]);
      expect(loaded.messages).toEqual(written);
      const again = await open();
      expect(again.messages).toEqual(written);
      expect(again.getSnapshot().timeline.filter((e) => e.type === "notice")).toEqual([]);
      expect(readFileSync(path, "utf8").length).toBe(before.length);
      await again.close();
    } finally {
      await talk.close();
    }
  });
});

describe("listSessions over files a person copied or edited", () => {
  it("names each session by its file, the id createSession opens it by, and always gives a string createdAt", async () => {
    const dir = join(root, "listed");
    mkdirSync(dir);
    copyFileSync(join(root, "reference.jsonl"), join(dir, "reference.jsonl"));
    // A copy kept as a backup, and a file whose header another tool wrote oddly.
    copyFileSync(join(root, "reference.jsonl"), join(dir, "backup.jsonl"));
    const body = referenceFile.split("\n").slice(1).join("\n");
    writeFileSync(
      join(dir, "odd.jsonl"),
      `{"type":"session","id":{"not":"a string"},"createdAt":7}\n${body}`,
    );
    const listed = listSessions(dir);
    expect(listed.map((s) => s.id).sort()).toEqual(["backup", "odd", "reference"]);
    for (const meta of listed) {
      expect(typeof meta.createdAt).toBe("string");
      expect(meta.title).toBe("Take notes.");
      const opened = await createSession({
        config: { baseUrl: server.baseUrl, model: "sim" },
        sessionDir: dir,
        sessionId: meta.id,
      });
      expect(opened.messages).toEqual(reference);
    }
  });
});

describe("createSession's file options, as a host may pass them through from a request", () => {
  const refused = async (options: Record<string, unknown>, pattern: RegExp) => {
    const error = await createSession({ config: { baseUrl: server.baseUrl, model: "sim" }, ...options }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(AgentError.isInstance(error), String(error)).toBe(true);
    expect((error as AgentError).code).toBe("invalid-input");
    expect((error as AgentError).message).toMatch(pattern);
  };

  it("refuses an importPath that is not a path, rather than reading an open file descriptor of that number", async () => {
    const fd = openSync(join(root, "reference.jsonl"), "r");
    try {
      await refused({ importPath: fd }, /importPath must be a path \(a string\); got a number/);
    } finally {
      closeSync(fd);
    }
  });

  it("refuses a sessionDir or sessionId of another type, and an id with a NUL, naming the option", async () => {
    await refused({ sessionDir: 5 }, /sessionDir must be a path \(a string\); got a number/);
    await refused({ sessionDir: root, sessionId: 7 }, /sessionId must be a string; got a number/);
    await refused({ sessionDir: root, sessionId: "a\u0000b" }, /one path segment/);
    await expect(createSession(null as never)).rejects.toSatisfy((e: unknown) => AgentError.isInstance(e));
  });
});

describe("session files the reader must not take as they are (r17 #8)", () => {
  const header = JSON.stringify({
    type: "session",
    version: 1,
    id: "s",
    createdAt: "2026-01-01T00:00:00.000Z",
  });
  const line = (message: object) => JSON.stringify({ type: "message", message });
  /** A user message whose one part carries `levels` nested lists: the record nests `levels + 4` deep. */
  const nested = (levels: number) =>
    `{"type":"message","message":{"role":"user","content":[{"type":"text","text":"deep","extra":${"[".repeat(levels)}1${"]".repeat(levels)}}]}}`;

  it("drops a record nested deeper than MAX_RECORD_DEPTH with a notice, and the session opens and runs", async () => {
    const dir = join(root, "deep");
    mkdirSync(dir, { recursive: true });
    const answer = line({ role: "assistant", content: "ok" });
    writeFileSync(join(dir, "deep.jsonl"), `${header}\n${nested(20_000)}\n${answer}\n`);
    const loaded = readSessionFile(join(dir, "deep.jsonl"));
    // The answer to the dropped prompt goes with it: kept, the transcript would open with an answer.
    expect(loaded.messages).toEqual([]);
    expect(loaded.notices).toEqual([
      `Line 2 of the session file is a record nested deeper than ${MAX_RECORD_DEPTH} levels and was dropped.`,
      "Line 3 of the session file holds an answer to a prompt whose line was dropped, and was dropped with it (kept, the conversation would open with an answer, which endpoints that make roles alternate refuse).",
    ]);
    const own = await startServer({ replies: [{ content: "Still here." }] });
    try {
      const session = await createSession({
        config: { baseUrl: own.baseUrl, model: "sim" },
        sessionDir: dir,
        sessionId: "deep",
      });
      expect((await session.prompt("Next.")).status).toBe("ok");
      expect(own.chatRequests).toHaveLength(1);
      await session.close();
    } finally {
      await own.close();
    }
    // The bound itself: a record exactly MAX_RECORD_DEPTH deep is read, one level more is not.
    writeFileSync(
      join(dir, "edge.jsonl"),
      `${header}\n${nested(MAX_RECORD_DEPTH - 4)}\n${nested(MAX_RECORD_DEPTH - 3)}\n${answer}\n`,
    );
    const edge = readSessionFile(join(dir, "edge.jsonl"));
    expect(edge.messages).toHaveLength(2);
    expect(edge.notices).toEqual([
      `Line 3 of the session file is a record nested deeper than ${MAX_RECORD_DEPTH} levels and was dropped.`,
    ]);
  });

  it("refuses an assistant message that gives one tool call id twice, with its answers: no request with two calls and one answer", async () => {
    const dir = join(root, "dup-ids");
    mkdirSync(dir, { recursive: true });
    const call = (name: string) => ({ id: "c1", type: "function", function: { name, arguments: "{}" } });
    writeFileSync(
      join(dir, "dup.jsonl"),
      [
        header,
        line({ role: "user", content: "hi" }),
        line({ role: "assistant", content: null, tool_calls: [call("a"), call("b")] }),
        line({ role: "tool", tool_call_id: "c1", content: "ok" }),
        line({ role: "assistant", content: "done" }),
      ]
        .map((l) => `${l}\n`)
        .join(""),
    );
    const loaded = readSessionFile(join(dir, "dup.jsonl"));
    expect(loaded.messages).toEqual([
      { role: "user", content: "hi" },
      { role: "assistant", content: "done" },
    ]);
    expect(loaded.notices).toEqual([
      'Line 3 of the session file is an assistant message that gives tool call id "c1" twice and was dropped.',
      'Line 4 of the session file answers tool call "c1" of a message that was dropped, and was dropped with it.',
    ]);
    const own = await startServer({ replies: [{ content: "Next answer." }] });
    try {
      const session = await createSession({
        config: { baseUrl: own.baseUrl, model: "sim" },
        sessionDir: dir,
        sessionId: "dup",
      });
      expect((await session.prompt("next")).status).toBe("ok");
      const sent = (
        (own.chatRequests[0] as { body: unknown }).body as {
          messages: { role: string; tool_calls?: unknown }[];
        }
      ).messages;
      expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
      expect(sent.some((m) => m.tool_calls !== undefined)).toBe(false);
      await session.close();
    } finally {
      await own.close();
    }
  });

  it("skips a leading UTF-8 byte order mark, in the reader and in listSessions", () => {
    const dir = join(root, "bom");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "bom.jsonl"), `\uFEFF${header}\n${line({ role: "user", content: "listed?" })}\n`);
    const loaded = readSessionFile(join(dir, "bom.jsonl"));
    expect(loaded).toMatchObject({
      createdAt: "2026-01-01T00:00:00.000Z",
      messages: [{ role: "user", content: "listed?" }],
      notices: [],
    });
    expect(listSessions(dir)).toMatchObject([
      { id: "bom", title: "listed?", createdAt: "2026-01-01T00:00:00.000Z" },
    ]);
  });
});
