/**
 * r102: a beforeCompact runner's list revoked once it was taken (a revocable Proxy of its list that
 * the runner revokes in a microtask, its own cleanup). The hooks package's `consult` reads such an
 * answer as no list, with a note, and the fold goes ahead; `vetoedBy`, documented never to throw,
 * threw the Proxy machinery's TypeError from its `Array.isArray`, and `runCompaction` with
 * `honourVeto` rejected with it — so the two no longer decided alike.
 */
import { describe, expect, it } from "vitest";
import type { CompactionPlan } from "./plan-compaction.js";
import { runCompaction, vetoedBy } from "./run-compaction.js";
import { messages, plan } from "./test-support/fold.js";

/** `outcomes` behind a Proxy revoked as soon as the current job ends. */
function revokedOnceTaken(outcomes: object[]): object[] {
  const { proxy, revoke } = Proxy.revocable(outcomes, {});
  queueMicrotask(revoke);
  return proxy;
}

describe("a beforeCompact runner's list revoked once it was taken", () => {
  it("vetoes nothing in vetoedBy, which does not throw", () => {
    const { proxy, revoke } = Proxy.revocable([{ id: "keeper", veto: true }], {});
    expect(vetoedBy(proxy)).toBe("keeper");
    revoke();
    expect(vetoedBy(proxy)).toBeUndefined();
  });

  it("lets runCompaction with honourVeto fold, as consult lets it", async () => {
    const notes: string[] = [];
    const fold = await runCompaction(messages, plan as CompactionPlan, () => "a summary", {
      hooks: {
        honourVeto: true,
        onNote: (note: string) => notes.push(note),
        run: () => revokedOnceTaken([{ id: "keeper", veto: true }]),
      },
    });
    expect(fold).toMatchObject({ summary: "a summary", through: 3 });
    expect(notes.some((note) => /vetoed/i.test(note))).toBe(false);
  });
});
