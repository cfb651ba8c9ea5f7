import { describe, expect, it } from "vitest";
import { LONE_HALVES } from "../test-support/lone-halves.js";
import { checkStrictSchema } from "./check-strict.js";
import { INTEGER_BOUND_LIMIT, relaxSchema, sanitizeSchema } from "./sanitize-schema.js";
import { relaxTools, sanitizeTools } from "./sanitize-tools.js";

/** The sanitized schema of a root object with one required parameter `v` of schema `v`. */
function sanitizedParameter(v: unknown): Record<string, unknown> {
  const out = sanitizeSchema({ type: "object", properties: { v }, required: ["v"] });
  return (out.properties as Record<string, Record<string, unknown>>).v as Record<string, unknown>;
}

describe("an integer bound llama.cpp cannot build a range for goes into the description (r68)", () => {
  // Sent as keywords, each of these hung llama.cpp b9749 (a core at 100% past the request's end),
  // killed it, or was a 400 "At least one of min_value or max_value must be set".
  const HOSTILE: [keyword: string, value: number, note: string][] = [
    ["minimum", 1e16, "At least 10000000000000000."],
    ["minimum", 5e15, "At least 5000000000000000."],
    ["maximum", -9007199254740991, "At most -9007199254740991."],
    ["maximum", 1e19, "At most 10000000000000000000."],
    ["maximum", -(2 ** 63) + 1024, "At most -9223372036854775000."],
    ["exclusiveMaximum", 2 ** 63, "Less than 9223372036854776000."],
    ["minimum", 1e300, "At least 1e+300."],
    ["exclusiveMinimum", -1e21, "More than -1e+21."],
  ];

  it.each(HOSTILE)("integer %s %d is written in words, not as the keyword", (keyword, value, note) => {
    const v = sanitizedParameter({ type: "integer", [keyword]: value, description: "A count" });
    expect(v).toEqual({ type: "integer", description: `A count. ${note}` });
    expect(checkStrictSchema(sanitizeSchema({ type: "object", properties: { v } }))).toEqual([]);
  });

  it("keeps a bound of fifteen digits, and a number's bounds of any size", () => {
    const limit = INTEGER_BOUND_LIMIT - 1;
    expect(sanitizedParameter({ type: "integer", minimum: -limit, maximum: limit })).toEqual({
      type: "integer",
      minimum: -limit,
      maximum: limit,
    });
    expect(sanitizedParameter({ type: "number", minimum: 1e16, exclusiveMaximum: 1e300 })).toEqual({
      type: "number",
      minimum: 1e16,
      exclusiveMaximum: 1e300,
    });
  });

  it("drops zod's z.int() limits (±Number.MAX_SAFE_INTEGER), which say only that it is an integer", () => {
    const zodInt = { type: "integer", minimum: -9007199254740991, maximum: 9007199254740991 };
    expect(sanitizedParameter(zodInt)).toEqual({ type: "integer" });
    const positive = { type: "integer", exclusiveMinimum: 0, maximum: 9007199254740991 };
    expect(sanitizedParameter(positive)).toEqual({ type: "integer", exclusiveMinimum: 0 });
  });

  it("checkStrictSchema names such a bound; the relaxed form and a second pass agree", () => {
    const raw = { type: "object", properties: { v: { type: "integer", minimum: 1e16 } }, required: ["v"] };
    expect(checkStrictSchema({ ...raw, additionalProperties: false })).toEqual([
      {
        path: "/properties/v",
        message: expect.stringContaining("integer minimum of 1000000000000000 or more"),
      },
    ]);
    const once = sanitizeSchema(raw);
    expect(sanitizeSchema(once)).toEqual(once);
    expect(relaxSchema(raw)).toEqual(relaxSchema(once));
  });
});

const HALF = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when a key or a string anywhere in a JSON value holds half a surrogate pair alone. */
function escapesAHalf(json: string): boolean {
  let lone = false;
  JSON.parse(json, (key, value) => {
    if (HALF.test(key) || (typeof value === "string" && HALF.test(value))) lone = true;
    return value;
  });
  return lone;
}

describe("no lone surrogate reaches the sanitized schema (r68)", () => {
  it.each(LONE_HALVES)(
    "%s holding one is written U+FFFD, or listed as an escape in the description",
    (_, v) => {
      const schema = { type: "object", properties: { v }, required: ["v"] };
      for (const out of [sanitizeSchema(schema), relaxSchema(schema)]) {
        const json = JSON.stringify(out);
        expect(escapesAHalf(json), json).toBe(false);
        expect(sanitizeSchema(out)).toEqual(sanitizeSchema(sanitizeSchema(out)));
      }
    },
  );

  it("keeps a well-formed pair, and lists an enum with a lone half in words with its exact values", () => {
    expect(sanitizedParameter({ type: "string", description: "Pick one 🙂 or \uD83D" })).toEqual({
      type: "string",
      description: "Pick one 🙂 or \uFFFD",
    });
    expect(sanitizedParameter({ type: "string", enum: ["a\uD83D", "b"] })).toEqual({
      type: "string",
      description: 'One of: "a\\ud83d", "b".',
    });
  });

  it("sanitizeTools and relaxTools write a lone half in a tool's description U+FFFD, short or cut", () => {
    const long = `${"word ".repeat(300)}\uDE00 end`;
    for (const fn of [sanitizeTools, relaxTools]) {
      const [short, cut] = fn([
        { type: "function", function: { name: "a", description: "ends \uD83D", parameters: {} } },
        { type: "function", function: { name: "b", description: long, parameters: {} } },
      ]);
      expect(short?.type === "function" && short.function.description).toBe("ends \uFFFD");
      expect(escapesAHalf(JSON.stringify(cut))).toBe(false);
      expect(JSON.stringify(cut)).toContain("\uFFFD end");
    }
  });
});

describe("an integer's fractional bound is the whole bound it means (r68)", () => {
  it.each([
    [
      { minimum: 1.5, maximum: 2.5 },
      { minimum: 2, maximum: 2 },
    ],
    [
      { minimum: -1.5, maximum: -0.5 },
      { minimum: -1, maximum: -1 },
    ],
    [
      { exclusiveMinimum: -0.5, exclusiveMaximum: 0.5 },
      { minimum: 0, maximum: 0 },
    ],
    [{ minimum: 3, exclusiveMinimum: 2.5 }, { minimum: 3 }],
    [
      { minimum: 1, exclusiveMinimum: 2.5, exclusiveMaximum: 9 },
      { minimum: 3, exclusiveMaximum: 9 },
    ],
    [{ minimum: 1.5, exclusiveMinimum: true }, { minimum: 2 }],
    [
      { exclusiveMinimum: 0, maximum: 10 },
      { exclusiveMinimum: 0, maximum: 10 },
    ],
  ])("%o becomes %o", (given, kept) => {
    const v = sanitizedParameter({ type: "integer", ...given });
    expect(v).toEqual({ type: "integer", ...kept });
    expect(Object.is(v.minimum, -0) || Object.is(v.maximum, -0)).toBe(false);
  });

  it("leaves a number's fractional bounds as they are", () => {
    expect(sanitizedParameter({ type: "number", minimum: 1.5, exclusiveMaximum: 2.5 })).toEqual({
      type: "number",
      minimum: 1.5,
      exclusiveMaximum: 2.5,
    });
  });
});
