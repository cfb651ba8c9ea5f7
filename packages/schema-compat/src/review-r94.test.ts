import { describe, expect, it } from "vitest";
import { dropOptionalNulls, restoreArguments } from "./optional-nulls.js";
import { sanitizeSchema } from "./sanitize-schema.js";

// Union branches that overlap, an object that may be of either, and nulls each takes at a
// different key: read by one branch, so the tool is handed what that branch takes.

// z.union([z.object({ a: z.string().optional(), d: z.string().nullable() }),
//          z.object({ a: z.string().nullable(), d: z.string().optional() })])
const first = {
  type: "object",
  properties: { a: { type: "string" }, d: { type: ["string", "null"] } },
  required: ["d"],
  additionalProperties: false,
};
const second = {
  type: "object",
  properties: { a: { type: ["string", "null"] }, d: { type: "string" } },
  required: ["a"],
  additionalProperties: false,
};
const overlapping = { anyOf: [first, second] };

describe("overlapping union branches that split the nulls", () => {
  it("both nulls, each taken by one branch only: read by the first branch, whose null is kept", () => {
    // Before: { a: null, d: null }, which neither branch takes (the tool refused a correct call).
    expect(dropOptionalNulls({ a: null, d: null }, overlapping)).toEqual({ d: null });
    expect(restoreArguments({ a: null, d: null }, overlapping)).toEqual({ d: null });
  });

  it("a branch's value elsewhere still reads by the first branch that takes the object", () => {
    expect(restoreArguments({ a: "x", d: null }, overlapping)).toEqual({ a: "x", d: null });
    // The first branch takes `d: "y"` with `a` left out.
    expect(restoreArguments({ a: null, d: "y" }, overlapping)).toEqual({ d: "y" });
  });

  it("a branch that would refuse what is left of a value inside (a null at a key it closes off) is passed over", () => {
    const inner = {
      anyOf: [
        {
          type: "object",
          properties: {
            x: { type: "object", properties: { a: { type: "string" } }, additionalProperties: false },
            k: { type: "string" },
          },
        },
        {
          type: "object",
          properties: {
            x: {
              type: "object",
              properties: { a: { type: ["string", "null"] }, q: { type: ["string", "null"] } },
            },
            k: { type: ["string", "null"] },
          },
        },
      ],
    };
    expect(restoreArguments({ x: { a: null, q: null }, k: null }, inner)).toEqual({
      x: { a: null, q: null },
      k: null,
    });
    expect(restoreArguments({ x: { a: null }, k: null }, inner)).toEqual({ x: {} });
  });

  it("oneOf, and a union beside allOf and properties of its own", () => {
    expect(restoreArguments({ a: null, d: null }, { oneOf: [first, second] })).toEqual({ d: null });
    const beside = {
      type: "object",
      properties: { n: { type: "number" } },
      allOf: [{ properties: { m: { type: "string" } } }, { anyOf: [first, second] }],
    };
    expect(restoreArguments({ n: null, m: null, a: null, d: null }, beside)).toEqual({ d: null });
  });

  it("nested: under a property, as an array's items, through a recursive $ref", () => {
    const nested = {
      type: "object",
      properties: { one: overlapping, many: { type: "array", items: overlapping } },
    };
    expect(
      restoreArguments(
        {
          one: { a: null, d: null },
          many: [
            { a: null, d: null },
            { a: "x", d: null },
          ],
        },
        nested,
      ),
    ).toEqual({ one: { d: null }, many: [{ d: null }, { a: "x", d: null }] });

    const tree = {
      $ref: "#/$defs/node",
      $defs: {
        node: {
          anyOf: [
            {
              type: "object",
              properties: {
                a: { type: "string" },
                d: { type: ["string", "null"] },
                kids: { type: "array", items: { $ref: "#/$defs/node" } },
              },
              required: ["d"],
            },
            {
              type: "object",
              properties: {
                a: { type: ["string", "null"] },
                d: { type: "string" },
                kids: { type: "array", items: { $ref: "#/$defs/node" } },
              },
              required: ["a"],
            },
          ],
        },
      },
    };
    expect(dropOptionalNulls({ a: null, d: null, kids: [{ a: null, d: null, kids: [] }] }, tree)).toEqual({
      d: null,
      kids: [{ d: null, kids: [] }],
    });
  });

  it("the branch the model wrote for is chosen by the keys it holds values at", () => {
    // The first branch says nothing of `b`: a tool reading by it (zod keeps only its keys) would
    // lose `b`, so the object is read by the branch that names it.
    const wide = {
      anyOf: [
        { type: "object", properties: { a: { type: "string" } } },
        { type: "object", properties: { a: { type: ["string", "null"] }, b: { type: "number" } } },
      ],
    };
    expect(restoreArguments({ a: null, b: 1 }, wide)).toEqual({ a: null, b: 1 });
    expect(restoreArguments({ a: null }, wide)).toEqual({});
  });

  it("a root union sanitizeSchema merged: the other alternative's fields, null, still go", () => {
    const root = {
      anyOf: [
        {
          type: "object",
          properties: { a: { type: "string" }, d: { type: ["string", "null"] } },
          required: ["d"],
        },
        {
          type: "object",
          properties: { a: { type: ["string", "null"] }, d: { type: "string" }, z: { type: "number" } },
          required: ["a"],
        },
      ],
    };
    const sanitized = sanitizeSchema(root) as { properties: Record<string, unknown> };
    expect(Object.keys(sanitized.properties).sort()).toEqual(["a", "d", "z"]);
    expect(restoreArguments({ a: null, d: null, z: null }, root)).toEqual({ d: null });
    expect(restoreArguments({ a: null, d: null, z: 2 }, root)).toEqual({ a: null, z: 2 });
  });

  it("no branch surely takes the object: read as before, each null kept where one branch takes it", () => {
    const neither = {
      anyOf: [
        { ...first, properties: { ...first.properties, e: { type: "number" } }, required: ["d", "e"] },
        { ...second, properties: { ...second.properties, e: { type: "number" } }, required: ["a", "e"] },
      ],
    };
    // `e` is required by both and missing: both branches excluded, the union read whole.
    expect(restoreArguments({ a: null, d: null }, neither)).toEqual({ a: null, d: null });
  });

  it("onUnread is told once of a value handed on unread, however many branches were tried", () => {
    const withText = {
      anyOf: [
        { ...first, properties: { ...first.properties, x: { type: "object" } } },
        { ...second, properties: { ...second.properties, x: { type: "object" } } },
      ],
    };
    const told: string[] = [];
    const out = restoreArguments({ a: null, d: null, x: "{not JSON" }, withText, {
      onUnread: (path) => told.push(path),
    });
    expect(out).toEqual({ d: null, x: "{not JSON" });
    expect(told).toEqual(["x"]);
  });

  it("never mutates its input, never throws", () => {
    const args = Object.freeze({ more: Object.freeze([Object.freeze({ a: null, d: null })]) });
    const schema = { type: "object", properties: { more: { type: "array", items: overlapping } } };
    expect(restoreArguments(args, schema)).toEqual({ more: [{ d: null }] });
    expect(args).toEqual({ more: [{ a: null, d: null }] });
    const hostile = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error("no");
        },
      },
    );
    expect(() => dropOptionalNulls(hostile, overlapping)).not.toThrow();
  });
});
