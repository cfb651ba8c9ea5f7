import { describe, expect, it } from "vitest";
import { LedgerError } from "./errors.js";
import { estimateFrom, rebaseLedger, recordRequest, tokensBetween } from "./ledger.js";
import { contextChars, contextTokens, messageTokens, requestTokens, toolTokens } from "./tokens.js";

/** Messages a host's own code may hand over: none of them is JSON. */
function exotic(): unknown[] {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  const getter = Object.defineProperty({ role: "user" }, "content", {
    enumerable: true,
    get() {
      throw new Error("no");
    },
  });
  return [
    proxy,
    getter,
    { role: "user", content: 1n },
    { role: "tool", tool_call_id: "a", content: [{ type: "text", text: 1n }] },
    { role: "assistant", content: null, tool_calls: [{ id: "a", type: "function", function: proxy }] },
    Object.create(null),
  ];
}

/** Runs `fn`; a throw must be a LedgerError. */
function typedOrAnswer(fn: () => unknown): void {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown === undefined || LedgerError.isInstance(thrown), String(thrown)).toBe(true);
}

describe("the estimators answer a number or a LedgerError, never a raw TypeError", () => {
  it("for messages and tools that throw when read or cannot be written as JSON", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    for (const message of exotic()) {
      typedOrAnswer(() => messageTokens(message as never));
      typedOrAnswer(() => requestTokens({ messages: [message] } as never));
      typedOrAnswer(() => contextTokens({ messages: [message] } as never, { promptTokens: 100 }));
      typedOrAnswer(() => contextChars({ messages: [message] } as never));
    }
    expect(() => toolTokens([cycle] as never)).toThrow(LedgerError);
    expect(() => toolTokens([{ n: 1n }] as never)).toThrow(/could not be read as JSON/);
  });
});

describe("the ledger answers or throws a LedgerError for messages that cannot be written as JSON", () => {
  it("when rebasing, recording a request, and estimating a message that is not the one measured", () => {
    const base = [
      { role: "system", content: "s" },
      { role: "user", content: "q" },
      { role: "assistant", content: "a" },
    ];
    const ledger = [
      { through: 1, prompt: 10, epoch: 0 },
      { through: 3, prompt: 30, epoch: 0 },
    ];
    for (const message of exotic()) {
      const messages = [...base, message, { role: "user", content: "z" }] as never[];
      // An equal message read back from storage; a revoked Proxy cannot even be copied.
      const copy = (() => {
        try {
          return { ...(message as object) } as never;
        } catch {
          return { role: "user" } as never;
        }
      })();
      typedOrAnswer(() => rebaseLedger(ledger, messages, messages.slice(1)));
      typedOrAnswer(() => rebaseLedger(ledger, messages, [...messages]));
      typedOrAnswer(() =>
        recordRequest(ledger, { messages: [...base, copy] as never[] }, { messages, prompt: 50 }),
      );
      typedOrAnswer(() => estimateFrom(ledger, messages)(copy, 3));
      typedOrAnswer(() => tokensBetween(ledger, 0, 5, messages));
    }
    // Reached, not skipped: a cycle is refused by name rather than answered.
    const cycle: Record<string, unknown> = { role: "user" };
    cycle.self = cycle;
    expect(() => rebaseLedger(ledger, [...base, cycle] as never[], base)).toThrow(
      /could not be read as JSON/,
    );
  });
});
