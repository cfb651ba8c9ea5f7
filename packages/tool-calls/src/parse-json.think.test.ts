import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { parseJson } from "./index.js";

// parseJson reads the whole reply first; a `</think>` ends the scratchpad only outside the JSON's
// strings, so a structured answer about templates or reasoning models is read as written.

describe("parseJson and </think>", () => {
  it("reads a whole reply whose strings hold </think> or <think>", () => {
    expect(parseJson('{"text": "the model wrote </think> here", "n": 1}')).toEqual({
      text: "the model wrote </think> here",
      n: 1,
    });
    expect(parseJson('{"html": "<think>x</think>", "ok": true}')).toEqual({
      html: "<think>x</think>",
      ok: true,
    });
    expect(parseJson('["</think>", "a"]')).toEqual(["</think>", "a"]);
  });

  it("cuts at a leading scratchpad, not at a </think> inside the answer's strings", () => {
    expect(parseJson('<think>plan</think>{"text": "a </think> b", "n": 2}')).toEqual({
      text: "a </think> b",
      n: 2,
    });
    expect(
      parseJson('<think>plan {"draft": 1}</think>\nHere:\n```json\n{"text": "x </think>"}\n```'),
    ).toEqual({
      text: "x </think>",
    });
    expect(parseJson('plan</think>{"note": "\\"</think>\\" ends it"}')).toEqual({
      note: '"</think>" ends it',
    });
  });

  it("still ignores JSON inside the scratchpad", () => {
    expect(parseJson('<think>{"draft": 1}</think>')).toBeUndefined();
    expect(parseJson('<think>{"draft": 1}</think>The answer is {"final": 2}.')).toEqual({ final: 2 });
    expect(parseJson('<think>a</think><think>{"draft": 1}</think>{"final": 3}')).toEqual({ final: 3 });
  });

  it("reads any JSON value back as JSON.parse does, scratchpad before it or not", () => {
    const marker = fc.constantFrom("<think>", "</think>", "```", "\n", "{", "}");
    const text = fc
      .array(fc.oneof(marker, fc.string({ maxLength: 5 })), { maxLength: 6 })
      .map((p) => p.join(""));
    const value = fc.dictionary(fc.constantFrom("a", "text", "n"), fc.oneof(text, fc.integer()), {
      minKeys: 1,
    });
    fc.assert(
      fc.property(fc.constantFrom("", "<think>plan</think>", "<think>x</think>\n"), value, (lead, object) => {
        expect(parseJson(`${lead}${JSON.stringify(object)}`)).toEqual(object);
      }),
      propertyRuns(400),
    );
  });
});
