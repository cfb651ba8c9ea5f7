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

  it("takes every documented form: byte chunks, zero counts, huge delays, empty tool names and ids", () => {
    for (const reply of [
      { type: "raw", chunks: ["a", new Uint8Array([98]), Buffer.from("c")], status: 201 },
      {
        content: "x",
        usage: { prompt_tokens: 0, completion_tokens: 0, cached_tokens: 0, reasoning_tokens: 0 },
      },
      {
        content: "x",
        usage: { prompt_tokens: 12, completion_tokens: 9, cached_tokens: 12, reasoning_tokens: 9 },
      },
      { content: "x", usage: { cached_tokens: 12, reasoning_tokens: 9 } },
      { content: "x", firstByteDelayMs: 1e12, chunkDelayMs: 0.5, silentAfterChunk: 0, dropAfterChunk: 0 },
      { content: "x", reasoning: "r", reasoningAs: "fence", usage: false },
      {
        toolCalls: [{ id: "gSIMJiOkT", name: "f", arguments: "" }],
        errorMidStream: { afterChunk: 0, error: null },
      },
      { toolCalls: [{ id: "", name: "", arguments: "{}" }] },
      { type: "replay", fixture: "wire/x.sse", status: 200 },
    ]) {
      expect(validateReply(reply)).toBe(reply);
    }
  });

  it.each([
    ["a non-object", 42, /must be an object/],
    ["an unknown type", { type: "text" }, /Unknown reply type "text"/],
    ["a negative delay", { chunkDelayMs: -1 }, /chunkDelayMs must be a non-negative number/],
    ["chunkChars of 0", { chunkChars: 0 }, /chunkChars must be a whole number of at least 1, got 0/],
    ["chunkChars of 1.5", { chunkChars: 1.5 }, /chunkChars must be a whole number/],
    [
      "an endless delay",
      { firstByteDelayMs: Number.POSITIVE_INFINITY },
      /firstByteDelayMs must be a non-negative number/,
    ],
    ["a NaN delay", { chunkDelayMs: Number.NaN }, /chunkDelayMs must be a non-negative number/],
    ["a fractional chunk number", { silentAfterChunk: 1.5 }, /silentAfterChunk must be a whole number/],
    [
      "a pause after chunk 0.5",
      { pause: { afterChunk: 0.5, ms: 1 } },
      /pause\.afterChunk must be a whole number/,
    ],
    [
      "an error after chunk -1",
      { errorMidStream: { afterChunk: -1, error: {} } },
      /errorMidStream\.afterChunk/,
    ],
    [
      "NaN prompt tokens",
      { usage: { prompt_tokens: Number.NaN } },
      /usage\.prompt_tokens must be a whole number of at least 0, got NaN/,
    ],
    ["negative cached tokens", { usage: { cached_tokens: -1 } }, /usage\.cached_tokens/],
    ["fractional completion tokens", { usage: { completion_tokens: 2.5 } }, /usage\.completion_tokens/],
    ["reasoning tokens as text", { usage: { reasoning_tokens: "3" } }, /usage\.reasoning_tokens .*got "3"/],
    [
      "more cached tokens than prompt tokens",
      { usage: { prompt_tokens: 5, cached_tokens: 12 } },
      /usage\.cached_tokens \(12\) is more than usage\.prompt_tokens \(5\)/,
    ],
    [
      "more reasoning tokens than completion tokens",
      { usage: { completion_tokens: 1, reasoning_tokens: 9 } },
      /usage\.reasoning_tokens \(9\) is more than usage\.completion_tokens \(1\)/,
    ],
    ["usage as an array", { usage: [] }, /usage must be an object/],
    [
      "a numeric tool-call id",
      { toolCalls: [{ id: 5, name: "f", arguments: "{}" }] },
      /toolCalls\[0\]\.id must be a string when given, got number 5/,
    ],
    [
      "a null tool-call id",
      { toolCalls: [{ id: null, name: "f", arguments: "{}" }] },
      /toolCalls\[0\]\.id .*got null/,
    ],
    ["an unknown reasoningAs", { reasoning: "r", reasoningAs: "think" }, /reasoningAs must be .*got "think"/],
    ["a tool call without arguments", { toolCalls: [{ name: "f" }] }, /toolCalls\[0\] needs a string name/],
    ["usage as a number", { usage: 5 }, /usage must be an object/],
    ["a numeric finish reason", { finishReason: 1 }, /finishReason must be a string or null/],
    ["non-string content", { content: 7 }, /content must be a string/],
    ["a pause without ms", { pause: { afterChunk: 1 } }, /pause\.ms/],
    ["an error reply without status", { type: "error", body: {} }, /HTTP status/],
    ["a replay without fixture", { type: "replay" }, /needs fixture/],
    ["raw without chunks", { type: "raw" }, /needs chunks/],
    [
      "a raw chunk that is a number",
      { type: "raw", chunks: ["a", 5] },
      /chunks\[1\] must be a string or a Uint8Array, got number 5/,
    ],
    ["a raw chunk that is null", { type: "raw", chunks: [null] }, /chunks\[0\] .*got null/],
    [
      "a raw chunk that is an array of bytes",
      { type: "raw", chunks: [[104, 105]] },
      /chunks\[0\] .*got an array/,
    ],
    [
      "a raw reply with status 99",
      { type: "raw", chunks: [], status: 99 },
      /A raw reply needs an HTTP status 100-599, got 99/,
    ],
    [
      "a replay with status as text",
      { type: "replay", fixture: "x", status: "200" },
      /A replay reply needs an HTTP status/,
    ],
    [
      "an error reply with status 404.5",
      { type: "error", status: 404.5, body: {} },
      /HTTP status 100-599, got 404\.5/,
    ],
  ])("refuses %s with a TestkitError naming the field", (_label, reply, message) => {
    expect(codeOf(() => validateReply(reply))).toBe("invalid-reply");
    expect(() => validateReply(reply)).toThrow(message);
  });
});
