import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentError, type AgentTool, type ChatMessageLike, createSession } from "./test-exports.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function sent(s: TestServer, index: number): ChatMessageLike[] {
  return (s.chatRequests[index]!.body as { messages: ChatMessageLike[] }).messages;
}

/** The tool message that answers `id` in the request at `index`. */
function answerIn(s: TestServer, index: number, id: string): string {
  const message = sent(s, index).find((m) => m.role === "tool" && m.tool_call_id === id);
  return String(message?.content);
}

const QUESTIONS = JSON.stringify({
  questions: [
    { header: "Deploy", question: "Which environment?", options: [{ label: "prod" }, { label: "staging" }] },
    { question: "Notify on?", options: [{ label: "email" }, { label: "slack" }], multiSelect: true },
  ],
});

/** What `run` throws, or `undefined`. */
function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("an AskUser question waits for the person, not for the tool timeout", () => {
  it("takes an answer given after toolTimeoutSeconds, while another tool of the session is still stopped at it", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "a1", name: "AskUser", arguments: QUESTIONS }] },
        { toolCalls: [{ id: "s1", name: "slow", arguments: "{}" }] },
        { content: "Deploying to prod." },
      ],
    });
    let slowSignal: AbortSignal | undefined;
    const slow: AgentTool = {
      name: "slow",
      description: "Takes its time.",
      parameters: { type: "object", properties: {} },
      execute: async (_args, { signal }) => {
        slowSignal = signal;
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        return "finished";
      },
    };
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", toolTimeoutSeconds: 1 },
      builtInTools: { askUser: true },
      tools: [slow],
    });
    session.onEvent((e) => {
      if (e.type === "question") setTimeout(() => session.submitAnswer(e.id, ["prod", ["slack"]]), 1_500);
    });
    const result = await session.prompt("Deploy it");
    expect(result).toEqual({ status: "ok", reply: "Deploying to prod." });
    expect(JSON.parse(answerIn(server, 1, "a1"))).toEqual({
      "Which environment?": "prod",
      "Notify on?": ["slack"],
    });
    const question = session.getSnapshot().timeline.find((e) => e.type === "question");
    expect(question).toMatchObject({ questions: [{ answer: "prod" }, { answer: ["slack"] }] });
    // Any other tool is still stopped at the session's toolTimeoutSeconds, its signal aborted.
    expect(answerIn(server, 2, "s1")).toBe(
      "Error: the slow tool did not finish within 1 s (toolTimeoutSeconds) and was stopped. Try it again with less to do, or do without it.",
    );
    expect(slowSignal?.aborted).toBe(true);
    expect((slowSignal?.reason as Error | undefined)?.name).toBe("TimeoutError");
  });

  it("runs a sequential tool's calls one after another, as a bare Agent does", async () => {
    const call = (n: number) => ({ id: `c${n}`, name: "step", arguments: JSON.stringify({ n }) });
    server = await startServer({ replies: [{ toolCalls: [call(1), call(2)] }, { content: "done" }] });
    const log: string[] = [];
    const step: AgentTool = {
      name: "step",
      description: "One step at a time.",
      parameters: { type: "object", properties: { n: { type: "number" } } },
      executionMode: "sequential",
      execute: async (args) => {
        log.push(`start ${String(args.n)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
        log.push(`end ${String(args.n)}`);
        return "ok";
      },
    };
    const session = await createSession({ config: { baseUrl: server.baseUrl, model: "sim" }, tools: [step] });
    expect((await session.prompt("go")).status).toBe("ok");
    expect(log).toEqual(["start 1", "end 1", "start 2", "end 2"]);
  });
});

describe("submitAnswer takes only an answer the question offered", () => {
  it("refuses another value, naming the question, and keeps the group waiting for a good answer", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "a1", name: "AskUser", arguments: QUESTIONS }] }, { content: "ok" }],
    });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      builtInTools: { askUser: true },
    });
    const refusals: string[] = [];
    session.onEvent((e) => {
      if (e.type !== "question") return;
      for (const answers of [
        [{ evil: true, n: 42 }, ""],
        ["production", ""],
        [["prod"], ""],
        ["", ["email", "fax"]],
        ["", ["email", "email"]],
        ["", [42]],
        [null, ""],
      ]) {
        const error = thrownBy(() => session.submitAnswer(e.id, answers as never));
        expect(AgentError.isInstance(error), JSON.stringify(answers)).toBe(true);
        expect((error as AgentError).code).toBe("invalid-input");
        refusals.push((error as Error).message);
      }
      expect(session.pendingQuestion?.id).toBe(e.id);
      session.submitAnswer(e.id, ["staging", []]);
    });
    expect((await session.prompt("Deploy it")).status).toBe("ok");
    expect(refusals[0]).toMatch(/answers\[0\] \("Which environment\?"\).*"prod", "staging".*an object/);
    expect(refusals[1]).toMatch(/answers\[0\].*"production"/);
    expect(refusals[2]).toMatch(/answers\[0\].*a list, but the question is not multi-select/);
    expect(refusals[3]).toMatch(/answers\[1\] \("Notify on\?"\).*"fax"/);
    expect(refusals[4]).toMatch(/answers\[1\].*"email" twice/);
    expect(refusals[5]).toMatch(/answers\[1\].*a number/);
    expect(refusals[6]).toMatch(/answers\[0\].*null/);
    expect(JSON.parse(answerIn(server, 1, "a1"))).toEqual({
      "Which environment?": "staging",
      "Notify on?": [],
    });
  });

  it("takes one label alone for a multi-select question, and keeps what was sent from the host's later changes", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "a1", name: "AskUser", arguments: QUESTIONS }] },
        { toolCalls: [{ id: "a2", name: "AskUser", arguments: QUESTIONS }] },
        { content: "ok" },
      ],
    });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      builtInTools: { askUser: true },
    });
    session.onEvent((e) => {
      if (e.type !== "question") return;
      if (e.id === "q1") {
        const list = ["email"];
        session.submitAnswer(e.id, ["prod", list]);
        list.push("fax");
      } else {
        session.submitAnswer(e.id, ["staging", "slack"]);
      }
    });
    expect((await session.prompt("Deploy it")).status).toBe("ok");
    expect(JSON.parse(answerIn(server, 2, "a1"))).toEqual({
      "Which environment?": "prod",
      "Notify on?": ["email"],
    });
    expect(JSON.parse(answerIn(server, 2, "a2"))).toEqual({
      "Which environment?": "staging",
      "Notify on?": "slack",
    });
    const first = session.getSnapshot().timeline.find((e) => e.type === "question" && e.id === "q1");
    expect(first).toMatchObject({ questions: [{ answer: "prod" }, { answer: ["email"] }] });
  });
});

describe("AskUser's questions each have their own text", () => {
  it("refuses a group that asks the same question twice: the model reads why, and no answer is lost", async () => {
    const twice = JSON.stringify({
      questions: [
        { header: "Frontend", question: "Which framework?", options: ["React", "Vue"] },
        { header: "Backend", question: " Which framework? ", options: ["Express", "Fastify"] },
      ],
    });
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "a1", name: "AskUser", arguments: twice }] },
        { content: "I will ask again." },
      ],
    });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      builtInTools: { askUser: true },
    });
    let asked = 0;
    session.onEvent((e) => {
      if (e.type === "question") asked++;
    });
    expect((await session.prompt("Set up the app")).status).toBe("ok");
    expect(asked).toBe(0);
    expect(answerIn(server, 1, "a1")).toMatch(
      /^Error: questions\[1\]\.question repeats questions\[0\]'s text \("Which framework\?"\)/,
    );
  });
});
