import { runMetrics, type SequencedEvent, type TurnMetrics } from "@loopwright/events";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import { createRuntime, failedRun, type RunOptions } from "./index.js";

// A run whose turn fails without a stop, read by a watcher of its runId over the bus, against the
// testkit's loopback server. The failed turn had a `turn` event and no `usage` after it: the watcher
// counted one turn fewer than it saw start, and a continuation's first piece — reported and billed,
// counted by `failedRun(error).usage` — was in no event.

let server: TestServer;
let queue: Reply[] = [];
beforeAll(async () => {
  // A side task's request (compaction's summary) is not streamed: it is answered with a summary.
  server = await startServer({
    replies: (request) =>
      (request.body as { stream?: boolean }).stream === true
        ? (queue.shift() ?? { content: "unscripted" })
        : { content: "Summary: the user asked twice." },
  });
});
afterAll(() => server.close());

const ADD: ToolDefinition = {
  type: "function",
  function: { name: "add", description: "Adds one", parameters: { type: "object", properties: {} } },
};

const CONFIG = { baseUrl: "", apiKey: "sk-r91", model: "m", maxRetries: 0 };

/**
 * Runs `replies` under a runId with a watcher on it from the start, nobody stopping it. Returns what
 * the watcher read, the error the run threw (if it did) and what the run says it cost.
 */
async function watchedRun(
  replies: Reply[],
  options: Omit<Partial<RunOptions>, "config"> & { config?: Partial<RunOptions["config"]> } = {},
): Promise<{ seen: SequencedEvent[]; thrown: unknown; usage: unknown }> {
  queue = [...replies];
  const runtime = createRuntime();
  const runId = `r91h/${Math.random()}`;
  const seen: SequencedEvent[] = [];
  const watching = (async () => {
    for await (const event of runtime.bus.watch(runId)) seen.push(event);
  })();
  let thrown: unknown;
  let usage: unknown;
  try {
    ({ usage } = await runtime.runAgentLoop({
      runId,
      messages: [{ role: "user", content: "Answer." }],
      dispatch: () => "2",
      ...options,
      config: { ...CONFIG, baseUrl: server.baseUrl, ...options.config },
    }));
  } catch (error) {
    thrown = error;
    usage = failedRun(error)?.usage;
  }
  await watching;
  runtime.close();
  return { seen, thrown, usage };
}

/** `watchedRun` of a run that fails. */
async function failingRun(...args: Parameters<typeof watchedRun>): ReturnType<typeof watchedRun> {
  const ran = await watchedRun(...args);
  expect(ran.thrown).toBeDefined();
  return ran;
}

/** The kinds that are not deltas, in order. */
const shape = (events: SequencedEvent[]) =>
  events.filter((event) => event.kind !== "output" && event.kind !== "thinking").map((event) => event.kind);

/** Each usage event's turn, in order. */
const turnsOf = (events: SequencedEvent[]): TurnMetrics[] =>
  events.flatMap((event) => (event.kind === "usage" ? [event.turn] : []));

/**
 * What a watcher of any failed run may rely on: each `turn` is followed by exactly one `usage` before
 * the next `turn` or the run's end, the last one marked failed (never stopped), with no finish
 * reason; runMetrics counts every turn, and its tokens are what `failedRun(error).usage` counts.
 */
function expectEveryTurnEnded(seen: SequencedEvent[], usage: unknown): TurnMetrics {
  const kinds = shape(seen).filter((kind) => kind === "turn" || kind === "usage" || kind === "error");
  const turns = kinds.filter((kind) => kind === "turn").length;
  expect(turns).toBeGreaterThan(0);
  expect(kinds).toEqual([...Array.from({ length: turns }, () => ["turn", "usage"]).flat(), "error"]);
  const last = turnsOf(seen).at(-1) as TurnMetrics;
  expect(last).toMatchObject({ failed: true, finishReason: "" });
  expect(Object.hasOwn(last, "stopped")).toBe(false);
  // Every turn before the failed one was answered, and says nothing of either.
  for (const turn of turnsOf(seen).slice(0, -1)) {
    expect(Object.hasOwn(turn, "failed") || Object.hasOwn(turn, "stopped")).toBe(false);
  }
  const metrics = runMetrics(seen);
  expect(metrics.turns).toBe(turns);
  expect(metrics.tokens).toEqual(usage);
  expect(metrics.outcome).toBe("failed");
  const told = seen.filter((event) => event.kind === "usage").at(-1);
  expect(told?.kind === "usage" && told.usage).toEqual(usage);
  return last;
}

/** An endpoint's refusal of a request too big for its window. */
const OVERFLOW: Reply = {
  type: "error",
  status: 400,
  body: {
    error: {
      message:
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
      code: "context_length_exceeded",
    },
  },
};

const ZERO = { prompt: 0, completion: 0, total: 0, cached: 0 };

