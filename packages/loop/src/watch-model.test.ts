import { fold, runMetrics, type SequencedEvent } from "@loopwright/events";
import { type Reply, startServer, type TestServer, type TurnReply } from "@loopwright/testkit";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { createRuntime, failedRun } from "./index.js";

// What a watcher sees is the run. Random runs of runAgentLoop over HTTP against the testkit —
// turns with answer text, reasoning (in its field or in <think> fences), tool calls that answer,
// throw or name no tool, a server error retried, a host that stops the run after a step, and a
// step that fails (its stream dropped or broken off by an error after some text, or a 500 past the
// retries) — each read by a watcher on the run's bus. The events must fold into the transcript the run returns,
// add up to the run's own metrics and usage, carry one start and one end per tool call, and carry
// neither the endpoint's key nor a secret the host's environment holds.
//
// R90_EVENTS_RUNS sets how many runs (a quarter of the events package's cases), R90_EVENTS_SEED replays one.

const RUNS = Math.max(4, Math.round(Number(process.env.R90_EVENTS_RUNS ?? 80) / 4));
const SEED = process.env.R90_EVENTS_SEED === undefined ? undefined : Number(process.env.R90_EVENTS_SEED);

const API_KEY = "sk-r90d-0123456789abcdefKEY";
const ENV_SECRET = "env-r90d-secret-9f8e7d6c5b4a";

const tool = (name: string, description: string): ToolDefinition => ({
  type: "function",
  function: {
    name,
    description,
    parameters: { type: "object", properties: { n: { type: "number" } }, required: ["n"] },
  },
});
const TOOLS = [tool("add", "Adds one"), tool("fail", "Always fails"), tool("echo", "Says its argument back")];

interface CallSpec {
  name: "add" | "fail" | "echo" | "missing";
  n: number;
}

interface StepSpec {
  content: string;
  reasoning: string;
  reasoningAs: "reasoning_content" | "fence";
  calls: CallSpec[];
  /** A 500 before this step's reply, which the loop retries. */
  serverError: boolean;
  chunkChars: number;
  prompt: number;
  completion: number;
  /** The answer step only: cut off at the ceiling (`finish_reason: "length"`). */
  cutOff: boolean;
}

const words = fc.oneof(
  fc.stringMatching(/^[a-z ,.]{0,24}$/),
  // Characters outside the BMP, split by the server's chunking mid-pair, and fence markup.
  fc
    .array(fc.constantFrom("a", " ", "é", "😀", "𝄞", "</think>", "<think>", "\n"), { maxLength: 12 })
    .map((parts) => parts.join("")),
);

const stepSpec: fc.Arbitrary<StepSpec> = fc.record({
  content: words,
  reasoning: words,
  reasoningAs: fc.constantFrom("reasoning_content" as const, "fence" as const),
  calls: fc.array(
    fc.record({
      name: fc.constantFrom("add" as const, "fail" as const, "echo" as const, "missing" as const),
      n: fc.nat(99),
    }),
    { maxLength: 3 },
  ),
  serverError: fc.boolean(),
  chunkChars: fc.integer({ min: 1, max: 9 }),
  prompt: fc.integer({ min: 1, max: 5000 }),
  completion: fc.integer({ min: 1, max: 400 }),
  cutOff: fc.boolean(),
});

const runSpec = fc.record({
  steps: fc.array(stepSpec, { minLength: 1, maxLength: 4 }),
  /** Stop the run (beforeStep's `{ stop: true }`) before this step, when it is one that follows a tool step. */
  stopBefore: fc.option(fc.integer({ min: 2, max: 4 }), { nil: undefined }),
  parallel: fc.boolean(),
  /** The host aborts the run as this step's request arrives. */
  abortAt: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined, freq: 4 }),
  /** This step fails, as `failWith` says (where the run gets that far): the run throws. */
  failAt: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined, freq: 3 }),
  failWith: fc.constantFrom("drop" as const, "error-mid" as const, "refused" as const),
});

type Fault = "drop" | "error-mid" | "refused";

/**
 * The replies of a step that fails: text shown and then its stream dropped or broken off by an
 * error (never retried: the user saw it), or a 500 on every attempt (`maxRetries: 2`).
 */
