// compact: true in the loop, from a resolved agent spec (limits.compact, model.contextLength,
// tasks.compaction), over HTTP to the testkit: the summary is a side-task request to the same server.
import type { RunEvent } from "@loopwright/events";
import type { HookRunner } from "@loopwright/hooks";
import { SUMMARY_LEAD } from "@loopwright/ledger";
import { SUMMARISER_SYSTEM } from "@loopwright/side-task";
import { parseSpec, type ResolvedAgentConfig, resolveAgentSpec, SPEC_TOKEN } from "@loopwright/spec";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  AgentLoopError,
  type ChatMessage,
  createRuntime,
  failedRun,
  LoopOptionError,
  type ToolDefinition,
} from "../src/index.js";
import { unanswered } from "../src/test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const READ: ToolDefinition = {
  type: "function",
  function: {
    name: "read_page",
    description: "Read one page of the report",
    parameters: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
  },
};

const NOTES = "Notes: the user is reviewing a report; chapters one to three were discussed.";

/** Three earlier exchanges with long answers, then the question this run answers. */
function history(): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (const chapter of ["one", "two", "three"]) {
    messages.push(
      { role: "user", content: `Summarise chapter ${chapter}.` },
      { role: "assistant", content: `Chapter ${chapter}: ${"lorem ".repeat(150).trim()}` },
    );
  }
  messages.push({ role: "user", content: "Read pages 1 to 4 and add them up." });
  return messages;
}

/** Whether a request is the summariser's side task. */
function isSummary(body: unknown): boolean {
  const messages = (body as { messages?: ChatMessage[] } | undefined)?.messages ?? [];
  return messages[0]?.content === SUMMARISER_SYSTEM;
}

/** The main model reads `pages` pages, one per step, then answers; the summariser answers `summary`. */
function script(summary: () => Reply, pages = 4): (request: { body: unknown }) => Reply {
  let step = 0;
  return (request) => {
    if (isSummary(request.body)) return summary();
    step++;
    if (step <= pages)
      return { toolCalls: [{ id: `p${step}`, name: "read_page", arguments: `{"n":${step}}` }] };
    return { content: `The ${pages} pages add up to ${(pages * (pages + 1)) / 2}.` };
  };
}

function resolved(baseUrl: string): ResolvedAgentConfig {
  const { spec, errors } = parseSpec({
    spec: SPEC_TOKEN,
    model: { name: "sim", endpoint: { baseUrl }, contextLength: 1600 },
    limits: { compact: true },
    tasks: { compaction: { model: "notes-model" } },
  });
  if (!spec) throw new Error(errors.join("\n"));
  return resolveAgentSpec([spec]);
}

const page = ({ args }: { args: Record<string, unknown> }) => `page ${args.n}: ${"ipsum ".repeat(70).trim()}`;

function notices(events: RunEvent[]): string[] {
  return events.filter((e) => e.kind === "notice").map((e) => (e as { text: string }).text);
}

function mainRequests(): ChatMessage[][] {
  return (server?.chatRequests ?? [])
    .filter((r) => !isSummary(r.body))
    .map((r) => (r.body as { messages: ChatMessage[] }).messages);
}

