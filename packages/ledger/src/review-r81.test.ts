// Review round r81 (ledger): each test fails on the code before its fix.
import { afterEach, describe, expect, it } from "vitest";
import type { MessageLike } from "./messages.js";
import type { CompactionPlan } from "./plan-compaction.js";
import { runCompaction, vetoedBy } from "./run-compaction.js";

const messages: MessageLike[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "x".repeat(200) },
  { role: "assistant", content: "Done." },
  { role: "user", content: "And now?" },
];

/** A plan folding messages 1 and 2 of a 100-token window. */
const plan: CompactionPlan = {
  from: 1,
  through: 3,
  limit: 100,
  used: 90,
  folded: 60,
  kept: 30,
  after: 30,
  summaryTokens: 10,
};

const polluted = Object.prototype as Record<string, unknown>;

describe("R81L-1: a hook outcome's fields inherited from a polluted Object.prototype", () => {
  afterEach(() => {
    delete polluted.veto;
    delete polluted.name;
  });

  it("Object.prototype.veto vetoes nothing, in vetoedBy and in runCompaction", async () => {
    polluted.veto = true;
    polluted.name = "nobody";
    expect(vetoedBy([{ id: "audit", ok: true }])).toBeUndefined();
    const notes: string[] = [];
    const fold = await runCompaction(messages, plan, () => "They asked for x.", {
      hooks: { run: () => [{ id: "audit" }], honourVeto: true, onNote: (n) => notes.push(n) },
    });
    expect(fold?.summary).toBe("They asked for x.");
    expect(notes).toEqual([]);
  });

  it("a veto a class's own prototype holds (a getter) still counts", () => {
    polluted.veto = false;
    class Outcome {
      get name(): string {
        return "Guard";
      }
      get veto(): boolean {
        return true;
      }
    }
    expect(vetoedBy([new Outcome()])).toBe("Guard");
  });
});
