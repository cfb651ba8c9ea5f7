// r95a: a task runner resumed after its process was killed between a tool call and its result.
// The reopened session's notice is what the person reads to decide whether to check a side effect:
// it named only the call's id (llama.cpp's are 32 random characters), never the tool or what it
// was asked to do.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, type TestServer } from "@loopwright/testkit";
import { defineTool as defineTypedTool } from "@loopwright/tools";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  Agent,
  AgentError,
  type AgentTool,
  createSession,
  defineTool,
  NOT_RECORDED,
  readSessionFile,
  toAgentTool,
} from "./test-exports.js";
import { bundleChild } from "./test-support/bundle-child.js";

const here = dirname(fileURLToPath(import.meta.url));

const root = mkdtempSync(join(tmpdir(), "agent-r95a-"));
let server: TestServer;

beforeAll(async () => {
  server = await startServer({ replies: () => ({ content: "Done." }), personality: "llamacpp" });
});

afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

/**
 * Writes the lines a runner killed with SIGKILL mid-step leaves (as captured from a real kill): the
 * prompt, the step's calls (`[id, name, arguments]`), and the results that were written.
 */
function killedMidStep(id: string, calls: [string, string, string][], results: [string, string][]): string {
  const file = join(root, `${id}.jsonl`);
  const message = (m: object) => ({ type: "message", message: m });
  const records = [
    { type: "session", version: 1, id, createdAt: "2026-12-07T02:25:39.225Z" },
    message({ role: "user", content: "do the task" }),
    message({
      role: "assistant",
      content: null,
      tool_calls: calls.map(([callId, name, args]) => ({
        id: callId,
        type: "function",
        function: { name, arguments: args },
      })),
    }),
    ...results.map(([callId, content]) => message({ role: "tool", tool_call_id: callId, content })),
  ];
  writeFileSync(file, records.map((r) => `${JSON.stringify(r)}\n`).join(""));
  return file;
}

const noop = (name: string, ran: string[]) =>
  defineTool({
    name,
    description: name,
    parameters: { type: "object", properties: {} },
    execute: () => {
      ran.push(name);
      return "ran";
    },
  });

describe("reopening a session whose host was killed mid-step", () => {
  it("names the unanswered call's tool and arguments in the notice the user reads, not only its id", async () => {
    const id = "killed";
    killedMidStep(
      id,
      [
        ["vizQjjqWIHdboXr4YDOVpw93rzK0Yvbl", "write_file", '{"path":"out.txt","content":"hi"}'],
        ["zhTJ8ACWf2e7IQFtCsjSDtVaVKHjcjQu", "run_command", '{"command":"deploy --prod"}'],
      ],
      [["vizQjjqWIHdboXr4YDOVpw93rzK0Yvbl", "wrote 2 chars"]],
    );
    const ran: string[] = [];
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "tiny" },
      tools: [noop("write_file", ran), noop("run_command", ran)],
      sessionDir: root,
      sessionId: id,
    });
    const notices = session
      .getSnapshot()
      .timeline.flatMap((e) =>
        e.type === "notice" && e.text.includes("middle of a tool step") ? [e.text] : [],
      );
    expect(notices).toHaveLength(1);
    const notice = notices[0] as string;
    expect(notice).toContain('run_command {"command":"deploy --prod"}');
    // The id is still there, for a host that matches it against its own records.
    expect(notice).toContain('"zhTJ8ACWf2e7IQFtCsjSDtVaVKHjcjQu"');
    // The call that finished is not named as unrecorded.
    expect(notice).not.toContain("write_file");

    // Resuming asks the model, every call answered, and re-runs nothing.
    const resumed = await session.agent.continue();
    expect(resumed.status).toBe("ok");
    expect(ran).toEqual([]);
    const sent = (
      (server.chatRequests.at(-1) as { body: unknown }).body as {
        messages: { role: string; content: unknown }[];
      }
    ).messages;
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool"]);
    expect(sent[3]?.content).toBe(NOT_RECORDED);
    await session.close();
  });

  it("says the same through readSessionFile, with a long argument text cut short", () => {
    const args = JSON.stringify({ command: `echo ${"x".repeat(500)}` });
    const file = killedMidStep("long", [["c_long", "run_command", args]], []);
    const notice = readSessionFile(file).notices.find((n) => n.includes("middle of a tool step")) as string;
    expect(notice).toContain('run_command {"command":"echo xxx');
    expect(notice).toContain("…");
    expect(notice).toContain('"c_long"');
    expect(notice.length).toBeLessThan(400);
  });
});

