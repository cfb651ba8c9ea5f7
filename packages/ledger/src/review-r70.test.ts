// Review r70: numbers no endpoint reports (a ledger entry read back damaged, a prompt count past
// 2^53), and a veto note for a name that cannot be written as text.

import { describe, expect, it } from "vitest";
import { createCalibration } from "./calibration.js";
import { LedgerError } from "./errors.js";
import { estimateFrom, type LedgerEntry, rebaseLedger, recordRequest, tokensBetween } from "./ledger.js";
import type { MessageLike } from "./messages.js";
import { vetoNote } from "./run-compaction.js";
import { contextChars, contextTokens } from "./tokens.js";

const first = { messages: [{ role: "user", content: "Summarise the release notes." }] as MessageLike[] };
const rewritten = {
  messages: [
    { role: "user", content: "Something else entirely." },
    { role: "assistant", content: "x".repeat(40) },
  ] as MessageLike[],
  prompt: 50,
};

describe("R70L-1: a ledger entry no recordRequest writes is refused, not used", () => {
  it("an epoch at 2^53 or past it (where epoch + 1 is the same number) is refused", () => {
    for (const epoch of [2 ** 53, 1e308, -(2 ** 60)]) {
      const ledger: LedgerEntry[] = [{ through: 0, prompt: 10, epoch }];
      // Before: the rewrite was recorded in the epoch of the request before it (1e308 + 1 is 1e308),
      // so the difference of the two prompts was taken as the cost of what a rewrite changed.
      expect(() => recordRequest(ledger, first, rewritten)).toThrow(
        expect.objectContaining({ code: "invalid-ledger" }),
      );
      expect(() => rebaseLedger(ledger, first.messages, first.messages)).toThrow(LedgerError);
    }
  });

  it("a fractional epoch is refused", () => {
    expect(() => tokensBetween([{ through: 0, prompt: 10, epoch: 0.5 }], 0, 1, first.messages)).toThrow(
      expect.objectContaining({ code: "invalid-ledger", message: expect.stringContaining("entry 0") }),
    );
  });

  it("a prompt beyond ±2^53 is refused (their difference came back as NaN)", () => {
    const messages = rewritten.messages;
    for (const [a, b] of [
      [-1e308, 1e308],
      [-(2 ** 60), 40],
      [10, 2 ** 60],
    ] as const) {
      const ledger: LedgerEntry[] = [
        { through: 0, prompt: a, epoch: 0 },
        { through: 1, prompt: b, epoch: 0 },
      ];
      expect(() => tokensBetween(ledger, 0, 2, messages)).toThrow(
        expect.objectContaining({ code: "invalid-ledger" }),
      );
      expect(() => estimateFrom(ledger, messages)).toThrow(LedgerError);
    }
  });

  it("a reported prompt past 2^53 is not recorded (it is no count), so the ledger stays readable", () => {
    const ledger = recordRequest([], undefined, { ...first, prompt: 24 });
    const after = recordRequest(ledger, first, { ...rewritten, prompt: 1e300 });
    expect(after).toEqual(ledger);
    expect(tokensBetween(after, 0, 1, first.messages)).toBe(7);
  });

  it("a ledger at the top of the whole numbers still gets epochs it does not hold, and stays readable", () => {
    const top = Number.MAX_SAFE_INTEGER;
    const ledger: LedgerEntry[] = [
      { through: 0, prompt: 0, epoch: 0 },
      { through: 1, prompt: top, epoch: top },
    ];
    expect(tokensBetween(ledger, 0, 2, rewritten.messages)).toBeGreaterThan(0);
    const grown = [...rewritten.messages, { role: "user", content: "And then?" }];
    // The prompt did not grow: a new epoch, neither 0 nor the top (top + 1 is no new number).
    const next = recordRequest(ledger, rewritten, { messages: grown, prompt: 60 });
    expect(next[2]?.epoch).toBe(1);
    expect(() => tokensBetween(next, 0, 3, grown)).not.toThrow();
    // Rebased onto a transcript that lost its first message, the entries left get epochs of their own.
    const rebased = rebaseLedger(next, grown, grown.slice(1));
    expect(new Set(rebased.map((entry) => entry.epoch)).size).toBe(rebased.length);
  });
});

describe("R70L-2: contextTokens refuses a promptTokens past 2^53 rather than answering NaN parts", () => {
  const body = { messages: [{ role: "user", content: "hello" }], tools: [{ type: "function" }] };

  it("1e308 is an invalid-option naming promptTokens (its parts came back NaN and -Infinity)", () => {
    expect(() => contextTokens(body, { promptTokens: 1e308 })).toThrow(
      expect.objectContaining({ code: "invalid-option", message: expect.stringContaining("promptTokens") }),
    );
    expect(() => contextTokens(body, { promptTokens: 2 ** 53 })).toThrow(LedgerError);
  });

  it("the largest exact count still adds up", () => {
    const parts = contextTokens(body, { promptTokens: Number.MAX_SAFE_INTEGER });
    expect(parts.system + parts.tools + parts.history + parts.toolResults).toBe(Number.MAX_SAFE_INTEGER);
    expect(parts.total).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe("R70L-3: vetoNote never throws, as it says", () => {
  it("a name with no prototype (or a throwing toString) is noted as a hook, not a TypeError", () => {
    const bare = Object.create(null) as string;
    expect(vetoNote(bare)).toBe("Compaction skipped: a beforeCompact hook vetoed it.");
    const liar = {
      toString: () => {
        throw new Error("no");
      },
    } as unknown as string;
    expect(vetoNote(liar, true)).toMatch(/^a beforeCompact hook vetoed the compaction, but it was forced/);
    expect(vetoNote("Guard")).toBe("Compaction skipped: Guard vetoed it.");
  });
});

describe("R70L-4: the estimators refuse a message whose role throws when read with a LedgerError", () => {
  const bad = {
    get role(): string {
      throw new Error("boom");
    },
    content: "x",
  } as unknown as MessageLike;
  const body = { messages: [{ role: "user", content: "a" }, bad] as MessageLike[] };

  it("contextTokens, contextChars and calibrate (the getter's own error escaped them)", () => {
    const typed = expect.objectContaining({ name: "LedgerError", code: "invalid-messages" });
    expect(() => contextTokens(body)).toThrow(typed);
    expect(() => contextTokens(body, { promptTokens: 40 })).toThrow(typed);
    expect(() => contextChars(body)).toThrow(typed);
    expect(() => createCalibration().calibrate("http://127.0.0.1:8080/v1", "m", body, 10)).toThrow(typed);
    let caught: unknown;
    try {
      contextChars(body);
    } catch (error) {
      caught = error;
    }
    expect((caught as Error).cause).toEqual(new Error("boom"));
  });
});
