import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { ToolCallsError } from "./errors.js";
import { parseJson } from "./parse-json.js";

describe("parseJson", () => {
  it("reads a reply that is JSON, one in a fence, and one inside prose", () => {
    expect(parseJson('{"tools": ["a"]}')).toEqual({ tools: ["a"] });
    expect(parseJson('Sure!\n```json\n{"tools": ["a", "b"]}\n```\nDone.')).toEqual({ tools: ["a", "b"] });
    expect(parseJson('I picked these: {"tools": ["read_file"]} as they fit.')).toEqual({
      tools: ["read_file"],
    });
    expect(parseJson('["a", "b"]')).toEqual(["a", "b"]);
  });

  it("repairs what a small model gets nearly right", () => {
    expect(parseJson("{'tools': ['a', 'b'], ok: True, why: None,}")).toEqual({
      tools: ["a", "b"],
      ok: true,
      why: null,
    });
    expect(parseJson('```\n{"tools": ["a"]\n```')).toEqual({ tools: ["a"] });
  });

  it("reads only what comes after the last </think>", () => {
    expect(parseJson('<think>maybe {"tools": ["x"]}</think>{"tools": ["y"]}')).toEqual({ tools: ["y"] });
  });

  it("answers undefined when the reply holds no JSON", () => {
    for (const text of ["", "No tools are needed [see above].", "<think>{}</think>  ", "Hello there"]) {
      expect(parseJson(text)).toBeUndefined();
    }
  });

  it("finds any JSON object again after prose is put around it", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 4 }),
        fc.constantFrom("Here you go: ", "Result:\n", ""),
        fc.constantFrom(" Hope that helps.", "\n", ""),
        (value, before, after) => {
          const normal = JSON.parse(JSON.stringify(value));
          expect(parseJson(`${before}${JSON.stringify(value)}${after}`)).toEqual(normal);
        },
      ),
    );
  });

  it("never throws on any string", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        parseJson(text);
      }),
      propertyRuns(500),
    );
  });

  it("throws a ToolCallsError for a reply that is not a string", () => {
    expect(() => parseJson(undefined as never)).toThrow(ToolCallsError);
  });
});