describe("reopening a session whose host was killed while the model's next turn was awaited", () => {
  it("tells the user the task stopped after a tool step, and resuming re-runs no tool", async () => {
    const id = "killed-between-steps";
    const file = join(root, `${id}.jsonl`);
    const log = join(root, `${id}.log`);
    writeFileSync(log, "");
    // The prompt asks for `pay`; the request after its result is answered with headers, then nothing.
    const model = await startServer({
      replies: (request) => {
        const messages = (request.body as { messages: { role: string }[] }).messages;
        return messages.at(-1)?.role === "user"
          ? { toolCalls: [{ id: "c_pay", name: "pay", arguments: '{"invoice":9}' }] }
          : { content: "Paid.", silentAfterChunk: 0 };
      },
    });
    const child = await bundleChild(join(here, "test-support/step-child.ts"));
    const proc = spawn(process.execPath, [child.file, root, id, model.baseUrl, log], {
      cwd: join(here, ".."),
      stdio: ["ignore", "ignore", "inherit"],
    });
    const exited = new Promise((resolve) => proc.once("exit", resolve));
    try {
      // Killed once the model was asked for its next turn: pay's result is then in the file.
      for (let i = 0; i < 2000 && model.chatRequests.length < 2; i++)
        await new Promise((r) => setTimeout(r, 10));
    } finally {
      proc.kill("SIGKILL");
      await exited;
      await child.remove();
    }
    expect(model.chatRequests).toHaveLength(2);
    expect(existsSync(file)).toBe(true);
    expect(readFileSync(file, "utf8")).toContain("Paid invoice 9.");

    const ran: string[] = [];
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "tiny" },
      tools: [noop("pay", ran)],
      sessionDir: root,
      sessionId: id,
    });
    const notices = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    // Before, the only notice was the stale lock's takeover: nothing said the task had not finished.
    expect(notices.some((n) => /ends in tool results the model has not answered/.test(n))).toBe(true);
    const resumed = await session.agent.continue();
    expect(resumed.status).toBe("ok");
    expect(ran).toEqual([]);
    expect(readFileSync(log, "utf8")).toBe("paid invoice 9\n");
    await session.close();
    await model.close();
    // Answered now: the next open has nothing to say of it.
    expect(readSessionFile(file).notices).toEqual([]);
  }, 60_000);
});

describe("a task runner's progress lines", () => {
  it("tool_end names the call's tool, so a parallel step's ends can be shown without a map of ids", async () => {
    const model = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "c_slow", name: "slow_tool", arguments: "{}" },
            { id: "c_fast", name: "fast_tool", arguments: "{}" },
          ],
        },
        { content: "Both ran." },
      ],
    });
    const tool = (name: string, ms: number) =>
      defineTool({
        name,
        description: name,
        parameters: { type: "object", properties: {} },
        execute: async () => {
          await new Promise((resolve) => setTimeout(resolve, ms));
          return `${name} done`;
        },
      });
    const session = await createSession({
      config: { baseUrl: model.baseUrl, model: "sim" },
      tools: [tool("slow_tool", 200), tool("fast_tool", 0)],
    });
    const ends: { id: string; name: string }[] = [];
    session.onEvent((e) => {
      if (e.type === "tool_end") ends.push({ id: e.id, name: e.name });
    });
    expect((await session.prompt("Run both.")).status).toBe("ok");
    expect(ends).toEqual([
      { id: "c_fast", name: "fast_tool" },
      { id: "c_slow", name: "slow_tool" },
    ]);
    await session.close();
    await model.close();
  });
});

