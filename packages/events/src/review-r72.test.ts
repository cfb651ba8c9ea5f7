// Review r72 (events): runMetrics' contextLength, the one option it reads.

import { describe, expect, it } from "vitest";
import { runMetrics } from "./run-metrics.js";
import type { RunEvent } from "./types.js";

const events: RunEvent[] = [
  {
    kind: "usage",
    usage: { prompt: 800, completion: 40, total: 840, cached: 0 },
    turn: { usage: { prompt: 800, completion: 40, total: 840, cached: 0 }, finishReason: "stop" },
  },
  { kind: "done" },
];

describe("R72E-1: runMetrics refuses a contextLength that is no window", () => {
  for (const contextLength of [Number.NaN, -8192, 0, Number.POSITIVE_INFINITY, "8192", null]) {
    it(`contextLength ${String(contextLength)} is EventsError invalid-argument naming it, not a run with no share`, () => {
      expect(() => runMetrics(events, { contextLength } as never)).toThrow(
        expect.objectContaining({
          name: "EventsError",
          code: "invalid-argument",
          message: expect.stringContaining("contextLength"),
        }),
      );
    });
  }

  it("a contextLength that throws when read is EventsError invalid-argument, the error on cause", () => {
    const options = {
      get contextLength(): number {
        throw new Error("boom");
      },
    };
    let caught: unknown;
    try {
      runMetrics(events, options);
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ name: "EventsError", code: "invalid-argument" });
    expect((caught as Error).cause).toEqual(new Error("boom"));
  });

  it("a revoked Proxy as options is EventsError invalid-argument", () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(() => runMetrics(events, proxy)).toThrow(expect.objectContaining({ code: "invalid-argument" }));
  });

  it("a window of whole tokens, or none, is read as before", () => {
    expect(runMetrics(events, { contextLength: 8192 }).largestPrompt).toEqual({
      turn: 1,
      tokens: 800,
      share: 800 / 8192,
    });
    expect(runMetrics(events, {}).largestPrompt).toEqual({ turn: 1, tokens: 800 });
    // The loop takes any whole number as config.contextLength and hands it on.
    expect(runMetrics(events, { contextLength: 1e308 }).largestPrompt?.share).toBe(800 / 1e308);
    expect(runMetrics(events, { contextLength: undefined }).largestPrompt).toEqual({ turn: 1, tokens: 800 });
  });
});
