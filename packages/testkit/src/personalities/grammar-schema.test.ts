import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { grammarErrors, sortedDump } from "./grammar-schema.js";

describe("grammar-schema", () => {
  it("sortedDump is compact JSON with sorted keys that parses back to the same value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = sortedDump(value);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
        // compact: no whitespace outside string literals
        expect(text.replace(/"(?:[^"\\]|\\.)*"/g, "")).not.toMatch(/\s/);
      }),
    );
    expect(sortedDump({ b: 1, a: [{ d: 2, c: 3 }] })).toBe('{"a":[{"c":3,"d":2}],"b":1}');
  });

  it("accepts ordinary schemas, the empty schema and a remote $ref", () => {
    expect(grammarErrors({})).toEqual([]);
    expect(grammarErrors({ $ref: "https://example.com/schema.json" })).toEqual([]);
    expect(
      grammarErrors({
        type: "object",
        properties: {
          a: { type: "string", pattern: "^[a-z]+$" },
          b: { anyOf: [{ type: "integer" }, { enum: [1] }] },
        },
      }),
    ).toEqual([]);
  });

  it("reports unanchored patterns and unrecognised sub-schemas wherever they are nested", () => {
    expect(
      grammarErrors({
        type: "object",
        properties: {
          a: { type: "array", items: { type: "string", pattern: "abc" } },
          b: { description: "no type", title: "B" },
          c: { type: "any" },
        },
      }),
    ).toEqual([
      "Pattern must start with '^' and end with '$'",
      'Unrecognized schema: {"description":"no type","title":"B"}',
      'Unrecognized schema: {"type":"any"}',
    ]);
  });
});
