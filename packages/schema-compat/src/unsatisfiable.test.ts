/**
 * Schemas no value satisfies (r78): a pair of bounds that contradict, an enum of nothing or of
 * values of another type. Sent as they are, a grammar-constrained server cannot answer: llama.cpp
 * (b9749) answered an integer's `minimum: 5, maximum: 3` (and `sanitizeSchema`'s own `2`..`1` for
 * `minimum: 1.2, maximum: 1.7`) and `enum: []` with a 500, and never answered a string's
 * `minLength: 5, maxLength: 3` at all (see unsatisfiable-live.test.ts). What is sent must admit a
 * value; the contradiction goes into the description in words and the host's `onNotice` is told.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { type Raw, sent } from "../test-support/sent.js";
import { relaxSchema, sanitizeSchema } from "./sanitize-schema.js";

/** The cases: the schema, what is sent for it, and the words of the notice. */
const CASES: [name: string, schema: Raw, expected: Raw, notice: string][] = [
  [
    "integer minimum above maximum",
    { type: "integer", minimum: 5, maximum: 3 },
    { type: "integer", description: "At least 5. At most 3." },
    "An integer's bounds admit no value",
  ],
  [
    "number minimum above maximum",
    { type: "number", minimum: 5, maximum: 3 },
    { type: "number", description: "At least 5. At most 3." },
    "A number's bounds admit no value",
  ],
  [
    "equal exclusive bounds",
    { type: "number", exclusiveMinimum: 3, exclusiveMaximum: 3 },
    { type: "number", description: "More than 3. Less than 3." },
    "A number's bounds admit no value",
  ],
  [
    "minimum equal to exclusiveMaximum",
    { type: "number", minimum: 3, exclusiveMaximum: 3 },
    { type: "number", description: "At least 3. Less than 3." },
    "A number's bounds admit no value",
  ],
  [
    "no integer strictly between 3 and 4",
    { type: "integer", exclusiveMinimum: 3, exclusiveMaximum: 4 },
    { type: "integer", description: "More than 3. Less than 4." },
    "An integer's bounds admit no value",
  ],
  [
    "no integer between 1.2 and 1.7 (sanitizeSchema wrote minimum 2, maximum 1)",
    { type: "integer", minimum: 1.2, maximum: 1.7 },
    { type: "integer", description: "At least 1.2. At most 1.7." },
    "An integer's bounds admit no value",
  ],
  [
    "draft-4 boolean exclusives meeting",
    { type: "integer", minimum: 3, exclusiveMinimum: true, maximum: 4, exclusiveMaximum: true },
    { type: "integer", description: "More than 3. Less than 4." },
    "An integer's bounds admit no value",
  ],
  [
    "bounds from two allOf parts",
    { allOf: [{ type: "integer", minimum: 5 }, { maximum: 3 }] },
    { type: "integer", description: "At least 5. At most 3." },
    "An integer's bounds admit no value",
  ],
  [
    "minItems above maxItems",
    { type: "array", items: { type: "string" }, minItems: 3, maxItems: 1 },
    { type: "array", items: { type: "string" }, description: "At least 3 items. At most 1 item." },
    "An array's item counts admit no value",
  ],
  [
    "maxItems 0 with a required prefix",
    { type: "array", prefixItems: [{ type: "string" }], minItems: 1, maxItems: 0 },
    {
      type: "array",
      items: { type: "string" },
      description: "Items in this order: string. At least 1 item. At most 0 items.",
    },
    "An array's item counts admit no value",
  ],
  [
    "a closed tuple shorter than minItems",
    { type: "array", prefixItems: [{ type: "string" }], items: false, minItems: 2 },
    {
      type: "array",
      items: { type: "string" },
      description: "Items in this order: string. At least 2 items. At most 1 item.",
    },
    "An array's item counts admit no value",
  ],
  [
    "minLength above maxLength",
    { type: "string", minLength: 5, maxLength: 3 },
    { type: "string", description: "At least 5 characters. At most 3 characters." },
    "A string's lengths admit no value",
  ],
  [
    "maxLength 0 and minLength 1 via allOf",
    { allOf: [{ type: "string", maxLength: 0 }, { minLength: 1 }] },
    { type: "string", description: "At least 1 character. At most 0 characters." },
    "A string's lengths admit no value",
  ],
  [
    "an empty enum",
    { type: "string", enum: [] },
    { type: "string", description: "An empty enum: no value is valid here." },
    "An empty enum: no value is valid here",
  ],
  [
    "an enum of another type",
    { type: "string", enum: [1, 2] },
    { type: "string", description: "One of: 1, 2." },
    "A schema's enum holds no value of its type (string)",
  ],
  [
    "a const of another type",
    { type: "string", const: 1 },
    { type: "string", description: "Must be exactly 1." },
    "A schema's const holds no value of its type (string)",
  ],
];

