import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { stripThinking } from "./fences.js";
import { TurnReader } from "./turn-reader.js";

// A turn keeps the content as the model wrote it (`rawContent`) wherever the scratchpad fences
// took text out of it, so a call written into the text can be read as written.

function read(pieces: readonly string[], options: { startInReasoning?: boolean } = {}) {
  const reader = new TurnReader(options);
  for (const content of pieces) reader.read({ choices: [{ index: 0, delta: { content } }] });
  reader.read({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
  return reader.finish();
}

describe("Turn.rawContent", () => {
  it("holds the written content where the fences took something out, and is absent otherwise", () => {
    const call = '<tool_call>{"name": "w", "arguments": {"c": "a <think> b </think> c"}}</tool_call>';
    const turn = read([
      '<tool_call>{"name": "w", "arguments": {"c": "a <thi',
      'nk> b </think> c"}}</tool_call>',
    ]);
    expect(turn.rawContent).toBe(call);
    expect(turn.content).not.toBe(call);
    const plain = read(["Just ", "an answer."]);
    expect(plain.content).toBe("Just an answer.");
    expect("rawContent" in plain).toBe(false);
  });

  it("is the text whose split is the turn's content and reasoning, however the stream was cut", () => {
    const piece = fc.constantFrom("<think>", "</think>", "a", " b\n", "{", '"');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 10 }), fc.integer({ min: 1, max: 4 }), (parts, size) => {
        const text = parts.join("");
        const pieces: string[] = [];
        for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
        const turn = read(pieces);
        const raw = turn.rawContent ?? turn.content;
        expect(raw).toBe(text);
        expect(stripThinking(raw)).toEqual({ content: turn.content, reasoning: turn.reasoning });
        if (turn.rawContent !== undefined) expect(turn.rawContent).not.toBe(turn.content);
      }),
      propertyRuns(300),
    );
  });
});
