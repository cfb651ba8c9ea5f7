import { describe, expect, it } from "vitest";
import { TestkitError } from "./errors.js";
import { validateReply } from "./replies.js";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    return TestkitError.isInstance(error) ? error.code : "other";
  }
}

describe("validateReply", () => {
  it("returns a valid reply unchanged", () => {
    const reply = {
      content: "x",
      toolCalls: [{ name: "f", arguments: "{}" }],
      pause: { afterChunk: 1, ms: 5 },
    };
    expect(validateReply(reply)).toBe(reply);
    expect(validateReply({ type: "raw", chunks: ["a"] })).toEqual({ type: "raw", chunks: ["a"] });
  });

  it.each([
    ["a non-object", 42, /must be an object/],
    ["an unknown type", { type: "text" }, /Unknown reply type "text"/],
    ["a negative delay", { chunkDelayMs: -1 }, /chunkDelayMs must be a non-negative number/],
    ["chunkChars of 0", { chunkChars: 0 }, /chunkChars must be at least 1/],
    ["a tool call without arguments", { toolCalls: [{ name: "f" }] }, /toolCalls\[0\] needs a string name/],
    ["usage as a number", { usage: 5 }, /usage must be an object/],
    ["a numeric finish reason", { finishReason: 1 }, /finishReason must be a string or null/],
    ["non-string content", { content: 7 }, /content must be a string/],
    ["a pause without ms", { pause: { afterChunk: 1 } }, /pause\.ms/],
    ["an error reply without status", { type: "error", body: {} }, /HTTP status/],
    ["a replay without fixture", { type: "replay" }, /needs fixture/],
    ["raw without chunks", { type: "raw" }, /needs chunks/],
  ])("refuses %s with a TestkitError naming the field", (_label, reply, message) => {
    expect(codeOf(() => validateReply(reply))).toBe("invalid-reply");
    expect(() => validateReply(reply)).toThrow(message);
  });
});
