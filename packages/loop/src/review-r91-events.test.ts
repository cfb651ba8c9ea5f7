import { runMetrics, type SequencedEvent } from "@loopwright/events";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import { createRuntime, failedRun, type RunOptions } from "./index.js";

// A run its host stops mid-turn, read by a watcher of its runId over the bus, against the testkit's
// loopback server streaming slowly. The turn had a `turn` event and no `usage` after it: the watcher
// counted one turn fewer than it saw start, and missed the tokens `failedRun(error).usage` counts
// for a continuation's first piece, which the server reported (and billed) before the stop.

let server: TestServer;
let queue: Reply[] = [];
beforeAll(async () => {
  server = await startServer({ replies: () => queue.shift() ?? { content: "unscripted" } });
});
afterAll(() => server.close());

const ADD: ToolDefinition = {
  type: "function",
  function: { name: "add", description: "Adds one", parameters: { type: "object", properties: {} } },
};

/** A slow answer: 40 characters, two a chunk, 20 ms apart — still streaming when the host stops it. */
const SLOW = { content: "a slow answer that the host stops early.", chunkChars: 2, chunkDelayMs: 20 };

/**
 * Runs under a runId with a watcher on it from the start; the host stops the run as `stopAt` says.
 * Returns what the watcher read and what the run says it cost.
 */
async function stoppedRun(
  replies: Reply[],
  stopAt: (event: { kind: string }, count: () => number) => boolean,
  options: Partial<RunOptions> = {},
): Promise<{ seen: SequencedEvent[]; usage: unknown }> {
  queue = replies;
  const runtime = createRuntime();
  const runId = `r91/${Math.random()}`;
  const seen: SequencedEvent[] = [];
  const watching = (async () => {
    for await (const event of runtime.bus.watch(runId)) seen.push(event);
  })();
  const controller = new AbortController();
  let outputs = 0;
  let thrown: unknown;
  try {
    await runtime.runAgentLoop({
      runId,
      config: { baseUrl: server.baseUrl, apiKey: "sk-r91", model: "m" },
      messages: [{ role: "user", content: "Answer, slowly." }],
      signal: controller.signal,
      dispatch: () => "2",
      ...options,
      onEvent: (event) => {
        if (event.kind === "output") outputs++;
        if (stopAt(event, () => outputs)) controller.abort();
      },
    });
  } catch (error) {
    thrown = error;
  }
  await watching;
  runtime.close();
  expect(controller.signal.aborted).toBe(true);
  return { seen, usage: failedRun(thrown)?.usage };
}

/** The kinds that are not deltas, in order. */
const shape = (events: SequencedEvent[]) =>
  events.filter((event) => event.kind !== "output" && event.kind !== "thinking").map((event) => event.kind);

describe("a run its host stops mid-turn, as its watcher reads it", () => {
  it("ends the stopped turn in a usage event marked stopped, and runMetrics counts the turn", async () => {
    const { seen, usage } = await stoppedRun(
      [{ ...SLOW, usage: { prompt_tokens: 80, completion_tokens: 20 } }],
      (event, outputs) => event.kind === "output" && outputs() === 3,
    );
    expect(shape(seen)).toEqual(["turn", "usage", "error", "done"]);
    const stopped = seen.find((event) => event.kind === "usage");
    // Nothing came back to count: the server's usage comes at the end of the stream.
    expect(stopped?.kind === "usage" && stopped.turn).toMatchObject({
      stopped: true,
      finishReason: "",
      usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
      // The request as estimated, and the turn's times as measured.
      context: { total: expect.any(Number) },
      timings: { totalMs: expect.any(Number), firstTokenMs: expect.any(Number) },
    });
    const metrics = runMetrics(seen);
    expect(metrics.turns).toBe(1);
    expect(metrics.outcome).toBe("stopped");
    expect(metrics.tokens).toEqual(usage);
  });

  it("counts what a continuation's first piece reported before the stop, as failedRun does", async () => {
    // The outputs read before the continuation began: its first piece's.
    let before: number | undefined;
    const { seen, usage } = await stoppedRun(
      [
        {
          content: "a first piece, cut",
          finishReason: "length",
          usage: { prompt_tokens: 50, completion_tokens: 9 },
        },
        { ...SLOW, usage: { prompt_tokens: 59, completion_tokens: 20 } },
      ],
      (event, outputs) => {
        if (event.kind === "notice") before ??= outputs();
        return before !== undefined && event.kind === "output" && outputs() === before + 3;
      },
      {
        config: { baseUrl: server.baseUrl, apiKey: "sk-r91", model: "m", maxTokens: 9, maxContinuations: 1 },
      },
    );
    expect(usage).toEqual({ prompt: 50, completion: 9, total: 59, cached: 0 });
    expect(shape(seen)).toEqual(["turn", "notice", "usage", "error", "done"]);
    const stopped = seen.find((event) => event.kind === "usage");
    expect(stopped?.kind === "usage" && stopped.turn).toMatchObject({
      stopped: true,
      finishReason: "",
      usage: { prompt: 50, completion: 9, total: 59 },
    });
    expect(stopped?.kind === "usage" && stopped.usage).toEqual(usage);
    // It had read no tokens at all for a turn the server billed 59 for.
    expect(runMetrics(seen).tokens).toEqual(usage);
  });

  it("ends a stop on the second step the same way: one usage per turn, the first one's tokens kept", async () => {
    const { seen, usage } = await stoppedRun(
      [
        {
          toolCalls: [{ id: "c1", name: "add", arguments: "{}" }],
          usage: { prompt_tokens: 70, completion_tokens: 5 },
        },
        { ...SLOW, usage: { prompt_tokens: 90, completion_tokens: 20 } },
      ],
      (event, outputs) => event.kind === "output" && outputs() === 3,
      { tools: [ADD] },
    );
    expect(shape(seen)).toEqual([
      "turn",
      "usage",
      "tool-call",
      "tool-result",
      "turn",
      "usage",
      "error",
      "done",
    ]);
    const usages = seen.flatMap((event) => (event.kind === "usage" ? [event.turn] : []));
    expect(usages.map((turn) => turn.stopped)).toEqual([undefined, true]);
    const metrics = runMetrics(seen);
    expect(metrics.turns).toBe(seen.filter((event) => event.kind === "turn").length);
    expect(metrics.tokens).toEqual(usage);
    expect(metrics.tokens).toEqual({ prompt: 70, completion: 5, total: 75, cached: 0 });
  });

  it("marks no turn of a run nobody stopped", async () => {
    const { seen } = await stoppedRun(
      [{ content: "done", usage: { prompt_tokens: 10, completion_tokens: 1 } }],
      // Stopped only after its done is out: the turn had ended in its own usage event.
      (event) => event.kind === "usage",
    );
    const usages = seen.flatMap((event) => (event.kind === "usage" ? [event.turn] : []));
    expect(usages).toHaveLength(1);
    expect(Object.hasOwn(usages[0] as object, "stopped")).toBe(false);
    expect(usages[0]?.finishReason).toBe("stop");
  });
});