function faulty(fault: Fault, chunkChars: number): Reply[] {
  // Chunk 1 is the role; 2 and 3 are text, shown before the fault.
  const shown = { content: "a reply that never ends well", chunkChars };
  if (fault === "drop") return [{ ...shown, dropAfterChunk: 3 }];
  if (fault === "error-mid")
    return [{ ...shown, errorMidStream: { afterChunk: 3, error: { message: "fell over" } } }];
  const refused: Reply = {
    type: "error",
    status: 500,
    body: { error: { message: "internal error" } },
    headers: { "retry-after-ms": "1" },
  };
  return [refused, refused, refused];
}

/**
 * The script: every step but the last asks for tools; the last answers — or the step `fail` names
 * fails, and is the last.
 */
function script(steps: StepSpec[], runNumber: number, fail?: { at: number; with: Fault }): Reply[] {
  const replies: Reply[] = [];
  steps.forEach((step, index) => {
    if (fail && index + 1 > fail.at) return;
    const last = index === steps.length - 1;
    if (step.serverError) {
      replies.push({
        type: "error",
        status: 500,
        // A server that quotes the request's key back: the retry notice must not carry it.
        body: { error: { message: `overloaded (key ${API_KEY})` } },
        headers: { "retry-after-ms": "1" },
      });
    }
    if (fail && index + 1 === fail.at) {
      replies.push(...faulty(fail.with, step.chunkChars));
      return;
    }
    const calls = last
      ? []
      : (step.calls.length === 0 ? [{ name: "add" as const, n: 1 }] : step.calls).map((call, at) => ({
          id: `r${runNumber}s${index}c${at}`,
          name: call.name,
          arguments: JSON.stringify({ n: call.n }),
        }));
    const reply: TurnReply = {
      chunkChars: step.chunkChars,
      usage: { prompt_tokens: step.prompt, completion_tokens: step.completion },
      ...(step.content === "" && calls.length === 0
        ? { content: "ok" }
        : step.content === ""
          ? {}
          : { content: step.content }),
      ...(step.reasoning.trim() === "" ? {} : { reasoning: step.reasoning, reasoningAs: step.reasoningAs }),
      ...(calls.length > 0 ? { toolCalls: calls } : {}),
      ...(last && step.cutOff ? { finishReason: "length" } : {}),
    };
    replies.push(reply);
  });
  return replies;
}

let server: TestServer;
let queue: Reply[] = [];
beforeAll(async () => {
  server = await startServer({ replies: () => queue.shift() ?? { content: "unscripted" } });
});
afterAll(() => server.close());

/** The assistant messages the run added, in order: one per step. */
function assistantTurns(messages: ChatMessage[]): ChatMessage[] {
  return messages.filter((message) => message.role === "assistant");
}

/** The events of each step: from one `turn` event to the next. */
function bySteps(events: SequencedEvent[]): SequencedEvent[][] {
  const steps: SequencedEvent[][] = [];
  for (const event of events) {
    if (event.kind === "turn") steps.push([]);
    steps.at(-1)?.push(event);
  }
  return steps;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (part as { text?: string }).text ?? "").join("");
  return "";
}

let runNumber = 0;

