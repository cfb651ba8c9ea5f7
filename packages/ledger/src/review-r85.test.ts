// Review round r85 (ledger): each test fails on the code before its fix.
import { describe, expect, it } from "vitest";
import type { MessageLike } from "./messages.js";
import { planCompaction } from "./plan-compaction.js";
import { pruneToolResults } from "./prune.js";
import { contextTokens, estimateTokens, requestTokens } from "./tokens.js";

/** A field as `Object.prototype.name = value` (prototype pollution) sets it: enumerable. */
const pollution = (value: unknown): PropertyDescriptor => ({
  value,
  configurable: true,
  writable: true,
  enumerable: true,
});

/** Runs `body` with `fields` set on Object.prototype, taken off in `finally`. */
function withPolluted<T>(fields: Record<string, unknown>, body: () => T): T {
  for (const [name, value] of Object.entries(fields))
    Object.defineProperty(Object.prototype, name, pollution(value));
  try {
    return body();
  } finally {
    for (const name of Object.keys(fields)) Reflect.deleteProperty(Object.prototype, name);
  }
}

const messages: MessageLike[] = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "The weather in Paris?" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", type: "function", function: { name: "w", arguments: "{}" } }],
  },
  { role: "tool", tool_call_id: "c1", content: "sunny ".repeat(200) },
  { role: "assistant", content: "It is sunny." },
] as MessageLike[];
const body = { messages };

describe("R85L-1: the number checks' own rule, never a polluted Object.prototype's min, max or integer", () => {
  it("contextTokens, requestTokens and estimateTokens take a divisor and a prompt count as they did", () => {
    const clean = [
      contextTokens(body, { charsPerToken: 2.5 }),
      contextTokens(body, { promptTokens: 300 }),
      requestTokens(body, { charsPerToken: 3 }),
      estimateTokens("hello there", { charsPerToken: 3 }),
    ];
    // Before: "charsPerToken must be an integer at least 0.01", "… at most 1", "promptTokens must be
    // a finite number at least P0LLUTED".
    for (const fields of [
      { integer: true },
      { max: 1 },
      { min: "P0LLUTED" },
      { max: "P0LLUTED", min: 1e9 },
    ]) {
      const polluted = withPolluted(fields, () => [
        contextTokens(body, { charsPerToken: 2.5 }),
        contextTokens(body, { promptTokens: 300 }),
        requestTokens(body, { charsPerToken: 3 }),
        estimateTokens("hello there", { charsPerToken: 3 }),
      ]);
      expect(polluted).toEqual(clean);
    }
  });

  it("planCompaction and pruneToolResults check their numbers by their own rules", () => {
    const plan = () => planCompaction(messages, { limit: 200, used: 190, keepRatio: 0.35 });
    const prune = () => pruneToolResults(messages, { keepLast: 0, maxChars: 10 });
    const clean = [plan(), prune()];
    for (const fields of [{ integer: true }, { max: 1 }, { min: 1e9 }]) {
      expect(withPolluted(fields, () => [plan(), prune()])).toEqual(clean);
    }
  });

  it("a value out of range is still refused, naming the bound it broke", () => {
    expect(() => withPolluted({ max: 1 }, () => contextTokens(body, { charsPerToken: 0 }))).toThrow(
      "contextTokens: charsPerToken must be a finite number at least 0.01, and was the number 0.",
    );
    expect(() =>
      withPolluted({ integer: true }, () => pruneToolResults(messages, { keepLast: 1.5 })),
    ).toThrow("pruneToolResults: keepLast must be an integer at least 0, and was the number 1.5.");
  });
});
