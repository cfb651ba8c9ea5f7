import { describe, expect, it } from "vitest";
import { dropOptionalNulls, restoreArguments } from "./optional-nulls.js";
import { sanitizeSchema } from "./sanitize-schema.js";

// Found by the typed-tool round-trip model (packages/tools/src/round-trip-model.test.ts).

describe("a nullable value asked for as JSON text, with a description of its own", () => {
  // zod's `Node.nullable().describe("…")` inside a recursive z.lazy, as z.toJSONSchema writes it:
  // past the recursion limit the reference is asked for as JSON text, beside the union's null.
  const schema = {
    type: "object",
    properties: { tree: { $ref: "#/$defs/node" } },
    required: ["tree"],
    $defs: {
      node: {
        type: "object",
        properties: {
          name: { type: "string" },
          next: { anyOf: [{ $ref: "#/$defs/node" }, { type: "null" }], description: "The next sibling." },
        },
        required: ["name"],
      },
    },
  };

  it("past the recursion limit is told to be JSON text, after its own description (held before: a guard)", () => {
    const sanitized = sanitizeSchema(schema) as {
      properties: { tree: { properties: { next: { properties: { next: unknown } } } } };
    };
    // Two levels expanded, the third asked for as JSON text: the model must be told so.
    expect(sanitized.properties.tree.properties.next.properties.next).toEqual({
      type: ["string", "null"],
      description: "The next sibling. Give this value as JSON text.",
    });
    const written = { tree: { name: "a", next: { name: "b", next: '{"name":"c","next":null}' } } };
    expect(restoreArguments(written, schema)).toEqual({
      tree: { name: "a", next: { name: "b", next: { name: "c", next: null } } },
    });
  });

  it("past maxDepth is told to be JSON text after its default, and a second pass changes nothing", () => {
    const deep = {
      type: "object",
      properties: {
        e: {
          type: "object",
          properties: {
            a: {
              anyOf: [{ type: "object", properties: { k: { type: "string" } } }, { type: "null" }],
              default: null,
            },
          },
        },
      },
      required: ["e"],
    };
    const sanitized = sanitizeSchema(deep, { maxDepth: 2 }) as {
      properties: { e: { properties: { a: unknown } } };
    };
    expect(sanitized.properties.e.properties.a).toEqual({
      type: ["string", "null"],
      description: "Default: null. Give this value as JSON text.",
    });
    expect(sanitizeSchema(sanitized, { maxDepth: 2 })).toEqual(sanitized);
  });

  it("eleven objects deep (the default maxDepth of 10), a zod .nullable().describe() object is told to be JSON text", () => {
    // z.object({ l1: z.object({ l2: … z.object({ k: z.string() }).nullable().describe("Leaf.") }) }).
    let inner: Record<string, unknown> = {
      anyOf: [{ type: "object", properties: { k: { type: "string" } }, required: ["k"] }, { type: "null" }],
      description: "Leaf.",
    };
    for (let level = 10; level >= 1; level--) {
      inner = { type: "object", properties: { [`l${level}`]: inner }, required: [`l${level}`] };
    }
    let node = sanitizeSchema(inner) as Record<string, unknown>;
    for (let level = 1; level <= 10; level++) {
      node = (node.properties as Record<string, Record<string, unknown>>)[`l${level}`] as Record<
        string,
        unknown
      >;
    }
    expect(node).toEqual({ type: ["string", "null"], description: "Leaf. Give this value as JSON text." });
  });
});

