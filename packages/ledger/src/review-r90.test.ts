import { describe, expect, it } from "vitest";
import { createCalibration } from "./calibration.js";
import { estimateFrom, type LedgerEntry, recordRequest } from "./ledger.js";
import type { MessageLike } from "./messages.js";
import { planCompaction } from "./plan-compaction.js";

// Review r90 (ledger model): a reading of fewer tokens than the body's text over 8 — more characters
// a token than `calibrate` believes, here 3 tokens for a request whose tools' JSON alone is 4,000
// characters — was recorded. The next honest reading continued its epoch, so the group between the
// two was charged with nearly the whole prompt: a 400-character answer cost 3,101 tokens, and a
// plan on that estimate folded more than `used` (5,103 of 3,120) with an `after` below zero. Such a
// reading is now refused, as `calibrate` refuses it, and the group is measured across it.

const tools = [
  { type: "function", function: { name: "read", description: "x".repeat(4000), parameters: {} } },
];
const messages: MessageLike[] = [
  { role: "user", content: "Q1" },
  { role: "assistant", content: "a".repeat(8000) },
  { role: "user", content: "Q2" },
  { role: "assistant", content: "b".repeat(400) },
  { role: "user", content: "Q3" },
];

function ledgerOf(readings: readonly [number, number][]): LedgerEntry[] {
  let ledger: LedgerEntry[] = [];
  let previous: { messages: MessageLike[]; tools: typeof tools } | undefined;
  for (const [end, prompt] of readings) {
    const next = { messages: messages.slice(0, end), tools };
    ledger = recordRequest(ledger, previous, { ...next, prompt });
    previous = next;
  }
  return ledger;
}

describe("recordRequest refuses a prompt too small to be a count of the body", () => {
  it("records nothing for it, so the next honest reading is measured across it", () => {
    const ledger = ledgerOf([
      [1, 1010],
      [3, 3], // fewer tokens than the tools' JSON over 8: no count of this body
      [5, 3120],
    ]);
    expect(ledger.map((e) => e.through)).toEqual([0, 4]);
    // The same reading calibrate refuses.
    const body = { messages: messages.slice(0, 3), tools };
    expect(createCalibration().calibrate("e", "m", body, 3)).toBeUndefined();
    const estimate = estimateFrom(ledger, messages);
    const costs = messages.map((m, i) => estimate(m, i));
    // The 400-character answer costs its share of the measured group, not thousands of tokens.
    expect(costs[3]).toBeLessThan(200);
    const plan = planCompaction(messages, { limit: 4000, used: 3120, estimate });
    expect(plan).toBeDefined();
    expect(plan?.folded).toBeLessThanOrEqual(3120);
    expect(plan?.after).toBeGreaterThan(0);
  });

  it("still records a small prompt that is a count of its body (a short question, template tokens)", () => {
    const one = recordRequest([], undefined, { messages: [{ role: "user", content: "Hi." }], prompt: 9 });
    expect(one).toHaveLength(1);
    // Exactly 8 characters a token is believed, as calibrate believes it.
    const eight = recordRequest([], undefined, {
      messages: [{ role: "user", content: "x".repeat(80) }],
      prompt: 10,
    });
    expect(eight).toHaveLength(1);
    const past = recordRequest([], undefined, {
      messages: [{ role: "user", content: "x".repeat(81) }],
      prompt: 10,
    });
    expect(past).toHaveLength(0);
  });
});
