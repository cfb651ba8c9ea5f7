import { SUMMARY_LEAD } from "@loopwright/ledger";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, LoopOptionError, runAgentLoop } from "./index.js";

// Review r89: a host's note for one request only (a session's "[notice] 1 tool turn(s) left"),
// appended by beforeStep as a user message the host never stores, was where compact's fold cut:
// the question went into the summary, the model was sent [summary, note], and the host, which
// keeps its own messages behind the summary and not the note, was left with a transcript that
// opened on the model's answer — refused by every alternating chat template. A plan's requestOnly
// says how many messages at the end are such notes; the fold is planned over the messages before them.

const PAGE: ToolDefinition = {
  type: "function",
  function: {
    name: "page",
    description: "A page of the given length",
    parameters: { type: "object", properties: { n: { type: "number" } } },
  },
};
const NOTE = "[notice] 1 tool turn(s) left for this request; plan to finish.";
const SUMMARY = "Summary: the user asked for pages.";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Body = { messages: ChatMessage[]; stream?: boolean };
const text = (m: ChatMessage | undefined) => (typeof m?.content === "string" ? m.content : "");

async function scripted(turns: Reply[]): Promise<TestServer> {
  let next = 0;
  server = await startServer({
    replies: (request) =>
      (request.body as Body).stream === true ? (turns[next++] ?? { content: "Done." }) : { content: SUMMARY },
  });
  return server;
}

const call = (id: string, n: number): Reply => ({
  toolCalls: [{ id, name: "page", arguments: JSON.stringify({ n }) }],
});

/** A run whose third step's request carries the host's note, and is the first past three quarters of the window. */
async function run(requestOnly: boolean) {
  const srv = await scripted([call("c2", 6000), call("c3", 6000), { content: "Answer 2." }]);
  const notes = new Set<ChatMessage>();
  const result = await runAgentLoop({
    config: {
      baseUrl: srv.baseUrl,
      model: "sim",
      maxRetries: 0,
      contextLength: 4000,
      compact: true,
      tasks: { compaction: { model: "sim" } },
    },
    messages: [
      { role: "user", content: "Question 1." },
      { role: "assistant", content: `Answer 1: ${"a".repeat(6000)}` },
      { role: "user", content: "Question 2." },
    ],
    tools: [PAGE],
    dispatch: ({ args }) => "p".repeat(Number(args.n)),
    beforeStep: (messages, step) => {
      const kept = messages.filter((m) => !notes.has(m));
      if (step < 3) return { messages: kept };
      const note: ChatMessage = { role: "user", content: NOTE };
      notes.add(note);
      return { messages: [...kept, note], ...(requestOnly ? { requestOnly: 1 } : {}) };
    },
  });
  return { result, bodies: srv.chatRequests.map((r) => r.body as Body) };
}

describe("compact and a step's requestOnly messages", () => {
  it("plans the fold over the messages before them: never cut at the note, never summarised, the question kept", async () => {
    const { result, bodies } = await run(true);
    const summaries = bodies.filter((b) => b.stream !== true);
    expect(summaries).toHaveLength(1);
    expect(JSON.stringify(summaries[0]?.messages)).not.toContain("tool turn(s) left");
    const noted = bodies.filter((b) => b.stream === true && text(b.messages.at(-1)) === NOTE);
    expect(noted).toHaveLength(1);
    const sent = (noted[0] as Body).messages;
    expect(text(sent[0]).startsWith(SUMMARY_LEAD)).toBe(true);
    // The question is asked with the note (before: [summary, note], the question summarised).
    expect(sent.map(text)).toContain("Question 2.");
    expect(text(result.messages.at(-1))).toBe("Answer 2.");
  });

  it("without it, the note is a user message like any other (what a host that stores its notes wants)", async () => {
    const { bodies } = await run(false);
    const noted = bodies.filter((b) => b.stream === true && text(b.messages.at(-1)) === NOTE);
    expect((noted[0] as Body).messages.map(text)).not.toContain("Question 2.");
  });

  it.each([
    [-1, "a whole number"],
    [1.5, "a whole number"],
    ["1", "a whole number"],
    [9, "holds 3 message(s)"],
  ])("refuses requestOnly %j before anything is sent", async (requestOnly, said) => {
    const srv = await scripted([{ content: "Never." }]);
    const error = await runAgentLoop({
      config: { baseUrl: srv.baseUrl, model: "sim", maxRetries: 0 },
      messages: [
        { role: "user", content: "Hi." },
        { role: "assistant", content: "Hello." },
        { role: "user", content: "Again." },
      ],
      dispatch: () => "",
      beforeStep: () => ({ requestOnly }) as never,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentLoopError);
    const cause = (error as AgentLoopError).cause;
    expect(cause).toBeInstanceOf(LoopOptionError);
    expect((cause as LoopOptionError).option).toBe("beforeStep");
    expect((cause as Error).message).toContain(said);
    expect(srv.chatRequests).toHaveLength(0);
  });
});
