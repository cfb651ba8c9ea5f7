import { describe, expect, it } from "vitest";
import { LedgerError } from "./errors.js";
import { estimateFrom, type LedgerEntry, rebaseLedger, recordRequest, tokensBetween } from "./ledger.js";
import type { MessageLike } from "./messages.js";

// Review r101b (ledger against a store's damage): the ledger check walked its entries with
// `forEach`, which passes over holes, so a ledger rebuilt by index from message rows
// (`ledger[row] = { through, prompt, epoch }`) with a row missing was taken as good, and the hole
// was then read as an entry: tokensBetween, estimateFrom and rebaseLedger threw a raw TypeError
// ("Cannot read properties of undefined (reading 'epoch')"), and recordRequest handed back a ledger
// with the hole in it. A hole is now refused as `invalid-ledger` naming its index, at the first one,
// so a list whose length runs far past its entries costs a step rather than a walk of its length.

const messages: MessageLike[] = [
  { role: "system", content: "s".repeat(40) },
  { role: "user", content: "q".repeat(40) },
  { role: "assistant", content: "a".repeat(400) },
  { role: "user", content: "z".repeat(40) },
];
const first: LedgerEntry = { through: 1, prompt: 30, epoch: 0 };
const second: LedgerEntry = { through: 3, prompt: 150, epoch: 0 };

/** A ledger rebuilt by index from stored rows, the row of `missing` lost. */
function rebuiltWithout(missing: number): LedgerEntry[] {
  const ledger: LedgerEntry[] = [];
  [first, second].forEach((entry, row) => {
    if (row !== missing) ledger[row] = entry;
  });
  return ledger;
}

describe("a ledger with a hole in it", () => {
  it.each([
    ["tokensBetween", (ledger: LedgerEntry[]) => tokensBetween(ledger, 0, 4, messages)],
    ["estimateFrom", (ledger: LedgerEntry[]) => estimateFrom(ledger, messages)],
    ["rebaseLedger", (ledger: LedgerEntry[]) => rebaseLedger(ledger, messages, messages)],
    [
      "recordRequest",
      (ledger: LedgerEntry[]) =>
        recordRequest(
          ledger,
          { messages },
          { messages: [...messages, messages[1] as MessageLike], prompt: 200 },
        ),
    ],
  ])("is refused by %s with a LedgerError naming the hole, not a TypeError", (_, call) => {
    expect(() => call(rebuiltWithout(0))).toThrow(LedgerError);
    expect(() => call(rebuiltWithout(0))).toThrow(
      expect.objectContaining({
        code: "invalid-ledger",
        message: expect.stringMatching(/entry 0 is missing \(a hole in the array\)/),
      }),
    );
  });

  it("at its end, after a good entry, is refused too rather than recorded after", () => {
    const ledger: LedgerEntry[] = [first];
    ledger.length = 2;
    expect(() =>
      recordRequest(
        ledger,
        { messages },
        { messages: [...messages, { role: "user", content: "w" }], prompt: 200 },
      ),
    ).toThrow(/entry 1 is missing/);
  });

  it("is refused at the first hole, whatever the list's length says", () => {
    const sparse: LedgerEntry[] = [];
    sparse[100_000] = second;
    let reads = 0;
    const counted = new Proxy(sparse, {
      getOwnPropertyDescriptor(target, key) {
        reads += 1;
        return Reflect.getOwnPropertyDescriptor(target, key);
      },
      has(target, key) {
        reads += 1;
        return Reflect.has(target, key);
      },
    });
    expect(() => tokensBetween(counted, 0, 4, messages)).toThrow(/entry 0 is missing/);
    expect(reads).toBeLessThan(5);
  });

  it("whose hole a polluted Array.prototype fills is still refused", () => {
    const proto = Array.prototype as unknown as Record<number, unknown>;
    proto[0] = first;
    try {
      expect(() => tokensBetween(rebuiltWithout(0), 0, 4, messages)).toThrow(/entry 0 is missing/);
    } finally {
      delete proto[0];
      // Array.prototype is an array: setting [0] made its length 1.
      (Array.prototype as unknown[]).length = 0;
    }
  });

  it("leaves a whole ledger measured as before", () => {
    // 150 - 30 = 120 tokens for messages 2 and 3, and the first two estimated at 10 each (40 / 4).
    expect(tokensBetween([first, second], 0, 4, messages)).toBe(140);
    expect(tokensBetween(rebuiltWithout(-1), 2, 4, messages)).toBe(120);
  });
});
