// Review round r72: each test fails on the code before its fix.
import { describe, expect, it } from "vitest";
import { assembleContext, consult, gather } from "./index.js";

const input = { messages: [], from: 0, through: 2 };

describe("r72: consult with a signal that has aborted", () => {
  it("does not proceed when the run was stopped before the hooks ran, and never calls the runner", async () => {
    // Before: { proceed: true } with a note, so a host compacting its own way folded a stopped run.
    let called = 0;
    const controller = new AbortController();
    controller.abort();
    const consulted = await consult(
      () => {
        called++;
        return [];
      },
      input,
      {},
      { signal: controller.signal },
    );
    expect(consulted).toMatchObject({ proceed: false, stopped: true });
    expect(consulted.vetoedBy).toBeUndefined();
    expect(consulted.notes.join("\n")).toMatch(/stopped/);
    expect(called).toBe(0);
  });

  it("does not proceed when forced either: a stopped run folds nothing", async () => {
    const consulted = await consult(() => [], input, {}, { forced: true, signal: AbortSignal.abort() });
    expect(consulted).toMatchObject({ proceed: false, stopped: true });
  });

  it("does not proceed when the run is stopped while the hooks run, and aborts the runner's signal", async () => {
    const controller = new AbortController();
    let runnerSignal: AbortSignal | undefined;
    setTimeout(() => controller.abort(), 20);
    const consulted = await consult(
      (_event, _input, _context, signal) => {
        runnerSignal = signal;
        return new Promise(() => {});
      },
      input,
      {},
      { signal: controller.signal, timeoutMs: 5000 },
    );
    expect(consulted).toMatchObject({ proceed: false, stopped: true });
    expect(runnerSignal?.aborted).toBe(true);
  });

  it("still proceeds, with no stopped field, for a signal that never aborts", async () => {
    const consulted = await consult(
      () => [{ id: "ok" }],
      input,
      {},
      { signal: new AbortController().signal },
    );
    expect(consulted.proceed).toBe(true);
    expect("stopped" in consulted).toBe(false);
  });
});

describe("r72: a hook's own maxTokens that is not a whole number of tokens above 0", () => {
  const text = "x".repeat(400);
  const bad: [string, unknown][] = [
    ["NaN", Number.NaN],
    ["-1", -1],
    ["1.5", 1.5],
    ['"10"', "10"],
    ["Infinity", Number.POSITIVE_INFINITY],
  ];

  it.each(bad)(
    "maxTokens %s is read as left out, with a note naming the hook and the field",
    async (_, value) => {
      // Before: each was dropped (or, 1.5, read as a limit of 6 characters) without a word.
      const outcome = { id: "recall", name: "Recall", context: text, maxTokens: value };
      const gathered = await gather(() => [outcome], "beforeTurn", { prompt: "q", turn: 0 }, {});
      expect(gathered.context).toContain(text);
      expect(gathered.notes).toHaveLength(1);
      expect(gathered.notes[0]).toMatch(
        /^Hook Recall's maxTokens was .+, not a whole number of tokens above 0; it was read as left out\.$/,
      );
      const notes: string[] = [];
      expect(assembleContext([outcome], undefined, { onNote: (n) => notes.push(n) })).toContain(text);
      expect(notes).toEqual(gathered.notes);
    },
  );

  it("reads 0 and null as none given, without a note (JSON's 'no value'), and a whole number as the limit", async () => {
    for (const value of [0, null]) {
      const gathered = await gather(
        () => [{ id: "recall", context: text, maxTokens: value as never }],
        "beforeTurn",
        { prompt: "q", turn: 0 },
        {},
      );
      expect(gathered.context).toContain(text);
      expect(gathered.notes).toEqual([]);
    }
    const held = await gather(
      () => [{ id: "recall", context: text, maxTokens: 10 }],
      "beforeTurn",
      { prompt: "q", turn: 0 },
      {},
    );
    expect(held.context).not.toContain(text);
    expect(held.notes[0]).toMatch(/its own limit of 10 tokens/);
  });
});