describe("stopping a task runner (the README's recipes)", () => {
  it("abort() between runs is not kept; abort() right after prompt() ends that prompt with nothing sent", async () => {
    const model = await startServer({ replies: () => ({ content: "answered" }) });
    const session = await createSession({ config: { baseUrl: model.baseUrl, model: "sim" } });
    session.abort();
    expect((await session.prompt("first")).status).toBe("ok");
    expect(model.chatRequests).toHaveLength(1);
    const done = session.prompt("second");
    session.abort();
    const stopped = await done;
    expect(stopped.status).toBe("aborted");
    expect(model.chatRequests).toHaveLength(1);
    expect(session.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    await session.close();
    await model.close();
  });

  it("a stop during a two-call step answers both calls as stopped, or with toolExecution sequential the second as not run", async () => {
    const answers: Record<string, unknown[]> = {};
    for (const toolExecution of ["parallel", "sequential"] as const) {
      const model = await startServer({
        replies: [
          {
            toolCalls: [
              { id: "c1", name: "wait_a", arguments: "{}" },
              { id: "c2", name: "wait_b", arguments: "{}" },
            ],
          },
        ],
      });
      let started = 0;
      const waiting = (name: string) =>
        defineTool({
          name,
          description: name,
          parameters: { type: "object", properties: {} },
          execute: (_args, { signal }) =>
            new Promise<string>((_resolve, reject) => {
              started++;
              signal?.addEventListener("abort", () => reject(signal.reason));
            }),
        });
      const agent = new Agent({
        config: { baseUrl: model.baseUrl, model: "sim" },
        tools: [waiting("wait_a"), waiting("wait_b")],
        toolExecution,
      });
      agent.subscribe((event) => {
        if (event.type === "tool_execution_start" && event.toolCallId === "c1")
          setTimeout(() => agent.abort(), 50);
      });
      const result = await agent.prompt("go");
      expect(result.status).toBe("aborted");
      answers[toolExecution] = [
        started,
        ...result.messages.filter((m) => m.role === "tool").map((m) => m.content),
      ];
      await model.close();
    }
    expect(answers).toEqual({
      parallel: [2, "Stopped before this call finished.", "Stopped before this call finished."],
      sequential: [1, "Stopped before this call finished.", "Not run: the run stopped first."],
    });
  });
});

describe("a @loopwright/tools tool handed to an agent without toAgentTool", () => {
  // What a JavaScript host writes, or one that silenced the compiler: before, it was taken — declared
  // with no parameters, its execute run on the model's unchecked arguments and given no id.
  const weather = defineTypedTool({
    name: "weather",
    description: "The weather for a city",
    input: z.object({ city: z.string() }),
    execute: ({ city }) => `${city}: sunny`,
  });
  const raw = weather as unknown as AgentTool;
  const config = { baseUrl: "http://127.0.0.1:9/v1", model: "sim" };

  it("is refused by new Agent and createSession, naming toAgentTool; the adapted tool is taken", async () => {
    const refusals: unknown[] = [];
    for (const make of [
      () => new Agent({ config, tools: [raw] }),
      () => createSession({ config, tools: [raw] }),
    ]) {
      try {
        await make();
        refusals.push("taken");
      } catch (error) {
        refusals.push(AgentError.isInstance(error) ? [error.code, /toAgentTool/.test(error.message)] : error);
      }
    }
    expect(refusals).toEqual([
      ["invalid-input", true],
      ["invalid-input", true],
    ]);
    const agent = new Agent({ config, tools: [weather].map(toAgentTool) });
    expect(agent.tools.list().map((t) => t.name)).toEqual(["weather"]);
  });
});
