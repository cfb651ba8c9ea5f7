import { describe, expect, it } from "vitest";
import { restoreArguments } from "./optional-nulls.js";
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
      node = (node.properties as Record<string, Record<string, unknown>>)[`l${level}`] as Record<string, unknown>;
    }
    expect(node).toEqual({ type: ["string", "null"], description: "Leaf. Give this value as JSON text." });
  });
});
