import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { checkStrictSchema } from "./check-strict.js";
import { SchemaCompatError } from "./errors.js";
import { restoreArguments, takesOnlyStringAt, takesStringAt } from "./optional-nulls.js";
import { relaxSchema, sanitizeSchema } from "./sanitize-schema.js";
import { relaxTools, sanitizeTools } from "./sanitize-tools.js";

type Raw = Record<string, unknown>;

const HALF = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when a key or a string anywhere in a JSON value holds half a surrogate pair alone. */
function holdsAHalf(json: string): boolean {
  let lone = false;
  JSON.parse(json, (key, value) => {
    if (HALF.test(key) || (typeof value === "string" && HALF.test(value))) lone = true;
    return value;
  });
  return lone;
}

const set = (target: Raw, key: string, value: unknown) =>
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });

describe("a property name holding half a surrogate pair alone (r70)", () => {
  const schema = {
    type: "object",
    properties: {
      "q\uD83D": { type: "string", description: "The query" },
      opts: {
        type: "object",
        properties: { "\uDE00lim": { type: "integer" }, deep: { type: "boolean" } },
        required: ["deep"],
      },
    },
    required: ["q\uD83D"],
  };

  it("is written with U+FFFD, so no lone half reaches the server (llama.cpp refuses the whole request over one)", () => {
    for (const out of [sanitizeSchema(schema), relaxSchema(schema)]) {
      const json = JSON.stringify(out);
      expect(holdsAHalf(json), json).toBe(false);
      expect(Object.keys(out.properties as Raw)).toEqual(["q\uFFFD", "opts"]);
      const opts = (out.properties as Record<string, Raw>).opts as Raw;
      expect(opts.required).toEqual(["\uFFFDlim", "deep"]);
    }
    expect(checkStrictSchema(sanitizeSchema(schema))).toEqual([]);
    expect(sanitizeSchema(sanitizeSchema(schema))).toEqual(sanitizeSchema(schema));
  });

  it("restoreArguments hands the tool its own names back, optional nulls dropped as for any name", () => {
    const written = { "q\uFFFD": "cats", opts: { "\uFFFDlim": 5, deep: true } };
    expect(JSON.stringify(restoreArguments(written, schema))).toBe(
      JSON.stringify({ "q\uD83D": "cats", opts: { "\uDE00lim": 5, deep: true } }),
    );
    const left = restoreArguments({ "q\uFFFD": "cats", opts: { "\uFFFDlim": null, deep: false } }, schema);
    expect(Object.keys(left)).toEqual(["q\uD83D", "opts"]);
    expect(left.opts).toEqual({ deep: false });
  });

  it("gives two names that would both be U+FFFD, and a name already written so, each a name of its own", () => {
    const crowded = {
      type: "object",
      properties: {
        "a\uD83D": { type: "string" },
        "a\uFFFD": { type: "integer" },
        "a\uD83E": { type: "boolean" },
        "a\uDC00": { type: "number" },
      },
    };
    const out = sanitizeSchema(crowded);
    expect(Object.keys(out.properties as Raw)).toEqual(["a\uFFFD_2", "a\uFFFD", "a\uFFFD_3", "a\uFFFD_4"]);
    const restored = restoreArguments(
      { "a\uFFFD_2": "s", "a\uFFFD": 1, "a\uFFFD_3": true, "a\uFFFD_4": 2.5 },
      crowded,
    );
    expect(Object.entries(restored)).toEqual([
      ["a\uD83D", "s"],
      ["a\uFFFD", 1],
      ["a\uD83E", true],
      ["a\uDC00", 2.5],
    ]);
  });

  it("takesStringAt reads the name the model wrote (the arguments are parsed before they are restored)", () => {
    expect(takesStringAt(schema, ["q\uFFFD"])).toBe(true);
    expect(takesOnlyStringAt(schema, ["q\uFFFD"])).toBe(true);
    expect(takesStringAt(schema, ["opts", "\uFFFDlim"])).toBe(false);
  });

  it("restores a name renamed below a $ref, an allOf, an array's items and a root union", () => {
    const wrapped = {
      anyOf: [
        {
          type: "object",
          properties: { "k\uD800": { $ref: "#/$defs/row" } },
          required: ["k\uD800"],
        },
        { type: "object", properties: { other: { type: "string" } } },
      ],
      $defs: {
        row: {
          allOf: [
            {
              type: "object",
              properties: { "r\uDFFF": { type: "array", items: { $ref: "#/$defs/cell" } } },
            },
          ],
        },
        cell: { type: "object", properties: { "c\uDBFF": { type: "string" } } },
      },
    };
    const out = sanitizeSchema(wrapped);
    expect(holdsAHalf(JSON.stringify(out))).toBe(false);
    const written = { "k\uFFFD": { "r\uFFFD": [{ "c\uFFFD": "x" }, { "c\uFFFD": null }] }, other: null };
    expect(JSON.stringify(restoreArguments(written, wrapped))).toBe(
      JSON.stringify({ "k\uD800": { "r\uDFFF": [{ "c\uDBFF": "x" }, {}] } }),
    );
  });

  it("keeps the model's own key where it also wrote the tool's name (nothing overwritten)", () => {
    const both = restoreArguments({ "q\uFFFD": "a", "q\uD83D": "b" }, schema);
    expect(Object.entries(both)).toEqual([
      ["q\uFFFD", "a"],
      ["q\uD83D", "b"],
    ]);
  });

  it("property: every call comes back with the tool's own names, whatever halves its names hold", () => {
    const nameArb = fc.constantFrom(
      "a\uD83D",
      "a\uD83E",
      "a\uFFFD",
      "a\uFFFD_2",
      "\uDE00",
      "\uFFFD",
      "b",
      "a\uDC00",
    );
    const leafArb = fc.constantFrom<[Raw, fc.Arbitrary<unknown>]>(
      [{ type: "string" }, fc.string({ maxLength: 3 })],
      [{ type: "integer" }, fc.integer()],
    );
    type Shape =
      | { kind: "leaf"; schema: Raw; values: fc.Arbitrary<unknown> }
      | { kind: "object"; props: Prop[] };
    type Prop = { name: string; shape: Shape; required: boolean };
    const shapeArb: fc.Arbitrary<Shape> = fc.letrec<{ shape: Shape }>((tie) => ({
      shape: fc.oneof(
        { depthSize: "small" },
        leafArb.map(([schema, values]): Shape => ({ kind: "leaf", schema, values })),
        fc
          .uniqueArray(fc.record({ name: nameArb, shape: tie("shape"), required: fc.boolean() }), {
            selector: (p) => p.name,
            minLength: 1,
            maxLength: 5,
          })
          .map((props): Shape => ({ kind: "object", props })),
      ),
    })).shape;
    const schemaOf = (shape: Shape): Raw => {
      if (shape.kind === "leaf") return shape.schema;
      const properties: Raw = {};
      for (const p of shape.props) set(properties, p.name, schemaOf(p.shape));
      return {
        type: "object",
        properties,
        required: shape.props.filter((p) => p.required).map((p) => p.name),
      };
    };
    /** The call, and as a model writes it against the sanitized schema (its names, in their order; null for absent). */
    const callArb = (shape: Shape, sanitized: Raw): fc.Arbitrary<{ call: unknown; written: unknown }> => {
      if (shape.kind === "leaf") return shape.values.map((v) => ({ call: v, written: v }));
      const names = Object.keys(sanitized.properties as Raw);
      return fc
        .tuple(
          ...shape.props.map((p, i) => {
            const sub = callArb(
              p.shape,
              (sanitized.properties as Record<string, Raw>)[names[i] as string] as Raw,
            );
            return p.required ? sub : fc.option(sub, { nil: undefined });
          }),
        )
        .map((values) => {
          const call: Raw = {};
          const written: Raw = {};
          shape.props.forEach((p, i) => {
            const v = values[i];
            if (v) set(call, p.name, v.call);
            set(written, names[i] as string, v ? v.written : null);
          });
          return { call, written };
        });
    };
    const rootArb = fc
      .uniqueArray(fc.record({ name: nameArb, shape: shapeArb, required: fc.boolean() }), {
        selector: (p) => p.name,
        minLength: 1,
        maxLength: 6,
      })
      .map((props): Shape => ({ kind: "object", props }));
    fc.assert(
      fc.property(
        rootArb.chain((root) => {
          const schema = schemaOf(root);
          const sanitized = sanitizeSchema(schema);
          return fc.tuple(fc.constant(schema), fc.constant(sanitized), callArb(root, sanitized));
        }),
        ([schema, sanitized, { call, written }]) => {
          expect(holdsAHalf(JSON.stringify(sanitized))).toBe(false);
          expect(checkStrictSchema(sanitized)).toEqual([]);
          // JSON text compares the keys exactly (a lone half and U+FFFD stay told apart).
          expect(JSON.stringify(restoreArguments(written, schema))).toBe(JSON.stringify(call));
        },
      ),
      propertyRuns(500, { seed: 2070 }),
    );
  });

  it("checkStrictSchema names such a property name, and text holding a lone half", () => {
    const closed = (v: Raw) => ({
      type: "object",
      properties: { "n\uD83D": v },
      required: ["n\uD83D"],
      additionalProperties: false,
    });
    expect(checkStrictSchema(closed({ type: "string" }))).toEqual([
      { path: "", message: expect.stringContaining("holds half a surrogate pair alone") },
    ]);
    const text = {
      type: "object",
      properties: {},
      required: [],
      additionalProperties: false,
      description: "x\uDE00",
    };
    expect(checkStrictSchema(text)).toEqual([{ path: "", message: expect.stringContaining("surrogate") }]);
    const values = {
      type: "object",
      properties: { v: { type: "string", enum: ["a\uD83D"] } },
      required: ["v"],
      additionalProperties: false,
    };
    expect(checkStrictSchema(values)).toEqual([
      { path: "/properties/v", message: expect.stringContaining("surrogate") },
    ]);
  });
});

