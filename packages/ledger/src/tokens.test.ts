import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LedgerError } from "./errors.js";
import type { MessageLike } from "./messages.js";
import {
  contextChars,
  contextTokens,
  estimateTokens,
  messageTokens,
  requestTokens,
  toolTokens,
} from "./tokens.js";

const tool = { type: "function", function: { name: "read_file", parameters: { type: "object" } } };

describe("estimates", () => {
  it("counts characters over four, rounded up, unless told another divisor", () => {
    expect(estimateTokens("")).toBe(0);
    expect(estimateTokens("abcd")).toBe(1);
    expect(estimateTokens("abcde")).toBe(2);
    expect(estimateTokens("abcdef", { charsPerToken: 2 })).toBe(3);
  });

  it("counts a message's text, replayed reasoning and tool calls, and an image as IMAGE_TOKENS", () => {
    const message: MessageLike = {
      role: "assistant",
      content: [
        { type: "text", text: "12345678" },
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } },
      ],
      reasoning_content: "abcd",
      tool_calls: [{ id: "1", type: "function", function: { name: "ab", arguments: '{"x":1}' } }],
    };
    expect(messageTokens(message)).toBe(Math.ceil((8 + 4 + 2 + 7) / 4) + 765);
  });

  it("counts a request's tools by their JSON, on top of its messages", () => {
    const body = { messages: [{ role: "user", content: "hello there" }], tools: [tool] };
    expect(requestTokens(body)).toBe(messageTokens(body.messages[0] as MessageLike) + toolTokens([tool]));
    expect(toolTokens([tool])).toBe(Math.ceil(JSON.stringify([tool]).length / 4));
    expect(toolTokens([])).toBe(0);
  });

  it("refuses a divisor that is not above zero, naming it", () => {
    expect(() => estimateTokens("x", { charsPerToken: 0 })).toThrow(/charsPerToken/);
    expect(() => requestTokens({ messages: "nope" } as never)).toThrow(LedgerError);
  });
});

describe("contextTokens", () => {
  const body = {
    messages: [
      { role: "system", content: "You are terse." },
      { role: "user", content: "Read a.txt" },
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: "c", function: { name: "read_file", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "c", content: "x".repeat(400) },
    ],
    tools: [tool],
  };

  it("cuts an estimate the way requestTokens counts it, so the total is requestTokens", () => {
    const parts = contextTokens(body);
    expect(parts.total).toBe(requestTokens(body));
    expect(parts.tools).toBe(toolTokens(body.tools));
    expect(parts.toolResults).toBe(100);
  });

  it("shares a reported prompt by characters, the largest part taking the rounding", () => {
    const parts = contextTokens(body, { promptTokens: 1001 });
    const chars = contextChars(body);
    expect(parts.total).toBe(1001);
    expect(parts.system + parts.tools + parts.history + parts.toolResults).toBe(1001);
    expect(parts.toolResults).toBeGreaterThanOrEqual(Math.floor((1001 * chars.toolResults) / chars.total));
  });

  it("puts the whole prompt on history when there are no characters to share it by", () => {
    expect(contextTokens({ messages: [] }, { promptTokens: 7 })).toEqual({
      system: 0,
      tools: 0,
      history: 7,
      toolResults: 0,
      total: 7,
    });
  });

  it("never counts more tokens than the endpoint reported: a fraction is floored", () => {
    expect(contextTokens(body, { promptTokens: 10.5 }).total).toBe(10);
    expect(contextTokens({ messages: [] }, { promptTokens: 7.9 }).total).toBe(7);
    // Under one token is no report: the estimate stands.
    expect(contextTokens(body, { promptTokens: 0.5 })).toEqual(contextTokens(body));
  });

  it("refuses a negative reported prompt", () => {
    expect(() => contextTokens(body, { promptTokens: -1 })).toThrow(/promptTokens/);
  });

  const message = fc.record({
    role: fc.constantFrom("system", "developer", "user", "assistant", "tool"),
    content: fc.oneof(fc.string({ maxLength: 300 }), fc.constant(null)),
  });

  it("always has parts that add up exactly to the total", () => {
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 30 }),
        fc.array(fc.record({ name: fc.string() }), { maxLength: 3 }),
        fc.option(fc.integer({ min: 0, max: 1_000_000 }), { nil: undefined }),
        fc.double({ min: 0.5, max: 8, noNaN: true }),
        (messages, tools, promptTokens, charsPerToken) => {
          const parts = contextTokens({ messages, tools }, { promptTokens, charsPerToken });
          expect(parts.system + parts.tools + parts.history + parts.toolResults).toBe(parts.total);
          for (const value of [parts.system, parts.tools, parts.history, parts.toolResults]) {
            expect(value).toBeGreaterThanOrEqual(0);
          }
          if (promptTokens) expect(parts.total).toBe(promptTokens);
          else expect(parts.total).toBe(requestTokens({ messages, tools }, { charsPerToken }));
        },
      ),
    );
  });
});