describe("a schema no value satisfies (r78)", () => {
  it.each(CASES)(
    "%s: sent without the contradiction, in words, and the host told",
    (_, schema, expected, notice) => {
      const { v, notices } = sent(schema);
      expect(v).toEqual(expected);
      expect(notices).toEqual([expect.stringContaining(`Tool "pick": ${notice}`)]);
    },
  );

  it("keeps the description the schema had, the words after it, and a second pass changes nothing", () => {
    const raw = {
      type: "object",
      properties: { n: { type: "integer", minimum: 9, maximum: 1, description: "Page" } },
    };
    const once = sanitizeSchema(raw);
    expect((once.properties as Raw).n).toEqual({
      type: ["integer", "null"],
      description: "Page. At least 9. At most 1.",
    });
    const notices: string[] = [];
    expect(sanitizeSchema(once, { onNotice: (n) => notices.push(n) })).toEqual(once);
    expect(notices).toEqual([]);
    expect(relaxSchema(raw)).toEqual(relaxSchema(once));
  });

  it("keeps bounds some value satisfies as they are, and tells nothing", () => {
    const notices: string[] = [];
    const kept = [
      { type: "integer", minimum: 3, maximum: 3 },
      { type: "integer", exclusiveMinimum: 3, exclusiveMaximum: 5 },
      { type: "number", exclusiveMinimum: 3, exclusiveMaximum: 3.5 },
      { type: "integer", minimum: 1.5, maximum: 2.5 },
    ];
    for (const v of kept) {
      const out = (
        sanitizeSchema(
          { type: "object", properties: { v }, required: ["v"] },
          { onNotice: (n) => notices.push(n) },
        ).properties as Raw
      ).v as Raw;
      expect(out.description, JSON.stringify(v)).toBeUndefined();
    }
    expect(notices).toEqual([]);
    const arrays = sent({ type: "array", items: { type: "string" }, minItems: 2, maxItems: 2 });
    expect(arrays).toEqual({
      v: { type: "array", items: { type: "string" }, minItems: 2, maxItems: 2 },
      notices: [],
    });
  });
});

/** Some value of the kind that satisfies every keyword a scalar or array schema holds; undefined when none is found. */
function witness(schema: Raw): unknown {
  const type = schema.type;
  if (type === "array") {
    const length = typeof schema.minItems === "number" ? schema.minItems : 0;
    const value = Array.from({ length }, () => "x");
    return satisfies(value, schema) ? value : undefined;
  }
  if (type === "number" || type === "integer") {
    const bounds = [schema.minimum, schema.maximum, schema.exclusiveMinimum, schema.exclusiveMaximum].filter(
      (b): b is number => typeof b === "number",
    );
    const candidates = [0];
    for (const a of bounds) {
      candidates.push(a, a + 1, a - 1, Math.ceil(a), Math.floor(a), Math.ceil(a) + 1, Math.floor(a) - 1);
      for (const b of bounds) candidates.push((a + b) / 2);
    }
    return candidates.find((c) => satisfies(c, schema));
  }
  return undefined;
}

/** Whether a value meets the schema's type, bounds and item counts (the keywords the property below draws). */
function satisfies(value: unknown, schema: Raw): boolean {
  const n = (k: string) => (typeof schema[k] === "number" ? (schema[k] as number) : undefined);
  if (Array.isArray(value)) {
    return (
      schema.type === "array" &&
      value.length >= (n("minItems") ?? 0) &&
      value.length <= (n("maxItems") ?? Number.POSITIVE_INFINITY)
    );
  }
  if (typeof value !== "number") return false;
  if (schema.type === "integer" && !Number.isInteger(value)) return false;
  if (schema.type !== "integer" && schema.type !== "number") return false;
  const min = n("minimum");
  const max = n("maximum");
  const xmin = n("exclusiveMinimum");
  const xmax = n("exclusiveMaximum");
  return (
    (min === undefined || value >= min) &&
    (max === undefined || value <= max) &&
    (xmin === undefined || value > xmin) &&
    (xmax === undefined || value < xmax)
  );
}

describe("what sanitize sends for any pair of bounds admits a value (r78, property)", () => {
  const bound = fc.oneof(
    fc.integer({ min: -20, max: 20 }),
    fc.integer({ min: -40, max: 40 }).map((i) => i / 4),
  );
  const count = fc.nat(6);
  const numeric = fc.record(
    {
      type: fc.constantFrom("integer", "number"),
      minimum: bound,
      maximum: bound,
      exclusiveMinimum: bound,
      exclusiveMaximum: bound,
    },
    { requiredKeys: ["type"] },
  );
  const array = fc.record(
    { type: fc.constant("array"), items: fc.constant({ type: "string" }), minItems: count, maxItems: count },
    { requiredKeys: ["type", "items"] },
  );

  it("sends bounds some value meets; keeps them when the source's did, else tells", () => {
    fc.assert(
      fc.property(fc.oneof(numeric, array), (v) => {
        const notices: string[] = [];
        const schema = sanitizeSchema(
          { type: "object", properties: { v }, required: ["v"] },
          { onNotice: (n) => notices.push(n) },
        );
        const out = (schema.properties as Raw).v as Raw;
        // What is sent admits a value.
        expect(witness(out)).not.toBeUndefined();
        const rawWitness = witness(v as Raw);
        if (rawWitness === undefined) {
          // The source admits none: the host is told, the model reads the bounds.
          expect(notices).toHaveLength(1);
          expect(out.description).toEqual(expect.stringMatching(/^(At|More|Less)/));
        } else {
          // The source admits one: nothing is told and that value still meets what is sent.
          expect(notices).toEqual([]);
          expect(satisfies(rawWitness, out)).toBe(true);
        }
      }),
      propertyRuns(500),
    );
  });
});
