// r104k: the agent quoted tool_call_ids and session ids with JSON.stringify where they reach the
// model or a notice or error a host shows: a right-to-left override (U+202E) in an id went out raw,
// turning the words after it around where they were shown, and a 10,000-character id was written
// whole. Each is now quoted as the agent echoes what a model wrote (`quotedEcho`: cut at 60 with the
// length said, controls and bidi marks written \uXXXX); the id sent back as a tool message's
// tool_call_id stays exact. And a file ending in 16,000 prompts never answered named every one in
// its notice, about a megabyte: now the first three, how many are between, and the last.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  AgentError,
  type AgentEvent,
  type AgentMessage,
  createSession,
  readSessionFile,
} from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tmpDir = useTempDirs("r104k");
const RLO = "\u202e";
/** An id with a right-to-left override in it, and one of 10,000 characters. */
const TURNED = `call_${RLO}txt.exe`;
const HUGE = `call_${"x".repeat(9_995)}`;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Whether `text` says `id` as an echo does: no raw control, cut with its length said when long. */
function echoes(text: string, id: string): void {
  expect(text).not.toContain(RLO);
  if (id.length > 60) {
    expect(text).toContain(`${id.slice(0, 60)}… (${id.length} characters)`);
    expect(text).not.toContain(id.slice(0, 61));
  } else expect(text).toContain(JSON.stringify(id).replace(RLO, "\\u202e"));
}

function sessionFile(lines: unknown[]): string {
  const file = join(tmpDir(), "s.jsonl");
  const header = { type: "session", version: 1, id: "s", createdAt: "2026-01-01T00:00:00.000Z" };
  writeFileSync(file, [header, ...lines].map((line) => `${JSON.stringify(line)}\n`).join(""));
  return file;
}

const message = (m: unknown) => ({ type: "message", message: m });
const call = (id: string, name = "clock") => ({ id, type: "function", function: { name, arguments: "{}" } });

describe.each([
  ["a right-to-left override", TURNED],
  ["10,000 characters", HUGE],
])("a tool call id holding %s", (_what, id) => {
  it("is echoed, not written raw or whole, when a prompt's tool message answers no open call", async () => {
    const agent = new Agent({ config: { baseUrl: "http://127.0.0.1:9/v1", model: "sim" } });
    const error = await agent.prompt([{ role: "tool", tool_call_id: id, content: "y" }]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AgentError);
    const text = (error as AgentError).message;
    expect(text).toMatch(/answers no open tool call/);
    echoes(text, id);
    expect(text.length).toBeLessThan(1_000);
  });

  it("is echoed in the notice of a restored call never answered, and sent back exact as its answer's id", async () => {
    server = await startServer({ personality: "openai", replies: [{ content: "Let me look again." }] });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "gpt-4o" } });
    agent.messages = [
      { role: "user", content: "What time is it?" },
      { role: "assistant", content: null, tool_calls: [call(id)] },
    ] as AgentMessage[];
    const notices: string[] = [];
    agent.subscribe((event: AgentEvent) => {
      if (event.type === "notice") notices.push(event.text);
    });
    expect((await agent.continue()).status).toBe("ok");
    const notice = notices.find((text) => text.includes("no tool message answers")) ?? "";
    echoes(notice, id);
    expect(notice.length).toBeLessThan(1_000);
    const sent = (server.chatRequests[0]!.body as { messages: { tool_call_id?: string }[] }).messages;
    expect(sent[2]?.tool_call_id).toBe(id);
  });

  it("is echoed in the notices of a session file read: a cut-off step, a dropped call's answer, an odd type, a twice-given id", () => {
    const file = sessionFile([
      message({ role: "user", content: "a" }),
      // A call without a string name: dropped, and the answer to it with it.
      message({
        role: "assistant",
        content: null,
        tool_calls: [{ id, type: "function", function: { arguments: "{}" } }],
      }),
      message({ role: "tool", tool_call_id: id, content: "noon" }),
      message({ role: "user", content: "b" }),
      message({ role: "assistant", content: null, tool_calls: [call(id), call(id)] }),
      message({ role: "user", content: "c" }),
      message({ role: "assistant", content: null, tool_calls: [{ ...call(id), type: `odd${RLO}` }] }),
    ]);
    const { notices } = readSessionFile(file);
    const said = (pattern: RegExp) => notices.find((text) => pattern.test(text)) ?? "";
    for (const notice of [
      said(/is an assistant message with tool call .* without a string name/),
      said(/answers tool call .* of a message that was dropped/),
      said(/gives tool call id .* twice/),
      said(/with type "odd\\u202e"; it was read as the function call/),
      said(/no result was recorded for tool call/),
    ]) {
      echoes(notice, id);
      expect(notice.length).toBeLessThan(1_000);
    }
  });
});

describe("a session id refused", () => {
  it("is echoed in the refusal, cut and its controls escaped, not written whole", async () => {
    const id = `a/${RLO}${"b".repeat(10_000)}`;
    const error = await createSession({
      config: { baseUrl: "http://127.0.0.1:9/v1", model: "m" },
      sessionDir: tmpDir(),
      sessionId: id,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AgentError);
    const text = (error as AgentError).message;
    expect(text).toMatch(/must be one path segment/);
    expect(text).toContain(`a/\\u202e${"b".repeat(57)}… (${id.length} characters)`);
    expect(text).not.toContain(RLO);
    expect(text.length).toBeLessThan(1_000);
  });
});

describe("a session file ending in 16,000 prompts never answered", () => {
  it("names the first three and the last and says how many are between, in a notice of under 2,000 characters", async () => {
    const dir = tmpDir();
    const prompts = Array.from({ length: 16_000 }, (_, at) =>
      message({ role: "user", content: `prompt ${at}` }),
    );
    writeFileSync(
      join(dir, "asked.jsonl"),
      [{ type: "session", version: 1, id: "asked", createdAt: "2026-01-01T00:00:00.000Z" }, ...prompts]
        .map((line) => `${JSON.stringify(line)}\n`)
        .join(""),
    );
    const session = await createSession({
      config: { baseUrl: "http://127.0.0.1:9/v1", model: "m" },
      sessionDir: dir,
      sessionId: "asked",
    });
    const notice =
      session
        .getSnapshot()
        .timeline.flatMap((e) =>
          e.type === "notice" && e.text.includes("never answered") ? [e.text] : [],
        )[0] ?? "";
    await session.close();
    expect(notice).toContain(
      'The session file ends in prompts ("prompt 0", "prompt 1", "prompt 2", … and 15,996 more, "prompt 15999") the model never answered',
    );
    expect(notice).toMatch(/not kept in the conversation.*send it again/);
    expect(notice.length).toBeLessThan(2_000);
    expect(session.agent.messages).toEqual([]);
  });
});