describe("a turn that fails without a stop, as its run's watcher reads it", () => {
  it("a stream dropped mid-reply: the turn ends in a usage event marked failed, zero tokens", async () => {
    const { seen, usage } = await failingRun([
      { content: "an answer the connection drops", chunkChars: 3, dropAfterChunk: 3 },
    ]);
    expect(usage).toEqual(ZERO);
    const turn = expectEveryTurnEnded(seen, usage);
    expect(turn.usage).toEqual(ZERO);
    // The request as estimated, and the turn's times as measured: text had come back.
    expect(turn).toMatchObject({
      context: { total: expect.any(Number) },
      timings: { totalMs: expect.any(Number), firstTokenMs: expect.any(Number) },
    });
  });

  it("a continuation's stream dropped is no failure: the cut-off answer is kept and its turn ends as answered", async () => {
    const { seen, thrown, usage } = await watchedRun(
      [
        {
          content: "a first piece, cut",
          finishReason: "length",
          usage: { prompt_tokens: 50, completion_tokens: 9 },
        },
        { content: "and the rest that never arrives", chunkChars: 3, dropAfterChunk: 2 },
      ],
      { config: { maxTokens: 9, maxContinuations: 1 } },
    );
    expect(thrown).toBeUndefined();
    expect(shape(seen)).toEqual(["turn", "notice", "notice", "usage", "notice", "done"]);
    const [turn] = turnsOf(seen);
    expect(turn).toMatchObject({ finishReason: "length", usage: { prompt: 50, completion: 9, total: 59 } });
    expect(Object.hasOwn(turn as object, "failed")).toBe(false);
    expect(runMetrics(seen).tokens).toEqual(usage);
  });

  it("a server error mid-stream after some pieces", async () => {
    const { seen, usage } = await failingRun([
      {
        content: "a reply the server gives up on",
        chunkChars: 3,
        errorMidStream: { afterChunk: 3, error: { message: "the server fell over" } },
      },
    ]);
    expect(expectEveryTurnEnded(seen, usage).usage).toEqual(ZERO);
  });

  it("an HTTP 500 the run does not retry", async () => {
    const { seen, usage } = await failingRun([
      { type: "error", status: 500, body: { error: { message: "internal error" } } },
    ]);
    const turn = expectEveryTurnEnded(seen, usage);
    expect(turn.usage).toEqual(ZERO);
    expect(Object.hasOwn(turn.timings ?? {}, "firstTokenMs")).toBe(false);
  });

  it("a retry budget spent: every attempt refused, one turn, one usage event", async () => {
    const refused: Reply = {
      type: "error",
      status: 500,
      body: { error: { message: "internal error" } },
      headers: { "retry-after": "0" },
    };
    const { seen, usage } = await failingRun([refused, refused, refused], { config: { maxRetries: 2 } });
    expect(seen.filter((event) => event.kind === "notice").length).toBe(2);
    expect(expectEveryTurnEnded(seen, usage).usage).toEqual(ZERO);
  });

  it("an endpoint silent past firstTokenSeconds", async () => {
    const { seen, thrown, usage } = await failingRun([{ content: "never sent", silentAfterChunk: 0 }], {
      config: { firstTokenSeconds: 0.3 },
    });
    expect(String((thrown as Error).message)).toMatch(/sent nothing|silent|no .*chunk|first/i);
    expect(expectEveryTurnEnded(seen, usage).usage).toEqual(ZERO);
  });

  it("a request the size guard refuses before sending it", async () => {
    const { seen, thrown, usage } = await failingRun([], {
      config: { contextLength: 40 },
      messages: [{ role: "user", content: "A question far longer than the window. ".repeat(20) }],
    });
    expect((thrown as Error).name).toBe("AgentLoopOverflow");
    const turn = expectEveryTurnEnded(seen, usage);
    expect(turn.usage).toEqual(ZERO);
    // The request was built (and weighed): its size, as estimated, is told.
    expect(turn.context?.total).toBeGreaterThan(40);
  });

  it("a request the endpoint refuses as too big for its window", async () => {
    const { seen, thrown, usage } = await failingRun([OVERFLOW]);
    expect((thrown as Error).name).toBe("AgentLoopOverflow");
    expect(expectEveryTurnEnded(seen, usage).usage).toEqual(ZERO);
  });

  it("with compact, a request refused as too big, folded, sent again and refused again: one turn, one usage", async () => {
    const { seen, thrown, usage } = await failingRun([OVERFLOW, OVERFLOW], {
      config: { contextLength: 100_000, compact: true, tasks: { compaction: { model: "m" } } },
      messages: [
        { role: "user", content: "Question 1." },
        { role: "assistant", content: `Answer 1: ${"a".repeat(4000)}` },
        { role: "user", content: "Question 2." },
      ],
    });
    expect((thrown as Error).name).toBe("AgentLoopOverflow");
    expect((thrown as Error).message).toContain("folded request was refused too");
    expect(
      server.chatRequests.some((request) => (request.body as { stream?: boolean }).stream !== true),
    ).toBe(true);
    expect(expectEveryTurnEnded(seen, usage).usage).toEqual(ZERO);
  });

  it("a second step that fails keeps the first one's tokens and ledger: turns and tokens add up", async () => {
    const { seen, usage } = await failingRun(
      [
        {
          toolCalls: [{ id: "c1", name: "add", arguments: "{}" }],
          usage: { prompt_tokens: 70, completion_tokens: 5 },
        },
        { content: "a second answer the connection drops", chunkChars: 3, dropAfterChunk: 2 },
      ],
      { tools: [ADD] },
    );
    // Two turns, each ended in its usage event; the tool ran between them.
    expectEveryTurnEnded(seen, usage);
    expect(shape(seen).filter((kind) => kind.startsWith("tool-"))).toEqual(["tool-call", "tool-result"]);
    expect(runMetrics(seen).turns).toBe(2);
    expect(usage).toEqual({ prompt: 70, completion: 5, total: 75, cached: 0 });
    // The failed turn recorded nothing in the ledger: it is as the answered turn left it.
    const ledgers = seen.flatMap((event) => (event.kind === "usage" ? [event.ledger] : []));
    expect(ledgers).toHaveLength(2);
    expect(ledgers[1]).toEqual(ledgers[0]);
  });
});
