// What a hook answered that its event does not read was dropped without a word: a guard returning
// `veto: true` from beforeTurn (thinking it refused the turn) was not noted at all; a hook whose
// `context` is a promise it forgot to await was noted as "an object", which said nothing of the
// fix, and a rejecting one was never handled, so its rejection ended a Node host with no handler.
import { describe, expect, it } from "vitest";
import { consult, gather, type HookOutcome } from "./index.js";
import { unhandledRejections } from "./test-support/unhandled.js";

const session = { session: { id: "s" } };

/** The beforeTurn hooks answering `outcomes`, gathered as a host gathers them. */
const beforeTurn = (...outcomes: HookOutcome[]) =>
  gather(() => outcomes, "beforeTurn", { prompt: "p" }, session);

describe("an answer the event does not read is noted, not dropped silently", () => {
  it("gather notes a veto: only beforeCompact hooks are asked for one", async () => {
    const gathered = await beforeTurn(
      { id: "guard", ok: true, veto: true },
      { id: "memory", context: "Ships Friday." },
    );
    expect(gathered.context).toContain("Ships Friday.");
    expect(gathered.notes).toEqual([
      "Hook guard (beforeTurn) answered veto: true, which only a beforeCompact hook's answer is read for; nothing was stopped.",
    ]);
  });

  it("consult still reads a beforeCompact veto, with no such note", async () => {
    const consulted = await consult(() => [{ id: "keeper", veto: true }], { messages: [] }, session);
    expect(consulted.proceed).toBe(false);
    expect(consulted.notes).toEqual(["Compaction skipped: keeper vetoed it."]);
  });

  it("notes no veto from a hook that failed, which vetoes nothing anywhere", async () => {
    const gathered = await beforeTurn({ id: "guard", ok: false, veto: true });
    expect(gathered.notes).toEqual(["Hook guard (beforeTurn) added nothing: it failed."]);
  });

  it("names a context that is a promise, and what to do about it", async () => {
    const pending = Promise.resolve("late");
    const gathered = await beforeTurn({ id: "recall", context: pending as unknown as string });
    expect(gathered.context).toBe("");
    expect(gathered.notes).toEqual([
      "Hook recall (beforeTurn) answered context that is a promise, not text (the hook should await its context before answering); it was ignored.",
    ]);
  });
});

describe("a context that is a rejected promise", () => {
  it("is handled: the rejection does not reach the process", async () => {
    const unhandled = unhandledRejections();
    const rejected = Promise.reject(new Error("recall failed"));
    const gathered = await beforeTurn({ id: "recall", context: rejected as unknown as string });
    expect(gathered.notes).toHaveLength(1);
    expect(await unhandled.settled()).toEqual([]);
  });
});