describe("compact: true", () => {
  it("folds the oldest stretch once the window fills, and the long run goes on to finish", async () => {
    server = await startServer({ replies: script(() => ({ content: NOTES })) });
    const events: RunEvent[] = [];
    const given = history();
    const result = await createRuntime().runAgentLoop({
      config: resolved(server.baseUrl),
      system: "You read reports.",
      messages: given,
      tools: [READ],
      dispatch: page,
      onEvent: (e) => events.push(e),
    });
    expect(result.turn.content).toBe("The 4 pages add up to 10.");
    // One summary, written by the compaction task's model, of the earlier exchanges.
    const summaries = server.chatRequests.filter((r) => isSummary(r.body));
    expect(summaries).toHaveLength(1);
    expect((summaries[0]?.body as { model?: string } | undefined)?.model).toBe("notes-model");
    expect(JSON.stringify(summaries[0]?.body)).toContain("Chapter one:");
    // The returned transcript is the fold: the summary, then the last exchange, the question and
    // everything the run added. The fold came before the second request: the first reported a prompt
    // under 75 % of the window, and the call and page it added took the second past it.
    expect(result.messages[0]).toEqual({ role: "system", content: `${SUMMARY_LEAD}\n\n${NOTES}` });
    expect(result.messages.slice(1, 4)).toEqual(given.slice(4));
    expect(JSON.stringify(result.messages)).not.toContain("Chapter one:");
    expect(unanswered(result.messages)).toEqual([]);
    expect(result.messages.filter((m) => m.role === "tool")).toHaveLength(4);
    // Requests before the fold carried the history; those after it carry the summary instead.
    const requests = mainRequests();
    expect(JSON.stringify(requests[0])).toContain("Chapter one:");
    const last = requests.at(-1) ?? [];
    // One system message, the summary joined to the system prompt (templates that make roles
    // alternate refuse two in a row).
    expect(last[0]).toEqual({ role: "system", content: `You read reports.\n\n${SUMMARY_LEAD}\n\n${NOTES}` });
    expect(last[1]?.role).toBe("user");
    expect(JSON.stringify(last)).not.toContain("Chapter one:");
    expect(notices(events).some((t) => t.startsWith("Compacted: messages 0 to 3"))).toBe(true);
    // The ledger was moved onto the folded transcript: every entry names a message that is there.
    expect(result.ledger.length).toBeGreaterThan(0);
    for (const entry of result.ledger) expect(entry.through).toBeLessThan(result.messages.length);
    // The caller's messages were not written to.
    expect(given).toEqual(history());
  });

  it("with hooks that let it, folds, and the hooks' context stays on the question across the fold", async () => {
    server = await startServer({ replies: script(() => ({ content: NOTES })) });
    const told: { event: string; from?: number; through?: number }[] = [];
    const run: HookRunner<{ session: { id: string } }> = (event, input) => {
      told.push({ event, ...("through" in input ? { from: input.from, through: input.through } : {}) });
      return event === "beforeTurn" ? [{ id: "memory", context: "The report is due Friday." }] : [];
    };
    const given = history();
    const result = await createRuntime().runAgentLoop({
      config: resolved(server.baseUrl),
      messages: given,
      tools: [READ],
      dispatch: page,
      hooks: { run, context: { session: { id: "s-2" } } },
    });
    expect(result.turn.content).toBe("The 4 pages add up to 10.");
    // The hooks were shown what was going, by index, before the fold was made.
    expect(told.filter((t) => t.event === "beforeCompact")).toEqual([
      { event: "beforeCompact", from: 0, through: 4 },
    ]);
    expect(result.messages[0]?.content).toBe(`${SUMMARY_LEAD}\n\n${NOTES}`);
    // Every request, before the fold and after it, carried the context on the question; the transcript did not.
    expect(mainRequests()).toHaveLength(5);
    for (const messages of mainRequests()) {
      const question = messages.find((m) => String(m.content).endsWith("Read pages 1 to 4 and add them up."));
      expect(question?.content).toContain("The report is due Friday.");
    }
    expect(result.messages.slice(1, 4)).toEqual(given.slice(4));
    expect(result.context).toContain("The report is due Friday.");
  });

  it("leaves the transcript as it was when a beforeCompact hook vetoes, asks once, and finishes", async () => {
    // Two pages: a run that still fits its window unfolded, so a veto costs it nothing.
    server = await startServer({ replies: script(() => ({ content: NOTES }), 2) });
    const asked: string[] = [];
    const run: HookRunner<{ session: { id: string } }> = (event) => {
      asked.push(event);
      return event === "beforeCompact" ? [{ id: "guard", ok: true, veto: true }] : [];
    };
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: resolved(server.baseUrl),
      messages: history(),
      tools: [READ],
      dispatch: page,
      hooks: { run, context: { session: { id: "s-1" } } },
      onEvent: (e) => events.push(e),
    });
    expect(result.turn.content).toBe("The 2 pages add up to 3.");
    expect(asked.filter((e) => e === "beforeCompact")).toHaveLength(1);
    expect(server.chatRequests.filter((r) => isSummary(r.body))).toHaveLength(0);
    expect(result.messages.slice(0, 7)).toEqual(history());
    expect(unanswered(result.messages)).toEqual([]);
    expect(notices(events)).toContain("Hooks: Compaction skipped: guard vetoed it.");
  });

  it("leaves the transcript as it was, with a notice, when the summary fails, and finishes", async () => {
    server = await startServer({
      replies: script(
        () => ({ type: "error", status: 400, body: { error: { message: "model not loaded" } } }),
        2,
      ),
    });
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: resolved(server.baseUrl),
      messages: history(),
      tools: [READ],
      dispatch: page,
      onEvent: (e) => events.push(e),
    });
    expect(result.turn.content).toBe("The 2 pages add up to 3.");
    expect(result.messages.slice(0, 7)).toEqual(history());
    expect(unanswered(result.messages)).toEqual([]);
    const said = notices(events);
    expect(said.some((t) => t.startsWith("The summary could not be written"))).toBe(true);
    expect(said.some((t) => t.startsWith("Compaction failed: no summary came back from notes-model"))).toBe(
      true,
    );
    // Tried once for the run, not once a step.
    expect(said.filter((t) => t.startsWith("Compaction failed"))).toHaveLength(1);
  });

  it("ends the run with the stop, as the stop, when it lands while the summary is written", async () => {
    const stop = new AbortController();
    server = await startServer({
      replies: script(() => {
        setTimeout(() => stop.abort(new Error("stopped by the user")), 20);
        return { content: NOTES, firstByteDelayMs: 2000 };
      }),
    });
    const events: RunEvent[] = [];
    const error = await createRuntime()
      .runAgentLoop({
        config: resolved(server.baseUrl),
        messages: history(),
        tools: [READ],
        dispatch: page,
        signal: stop.signal,
        onEvent: (e) => events.push(e),
      })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe("stopped by the user");
    // A stop is not a failed summary: no notice says compaction failed or is off for the run.
    expect(notices(events).filter((t) => /summary could not be written|Compaction failed/.test(t))).toEqual(
      [],
    );
    // The request the fold was for was never sent; the transcript is whole and unfolded.
    const run = failedRun(error);
    expect(run?.messages.slice(0, 7)).toEqual(history());
    expect(unanswered(run?.messages ?? [])).toEqual([]);
    expect(mainRequests().every((messages) => JSON.stringify(messages).includes("Chapter one:"))).toBe(true);
  });

  it("refuses compact without a window or a compaction model, before anything is sent", async () => {
    server = await startServer({ replies: [{ content: "never sent" }] });
    const base = resolved(server.baseUrl);
    const cases: [Partial<ResolvedAgentConfig>, string][] = [
      [{ contextLength: undefined }, "config.compact"],
      [{ tasks: {} }, "config.tasks.compaction"],
    ];
    for (const [change, option] of cases) {
      const error = await createRuntime()
        .runAgentLoop({ config: { ...base, ...change }, messages: history(), dispatch: () => "" })
        .catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error)).toBe(true);
      const cause = (error as AgentLoopError).cause;
      expect(LoopOptionError.isInstance(cause)).toBe(true);
      expect(cause).toMatchObject({ code: "invalid-option", option });
    }
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("compact: true, with a compaction model whose window is smaller than the run's", () => {
  let small: TestServer | undefined;
  afterEach(async () => {
    await small?.close();
    small = undefined;
  });

  it("is refused once as too big, and the run's later folds start within the window that refusal named", async () => {
    // The summaries go to their own llama.cpp server with a small window; the main model to the other.
    small = await startServer({
      personality: { name: "llamacpp", nCtx: 1100 },
      replies: () => ({ content: NOTES }),
    });
    server = await startServer({ replies: script(() => ({ content: "never asked here" }), 12) });
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: {
        ...resolved(server.baseUrl),
        tasks: { compaction: { model: "notes-model", endpoint: { baseUrl: small.baseUrl } } },
      },
      system: "You read reports.",
      messages: history(),
      tools: [READ],
      dispatch: page,
      // The user adds to the question as the pages come in, so later stretches have a user message to end on.
      beforeStep: (messages, step) =>
        step % 4 === 1 && step > 1
          ? [...messages, { role: "user", content: `Pages so far: ${step - 1}. Go on.` }]
          : undefined,
      onEvent: (e) => events.push(e),
    });
    expect(result.turn.content).toBe("The 12 pages add up to 78.");
    expect(unanswered(result.messages)).toEqual([]);
    const said = notices(events);
    const folds = said.filter((text) => text.startsWith("Compacted:")).length;
    expect(folds).toBeGreaterThanOrEqual(2);
    expect(said.some((text) => text.startsWith("Compaction failed"))).toBe(false);
    // One request per fold, plus the first fold's request the server refused as too big: the later
    // folds were cut to the window that refusal named before they were sent.
    expect(small.chatRequests).toHaveLength(folds + 1);
    expect(said.filter((text) => /1100 tokens/.test(text))).toHaveLength(1);
  });
});