async function check(spec: {
  steps: StepSpec[];
  stopBefore: number | undefined;
  parallel: boolean;
  abortAt: number | undefined;
  failAt: number | undefined;
  failWith: Fault;
}): Promise<void> {
  runNumber++;
  const fail = spec.failAt !== undefined && spec.failAt <= spec.steps.length;
  queue = script(
    spec.steps,
    runNumber,
    fail ? { at: spec.failAt as number, with: spec.failWith } : undefined,
  );
  const runtime = createRuntime();
  const runId = `watch-model/${runNumber}`;
  const seen: SequencedEvent[] = [];
  // The watcher joins before the run's first event, as an SSE route opened with the run would.
  const watching = (async () => {
    for await (const event of runtime.bus.watch(runId)) seen.push(event);
  })();
  const previous = process.env.R90D_SECRET;
  process.env.R90D_SECRET = ENV_SECRET;
  const controller = new AbortController();
  let result: Awaited<ReturnType<typeof runtime.runAgentLoop>> | undefined;
  let thrown: unknown;
  try {
    result = await runtime.runAgentLoop({
      runId,
      config: {
        baseUrl: server.baseUrl,
        apiKey: API_KEY,
        // A host's own header, read from its environment for the run.
        headers: { "x-portkey-api-key": process.env.R90D_SECRET ?? "" },
        model: "m",
        maxRetries: 2,
        contextLength: 8192,
      },
      messages: [{ role: "user", content: "Work it out." }],
      tools: TOOLS,
      parallel: spec.parallel,
      signal: controller.signal,
      // The host's stop button, pressed as a step's request goes out.
      onEvent: (event) => {
        if (event.kind === "turn" && event.step === spec.abortAt) controller.abort();
      },
      dispatch: ({ name, args }) => {
        const n = (args as { n?: number }).n ?? 0;
        // A failing HTTP tool quotes the request it sent, credentials and all.
        if (name === "fail")
          throw new Error(
            `fail cannot do ${n}: 401 for Authorization: Bearer ${API_KEY}, x-portkey-api-key: ${ENV_SECRET}`,
          );
        if (name === "echo" && n % 2 === 1)
          return { ok: false, error: new Error(`echo refused ${n}; key ${API_KEY}`) };
        return name === "add" ? String(n + 1) : `echo ${n}`;
      },
      beforeStep: (_messages, step) =>
        spec.stopBefore !== undefined && step === spec.stopBefore ? { stop: true } : undefined,
    });
  } catch (error) {
    thrown = error;
  } finally {
    if (previous === undefined) delete process.env.R90D_SECRET;
    else process.env.R90D_SECRET = previous;
  }
  await watching;
  const run = result ?? failedRun(thrown);
  if (!run) throw thrown;
  const stopped = spec.abortAt !== undefined && controller.signal.aborted;
  // A run neither stopped nor stopped by its plan before the failing step fails.
  const failed = !stopped && thrown !== undefined;
  if (!stopped && !fail) expect(thrown).toBeUndefined();
  if (failed) expect(fail).toBe(true);

  // The watcher read the run's whole history, ending in `done`.
  const history = runtime.bus.history(runId);
  expect(seen).toEqual(history);
  expect(seen.at(-1)?.kind).toBe("done");
  const events = seen;

  // No credential anywhere a watcher can read.
  const wire = JSON.stringify(events);
  expect(wire).not.toContain(API_KEY);
  expect(wire).not.toContain(ENV_SECRET);

  // Step by step, fold shows what the transcript holds.
  const turns = assistantTurns(run.messages);
  const steps = bySteps(events);
  if (result) expect(steps).toHaveLength(result.steps);
  // A stopped or failed step's request may have gone out with nothing answered: no message of its own.
  expect(turns.length).toBeLessThanOrEqual(steps.length);
  expect(turns.length).toBeGreaterThanOrEqual(steps.length - (stopped || failed ? 1 : 0));
  const tools = run.messages.filter((message) => message.role === "tool");
  turns.forEach((_turn, index) => {
    const stepEvents = steps[index] as SequencedEvent[];
    const message = turns[index] as ChatMessage & {
      reasoning_content?: string;
      reasoning?: string;
      tool_calls?: { id: string; function: { name: string; arguments: string } }[];
    };
    const blocks = fold(stepEvents);
    const text = blocks.flatMap((block) => (block.kind === "text" ? [block.text] : [])).join("");
    const reasoning = blocks.flatMap((block) => (block.kind === "reasoning" ? [block.text] : [])).join("");
    expect(text).toBe(textOf(message.content));
    // The transcript keeps a tool step's reasoning (in the field it came in); the answer's is the turn's.
    const kept =
      result && index === turns.length - 1 && result.stopReason === "answered"
        ? result.turn.reasoning
        : (message.reasoning_content ?? message.reasoning);
    if (kept !== undefined) expect(reasoning).toBe(kept);
    else expect((message.tool_calls ?? []).length === 0 || reasoning === "").toBe(true);
    const cards = blocks.flatMap((block) => (block.kind === "tool" ? [block] : []));
    expect(cards.map((card) => [card.id, card.name, card.args])).toEqual(
      (message.tool_calls ?? []).map((call) => [call.id, call.function.name, call.function.arguments]),
    );
    for (const card of cards) {
      const answer = tools.find((tool) => tool.role === "tool" && tool.tool_call_id === card.id);
      expect(card.result?.content).toBe(textOf(answer?.content));
    }
  });

  // Every tool call: one start, one end, and the run's own count of calls.
  const starts = events.filter((event) => event.kind === "tool-call").map((event) => event.id);
  const ends = events.filter((event) => event.kind === "tool-result").map((event) => event.id);
  expect(new Set(starts).size).toBe(starts.length);
  expect([...ends].sort()).toEqual([...starts].sort());
  expect(starts).toEqual(run.toolCalls.map((call) => call.id));

  if (!result) {
    // A stopped or failed run: its watcher is told it failed (or was stopped), and the run ended.
    expect(runMetrics(events).outcome).toBe(stopped ? "stopped" : "failed");
    expect(events.some((event) => event.kind === "error")).toBe(true);
    // Every turn ends in exactly one usage event, the stopped or failed one too (marked which),
    // before the next turn or the run's error; and the events add up to what the run says it cost.
    for (const step of steps) expect(step.filter((event) => event.kind === "usage")).toHaveLength(1);
    const usages = events.flatMap((event) => (event.kind === "usage" ? [event.turn] : []));
    expect(usages).toHaveLength(steps.length);
    const end = usages.at(-1);
    expect(end?.stopped).toBe(stopped ? true : undefined);
    expect(end?.failed).toBe(failed ? true : undefined);
    expect(end?.finishReason).toBe("");
    for (const turn of usages.slice(0, -1)) expect(turn.stopped ?? turn.failed).toBeUndefined();
    expect(runMetrics(events).turns).toBe(events.filter((event) => event.kind === "turn").length);
    expect(runMetrics(events).tokens).toEqual(run.usage);
    runtime.close();
    return;
  }
  // What the events add up to is what the run says it cost.
  const metrics = runMetrics(events, { contextLength: 8192 });
  const last = events.filter((event) => event.kind === "usage").at(-1);
  expect(last?.kind === "usage" ? last.usage : undefined).toEqual(result.usage);
  expect(metrics.tokens).toEqual(result.usage);
  const {
    toolsLoaded: _loaded,
    redundantLoads: _redundant,
    unknownToolNames: _unknown,
    ...own
  } = result.metrics;
  const untimed = (value: object) => {
    const copy: Record<string, unknown> = { ...value };
    for (const key of ["meanFirstTokenMs", "slowestTurn", "toolMs", "prefillMs", "decodeMs", "outcome"])
      delete copy[key];
    return copy;
  };
  expect(untimed(metrics)).toEqual(untimed(own));
  expect(metrics.outcome).toBe("completed");
  expect(metrics.turns).toBe(result.steps);
  expect(metrics.toolCalls).toBe(run.toolCalls.length);
  expect(metrics.toolErrors).toBe(run.toolCalls.filter((call) => !call.ok).length);
  runtime.close();
}

