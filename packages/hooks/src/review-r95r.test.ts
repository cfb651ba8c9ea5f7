// r95c handled a hook's `context` that is a promise (its await forgotten) only in an answer read in
// time from a hook that did not fail. A failed outcome holding one (`{ ok: false, context:
// res.text() }`), or an answer that came after the timeout holding one, left a rejection with no
// handler, which ends a Node host — though the README says it is handled like an outcome that is a
// promise, which is handled in a late answer too.
import { describe, expect, it } from "vitest";
import { gather, notify } from "./index.js";
import { unhandledRejections } from "./test-support/unhandled.js";

const session = { session: { id: "s" } };

describe("a context promise that rejects never reaches the process", () => {
  it("is handled on a hook that failed, whose note stays the failure's", async () => {
    const unhandled = unhandledRejections();
    const gathered = await gather(
      () => [
        { id: "recall", ok: false, context: Promise.reject(new Error("recall failed")) as unknown as string },
      ],
      "beforeTurn",
      { prompt: "p" },
      session,
    );
    expect(gathered.notes).toEqual(["Hook recall (beforeTurn) added nothing: it failed."]);
    expect(await unhandled.settled()).toEqual([]);
  });

  it("is handled in an answer that came after the timeout", async () => {
    const unhandled = unhandledRejections();
    let answered!: () => void;
    const late = new Promise<void>((resolve) => {
      answered = resolve;
    });
    const gathered = await gather(
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 30));
        setTimeout(answered, 0);
        return [{ id: "recall", context: Promise.reject(new Error("late recall")) as unknown as string }];
      },
      "beforeTurn",
      { prompt: "p" },
      session,
      { timeoutMs: 1 },
    );
    expect(gathered.notes).toEqual([
      "The beforeTurn hooks could not be run: they did not answer within 1 ms.",
    ]);
    await late;
    expect(await unhandled.settled()).toEqual([]);
  });

  it("is handled by notify on a failed hook too", async () => {
    const unhandled = unhandledRejections();
    const report = await notify(
      () => [
        { id: "log", error: "down", context: Promise.reject(new Error("log failed")) as unknown as string },
      ],
      "afterTurn",
      {},
      session,
    );
    expect(report.notes).toEqual(["Hook log (afterTurn) added nothing: it failed: down."]);
    expect(await unhandled.settled()).toEqual([]);
  });
});
