// A host that dies in the middle of a tool step: the results of the calls that finished are in the
// file, and a reopened session tells the model what ran and what may have (r16 #1).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentMessage,
  type ChatMessageLike,
  createSession,
  defineTool,
  NOT_RECORDED,
  readSessionFile,
} from "./test-exports.js";
import { bundleChild } from "./test-support/bundle-child.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = mkdtempSync(join(tmpdir(), "agent-cut-step-"));
const ASK = "Pay invoice 7.";
const STEP = [
  { id: "c_slow", name: "slow", arguments: "{}" },
  { id: "c_pay", name: "pay", arguments: '{"invoice":7}' },
];
let server: TestServer;

beforeAll(async () => {
  // The prompt asks for the two-call step; anything after it is answered with text.
  server = await startServer({
    replies: (request) => {
      const messages = (request.body as { messages: ChatMessageLike[] }).messages;
      const last = messages[messages.length - 1] as ChatMessageLike;
      return last.role === "user" && last.content === ASK ? { toolCalls: STEP } : { content: "Paid once." };
    },
  });
});

afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

/** What the parent's own tools were asked to do: the reopened session must ask neither. */
function parentTools(ran: string[]) {
  return [
    defineTool({
      name: "slow",
      description: "Takes its time",
      parameters: { type: "object", properties: {} },
      execute: async () => {
        ran.push("slow");
        return "slow done";
      },
    }),
    defineTool({
      name: "pay",
      description: "Pays an invoice",
      parameters: { type: "object", properties: { invoice: { type: "number" } } },
      execute: async () => {
        ran.push("pay");
        return "paid again";
      },
    }),
  ];
}

const lines = (text: string) => text.split("\n").filter(Boolean);
const answersIn = (file: string, id: string) =>
  lines(readFileSync(file, "utf8")).filter((line) => line.includes(`"tool_call_id":"${id}"`));

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return check();
}

describe("a host killed while one call of a parallel step still runs", () => {
  it("leaves the finished call's result in the file; the reopened session answers the other as not recorded and sends both", async () => {
    const id = "killed-mid-step";
    const file = join(root, `${id}.jsonl`);
    const log = join(root, `${id}.log`);
    writeFileSync(log, "");
    const child = await bundleChild(join(here, "test-support/step-child.ts"));
    const proc = spawn(process.execPath, [child.file, root, id, server.baseUrl, log], {
      cwd: join(here, ".."),
      stdio: ["ignore", "ignore", "inherit"],
    });
    const exited = new Promise((resolve) => proc.once("exit", resolve));
    let inFile = false;
    try {
      // Both calls have started and `pay` has done its work; `slow` runs for minutes.
      const both = () => {
        const text = readFileSync(log, "utf8");
        return text.includes("paid invoice 7") && text.includes("slow started");
      };
      expect(await until(both, 20_000)).toBe(true);
      // The result is written as the call finishes: give it a moment, never the whole step.
      inFile = await until(() => existsSync(file) && answersIn(file, "c_pay").length > 0, 3_000);
    } finally {
      proc.kill("SIGKILL");
      await exited;
      await child.remove();
    }
    expect(proc.signalCode).toBe("SIGKILL");
    expect(inFile).toBe(true);
    expect(answersIn(file, "c_slow")).toEqual([]);

    const ran: string[] = [];
    const before = server.chatRequests.length;
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: parentTools(ran),
      sessionDir: root,
      sessionId: id,
    });
    // The step is kept whole: its calls, pay's result, and slow answered as not recorded — in the
    // calls' order, though pay's result reached the file first.
    const step = session.messages as ChatMessageLike[];
    expect(step.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool"]);
    expect(step[0]).toEqual({ role: "user", content: ASK });
    expect((step[1] as { tool_calls: { id: string }[] }).tool_calls.map((c) => c.id)).toEqual([
      "c_slow",
      "c_pay",
    ]);
    expect(step.slice(2)).toEqual([
      { role: "tool", tool_call_id: "c_slow", content: NOT_RECORDED },
      { role: "tool", tool_call_id: "c_pay", content: "Paid invoice 7." },
    ]);
    const all = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    // The killed host left its lock behind: the reopen takes it over and says so first.
    expect(all[0]).toMatch(/lock .* was taken over/);
    const notices = all.slice(1);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain('"c_slow"');
    expect(notices[0]).not.toContain('"c_pay"');
    expect(session.getSnapshot().timeline.filter((e) => e.type === "tool")).toMatchObject([
      { id: "c_slow", result: NOT_RECORDED, isError: true },
      { id: "c_pay", result: "Paid invoice 7.", isError: false },
    ]);

    const result = await session.prompt("Did you pay?");
    expect(result.status).toBe("ok");
    expect(server.chatRequests).toHaveLength(before + 1);
    // What the model is sent: both calls answered right after them, and the new prompt on its own
    // (not merged into the interrupted one).
    const sent = ((server.chatRequests.at(-1) as { body: unknown }).body as { messages: ChatMessageLike[] })
      .messages;
    expect(sent.map((m) => [m.role, m.role === "tool" ? m.tool_call_id : undefined, m.content])).toEqual([
      ["user", undefined, ASK],
      ["assistant", undefined, null],
      ["tool", "c_slow", NOT_RECORDED],
      ["tool", "c_pay", "Paid invoice 7."],
      ["user", undefined, "Did you pay?"],
    ]);
    expect(ran).toEqual([]);
    expect(lines(readFileSync(log, "utf8")).filter((l) => l.startsWith("paid"))).toEqual(["paid invoice 7"]);
    const transcript = [...session.messages];
    await session.close();
    // The file now holds the closed step as any other: read back as it is, with nothing to say.
    const again = readSessionFile(file);
    expect(again.notices).toEqual([]);
    expect(again.messages).toEqual(transcript);
  }, 60_000);
});