describe("a watcher of runAgentLoop against the run itself", () => {
  it(
    "folds into the transcript, adds up to the run's metrics, pairs every call and holds no credential",
    async () => {
      await fc.assert(
        fc.asyncProperty(runSpec, check),
        propertyRuns(RUNS, {
          ...(SEED === undefined ? {} : { seed: SEED }),
        }),
      );
    },
    propertyTimeout(60_000),
  );
});

describe("a watcher of a run its host stopped", () => {
  // A run given a `runId` closes its bus itself; for a run its signal stopped it emitted `error`
  // then a plain `done`, so a watcher's runMetrics read "failed" where the events package documents
  // `{ kind: "done", stopped: true }` — outcome "stopped" — for a run its host or user stopped.
  it("reads the outcome stopped, not failed", async () => {
    queue = [{ content: "never read", chunkDelayMs: 50 }];
    const runtime = createRuntime();
    const controller = new AbortController();
    const runId = "watch-model/stopped";
    const seen: SequencedEvent[] = [];
    const watching = (async () => {
      for await (const event of runtime.bus.watch(runId)) seen.push(event);
    })();
    const run = runtime.runAgentLoop({
      runId,
      config: { baseUrl: server.baseUrl, apiKey: API_KEY, model: "m" },
      messages: [{ role: "user", content: "Stop me." }],
      signal: controller.signal,
      onEvent: (event) => {
        if (event.kind === "turn") controller.abort();
      },
      dispatch: () => "unused",
    });
    await expect(run).rejects.toBeDefined();
    await watching;
    runtime.close();
    expect(seen.at(-1)?.kind).toBe("done");
    expect(runMetrics(seen).outcome).toBe("stopped");
  });
});