describe("checkStrictSchema and an integer's fractional bound (r70)", () => {
  const closed = (v: Raw) => ({
    type: "object",
    properties: { v },
    required: ["v"],
    additionalProperties: false,
  });

  it.each([
    ["minimum", 1.5],
    ["maximum", 2.5],
    ["exclusiveMinimum", -0.5],
    ["exclusiveMaximum", 0.5],
  ])("names an integer %s of %d, which sanitizeSchema writes as the whole bound it means", (key, value) => {
    expect(checkStrictSchema(closed({ type: "integer", [key]: value }))).toEqual([
      { path: "/properties/v", message: expect.stringContaining(`fractional integer ${key} (${value})`) },
    ]);
    const sanitized = sanitizeSchema(closed({ type: "integer", [key]: value }));
    expect(checkStrictSchema(sanitized)).toEqual([]);
  });

  it("takes a number's fractional bounds and an integer's whole ones", () => {
    expect(checkStrictSchema(closed({ type: "number", minimum: 1.5, exclusiveMaximum: 2.5 }))).toEqual([]);
    expect(checkStrictSchema(closed({ type: ["integer", "null"], minimum: 2, maximum: 3 }))).toEqual([]);
  });
});

describe("a malformed tool is a SchemaCompatError naming its index (r70)", () => {
  const fine = { type: "function", function: { name: "ok", parameters: {} } };

  it.each([
    [{ type: "function", function: null }, '"function" is null'],
    [{ type: "function", function: [] }, '"function" is an array'],
    [{ type: "function", function: "search" }, '"function" is a string'],
    [{ type: "function", function: {} }, "no function.name"],
    [{ type: "function", function: { name: 5, parameters: {} } }, "function.name is number 5"],
    [{ function: { name: "x" } }, 'no "type"'],
    [{ type: 7 }, '"type" of number 7'],
  ])("%o: %s", (tool, words) => {
    for (const fn of [sanitizeTools, relaxTools]) {
      let caught: unknown;
      try {
        fn([fine, tool] as never);
      } catch (error) {
        caught = error;
      }
      expect(SchemaCompatError.isInstance(caught)).toBe(true);
      expect((caught as SchemaCompatError).code).toBe("invalid-tools");
      expect((caught as Error).message).toContain("index 1");
      expect((caught as Error).message).toContain(words);
    }
  });

  it("still passes another kind of tool, and a function tool written flat (no function object), through as it is", () => {
    const custom = { type: "custom", custom: { name: "grammar" } };
    const flat = { type: "function", name: "flat", parameters: {} };
    expect(sanitizeTools([custom, flat] as never)).toEqual([custom, flat]);
  });
});
