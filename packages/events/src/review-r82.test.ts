// Review round r82 (events): each test fails on the code before its fix.
import { describe, expect, it } from "vitest";
import { type RunEvent, runMetrics } from "./index.js";

const polluted = Object.prototype as Record<string, unknown>;

describe("R82E-1: runMetrics read a non-object turn's fields through a polluted Object.prototype", () => {
  it("a turn, usage or timings that is a number or a string has no fields", () => {
    const fields = {
      finishReason: "length",
      cacheBroken: true,
      cacheBreakReason: "tools-changed",
      usage: { prompt: 900, completion: 9, total: 909, cached: 0 },
      prompt: 700,
      totalMs: 5000,
      kind: "done",
      stopped: true,
    };
    try {
      Object.assign(polluted, fields);
      const events = [
        { kind: "usage", turn: 5 },
        { kind: "usage", turn: "a turn" },
        { kind: "usage", turn: { usage: 7, timings: "slow" } },
        42,
        "done",
      ] as unknown as RunEvent[];
      const metrics = runMetrics(events);
      expect(metrics.turns).toBe(3);
      expect(metrics.cutOff).toBe(0);
      expect(metrics.cacheBreaks).toBe(0);
      expect(metrics.tokens).toEqual({ prompt: 0, completion: 0, total: 0, cached: 0 });
      expect(metrics.slowestTurn).toBeUndefined();
      expect(metrics.largestPrompt).toBeUndefined();
      expect(metrics.outcome).toBe("unfinished");
    } finally {
      for (const field of Object.keys(fields)) delete polluted[field];
    }
  });
});
