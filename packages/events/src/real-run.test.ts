import { describe, expect, it } from "vitest";
import { createBus } from "./bus.js";
import { fold } from "./fold.js";
import { runMetrics } from "./run-metrics.js";
import type { RunEvent } from "./types.js";

// What @loopwright/loop's runAgentLoop handed onEvent for a real two-step run over HTTP against the
// testkit (recorded 2026-11-29, forwarded to emit, seq taken off; the host added `done`): step 1
// reasons, then calls `add` (answered) and `lookup` (its dispatch threw); step 2 answers and is cut
// off at the ceiling. Only the two turns' timings are written in by hand, since measured ones
// differ per run. The loop cannot be a devDependency here (it depends on this package, and turbo
// refuses the cycle), so its output is kept as data: a shape the loop changes shows up in its own
// tests of `RunEvent`, which it imports from this package.
const RECORDED: RunEvent[] = [
  { kind: "turn", step: 1 },
  { kind: "thinking", text: "Add, t" },
  { kind: "thinking", text: "hen lo" },
  { kind: "thinking", text: "ok it " },
  { kind: "thinking", text: "up." },
  {
    kind: "usage",
    usage: { prompt: 120, completion: 30, total: 150, cached: 0 },
    turn: {
      usage: { prompt: 120, completion: 30, total: 150, cached: 0, uncached: 120, reasoningTokens: 8 },
      finishReason: "tool_calls",
      timings: { totalMs: 412, firstTokenMs: 95 },
      context: { system: 3, tools: 116, history: 1, toolResults: 0, total: 120 },
      toolsDeclared: 2,
      toolSchemaTokens: 59,
    },
  },
  { kind: "tool-call", id: "call_1", name: "add", args: '{"a":2,"b":3}' },
  { kind: "tool-result", id: "call_1", name: "add", ok: true, content: "5" },
  { kind: "tool-call", id: "call_2", name: "lookup", args: '{"q":"five"}' },
  { kind: "tool-result", id: "call_2", name: "lookup", ok: false, content: "Error: lookup is offline" },
  { kind: "turn", step: 2 },
  { kind: "output", text: "2 + 3 is " },
  { kind: "output", text: "5, and th" },
  { kind: "output", text: "e lookup" },
  {
    kind: "usage",
    usage: { prompt: 300, completion: 42, total: 342, cached: 120 },
    turn: {
      usage: { prompt: 180, completion: 12, total: 192, cached: 120, uncached: 60 },
      finishReason: "length",
      timings: { totalMs: 230, firstTokenMs: 41 },
      context: { system: 4, tools: 140, history: 22, toolResults: 14, total: 180 },
      toolsDeclared: 2,
      toolSchemaTokens: 115,
    },
  },
  { kind: "notice", text: "The reply was cut off at the token ceiling (maxTokens)." },
  { kind: "done" },
];

/** The run as a watcher reads it back: every event through a bus, with its seq. */
function watched() {
  const bus = createBus();
  for (const event of RECORDED) bus.emit("run", event);
  return bus.history("run");
}

describe("a run as the loop emits it", () => {
  it("folds into reasoning, two tool cards with their results, the answer and the cut-off notice", () => {
    expect(fold(watched())).toEqual([
      { kind: "reasoning", text: "Add, then look it up." },
      { kind: "tool", id: "call_1", name: "add", args: '{"a":2,"b":3}', result: { ok: true, content: "5" } },
      {
        kind: "tool",
        id: "call_2",
        name: "lookup",
        args: '{"q":"five"}',
        result: { ok: false, content: "Error: lookup is offline" },
      },
      { kind: "text", text: "2 + 3 is 5, and the lookup" },
      { kind: "notice", text: "The reply was cut off at the token ceiling (maxTokens)." },
    ]);
  });

  it("adds up to the run's own totals, with the failed tool, the cut-off turn and the cache hits", () => {
    const events = watched();
    const metrics = runMetrics(events, { contextLength: 1000 });
    // The totals on the last usage event are the run's so far: the per-turn sums must agree.
    const last = events.filter((e) => e.kind === "usage").at(-1);
    expect(last?.kind === "usage" && last.usage).toEqual(metrics.tokens);
    expect(metrics).toEqual({
      turns: 2,
      toolCalls: 2,
      toolErrors: 1,
      cutOff: 1,
      cacheBreaks: 0,
      notices: 1,
      errors: 0,
      tokens: { prompt: 300, completion: 42, total: 342, cached: 120 },
      outcome: "completed",
      reasoningTokens: 8,
      cacheHitRatio: 120 / 300,
      slowestTurn: { turn: 1, ms: 412 },
      meanFirstTokenMs: 68,
      largestPrompt: { turn: 2, tokens: 180, share: 0.18 },
      toolErrorsByName: { lookup: 1 },
    });
  });

  it("reads a run the host marked failed, without the done the loop never sends", () => {
    const failed: RunEvent[] = [...RECORDED.slice(0, -2), { kind: "error", message: "stopped" }];
    const metrics = runMetrics(failed);
    expect(metrics.outcome).toBe("failed");
    expect(metrics.turns).toBe(2);
    expect(fold(failed).at(-1)).toEqual({ kind: "error", message: "stopped" });
  });
});
