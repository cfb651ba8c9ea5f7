import type { RunEvent } from "@loopwright/events";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ReadMessage as Read } from "../test/read-message.js";
import type { BeforeStepContext } from "./agent-loop.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, failedRun } from "./errors.js";
import { createRuntime } from "./index.js";

const TOOLS: ToolDefinition[] = [
  {
    type: "function",
    function: { name: "read", parameters: { type: "object", properties: { n: { type: "number" } } } },
  },
];
const question: ChatMessage[] = [{ role: "user", content: "Read two pages, then summarise." }];
const call = (id: string, n: number) => ({ toolCalls: [{ id, name: "read", arguments: `{"n":${n}}` }] });

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("beforeStep", () => {
  it("is told the last reported prompt, the window and the ledger, and may prune the transcript mid-run", async () => {
    server = await startServer({
      prefixCache: true,
      replies: [call("r1", 1), call("r2", 2), { content: "Summary." }],
    });
    const told: Array<{ step: number; context: BeforeStepContext; length: number }> = [];
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", contextLength: 100_000 },
      messages: question,
      tools: TOOLS,
      dispatch: ({ args }) => `page ${args.n}: ${"lorem ipsum ".repeat(300)}`,
      onEvent: (e) => events.push(e),
      beforeStep: (messages, step, context) => {
        told.push({ step, context, length: messages.length });
        if (step !== 3) return undefined;
        // Clear the first page's text, keeping the call answered.
        return messages.map((m) =>
          m.role === "tool" && m.tool_call_id === "r1" ? { ...m, content: "[cleared]" } : m,
        );
      },
    });
    expect(told.map((t) => [t.step, t.length])).toEqual([
      [1, 1],
      [2, 3],
      [3, 5],
    ]);
    expect(told[0]?.context.used).toBeUndefined();
    // What the first request's prompt was reported as (the testkit counts it exactly).
    expect(told[1]?.context.used).toBe(told[2]?.context.ledger[0]?.prompt);
    expect(told[1]?.context.used).toBeGreaterThan(0);
    expect(told[2]?.context.limit).toBe(100_000);
    expect(told[2]?.context.ledger).toHaveLength(2);

    const third = server.chatRequests[2]!.body as { messages: Read[] };
    expect(third.messages.find((m) => m.tool_call_id === "r1")?.content).toBe("[cleared]");
    expect((result.messages as Read[]).find((m) => m.tool_call_id === "r1")?.content).toBe("[cleared]");
    // The rewrite broke the cache from the first page on, and the loop says why.
    const last = events.filter((e) => e.kind === "usage").at(-1) as Extract<RunEvent, { kind: "usage" }>;
    expect(last.turn).toMatchObject({ cacheBroken: true, cacheBreakReason: "history-rewritten" });
    // The request after the rewrite starts a new epoch: no difference is taken across the change.
    const epochs = result.ledger.map((e) => e.epoch);
    expect(epochs[2]).not.toBe(epochs[1]);
  });

  it("takes no difference across a rewrite made at a step whose prompt the server did not report", async () => {
    server = await startServer({
      prefixCache: true,
      // The fourth step's request is the one after the rewrite, and its usage never comes back.
      replies: [
        call("r1", 1),
        call("r2", 2),
        call("r3", 3),
        { ...call("r4", 4), usage: false },
        { content: "Done." },
      ],
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim", contextLength: 100_000 },
      messages: question,
      tools: TOOLS,
      // The first page is short and later pages long, so the prompt still grows across the prune.
      dispatch: ({ args }) => `page ${args.n}: ${"lorem ipsum ".repeat(args.n === 1 ? 60 : 300)}`,
      beforeStep: (messages, step) =>
        step === 4
          ? messages.map((m) =>
              m.role === "tool" && m.tool_call_id === "r1" ? { ...m, content: "[cleared]" } : m,
            )
          : undefined,
    });
    const requests = server.chatRequests.map((r) => (r.body as { messages: Read[] }).messages);
    expect(requests[3]?.find((m) => m.tool_call_id === "r1")?.content).toBe("[cleared]");
    // Steps 1, 2, 3 and 5 reported; step 2's entry went with the page the prune rewrote.
    const [, third, fifth] = result.ledger;
    expect(result.ledger.map((e) => e.through)).toEqual([0, 4, 8]);
    expect(fifth!.prompt).toBeGreaterThan(third!.prompt);
    // The fifth request only appended to the unreported fourth, but not to the third: its prompt
    // less the third's is the new pages less what the prune cleared, so it must not be a measurement.
    expect(fifth!.epoch).not.toBe(third!.epoch);
  });

  it("refuses a replacement that leaves a tool call unanswered, naming it, with the run as it was", async () => {
    server = await startServer({ replies: [call("r1", 1), { content: "never" }] });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: question,
        tools: TOOLS,
        dispatch: () => "page",
        beforeStep: (messages, step) => (step === 2 ? messages.filter((m) => m.role !== "tool") : undefined),
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/tool calls no tool message answers right after them \(r1\)/);
    expect(failedRun(error)?.messages).toHaveLength(3);
    expect(server.chatRequests).toHaveLength(1);
  });

  it("refuses a replacement holding a message that is not a chat message, naming its index, with nothing sent for it", async () => {
    server = await startServer({ replies: [call("r1", 1), { content: "never" }] });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: question,
        tools: TOOLS,
        dispatch: () => "page",
        // A host's prune that wrote a row back in its own shape, and one that left a hole.
        beforeStep: (messages, step) =>
          step === 2 ? ([...messages, { role: "user", content: 42 }, null] as never) : undefined,
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /^beforeStep returned a transcript in which messages\[3\] .*; messages\[4\] is null/,
    );
    expect(failedRun(error)?.messages).toHaveLength(3);
    expect(server.chatRequests).toHaveLength(1);
  });
});
