// compact: true when a step's request comes back as a ContextOverflow — refused by the endpoint, or
// found too big by the loop's own size guard — over HTTP to the testkit: the loop folds once, the
// hooks' veto overridden (forced), and sends the step again; the summary is a side-task request to
// the same server.
import type { RunEvent } from "@loopwright/events";
import type { HookRunner } from "@loopwright/hooks";
import { SUMMARY_LEAD } from "@loopwright/ledger";
import { ContextOverflow } from "@loopwright/negotiate";
import { SUMMARISER_SYSTEM } from "@loopwright/side-task";
import {
  countTokens,
  type Reply,
  readFixtureJson,
  renderPrompt,
  startServer,
  type TestServer,
} from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  AgentLoopOverflow,
  type ChatMessage,
  createRuntime,
  failedRun,
  type LoopConfig,
  type LoopRequest,
  type ToolDefinition,
} from "../src/index.js";
import { unanswered } from "../src/test-support/transcript.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const NOTES = "Notes: the user is reviewing a report; chapters one to three were discussed.";
/** llama.cpp's own refusal of a prompt past its window, as captured. */
const REFUSAL = readFixtureJson("errors/llamacpp/exceed-context-size-new-format-8708-of-8192.json");
const refused = (): Reply => ({ type: "error", status: 400, body: REFUSAL });

const READ: ToolDefinition = {
  type: "function",
  function: {
    name: "read_page",
    description: "Read one page of the report",
    parameters: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
  },
};

/** Three earlier exchanges, then the question: about 700 tokens, under three quarters of the window. */
function history(): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (const chapter of ["one", "two", "three"]) {
    messages.push(
      { role: "user", content: `Summarise chapter ${chapter}.` },
      { role: "assistant", content: `Chapter ${chapter}: ${"lorem ".repeat(150).trim()}` },
    );
  }
  messages.push({ role: "user", content: "Read pages 1 to 2 and add them up." });
  return messages;
}

function config(baseUrl: string, change: Partial<LoopConfig> = {}): LoopConfig {
  return {
    baseUrl,
    apiKey: "k",
    model: "sim",
    contextLength: 1600,
    compact: true,
    tasks: { compaction: { model: "notes-model" } },
    ...change,
  };
}

function isSummary(body: unknown): boolean {
  const messages = (body as { messages?: ChatMessage[] } | undefined)?.messages ?? [];
  return messages[0]?.content === SUMMARISER_SYSTEM;
}

/**
 * The endpoint: the summariser answers `NOTES`; the main model's requests are answered by `main`,
 * handed their number from 1 and their messages.
 */
function endpoint(
  main: (n: number, messages: ChatMessage[]) => Reply,
): (request: { body: unknown }) => Reply {
  let n = 0;
  return (request) => {
    if (isSummary(request.body)) return { content: NOTES };
    n++;
    return main(n, (request.body as { messages: ChatMessage[] }).messages);
  };
}

/** Reads two pages, one a step, then answers. */
function reader(n: number): Reply {
  if (n <= 2) return { toolCalls: [{ id: `p${n}`, name: "read_page", arguments: `{"n":${n}}` }] };
  return { content: "The 2 pages add up to 3." };
}

const page = ({ args }: { args: Record<string, unknown> }) => `page ${args.n}: ${"ipsum ".repeat(20).trim()}`;

function mainRequests(): ChatMessage[][] {
  return (server?.chatRequests ?? [])
    .filter((r) => !isSummary(r.body))
    .map((r) => (r.body as { messages: ChatMessage[] }).messages);
}

const summaries = () => (server?.chatRequests ?? []).filter((r) => isSummary(r.body));

function notices(events: RunEvent[]): string[] {
  return events.filter((e) => e.kind === "notice").map((e) => (e as { text: string }).text);
}

/** A hook runner whose `beforeCompact` hook vetoes every fold; it records what it was told. */
function vetoing(told: string[]): HookRunner<{ session: { id: string } }> {
  return (event) => {
    told.push(event);
    return event === "beforeCompact" ? [{ id: "guard", ok: true, veto: true }] : [];
  };
}

