import { describe, expect, it } from "vitest";
import { LedgerError } from "./errors.js";
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
