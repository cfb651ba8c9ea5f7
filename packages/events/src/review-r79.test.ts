// Review round r79 (events): each test fails on the code before its fix.
import { describe, expect, it } from "vitest";
import { runMetrics } from "./run-metrics.js";
import type { RunEvent } from "./types.js";

const turn = (prompt: number) =>
  ({
    kind: "usage",
    usage: { prompt, completion: 10, total: prompt + 10, cached: 0 },
    turn: { usage: { prompt, completion: 10, total: prompt + 10, cached: 0 }, finishReason: "stop" },
  }) as RunEvent;

describe("R79E-1: runMetrics counts nothing of an event that throws part-way through being read", () => {
  it("a usage event whose turn throws when read is no turn", () => {
    const unreadable = {
      kind: "usage",
      usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
      get turn(): never {
        throw new Error("gone");
      },
    } as unknown as RunEvent;
    const metrics = runMetrics([turn(100), unreadable, { kind: "done" }]);
    // Before: turns 2 (the unreadable one counted as a turn of nothing).
    expect(metrics.turns).toBe(1);
    expect(metrics.tokens).toEqual({ prompt: 100, completion: 10, total: 110, cached: 0 });
    expect(metrics.outcome).toBe("completed");
  });

  it("a turn whose completion count throws adds none of its tokens, and is no largest prompt", () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    const half = {
      kind: "usage",
      usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
      turn: {
        usage: {
          prompt: 5000,
          get completion(): never {
            throw new Error("gone");
          },
          total: 5010,
          cached: 0,
        },
        finishReason: "length",
        timings: proxy,
      },
    } as unknown as RunEvent;
    const metrics = runMetrics([turn(100), half], { contextLength: 8192 });
    // Before: turns 2, prompt 5100 and the largest prompt the half-read turn's 5000.
    expect(metrics.turns).toBe(1);
    expect(metrics.tokens.prompt).toBe(100);
    expect(metrics.cutOff).toBe(0);
    expect(metrics.largestPrompt).toEqual({ turn: 1, tokens: 100, share: 100 / 8192 });
  });

  it("reads fields inherited from a prototype as before, each once", () => {
    let reads = 0;
    class Usage {
      get prompt() {
        reads++;
        return 300;
      }
      completion = 20;
      total = 320;
      cached = 0;
    }
    const event = {
      kind: "usage",
      usage: {},
      turn: { usage: new Usage(), finishReason: "stop" },
    } as unknown as RunEvent;
    const metrics = runMetrics([event]);
    expect(metrics.tokens).toEqual({ prompt: 300, completion: 20, total: 320, cached: 0 });
    expect(metrics.largestPrompt).toEqual({ turn: 1, tokens: 300 });
    expect(reads).toBe(1);
  });
});