describe("a parallel step's results as they finish", () => {
  const slowFirst = (ran: string[], slowMs: number) => [
    defineTool({
      name: "slow",
      description: "Takes its time",
      parameters: { type: "object", properties: {} },
      execute: async () => {
        await new Promise((resolve) => setTimeout(resolve, slowMs));
        ran.push("slow");
        return "slow done";
      },
    }),
    defineTool({
      name: "pay",
      description: "Pays an invoice",
      parameters: { type: "object", properties: { invoice: { type: "number" } } },
      execute: async () => {
        ran.push("pay");
        return "Paid invoice 7.";
      },
    }),
  ];

  it("are each in the file once, the first before the step ends, and read back in the calls' order", async () => {
    const id = "as-they-finish";
    const file = join(root, `${id}.jsonl`);
    const ran: string[] = [];
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: slowFirst(ran, 300),
      sessionDir: root,
      sessionId: id,
    });
    const seen: string[][] = [];
    session.onEvent((event) => {
      if (event.type === "tool_end" && event.id === "c_pay") {
        // Told after the session wrote it, while slow still runs.
        seen.push(answersIn(file, "c_pay"), answersIn(file, "c_slow"));
      }
    });
    expect((await session.prompt(ASK)).status).toBe("ok");
    expect(ran).toEqual(["pay", "slow"]);
    expect(seen).toEqual([
      [
        JSON.stringify({
          type: "message",
          message: { role: "tool", tool_call_id: "c_pay", content: "Paid invoice 7." },
        }),
      ],
      [],
    ]);
    // Once each, pay's first (as the calls finished), though the transcript holds slow's first.
    expect(answersIn(file, "c_pay")).toHaveLength(1);
    expect(answersIn(file, "c_slow")).toHaveLength(1);
    const text = readFileSync(file, "utf8");
    expect(text.indexOf('"c_pay","content"')).toBeLessThan(text.indexOf('"c_slow","content"'));
    const transcript = [...session.messages] as AgentMessage[];
    expect((transcript[2] as ChatMessageLike & { tool_call_id: string }).tool_call_id).toBe("c_slow");
    await session.close();
    expect(readSessionFile(file)).toMatchObject({ messages: transcript, notices: [] });
  });

  it("survive a save() while the step runs: the rewrite keeps the result written early, and it is not written twice", async () => {
    const id = "saved-mid-step";
    const file = join(root, `${id}.jsonl`);
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: slowFirst([], 300),
      sessionDir: root,
      sessionId: id,
    });
    let afterSave: string[] = [];
    session.onEvent((event) => {
      if (event.type === "tool_end" && event.id === "c_pay") {
        void session.save().then(() => {
          afterSave = answersIn(file, "c_pay");
        });
      }
    });
    expect((await session.prompt(ASK)).status).toBe("ok");
    expect(afterSave).toHaveLength(1);
    expect(answersIn(file, "c_pay")).toHaveLength(1);
    expect(answersIn(file, "c_slow")).toHaveLength(1);
    const transcript = [...session.messages];
    await session.close();
    expect(readSessionFile(file)).toMatchObject({ messages: transcript, notices: [] });
  });
});

describe("a file with a tool step cut off before a later message", () => {
  it("keeps the step with its recorded answer, answers the rest as not recorded, and drops what broke the step, keeping a copy", async () => {
    const id = "cut-before-later";
    const file = join(root, `${id}.jsonl`);
    const header = JSON.stringify({ type: "session", version: 1, id, createdAt: "2026-01-01T00:00:00.000Z" });
    const call = (callId: string) => ({
      id: callId,
      type: "function",
      function: { name: "pay", arguments: '{"invoice":7}' },
    });
    const step = [
      { role: "user", content: ASK },
      { role: "assistant", content: null, tool_calls: [call("a"), call("b")] },
      { role: "ui-note", text: "kept: app-only" },
      { role: "tool", tool_call_id: "b", content: "Paid invoice 7." },
    ];
    const after = [
      { role: "user", content: "A message another writer put here" },
      { role: "assistant", content: "An answer to it" },
    ];
    writeFileSync(
      file,
      [header, ...[...step, ...after].map((message) => JSON.stringify({ type: "message", message }))]
        .map((l) => `${l}\n`)
        .join(""),
    );
    const original = readFileSync(file);
    const loaded = readSessionFile(file);
    expect(loaded.messages).toEqual([
      ...step.slice(0, 3),
      { role: "tool", tool_call_id: "a", content: NOT_RECORDED },
      step[3],
    ]);
    expect(loaded.notices).toHaveLength(2);
    expect(loaded.notices[0]).toContain('"a"');
    expect(loaded.notices[1]).toMatch(/^2 message\(s\) after a tool step/);
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      sessionDir: root,
      sessionId: id,
    });
    expect(session.messages).toEqual(loaded.messages);
    // The two lines that broke the step are kept, as written, in <file>.dropped.
    const kept = readFileSync(`${file}.dropped`, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as { type: string; text?: string });
    const lines = original.toString("utf8").split("\n");
    expect(kept.filter((entry) => entry.type === "line").map((entry) => entry.text)).toEqual(
      lines.slice(5, 7),
    );
    await session.close();
  });
});
