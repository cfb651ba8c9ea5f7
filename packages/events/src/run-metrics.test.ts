import { describe, expect, it } from "vitest";
import { EventsError } from "./errors.js";
import { runMetrics } from "./run-metrics.js";
import type { RunEvent, TurnMetrics } from "./types.js";

const usage = (turn: Partial<TurnMetrics> & { usage: TurnMetrics["usage"] }): RunEvent => ({
  kind: "usage",
  usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
  turn: { finishReason: "stop", ...turn },
});

describe("runMetrics", () => {
  it("has only counts, zero tokens and an outcome for a run that reported nothing", () => {
    expect(runMetrics([])).toEqual({
      turns: 0,
      toolCalls: 0,
      toolErrors: 0,
      cutOff: 0,
      cacheBreaks: 0,
      notices: 0,
      errors: 0,
      tokens: { prompt: 0, completion: 0, total: 0, cached: 0 },
      outcome: "unfinished",
    });
  });

  it("counts tools and cache-break reasons by any name, toString and __proto__ included", () => {
    const failed = (name: string): RunEvent => ({
      kind: "tool-result",
      id: name,
      name,
      ok: false,
      content: "no",
    });
    const metrics = runMetrics([
      failed("toString"),
      failed("__proto__"),
      failed("__proto__"),
      failed("constructor"),
      usage({
        usage: { prompt: 1, completion: 1, total: 2, cached: 0 },
        cacheBroken: true,
        cacheBreakReason: "constructor" as TurnMetrics["cacheBreakReason"],
      }),
    ]);
    expect(Object.entries(metrics.toolErrorsByName ?? {})).toEqual([
      ["toString", 1],
      ["__proto__", 2],
      ["constructor", 1],
    ]);
    expect(JSON.stringify(metrics.cacheBreaksByReason)).toBe('{"constructor":1}');
  });

  it("adds a run up: tokens, cache ratio and breaks, times, slowest turn, drafts, largest prompt", () => {
    const events: RunEvent[] = [
      { kind: "turn", step: 1 },
      usage({
        usage: { prompt: 1000, completion: 50, total: 1050, cached: 0, uncached: 1000, reasoningTokens: 10 },
        timings: { prefillMs: 400, decodeMs: 100, firstTokenMs: 420, draftTokens: 20, draftAccepted: 15 },
      }),
      { kind: "tool-call", id: "a", name: "read", args: "{}" },
      { kind: "tool-result", id: "a", name: "read", ok: false, content: "no", ms: 30 },
      { kind: "tool-call", id: "b", name: "read", args: "{}" },
      { kind: "tool-result", id: "b", name: "read", ok: false, content: "no", ms: 12 },
      usage({
        usage: { prompt: 3000, completion: 100, total: 3100, cached: 1000, uncached: 2000 },
        finishReason: "length",
        timings: { prefillMs: 900, decodeMs: 300, firstTokenMs: 920, draftTokens: 20, draftAccepted: 5 },
        cacheBroken: true,
        cacheBreakReason: "history-rewritten",
      }),
      { kind: "notice", text: "cut off" },
      { kind: "done" },
    ];
    const metrics = runMetrics(events, { contextLength: 4000 });
    expect(metrics).toMatchObject({
      turns: 2,
      toolCalls: 2,
      toolErrors: 2,
      cutOff: 1,
      cacheBreaks: 1,
      notices: 1,
      errors: 0,
      tokens: { prompt: 4000, completion: 150, total: 4150, cached: 1000 },
      outcome: "completed",
      reasoningTokens: 10,
      cacheHitRatio: 0.25,
      cacheBreaksByReason: { "history-rewritten": 1 },
      prefillMs: 1300,
      decodeMs: 400,
      toolMs: 42,
      slowestTurn: { turn: 2, ms: 1200 },
      meanFirstTokenMs: 670,
      draftAcceptance: 0.5,
      largestPrompt: { turn: 2, tokens: 3000, share: 0.75 },
      toolErrorsByName: { read: 2 },
    });
  });

  it("leaves the cache ratio out where no turn reported a cache count", () => {
    const metrics = runMetrics([usage({ usage: { prompt: 100, completion: 1, total: 101, cached: 0 } })]);
    expect(metrics.cacheHitRatio).toBeUndefined();
    expect(metrics.largestPrompt).toEqual({ turn: 1, tokens: 100 });
    expect(metrics.prefillMs).toBeUndefined();
    expect(metrics.slowestTurn).toBeUndefined();
  });

  it("reads a cache count sent without uncached, as a host with its own loop may send it", () => {
    const metrics = runMetrics([
      usage({ usage: { prompt: 100, completion: 1, total: 101, cached: 80 } }),
      usage({ usage: { prompt: 100, completion: 1, total: 101, cached: 0, uncached: 100 } }),
    ]);
    expect(metrics.cacheHitRatio).toBe(0.4);
  });

  it("calls a run with an error event failed, whether or not it ended", () => {
    expect(runMetrics([{ kind: "error", message: "x" }, { kind: "done" }]).outcome).toBe("failed");
    expect(runMetrics([{ kind: "output", text: "x" }]).outcome).toBe("unfinished");
  });

  it("calls a run whose done says it was stopped stopped, even after an error", () => {
    expect(
      runMetrics([
        { kind: "output", text: "x" },
        { kind: "done", stopped: true },
      ]).outcome,
    ).toBe("stopped");
    expect(
      runMetrics([
        { kind: "error", message: "x" },
        { kind: "done", stopped: true },
      ]).outcome,
    ).toBe("stopped");
    expect(runMetrics([{ kind: "done", stopped: "yes" } as never]).outcome).toBe("completed");
  });

  it("counts what it can read and skips what it cannot", () => {
    const metrics = runMetrics([{ kind: "usage" } as never, null as never, { kind: "mystery" } as never]);
    expect(metrics.turns).toBe(1);
    expect(metrics.tokens.prompt).toBe(0);
  });
});

