// Review round r72: each test fails on the code before its fix.
import { describe, expect, it } from "vitest";
import { consult } from "./index.js";

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
