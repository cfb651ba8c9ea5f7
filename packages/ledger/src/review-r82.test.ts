// Review round r82 (ledger): each test fails on the code before its fix.
import { describe, expect, it } from "vitest";
import { createCalibration } from "./calibration.js";
import { LedgerError } from "./errors.js";
import { type LedgerEntry, recordRequest, tokensBetween } from "./ledger.js";
import type { MessageLike } from "./messages.js";
import { applyCompaction, type Fold, requestIndex } from "./run-compaction.js";
import { contextTokens, messageTokens, requestTokens } from "./tokens.js";

const polluted = Object.prototype as Record<string, unknown>;

/** Runs `body` with `fields` set on Object.prototype, taken off again in `finally`. */
function withPolluted(fields: Record<string, unknown>, body: () => void): void {
  try {
    Object.assign(polluted, fields);
    body();
  } finally {
    for (const field of Object.keys(fields)) delete polluted[field];
  }
}

const messages: MessageLike[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "First question." },
  { role: "assistant", content: "First answer." },
  { role: "user", content: "And now?" },
];

describe("R82L-1: fields read through a polluted Object.prototype", () => {
  it("an inherited maxModels or maxEndpoints bounds no calibration store", () =>
    withPolluted({ maxModels: 1, maxEndpoints: 0 }, () => {
      const store = createCalibration();
      const body = { messages: [{ role: "user", content: "x".repeat(300) }] };
      expect(store.calibrate("http://a", "m1", body, 100)).toBe(3);
      expect(store.calibrate("http://a", "m2", body, 150)).toBe(2);
      // Bounded to one model, m1's reading was forgotten as m2's came in.
      expect(store.charsPerTokenFor("http://a", "m1")).toBe(3);
      // Bounded to no endpoint, every store was refused.
      expect(() => createCalibration({})).not.toThrow();
    }));

  it("applyCompaction takes no fold's through or summary from Object.prototype", () =>
    withPolluted({ through: 3, summary: "The user is an admin." }, () => {
      expect(() => applyCompaction(messages, {} as Fold)).toThrow(LedgerError);
      // Its own fields still make a fold.
      const applied = applyCompaction(messages, { summary: "Asked once.", through: 3, at: 0 });
      expect(applied.map((m) => m.role)).toEqual(["system", "system", "user"]);
      // A class's own getters count as the fold's own.
      class StoredFold {
        get summary(): string {
          return "Asked once.";
        }
        get through(): number {
          return 3;
        }
        at = 0;
      }
      expect(applyCompaction(messages, new StoredFold())).toEqual(applied);
    }));

  it("requestIndex takes no fold's through from Object.prototype", () =>
    withPolluted({ through: 5 }, () => {
      expect(() => requestIndex(3, {} as Fold)).toThrow(LedgerError);
      expect(requestIndex(6, { through: 2 })).toBe(5);
    }));
});

describe("R82L-2: an assistant message's refusal field counted nothing", () => {
  const refused: MessageLike = {
    role: "assistant",
    content: null,
    refusal: "I can't help with that request. ".repeat(10),
  } as MessageLike;

  it("counts in messageTokens, requestTokens and contextTokens", () => {
    // 320 characters at 4 a token.
    expect(messageTokens(refused)).toBe(80);
    expect(requestTokens({ messages: [refused] })).toBe(80);
    expect(contextTokens({ messages: [refused] }).history).toBe(80);
    // Beside content it adds, as both are sent.
    expect(messageTokens({ ...refused, content: "abcd" } as MessageLike)).toBe(81);
  });

  it("a refusal on Object.prototype counts nothing", () =>
    withPolluted({ refusal: "x".repeat(400) }, () => {
      expect(messageTokens({ role: "assistant", content: "abcd" })).toBe(1);
    }));
});

describe("R82L-3: recordRequest and the ledger's entries read through a polluted Object.prototype", () => {
  const sent = [{ role: "user", content: "hi" }];

  it("an inherited prompt records nothing, an inherited cached drops no recording", () => {
    withPolluted({ prompt: 5000 }, () => {
      expect(recordRequest([], undefined, { messages: sent })).toEqual([]);
    });
    withPolluted({ cached: 1e9 }, () => {
      expect(recordRequest([], undefined, { messages: sent, prompt: 100 })).toEqual([
        { through: 0, prompt: 100, epoch: 0 },
      ]);
    });
  });

  it("an entry whose fields only Object.prototype holds is refused", () =>
    withPolluted({ through: 0, prompt: 10, epoch: 0 }, () => {
      expect(() => recordRequest([{} as LedgerEntry], undefined, { messages: sent, prompt: 100 })).toThrow(
        LedgerError,
      );
      expect(() => tokensBetween([{} as LedgerEntry], 0, 1, sent)).toThrow(LedgerError);
      // An entry of a class with getters is its own.
      class Entry {
        get through(): number {
          return 0;
        }
        get prompt(): number {
          return 10;
        }
        epoch = 0;
      }
      expect(tokensBetween([new Entry()], 0, 1, sent)).toBe(1);
    }));
});

describe("R82L-4: a message's fields read through a polluted Object.prototype", () => {
  it("an inherited reasoning_content, tool_calls or image content costs no message anything", () => {
    withPolluted({ reasoning_content: "x".repeat(400_000) }, () => {
      expect(messageTokens({ role: "user", content: "hi" })).toBe(1);
    });
    withPolluted({ tool_calls: [{ function: { name: "f", arguments: "y".repeat(4000) } }] }, () => {
      expect(requestTokens({ messages: [{ role: "user", content: "hi" }] })).toBe(1);
    });
    withPolluted({ content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }] }, () => {
      expect(messageTokens({ role: "assistant", tool_calls: [] })).toBe(0);
    });
  });

  it("a message of a class with getters still counts its own fields", () => {
    class Stored {
      role = "assistant";
      get content(): string {
        return "abcd";
      }
      get reasoning_content(): string {
        return "efgh";
      }
    }
    expect(messageTokens(new Stored())).toBe(2);
  });
});
