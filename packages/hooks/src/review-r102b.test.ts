// r102b: a runner's answer that is revoked once it was taken. Promise resolution reads an answer's
// `then` when the runner returns it; a runner that hands out a revocable Proxy of its list and
// revokes it in a microtask (its own cleanup, queued before it returned) leaves a list that throws
// from `Array.isArray` by the time it is read. Before, that TypeError rejected gather, notify and
// consult, each documented never to reject for a hook's sake; now it is a note, as every other answer
// that is no list is, and the other event's hooks still add their context.
import { describe, expect, it } from "vitest";
import { consult, gather, type HookRunner, notify } from "./index.js";

const session = { session: { id: "s" } };

/** Answers `outcomes` behind a Proxy it revokes as soon as the current job ends. */
function revokedOnceTaken(outcomes: object[]): object[] {
  const { proxy, revoke } = Proxy.revocable(outcomes, {});
  queueMicrotask(revoke);
  return proxy;
}

describe("a runner's list revoked once it was taken", () => {
  it("is a note in gather, and the other event's hooks still add their context", async () => {
    const run: HookRunner<typeof session> = (event) =>
      event === "sessionStart"
        ? revokedOnceTaken([{ id: "greeter", context: "Welcome back." }])
        : [{ id: "memory", context: "Ships Friday." }];
    const gathered = await gather(run, ["sessionStart", "beforeTurn"], { prompt: "When?" }, session);
    expect(gathered.notes).toEqual([
      "The sessionStart hook runner answered a revoked Proxy instead of a list of outcomes; it was ignored.",
    ]);
    expect(gathered.context).toBe('<context hook="memory">\nShips Friday.\n</context>');
  });

  it("is a note in notify and consult, and a fold with no veto goes ahead", async () => {
    const run = () => revokedOnceTaken([{ id: "keeper", veto: true }]);
    const told = await notify(run, "afterTurn", { prompt: "When?", reply: "Friday." }, session);
    expect(told).toEqual({
      outcomes: [],
      notes: [
        "The afterTurn hook runner answered a revoked Proxy instead of a list of outcomes; it was ignored.",
      ],
    });
    const consulted = await consult(run, { messages: [] }, session);
    expect(consulted.proceed).toBe(true);
    expect(consulted.notes).toEqual([
      "The beforeCompact hook runner answered a revoked Proxy instead of a list of outcomes; it was ignored.",
    ]);
  });
});
