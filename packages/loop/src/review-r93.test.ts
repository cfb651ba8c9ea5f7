/**
 * An overflow that says what takes the room. Before r93 a run whose tool definitions alone nearly
 * filled the window ended in `AgentLoopOverflow` advising to "prune tool results" — of which it had
 * none — after folding a transcript that was never the bulk. Now the message says how the room went
 * (tool definitions, transcript, reply's reserve, by the loop's estimate), `breakdown` holds the
 * same, and the advice fits the largest share. Over HTTP against the testkit: llama.cpp's own
 * refusal, the loop's size guard, and a compacting run whose folded request is refused too.
 */
import { SUMMARISER_SYSTEM } from "@loopwright/side-task";
import { type Reply, readFixtureJson, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopOverflow, type ChatMessage, createRuntime, type ToolDefinition } from "./index.js";

let server: TestServer | undefined;
afterEach(() => server?.close());

/** Twelve tools with long descriptions: some 17,000 characters of definitions. */
const TOOLS: ToolDefinition[] = Array.from({ length: 12 }, (_, i) => ({
  type: "function",
  function: {
    name: `tool_${i}`,
    description: "Does one careful thing with the workspace and says what it did. ".repeat(22),
    parameters: { type: "object", properties: { path: { type: "string" } } },
  },
}));

const TOOL_ADVICE = /offer fewer tools.*toolDiscovery "ondemand" or "proxy".*raise the window/;

async function overflowOf(run: Promise<unknown>): Promise<AgentLoopOverflow> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(AgentLoopOverflow.isInstance(error)).toBe(true);
  return error as AgentLoopOverflow;
}

describe("AgentLoopOverflow says what takes the room", () => {
  it("names the tool definitions, not tool results, when llama.cpp refuses a request they fill", async () => {
    server = await startServer({
      personality: { name: "llamacpp", nCtx: 4096 },
      replies: [{ content: "never" }],
    });
    const error = await overflowOf(
      createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "tiny" },
        messages: [{ role: "user", content: "Tidy the workspace." }],
        tools: TOOLS,
        dispatch: () => "done",
      }),
    );
    expect(error.message).toMatch(/exceeds the available context size \(4096 tokens\)/);
    expect(error.message).toMatch(/Of the 4096-token window, the tool definitions take about \d+ tokens/);
    expect(error.message).toMatch(TOOL_ADVICE);
    expect(error.message).not.toMatch(/prune/);
    const b = error.breakdown;
    expect(b?.window).toBe(4096);
    // The definitions are the bulk by far: a hundred times the one-line transcript.
    expect(b && b.tools > 100 * b.transcript).toBe(true);
  });

  it("says the same when the size guard stops the request before it is sent", async () => {
    server = await startServer({ replies: [{ content: "never" }] });
    const error = await overflowOf(
      createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "tiny", contextLength: 4096, maxTokens: 256 },
        messages: [{ role: "user", content: "Tidy the workspace." }],
        tools: TOOLS,
        dispatch: () => "done",
      }),
    );
    expect(server.chatRequests).toHaveLength(0);
    expect(error.message).toMatch(/the request needs about \d+ tokens/);
    expect(error.message).toMatch(/the reply's reserve 256/);
    expect(error.message).toMatch(TOOL_ADVICE);
    expect(error.message).not.toMatch(/prune/);
    expect(error.breakdown).toMatchObject({ window: 4096, reply: 256 });
  });

  it("after a fold that could not help, advises on the tools, with the fold told", async () => {
    const refused = readFixtureJson("errors/llamacpp/exceed-context-size-new-format-8708-of-8192.json");
    const history: ChatMessage[] = [];
    for (const n of [1, 2, 3]) {
      history.push(
        { role: "user", content: `Look at folder ${n}.` },
        { role: "assistant", content: "lorem ".repeat(60) },
      );
    }
    history.push({ role: "user", content: "Tidy the workspace." });
    server = await startServer({
      replies: (request: { body: unknown }): Reply => {
        const messages = (request.body as { messages?: ChatMessage[] }).messages ?? [];
        if (messages[0]?.content === SUMMARISER_SYSTEM) return { content: "Notes: three folders looked at." };
        return { type: "error", status: 400, body: refused };
      },
    });
    const error = await overflowOf(
      createRuntime().runAgentLoop({
        config: {
          baseUrl: server.baseUrl,
          model: "sim",
          contextLength: 8192,
          compact: true,
          tasks: { compaction: { model: "notes-model" } },
        },
        messages: history,
        tools: TOOLS,
        dispatch: () => "done",
      }),
    );
    expect(error.message).toMatch(/folded the transcript once and sent it again/);
    expect(error.message).toMatch(/the tool definitions take about \d+ tokens/);
    expect(error.message).toMatch(TOOL_ADVICE);
    expect(error.message).not.toMatch(/prune/);
    // The advice comes last, after what the loop tried.
    expect(error.message.endsWith("raise the window, then send again.")).toBe(true);
  });

  it("keeps the transcript advice where the transcript is the bulk", async () => {
    server = await startServer({
      personality: { name: "llamacpp", nCtx: 512 },
      replies: [{ content: "never" }],
    });
    const error = await overflowOf(
      createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "tiny" },
        messages: [{ role: "user", content: "word ".repeat(2000) }],
        tools: TOOLS.slice(0, 1),
        dispatch: () => "done",
      }),
    );
    expect(error.message).toMatch(
      /Shorten the transcript \(prune tool results or compact it\) or raise the window/,
    );
    expect(error.message).not.toMatch(/toolDiscovery/);
    const b = error.breakdown;
    expect(b && b.transcript > b.tools).toBe(true);
  });
});