describe("compact: true, a request refused as too big", () => {
  it("folds once, forced past a hook's veto, sends the step again with the folded transcript, and finishes", async () => {
    // The first request is under three quarters of the window by the loop's count, so no fold was
    // planned for it; the endpoint refuses it anyway.
    server = await startServer({
      replies: endpoint((n) => (n === 1 ? refused() : reader(n - 1))),
    });
    const events: RunEvent[] = [];
    const told: string[] = [];
    const requests: [LoopRequest, number][] = [];
    const given = history();
    const result = await createRuntime().runAgentLoop({
      config: config(server.baseUrl),
      system: "You read reports.",
      messages: given,
      tools: [READ],
      dispatch: page,
      hooks: { run: vetoing(told), context: { session: { id: "s-1" } } },
      onEvent: (e) => events.push(e),
      onRequest: (request, step) => requests.push([request, step]),
    });
    expect(result.turn.content).toBe("The 2 pages add up to 3.");
    expect(result.stopReason).toBe("answered");
    expect(result.steps).toBe(3);
    // One summary, the hook told of it (and overridden); the refused request sent once more, folded.
    expect(summaries()).toHaveLength(1);
    expect(told.filter((e) => e === "beforeCompact")).toHaveLength(1);
    const main = mainRequests();
    expect(main).toHaveLength(4);
    expect(JSON.stringify(main[0])).toContain("Chapter one:");
    const second = main[1] ?? [];
    expect(second[0]).toEqual({
      role: "system",
      content: `You read reports.\n\n${SUMMARY_LEAD}\n\n${NOTES}`,
    });
    expect(second.slice(1)).toEqual([given.at(-1)]);
    for (const messages of main.slice(1)) expect(JSON.stringify(messages)).not.toContain("Chapter");
    // The watcher saw the refusal, the overridden veto and the fold, in that order, in one turn of step 1.
    const said = notices(events);
    const refusal = said.findIndex((t) => t.startsWith("The request was refused as too big"));
    const veto = said.indexOf(
      "Hooks: guard vetoed the compaction, but it was forced: the request had already been refused as too big.",
    );
    const folded = said.findIndex((t) => t.startsWith("Compacted: messages 0 to 5"));
    expect(refusal).toBeGreaterThanOrEqual(0);
    expect(said[refusal]).toContain("8708 tokens");
    expect(veto).toBeGreaterThan(refusal);
    expect(folded).toBeGreaterThan(veto);
    expect(events.filter((e) => e.kind === "turn").map((e) => (e as { step: number }).step)).toEqual([
      1, 2, 3,
    ]);
    // onRequest heard step 1 twice: as first built, and as re-sent folded.
    expect(requests.map(([, step]) => step)).toEqual([1, 1, 2, 3]);
    expect(JSON.stringify(requests[1]?.[0].messages)).not.toContain("Chapter");
    // The transcript handed back is the fold's, every call answered; the ledger on it.
    expect(result.messages[0]).toEqual({ role: "system", content: `${SUMMARY_LEAD}\n\n${NOTES}` });
    expect(result.messages[1]).toEqual(given.at(-1));
    expect(unanswered(result.messages)).toEqual([]);
    expect(result.messages.filter((m) => m.role === "tool")).toHaveLength(2);
    expect(result.ledger.length).toBeGreaterThan(0);
    for (const entry of result.ledger) expect(entry.through).toBeLessThan(result.messages.length);
    expect(given).toEqual(history());
  });

  it("recovers on a llama.cpp server whose window is smaller than contextLength: refused by its own count, folded, finished", async () => {
    // About 750 tokens by the loop's count (under three quarters of 1,600), about 1,070 by the
    // server's, whose window is 900: it refuses the first request in its own words. The summary is
    // written on another server.
    const notes = await startServer({ replies: () => ({ content: NOTES }) });
    try {
      let n = 0;
      server = await startServer({
        personality: { name: "llamacpp", nCtx: 900 },
        replies: () => reader(++n),
      });
      const events: RunEvent[] = [];
      const result = await createRuntime().runAgentLoop({
        config: config(server.baseUrl, {
          tasks: { compaction: { model: "notes-model", endpoint: { baseUrl: notes.baseUrl } } },
        }),
        system: "You read reports.",
        messages: history(),
        tools: [READ],
        dispatch: page,
        onEvent: (e) => events.push(e),
      });
      expect(result.turn.content).toBe("The 2 pages add up to 3.");
      expect(notes.chatRequests).toHaveLength(1);
      // Refused once (the server's words in the notice), then three requests answered, all folded.
      expect(server.chatRequests).toHaveLength(4);
      expect(n).toBe(3);
      const said = notices(events);
      expect(
        said.some((t) => /refused as too big.*exceeds the available context size \(900 tokens\)/.test(t)),
      ).toBe(true);
      for (const request of server.chatRequests.slice(1)) {
        expect(JSON.stringify(request.body)).not.toContain("Chapter one:");
      }
      expect(result.messages[0]?.content).toBe(`${SUMMARY_LEAD}\n\n${NOTES}`);
      expect(unanswered(result.messages)).toEqual([]);
    } finally {
      await notes.close();
    }
  });

  describe("on one llama.cpp server whose window (1,024) is smaller than contextLength (4,096)", () => {
    // As llama.cpp does: the main request (past 1,024 by its count) is refused with n_ctx 1024; a
    // summary request of nearly the whole stretch fits the window but leaves fewer tokens than the
    // summary takes, and the server stops it when the window is full (finish_reason "length").
    const N_CTX = 1024;
    const LONG_NOTES = `Notes: ${"the user reviews chapters one to three of the report; ".repeat(12).trim()}`;

    function bigHistory(): ChatMessage[] {
      const messages: ChatMessage[] = [];
      for (const chapter of ["one", "two", "three"]) {
        messages.push(
          { role: "user", content: `Summarise chapter ${chapter}.` },
          { role: "assistant", content: `Chapter ${chapter}: ${"lorem ".repeat(110).trim()}` },
        );
      }
      messages.push({
        role: "user",
        content: `Read pages 1 to 2 and add them up. Background: ${"ipsum ".repeat(150).trim()}`,
      });
      return messages;
    }

    async function run(compactionModel: string) {
      let n = 0;
      server = await startServer({
        personality: { name: "llamacpp", nCtx: N_CTX },
        replies: (request) => (isSummary(request.body) ? { content: LONG_NOTES } : reader(++n)),
      });
      const events: RunEvent[] = [];
      const result = await createRuntime().runAgentLoop({
        config: config(server.baseUrl, {
          contextLength: 4096,
          tasks: { compaction: { model: compactionModel } },
        }),
        system: "You read reports.",
        messages: bigHistory(),
        tools: [READ],
        dispatch: page,
        onEvent: (e) => events.push(e),
      });
      return { result, said: notices(events) };
    }

    it("folds against the window the refusal names, sizing the summary to it from the first request, and goes on", async () => {
      const { result, said } = await run("sim");
      expect(result.turn.content).toBe("The 2 pages add up to 3.");
      // The refusal, then one summary request, sized to the 1,024 window: half of it for the reply,
      // the prompt within the rest, so the notes were written whole.
      const sums = summaries();
      expect(sums).toHaveLength(1);
      const body = sums[0]?.body as { max_tokens?: number; messages: unknown[] };
      expect(body.max_tokens).toBe(N_CTX / 2);
      expect(countTokens(renderPrompt(body as never)) + N_CTX / 2).toBeLessThanOrEqual(N_CTX);
      expect(said.some((t) => /refused as too big.*\(1024 tokens\)/.test(t))).toBe(true);
      expect(said.some((t) => /reply ceiling|ran out of its window|Compaction failed/.test(t))).toBe(false);
      expect(said.some((t) => t.startsWith("Compacted: messages 0 to 5"))).toBe(true);
      expect(result.messages[0]).toEqual({ role: "system", content: `${SUMMARY_LEAD}\n\n${LONG_NOTES}` });
      expect(unanswered(result.messages)).toEqual([]);
      // Refused, then sent folded and answered: three main requests after the refusal.
      expect(mainRequests()).toHaveLength(4);
    });

    it("with the summary on another model at the same server, reads the reply that ran out of the window and asks once more", async () => {
      const { result, said } = await run("notes-model");
      expect(result.turn.content).toBe("The 2 pages add up to 3.");
      const sums = summaries();
      expect(sums).toHaveLength(2);
      const ceilings = sums.map((r) => (r.body as { max_tokens?: number }).max_tokens);
      expect(ceilings).toEqual([1024, N_CTX / 2]);
      const ranOut = said.find((t) =>
        t.startsWith("The summary from notes-model ran out of its window (1024 tokens:"),
      );
      expect(ranOut).toBeDefined();
      expect(said.some((t) => /reply ceiling|Compaction failed/.test(t))).toBe(false);
      expect(result.messages[0]).toEqual({ role: "system", content: `${SUMMARY_LEAD}\n\n${LONG_NOTES}` });
      expect(unanswered(result.messages)).toEqual([]);
    });
  });

  it("folds once the size guard finds the request too big after a hook vetoed the planned fold", async () => {
    // About 2,800 tokens of system prompt and messages with a 1,500-token reply ceiling do not fit
    // the 4,096-token window: the fold planned for it is vetoed, the guard refuses it before it is
    // sent, and the forced fold lets it go, once.
    server = await startServer({ replies: endpoint(() => ({ content: "Done." })) });
    const told: string[] = [];
    const events: RunEvent[] = [];
    const result = await createRuntime().runAgentLoop({
      config: config(server.baseUrl, { contextLength: 4096, maxTokens: 1500 }),
      system: `You answer questions about the project. ${"s".repeat(2000)}`,
      messages: [
        { role: "user", content: `Tell me about the project. ${"x".repeat(5000)}` },
        { role: "assistant", content: `It is a library. ${"y".repeat(4000)}` },
        { role: "user", content: "Now sum it up." },
      ],
      dispatch: () => "",
      hooks: { run: vetoing(told), context: { session: { id: "s-2" } } },
      onEvent: (e) => events.push(e),
    });
    expect(result.turn.content).toBe("Done.");
    expect(told.filter((e) => e === "beforeCompact")).toHaveLength(2);
    expect(summaries()).toHaveLength(1);
    expect(mainRequests()).toHaveLength(1);
    expect(JSON.stringify(mainRequests()[0])).not.toContain("x".repeat(100));
    const said = notices(events);
    expect(said).toContain("Hooks: Compaction skipped: guard vetoed it.");
    expect(said.some((t) => t.startsWith("The request was refused as too big"))).toBe(true);
    expect(result.messages[0]?.content).toBe(`${SUMMARY_LEAD}\n\n${NOTES}`);
  });

  it("ends with AgentLoopOverflow naming why when there is nothing to fold: one tool run under a single question", async () => {
    server = await startServer({
      replies: endpoint((n) => (n <= 2 ? reader(n) : refused())),
    });
    const events: RunEvent[] = [];
    const error = await createRuntime()
      .runAgentLoop({
        config: config(server.baseUrl),
        messages: [{ role: "user", content: "Read pages 1 to 2 and add them up." }],
        tools: [READ],
        dispatch: page,
        onEvent: (e) => events.push(e),
      })
      .catch((e: unknown) => e);
    expect(AgentLoopOverflow.isInstance(error)).toBe(true);
    expect(ContextOverflow.isInstance(error)).toBe(true);
    expect((error as AgentLoopOverflow).serverMessage).toMatch(/8708 tokens/);
    expect((error as Error).message).toMatch(/nothing to fold/);
    expect((error as Error).message).toMatch(/single question/);
    expect(mainRequests()).toHaveLength(3);
    expect(summaries()).toHaveLength(0);
    const run = failedRun(error);
    expect(run?.messages[0]).toEqual({ role: "user", content: "Read pages 1 to 2 and add them up." });
    expect(unanswered(run?.messages ?? [])).toEqual([]);
    expect(notices(events).some((t) => t.startsWith("Compacted"))).toBe(false);
  });

  it("ends with AgentLoopOverflow after exactly one fold and one re-send when the folded request is refused too", async () => {
    server = await startServer({ replies: endpoint(() => refused()) });
    const error = await createRuntime()
      .runAgentLoop({
        config: config(server.baseUrl),
        messages: history(),
        tools: [READ],
        dispatch: page,
      })
      .catch((e: unknown) => e);
    expect(AgentLoopOverflow.isInstance(error)).toBe(true);
    expect((error as AgentLoopOverflow).serverMessage).toMatch(/8708 tokens/);
    expect((error as Error).message).toMatch(/folded the transcript once and sent it again/);
    expect(mainRequests()).toHaveLength(2);
    expect(summaries()).toHaveLength(1);
    // The run it carries is the folded one, to store and send again from.
    const run = failedRun(error);
    expect(run?.messages[0]).toEqual({ role: "system", content: `${SUMMARY_LEAD}\n\n${NOTES}` });
    expect(run?.messages.slice(1)).toEqual([history().at(-1)]);
  });

  it("ends with AgentLoopOverflow naming the failed summary when no summary comes back", async () => {
    let n = 0;
    server = await startServer({
      replies: (request) => {
        if (isSummary(request.body))
          return { type: "error", status: 400, body: { error: { message: "model not loaded" } } };
        n++;
        return n === 1 ? refused() : { content: "never" };
      },
    });
    const error = await createRuntime()
      .runAgentLoop({ config: config(server.baseUrl), messages: history(), dispatch: () => "" })
      .catch((e: unknown) => e);
    expect(AgentLoopOverflow.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/no summary came back from notes-model/);
    expect(n).toBe(1);
    expect(failedRun(error)?.messages).toEqual(history());
  });

  it("without compact, ends with AgentLoopOverflow after the one request, as before", async () => {
    server = await startServer({ replies: endpoint(() => refused()) });
    const error = await createRuntime()
      .runAgentLoop({
        config: config(server.baseUrl, { compact: false }),
        messages: history(),
        dispatch: () => "",
      })
      .catch((e: unknown) => e);
    expect(AgentLoopOverflow.isInstance(error)).toBe(true);
    expect((error as Error).message).not.toMatch(/fold/);
    expect(server.chatRequests).toHaveLength(1);
    expect(failedRun(error)?.messages).toEqual(history());
  });
});