describe("runMetrics refuses arguments of the wrong kind, and reads its options once", () => {
  const turn: RunEvent = usage({
    usage: { prompt: 800, completion: 40, total: 840, cached: 600, uncached: 200 },
    timings: { firstTokenMs: 120, draftTokens: 10, draftAccepted: 7 },
  });

  it.each([
    [
      "events that are null",
      null,
      undefined,
      /^runMetrics needs its events as a list \(or any iterable\) of run events, and was given null\./,
    ],
    [
      "events that are undefined (an unset variable)",
      undefined,
      undefined,
      /^runMetrics needs its events as a list \(or any iterable\) of run events, and was given undefined\. /,
    ],
    ["events that are a number", 5, undefined, /and was given number 5\./],
    ["events that are a function", () => [turn], undefined, /and was given a function\. /],
    [
      "options that are null",
      [turn],
      null,
      /^runMetrics takes its options as an object \(\{ contextLength\? \}\) or nothing, and was given null\./,
    ],
    ["options that are a string", [turn], "8192", /and was given a string\./],
  ])("throws an EventsError for %s", (_, events, options, said) => {
    let thrown: unknown;
    try {
      runMetrics(events as never, options as never);
    } catch (error) {
      thrown = error;
    }
    expect(EventsError.isInstance(thrown)).toBe(true);
    expect((thrown as EventsError).code).toBe("invalid-argument");
    expect((thrown as EventsError).message).toMatch(said);
  });

  it("reads contextLength once for the whole run, not inside each event", () => {
    let reads = 0;
    const options = {
      get contextLength() {
        reads++;
        return 1000;
      },
    };
    const larger = usage({ usage: { prompt: 900, completion: 1, total: 901, cached: 0 } });
    const metrics = runMetrics([turn, larger, { kind: "done" }], options);
    expect(reads).toBe(1);
    expect(metrics).toMatchObject({
      turns: 2,
      largestPrompt: { turn: 2, tokens: 900, share: 0.9 },
      meanFirstTokenMs: 120,
      draftAcceptance: 0.7,
    });
  });
});
