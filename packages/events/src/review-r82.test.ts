// Review round r82 (events): each test fails on the code before its fix.
import { describe, expect, it } from "vitest";
import { createBus, EventsError, type RunEvent, runMetrics } from "./index.js";

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

describe("R82E-2: emit took an event's kind from a polluted Object.prototype", () => {
  it("refuses an event with no kind of its own (nor a class's getter, which the stored copy left out)", () => {
    const bus = createBus();
    try {
      polluted.kind = "done";
      expect(() => bus.emit("r", {} as RunEvent)).toThrow(EventsError);
      expect(bus.history("r")).toEqual([]);
      class Output {
        get kind(): string {
          return "output";
        }
        text = "hi";
      }
      expect(() => bus.emit("r", new Output() as unknown as RunEvent)).toThrow(EventsError);
      expect(bus.emit("r", { kind: "output", text: "hi" }).kind).toBe("output");
    } finally {
      delete polluted.kind;
    }
  });
});

describe("R82E-3: runMetrics took contextLength from a polluted Object.prototype", () => {
  it("measures no prompt's share against an inherited window", () => {
    const events = [
      { kind: "usage", turn: { usage: { prompt: 500, completion: 1, total: 501 } } },
    ] as RunEvent[];
    try {
      polluted.contextLength = 1000;
      expect(runMetrics(events, {}).largestPrompt).toEqual({ turn: 1, tokens: 500 });
      class Options {
        get contextLength(): number {
          return 2000;
        }
      }
      expect(runMetrics(events, new Options()).largestPrompt).toEqual({ turn: 1, tokens: 500, share: 0.25 });
    } finally {
      delete polluted.contextLength;
    }
  });
});