describe("compact: true, sized on the request about to go out", () => {
  // A 4,096-token window with a 1,024-token reply ceiling; about 10,000 characters of history.
  const config = (baseUrl: string) => ({
    baseUrl,
    apiKey: "k",
    model: "sim",
    contextLength: 4096,
    maxTokens: 1024,
    compact: true,
    tasks: { compaction: { model: "notes-model" } },
  });
  const READ_FILE: ToolDefinition = {
    type: "function",
    function: {
      name: "read_file",
      description: "Read a file",
      parameters: { type: "object", properties: { path: { type: "string" } } },
    },
  };
  const long = (): ChatMessage[] => [
    { role: "user", content: `Tell me about the project. ${"x".repeat(6000)}` },
    { role: "assistant", content: `It is a library. ${"y".repeat(4000)}` },
    { role: "user", content: "Now read notes.md." },
  ];

  it("folds before a tool result takes the next request past the window, not on the last prompt alone", async () => {
    // The first request reported 2,800 prompt tokens (under 75 % of the window); the 3,000-character
    // result it asked for is what takes the next request, with its reply ceiling, past the window.
    let step = 0;
    server = await startServer({
      replies: (request) => {
        if (isSummary(request.body)) return { content: NOTES };
        step++;
        return step === 1
          ? {
              toolCalls: [{ id: "r1", name: "read_file", arguments: '{"path":"notes.md"}' }],
              usage: { prompt_tokens: 2800, completion_tokens: 20 },
            }
          : { content: "Done.", usage: { prompt_tokens: 1500, completion_tokens: 5 } };
      },
    });
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: config(server.baseUrl),
      messages: long(),
      tools: [READ_FILE],
      dispatch: () => "z".repeat(3000),
      onEvent: (e) => events.push(e),
    });
    expect(result.turn.content).toBe("Done.");
    expect(server.chatRequests.filter((r) => isSummary(r.body))).toHaveLength(1);
    expect(notices(events).some((t) => t.startsWith("Compacted: messages 0 to 1"))).toBe(true);
    // The second request carried the summary, the question, the call and its whole result.
    const second = mainRequests()[1] ?? [];
    expect(JSON.stringify(second)).not.toContain("x".repeat(100));
    expect(JSON.stringify(second)).toContain("z".repeat(3000));
    expect(result.messages[0]?.content).toBe(`${SUMMARY_LEAD}\n\n${NOTES}`);
    expect(unanswered(result.messages)).toEqual([]);
  });

  it("folds before the first request when the size guard would refuse it: system prompt, tools and reply ceiling counted", async () => {
    // The messages alone are about 2,270 tokens and with the system prompt about 2,780, both under
    // 75 % of the window; with a 1,500-token reply ceiling the request does not fit it, so unfolded
    // it is never sent.
    server = await startServer({
      replies: (request) => (isSummary(request.body) ? { content: NOTES } : { content: "Done." }),
    });
    const messages: ChatMessage[] = [
      { role: "user", content: `Tell me about the project. ${"x".repeat(5000)}` },
      { role: "assistant", content: `It is a library. ${"y".repeat(4000)}` },
      { role: "user", content: "Now sum it up." },
    ];
    const result = await createRuntime().runAgentLoop({
      config: { ...config(server.baseUrl), maxTokens: 1500 },
      system: `You answer questions about the project. ${"s".repeat(2000)}`,
      messages,
      dispatch: () => "",
    });
    expect(result.turn.content).toBe("Done.");
    expect(server.chatRequests.filter((r) => isSummary(r.body))).toHaveLength(1);
    expect(mainRequests()).toHaveLength(1);
    expect(JSON.stringify(mainRequests()[0])).not.toContain("x".repeat(100));
  });

  it("does not fold a request under 75 % of the window that fits with its reply ceiling", async () => {
    server = await startServer({
      replies: (request) => (isSummary(request.body) ? { content: NOTES } : { content: "Done." }),
    });
    const result = await createRuntime().runAgentLoop({
      config: config(server.baseUrl),
      messages: [
        { role: "user", content: `Tell me about the project. ${"x".repeat(5000)}` },
        { role: "assistant", content: `It is a library. ${"y".repeat(4000)}` },
        { role: "user", content: "Now sum it up." },
      ],
      dispatch: () => "",
    });
    expect(result.turn.content).toBe("Done.");
    expect(server.chatRequests.filter((r) => isSummary(r.body))).toHaveLength(0);
    expect(JSON.stringify(mainRequests()[0])).toContain("x".repeat(5000));
  });
});
