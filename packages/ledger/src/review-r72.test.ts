// Review r72 (ledger): a divisor so small its estimates overflow, roles that throw when read in the
// compaction functions, and an already-aborted signal given to runCompaction.

import { describe, expect, it } from "vitest";
import { estimateFrom, type LedgerEntry, tokensBetween } from "./ledger.js";
import type { MessageLike } from "./messages.js";
import { planCompaction } from "./plan-compaction.js";
import { contextTokens, estimateTokens, messageTokens, requestTokens, toolTokens } from "./tokens.js";

const messages: MessageLike[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "x".repeat(200) },
  { role: "assistant", content: "Done." },
  { role: "user", content: "And now?" },
];
const tools = [{ type: "function", function: { name: "read_file", parameters: { type: "object" } } }];
const ledger: LedgerEntry[] = [{ through: 1, prompt: 60, epoch: 0 }];

describe("R72L-1: a charsPerToken so small the estimates overflow is refused like 0 and NaN", () => {
  // 1e-320 is a denormal: 1 / 1e-320 is Infinity. 1e-306 gives a finite count per text but sums past
  // Number.MAX_VALUE. 1e-9 counts a thousand million tokens a character: no tokenizer does.
  const estimators: [string, (charsPerToken: number) => unknown][] = [
    ["estimateTokens", (charsPerToken) => estimateTokens("abc", { charsPerToken })],
    ["messageTokens", (charsPerToken) => messageTokens(messages[1] as MessageLike, { charsPerToken })],
    ["toolTokens", (charsPerToken) => toolTokens(tools, { charsPerToken })],
    ["requestTokens", (charsPerToken) => requestTokens({ messages, tools }, { charsPerToken })],
    ["contextTokens", (charsPerToken) => contextTokens({ messages, tools }, { charsPerToken })],
    ["tokensBetween", (charsPerToken) => tokensBetween(ledger, 0, 4, messages, { charsPerToken })],
    [
      "estimateFrom",
      (charsPerToken) => estimateFrom(ledger, messages, { charsPerToken })(messages[3] as MessageLike, 3),
    ],
    ["planCompaction", (charsPerToken) => planCompaction(messages, { limit: 100, charsPerToken })],
  ];
  for (const [name, run] of estimators) {
    for (const charsPerToken of [1e-320, Number.MIN_VALUE, 1e-306, 1e-9]) {
      it(`${name} refuses charsPerToken ${charsPerToken} as invalid-option naming it`, () => {
        expect(() => run(charsPerToken)).toThrow(
          expect.objectContaining({
            name: "LedgerError",
            code: "invalid-option",
            message: expect.stringMatching(/charsPerToken must be .*, and was/),
          }),
        );
      });
    }
    it(`${name} still takes a divisor of a hundredth and one under a character (0.3)`, () => {
      expect(() => run(0.01)).not.toThrow();
      expect(() => run(0.3)).not.toThrow();
    });
  }
  it("counts 0.01 characters a token as a hundred tokens a character", () => {
    expect(estimateTokens("abc", { charsPerToken: 0.01 })).toBe(300);
  });
});
