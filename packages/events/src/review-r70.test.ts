// Review r70: counts and times no server reports (negative, NaN, past 2^53) in runMetrics and fold.

import { describe, expect, it } from "vitest";
import { fold } from "./fold.js";
import { runMetrics } from "./run-metrics.js";
import type { RunEvent } from "./types.js";

const usage = (prompt: number, completion: number, timings: Record<string, number> = {}): RunEvent =>
  ({
    kind: "usage",
    usage: { prompt, completion, total: prompt + completion, cached: 0 },
    turn: {
      usage: { prompt, completion, total: prompt + completion, cached: 0 },
      finishReason: "stop",
      timings,
    },
  }) as RunEvent;

describe("R70E-1: runMetrics counts no negative or out-of-range number", () => {
  it("a -1 (a server's 'not counted') is not subtracted from the run's totals and times", () => {
    const metrics = runMetrics([
      usage(800, 40, { prefillMs: 120, decodeMs: 300, firstTokenMs: 130 }),
      usage(-1, -1, { prefillMs: -1, decodeMs: -1, firstTokenMs: -1, totalMs: -1 }),
      { kind: "tool-result", id: "c1", name: "read_file", ok: true, content: "", ms: 4 },
      { kind: "tool-result", id: "c2", name: "read_file", ok: true, content: "", ms: -50 },
    ]);
    // Before: prompt 799, completion 39, prefillMs 119, decodeMs 299, toolMs -46, meanFirstTokenMs 64.5.
    expect(metrics.turns).toBe(2);
    expect(metrics.tokens).toEqual({ prompt: 800, completion: 40, total: 840, cached: 0 });
    expect(metrics.prefillMs).toBe(120);
    expect(metrics.decodeMs).toBe(300);
    expect(metrics.meanFirstTokenMs).toBe(130);
    expect(metrics.toolMs).toBe(4);
    expect(metrics.largestPrompt).toEqual({ turn: 1, tokens: 800 });
  });

  it("numbers past 2^53 are not summed into Infinity", () => {
    const metrics = runMetrics([
      usage(1e308, 1e308, { decodeMs: 1e308 }),
      usage(1e308, 0, { decodeMs: 1e308 }),
      usage(10, 5),
    ]);
    expect(metrics.tokens.prompt).toBe(10);
    expect(metrics.tokens.completion).toBe(5);
    expect(Number.isFinite(metrics.tokens.total)).toBe(true);
    expect(metrics.decodeMs).toBeUndefined();
    expect(JSON.parse(JSON.stringify(metrics))).toEqual(metrics);
  });

  it("zero is a reading, as before", () => {
    const metrics = runMetrics([usage(0, 0, { prefillMs: 0 })], { contextLength: 8192 });
    expect(metrics.prefillMs).toBe(0);
    expect(metrics.tokens.prompt).toBe(0);
  });
});

describe("R70E-2: fold draws no tool time that is not one", () => {
  it("NaN, a negative and Infinity are left off the card; 0 and a time are kept", () => {
    const cards = [Number.NaN, -3, Number.POSITIVE_INFINITY, 0, 12].map((ms, i) =>
      fold([
        { kind: "tool-call", id: `c${i}`, name: "f", args: "{}", seq: 1 },
        { kind: "tool-result", id: `c${i}`, name: "f", ok: true, content: "x", ms, seq: 2 },
      ] as (RunEvent & { seq: number })[]),
    );
    expect(cards.map((blocks) => (blocks[0] as { result?: { ms?: number } }).result)).toEqual([
      { ok: true, content: "x" },
      { ok: true, content: "x" },
      { ok: true, content: "x" },
      { ok: true, content: "x", ms: 0 },
      { ok: true, content: "x", ms: 12 },
    ]);
  });
});
