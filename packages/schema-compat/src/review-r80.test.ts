/**
 * r80: an enum (or const) beside bounds, a pattern, a multipleOf or lengths its values do not
 * meet. A grammar server follows the enum alone (llama.cpp lets the model write `1` for
 * `{ type: "integer", enum: [1, 2], minimum: 5 }`), and OpenAI strict does not check the two
 * against each other, so before this the schema went out as it stood: no value valid, and the
 * model made to write an invalid one. Values that fail are left out of the enum; where none is
 * left, the enum and the keywords it contradicts go into the description, as r78's bounds do.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Raw, sent } from "../test-support/sent.js";
import { checkStrictSchema } from "./check-strict.js";
import { sanitizeSchema } from "./sanitize-schema.js";

const NOTICE = 'Tool "pick": A schema\'s enum holds no value its bounds, pattern or multipleOf admit';

describe("an enum none of whose values meets the keywords beside it", () => {
  const cases: [name: string, schema: Raw, expected: Raw][] = [
    [
      "integer enum below a minimum",
      { type: "integer", enum: [1, 2], minimum: 5 },
      { type: "integer", description: "One of: 1, 2. At least 5." },
    ],
    [
      "number enum of no multiple",
      { type: "number", enum: [1, 2], multipleOf: 5 },
      { type: "number", description: "One of: 1, 2. A multiple of 5." },
    ],
    [
      "draft-4 exclusive maximum",
      { type: "integer", enum: [3], maximum: 3, exclusiveMaximum: true },
      { type: "integer", description: "One of: 3. At most 3. Not 3 itself." },
    ],
    [
      "string enum the pattern refuses",
      { type: "string", enum: ["a", "b"], pattern: "^x" },
      { type: "string", description: 'One of: "a", "b". Must match the regular expression ^x.' },
    ],
    [
      "string enum shorter than minLength",
      { type: "string", enum: ["ab"], minLength: 5 },
      { type: "string", description: 'One of: "ab". At least 5 characters.' },
    ],
  ];
  for (const [name, schema, expected] of cases) {
    it(`${name}: sent as the type, the contradiction in words, onNotice told`, () => {
      const { v, notices } = sent(schema);
      expect(v).toEqual(expected);
      expect(notices).toHaveLength(1);
      expect(notices[0]).toContain(NOTICE);
    });
  }

  it("a const beside a maximum it exceeds", () => {
    const { v, notices } = sent({ const: 3, maximum: 2 });
    expect(v).toEqual({ type: "integer", description: "Must be exactly 3. At most 2." });
    expect(notices[0]).toContain("A schema's const holds no value");
  });

  it("keeps the values that meet them, and tells nothing", () => {
    expect(sent({ type: "integer", enum: [1, 7], minimum: 5 })).toEqual({
      v: { type: "integer", enum: [7], minimum: 5 },
      notices: [],
    });
    expect(sent({ type: "string", enum: ["xa", "b"], pattern: "^x" }).v.enum).toEqual(["xa"]);
    // In a union of types, a type none of whose values is valid is left out.
    expect(sent({ type: ["integer", "string"], enum: [1, "a"], minimum: 5 })).toEqual({
      v: { type: "string", enum: ["a"] },
      notices: [],
    });
    // A decimal step meets its multiples near enough (0.3 / 0.1 is 2.9999999999999996).
    expect(sent({ type: "number", enum: [0.3], multipleOf: 0.1 }).v.enum).toEqual([0.3]);
  });

  it("never runs a pattern that may backtrack, nor on a value past 256 characters", () => {
    const long = "a".repeat(300);
    // The pattern does not admit the first value: run, it would leave it out (after 2^24 steps of
    // backtracking, a second or so; at 40 characters, hours). Kept, it was not run: no clock needed.
    const short = `${"a".repeat(24)}!`;
    const { v } = sent({ type: "string", enum: [short, long], pattern: "^(a+)+$" });
    expect(v.enum).toEqual([short, long]);
    expect(sent({ type: "string", enum: [long], pattern: "^b" }).v.enum).toEqual([long]);
  });

  // Property: what is sent for an integer enum beside random bounds admits exactly the enum's
  // values that meet them, or (none meeting) no enum at all; a second pass changes nothing.
  it("sends exactly the values that meet the bounds (fast-check)", () => {
    const bound = fc.option(fc.integer({ min: -10, max: 10 }), { nil: undefined });
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: -10, max: 10 }), { minLength: 1, maxLength: 6 }),
        bound,
        bound,
        fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        (values, minimum, maximum, multipleOf) => {
          if (minimum !== undefined && maximum !== undefined && minimum > maximum) return;
          const schema: Raw = { type: "integer", enum: values };
          if (minimum !== undefined) schema.minimum = minimum;
          if (maximum !== undefined) schema.maximum = maximum;
          if (multipleOf !== undefined) schema.multipleOf = multipleOf;
          const valid = values.filter(
            (x) =>
              (minimum === undefined || x >= minimum) &&
              (maximum === undefined || x <= maximum) &&
              (multipleOf === undefined || x % multipleOf === 0),
          );
          const { v, notices } = sent(schema);
          if (valid.length > 0) {
            expect(v.enum).toEqual(valid);
            expect(notices).toEqual([]);
          } else {
            expect(v.enum).toBeUndefined();
            expect(v.minimum ?? v.maximum ?? v.multipleOf).toBeUndefined();
            expect(notices).toHaveLength(1);
          }
          const once = sanitizeSchema({ type: "object", properties: { v: schema }, required: ["v"] });
          expect(sanitizeSchema(once)).toEqual(once);
        },
      ),
    );
  });
});

describe("checkStrictSchema and what no value satisfies", () => {
  const wrap = (v: unknown) => ({
    type: "object",
    properties: { v },
    required: ["v"],
    additionalProperties: false,
  });
  const cases: [schema: Raw, words: string][] = [
    [{ type: "integer", minimum: 5, maximum: 3 }, "has bounds no integer meets"],
    [{ type: "number", exclusiveMinimum: 3, exclusiveMaximum: 3 }, "has bounds no number meets"],
    [{ type: "integer", exclusiveMinimum: 3, exclusiveMaximum: 4 }, "has bounds no integer meets"],
    [
      { type: "array", items: { type: "string" }, minItems: 3, maxItems: 1 },
      "has a minItems above its maxItems",
    ],
    [
      { type: "integer", enum: [1, 2], minimum: 5 },
      "has an enum value the bounds or multipleOf beside it refuse",
    ],
    [{ type: "integer", enum: [] }, "has an empty or non-list enum"],
  ];
  for (const [schema, words] of cases) {
    it(`flags ${JSON.stringify(schema)}, which sanitizeSchema never sends`, () => {
      expect(checkStrictSchema(wrap(schema))).toEqual([
        { path: "/properties/v", message: expect.stringContaining(words) },
      ]);
      expect(checkStrictSchema(sanitizeSchema(wrap(schema)))).toEqual([]);
    });
  }

  it("passes bounds some value meets, and an enum they all admit", () => {
    for (const v of [
      { type: "integer", minimum: 3, maximum: 3 },
      { type: "number", exclusiveMinimum: 3, maximum: 3.5 },
      { type: "array", items: { type: "string" }, minItems: 1, maxItems: 1 },
      { type: "integer", enum: [5, 10], minimum: 5, multipleOf: 5 },
      // The pattern sent is the grammar's rewrite (kept inside the string): not weighed.
      { type: "string", enum: ['a"x'], pattern: '^[^"\\\\]*(x)[^"\\\\]*$' },
    ])
      expect(checkStrictSchema(wrap(v))).toEqual([]);
  });
});

describe("checkStrictSchema and a string's contradictory lengths (llama.cpp b9749 never answers them)", () => {
  it("names minLength above maxLength, which a host sending schemas unsanitized must not send", () => {
    const schema = {
      type: "object",
      properties: { v: { type: "string", minLength: 5, maxLength: 3 } },
      required: ["v"],
      additionalProperties: false,
    };
    expect(checkStrictSchema(schema, { relaxed: true }).map((issue) => issue.message)).toContain(
      "has a minLength above its maxLength (llama.cpp b9749 never answers it: its slot spins, and every later request waits)",
    );
    expect(checkStrictSchema(sanitizeSchema(schema))).toEqual([]);
  });
});

describe("a pattern holding an empty class [] (no character in ECMAScript)", () => {
  // llama.cpp's converter reads `[]` as the empty string (`^[]$` → the model writes "") or,
  // quantified, refuses the grammar (a 400): see review-r80-live.test.ts.
  it.each(["^[]$", "^a[]b$", "^[]?$", "^(a|[])$", "[]"])("moves %j into the description", (pattern) => {
    const out = sanitizeSchema({
      type: "object",
      properties: { v: { type: "string", pattern } },
      required: ["v"],
    });
    expect((out.properties as Raw).v).toEqual({
      type: "string",
      description: `Must match the regular expression ${pattern}.`,
    });
    expect(checkStrictSchema(out)).toEqual([]);
  });

  it("keeps [^] (any character), closed to the quote and backslash", () => {
    const out = sanitizeSchema({ type: "object", properties: { v: { type: "string", pattern: "^[^]*$" } } });
    expect(((out.properties as Raw).v as Raw).pattern).toBe('^[^"\\\\]*$');
  });
});
