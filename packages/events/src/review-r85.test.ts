// Review round r85 (events): each test fails on the code before its fix.
import { describe, expect, it } from "vitest";
import { type RunEvent, runMetrics } from "./index.js";

const polluted = Object.prototype as Record<string, unknown>;

const EVENTS = [
  {
    kind: "usage",
    turn: { usage: { prompt: 100, completion: 10, total: 110, cached: 0 }, timings: { totalMs: 50 } },
  },
  { kind: "tool-result", id: "c1", name: "clock", ok: true, content: "12:00", ms: 7 },
  { kind: "done" },
] as unknown as RunEvent[];

describe("R85E-1: runMetrics' own totals were read through a polluted Object.prototype", () => {
  it("an inherited toolMs, slowestTurn, largestPrompt, prefillMs, decodeMs or reasoningTokens is no run's", () => {
    const clean = runMetrics(EVENTS, { contextLength: 1000 });
    expect(clean.toolMs).toBe(7);
    expect(clean.slowestTurn).toEqual({ turn: 1, ms: 50 });
    expect(clean.largestPrompt).toEqual({ turn: 1, tokens: 100, share: 0.1 });
    const values: [string, unknown][] = [
      ["toolMs", "P0LLUTED"],
      ["slowestTurn", { turn: 9, ms: 1e9 }],
      ["largestPrompt", { turn: 9, tokens: 1e9 }],
      ["prefillMs", 5],
      ["decodeMs", 5],
      ["reasoningTokens", 5],
    ];
    for (const [name, value] of values) {
      polluted[name] = value;
      let metrics: unknown;
      try {
        metrics = { ...runMetrics(EVENTS, { contextLength: 1000 }) };
      } finally {
        delete polluted[name];
      }
      // Before: toolMs "P0LLUTED7", slowestTurn and largestPrompt left unset (the inherited one
      // larger), a run's prefill time where it reported none.
      expect({ name, metrics }).toEqual({ name, metrics: { ...clean } });
    }
  });
});