describe("a null under a discriminated union", () => {
  // z.discriminatedUnion("kind", [z.object({ kind: z.literal("file"), path: z.string().optional() }),
  // z.object({ kind: z.literal("dir"), path: z.string().nullable() })]) as z.toJSONSchema writes it.
  const schema = {
    type: "object",
    properties: {
      item: {
        oneOf: [
          {
            type: "object",
            properties: { kind: { type: "string", const: "file" }, path: { type: "string" } },
            required: ["kind"],
          },
          {
            type: "object",
            properties: { kind: { type: "string", const: "dir" }, path: { type: ["string", "null"] } },
            required: ["kind", "path"],
          },
        ],
      },
    },
    required: ["item"],
  };

  it("is read by the variant its tag names: left out where that one has the field optional", () => {
    // A model answering the strict form writes the "file" variant's optional path as null.
    const written = { item: { kind: "file", path: null } };
    expect(restoreArguments(written, schema)).toEqual({ item: { kind: "file" } });
    expect(dropOptionalNulls(written, schema)).toEqual({ item: { kind: "file" } });
  });

  it("and kept where that variant takes null", () => {
    const written = { item: { kind: "dir", path: null } };
    expect(restoreArguments(written, schema)).toEqual(written);
    expect(dropOptionalNulls(written, schema)).toEqual(written);
  });

  it("a plain union: a variant that requires a key the object lacks does not keep its null", () => {
    // z.union([z.object({ a: z.string().optional() }), z.object({ a: z.string().nullable(), b: z.number() })]).
    const plain = {
      type: "object",
      properties: {
        u: {
          anyOf: [
            { type: "object", properties: { a: { type: "string" } } },
            {
              type: "object",
              properties: { a: { type: ["string", "null"] }, b: { type: "number" } },
              required: ["a", "b"],
            },
          ],
        },
      },
      required: ["u"],
    };
    expect(restoreArguments({ u: { a: null } }, plain)).toEqual({ u: {} });
    expect(restoreArguments({ u: { a: null, b: 1 } }, plain)).toEqual({ u: { a: null, b: 1 } });
  });

  it("a plain union: a variant whose field the object's value surely fails (its type) is not asked", () => {
    // z.union([z.object({ a: z.string().optional(), b: z.string() }),
    //          z.object({ a: z.string().nullable(), b: z.array(z.string()).min(1) })]).
    const byType = {
      type: "object",
      properties: {
        u: {
          anyOf: [
            { type: "object", properties: { a: { type: "string" }, b: { type: "string" } }, required: ["b"] },
            {
              type: "object",
              properties: {
                a: { type: ["string", "null"] },
                b: { type: "array", items: { type: "string" }, minItems: 1 },
              },
              required: ["a", "b"],
            },
          ],
        },
      },
      required: ["u"],
    };
    expect(restoreArguments({ u: { a: null, b: "x" } }, byType)).toEqual({ u: { b: "x" } });
    expect(restoreArguments({ u: { a: null, b: ["x"] } }, byType)).toEqual({ u: { a: null, b: ["x"] } });
    // A string where the variant takes an array may be its JSON text: that variant is still asked,
    // but the first variant takes the object whole with `a` left out, and is the one it is read by
    // (r94: `{ a: null, b: '["x"]' }`, as before, neither variant takes).
    expect(restoreArguments({ u: { a: null, b: '["x"]' } }, byType)).toEqual({ u: { b: '["x"]' } });
  });

  it("a nullable discriminated union (anyOf: [{ oneOf }, null]) is read by its variant too", () => {
    const nullable = {
      type: "object",
      properties: {
        item: { anyOf: [schema.properties.item as { oneOf: unknown[] }, { type: "null" }] },
      },
      required: ["item"],
    };
    expect(restoreArguments({ item: { kind: "file", path: null } }, nullable)).toEqual({
      item: { kind: "file" },
    });
    expect(restoreArguments({ item: { kind: "dir", path: null } }, nullable)).toEqual({
      item: { kind: "dir", path: null },
    });
    expect(restoreArguments({ item: null }, nullable)).toEqual({ item: null });
  });

  it("an array of variants: each item by its own tag", () => {
    const list = {
      type: "object",
      properties: { items: { type: "array", items: schema.properties.item } },
      required: ["items"],
    };
    const written = {
      items: [
        { kind: "file", path: null },
        { kind: "dir", path: null },
      ],
    };
    expect(restoreArguments(written, list)).toEqual({
      items: [{ kind: "file" }, { kind: "dir", path: null }],
    });
  });
});
