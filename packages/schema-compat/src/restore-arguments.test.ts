import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { dropOptionalNulls, restoreArguments, sanitizeSchema } from "./index.js";

// zod's z.toJSONSchema of a recursive tree: the reference is expanded twice, then asked for as JSON text.
const tree = {
  type: "object",
  properties: { tree: { $ref: "#/$defs/node" }, note: { type: "string" } },
  required: ["tree"],
  $defs: {
    node: {
      type: "object",
      properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#/$defs/node" } } },
      required: ["name"],
    },
  },
};
const deep = [{ name: "leaf", children: [{ name: "deepest" }] }];

type Raw = Record<string, unknown>;

/** The sanitized schema at a path of property names (`[]` for an array's items). */
function at(schema: unknown, path: string[]): Raw {
  let node = schema as Raw;
  for (const key of path) {
    const plain = (Array.isArray(node.anyOf) ? node.anyOf[0] : node) as Raw;
    node = (key === "[]" ? plain.items : (plain.properties as Raw)[key]) as Raw;
  }
  return node;
}

describe("restoreArguments", () => {
  it("parses back the JSON text a recursive $ref past recursionLimit was asked for, and drops the optional nulls", () => {
    const strict = sanitizeSchema(tree);
    expect(at(strict, ["tree", "children", "[]", "children"]).description).toContain("JSON text");
    const args = {
      tree: { name: "root", children: [{ name: "kid", children: JSON.stringify(deep) }] },
      note: null,
    };
    const before = structuredClone(args);
    expect(restoreArguments(args, tree)).toEqual({
      tree: { name: "root", children: [{ name: "kid", children: deep }] },
    });
    expect(args).toEqual(before);
    // dropOptionalNulls alone leaves the text a string, which the tool refuses.
    expect(dropOptionalNulls(args, tree)).toEqual({
      tree: { name: "root", children: [{ name: "kid", children: JSON.stringify(deep) }] },
    });
  });

  it("asks for a recursive $ref written as allOf: [$ref] (pydantic v1) as JSON text past recursionLimit, and parses it back", () => {
    const schema = {
      type: "object",
      properties: { head: { allOf: [{ $ref: "#/definitions/Item" }], description: "First item." } },
      required: ["head"],
      definitions: {
        Item: {
          type: "object",
          properties: { value: { type: "integer" }, next: { allOf: [{ $ref: "#/definitions/Item" }] } },
          required: ["value"],
        },
      },
    };
    const strict = sanitizeSchema(schema, { recursionLimit: 1 });
    // Before: the reference was dropped and `next` read as any scalar, so no item could be given there.
    expect(at(strict, ["head", "next"])).toMatchObject({
      type: ["string", "null"],
      description: expect.stringContaining("Give this value as JSON text."),
    });
    const args = { head: { value: 1, next: '{"value":2,"next":{"value":3,"next":{"value":4}}}' } };
    expect(restoreArguments(args, schema, { recursionLimit: 1 })).toEqual({
      head: { value: 1, next: { value: 2, next: { value: 3, next: { value: 4 } } } },
    });
  });

  it("says an object goes as JSON text where one alternative of a union takes any value, and parses it back", () => {
    const schema = {
      type: "object",
      properties: { value: { anyOf: [{ type: "integer" }, { description: "Anything else." }] } },
      required: ["value"],
    };
    // Before: the untyped alternative was flattened into the union and its note lost, so the model
    // was never told an object could be given, and no text was parsed back.
    expect(at(sanitizeSchema(schema), ["value"]).description).toContain(
      "give an object or an array as JSON text",
    );
    expect(restoreArguments({ value: '{"a":1}' }, schema)).toEqual({ value: { a: 1 } });
    expect(restoreArguments({ value: 7 }, schema)).toEqual({ value: 7 });
  });

  it("parses back an object nested past maxDepth, with the maxDepth the schema was sanitized with", () => {
    const schema = {
      type: "object",
      properties: {
        outer: {
          type: "object",
          properties: { inner: { type: "object", properties: { x: { type: "integer" } }, required: ["x"] } },
          required: ["inner"],
        },
      },
      required: ["outer"],
    };
    expect(at(sanitizeSchema(schema, { maxDepth: 2 }), ["outer", "inner"]).description).toContain(
      "JSON text",
    );
    const args = { outer: { inner: '{"x": 3}' } };
    expect(restoreArguments(args, schema, { maxDepth: 2 })).toEqual({ outer: { inner: { x: 3 } } });
    // With the default maxDepth that place was an object, not text: a string there is the model's mistake, kept.
    expect(restoreArguments(args, schema)).toEqual(args);
  });

  it("parses back an object or an array given for a value with no type, and leaves other strings as strings", () => {
    const schema = {
      type: "object",
      properties: { value: { description: "Anything." }, label: { type: "string" } },
      required: ["value", "label"],
    };
    expect(at(sanitizeSchema(schema), ["value"]).description).toContain("as JSON text");
    expect(restoreArguments({ value: '{"a":[1,2]}', label: '{"a":1}' }, schema)).toEqual({
      value: { a: [1, 2] },
      label: '{"a":1}',
    });
    expect(restoreArguments({ value: "[1]", label: "x" }, schema)).toEqual({ value: [1], label: "x" });
    // A number, a quoted string, true, null written as text stay the string the model wrote.
    for (const text of ["12", '"hi"', "true", "null", "plain words", "{broken"]) {
      expect(restoreArguments({ value: text, label: "x" }, schema)).toEqual({ value: text, label: "x" });
    }
  });

  it("leaves JSON text that does not parse, or parses to a kind the original does not take there, as it was", () => {
    const args = (text: string) => ({ tree: { name: "r", children: [{ name: "k", children: text }] } });
    expect(restoreArguments(args("[{name:"), tree)).toEqual(args("[{name:"));
    // The original takes an array of nodes there, not an object or a number.
    expect(restoreArguments(args('{"name":"x"}'), tree)).toEqual(args('{"name":"x"}'));
    expect(restoreArguments(args("3"), tree)).toEqual(args("3"));
  });

  it("does not parse a string where the original takes a string, even under the JSON-text wording", () => {
    const schema = {
      type: "object",
      properties: { code: { type: "string", description: "Give this value as JSON text." } },
      required: ["code"],
    };
    expect(restoreArguments({ code: '{"a":1}' }, schema)).toEqual({ code: '{"a":1}' });
  });

  it("follows the shapes dropOptionalNulls follows: allOf, oneOf branches, tuples, a root union", () => {
    const node = {
      type: "object",
      properties: { id: { type: "string" }, next: { $ref: "#/$defs/node" } },
      required: ["id"],
    };
    const schema = {
      anyOf: [
        {
          type: "object",
          properties: { chain: { allOf: [{ $ref: "#/$defs/node" }] } },
          required: ["chain"],
          additionalProperties: false,
        },
        {
          type: "object",
          properties: {
            pair: {
              type: "array",
              prefixItems: [{ type: "string" }, { oneOf: [{ type: "integer" }, { $ref: "#/$defs/node" }] }],
            },
          },
          required: ["pair"],
          additionalProperties: false,
        },
      ],
      $defs: { node },
    };
    const chain = { id: "a", next: { id: "b", next: '{"id":"c","next":{"id":"d"}}' } };
    expect(restoreArguments({ chain, pair: null }, schema)).toEqual({
      chain: { id: "a", next: { id: "b", next: { id: "c", next: { id: "d" } } } },
    });
    const pair = ["x", { id: "a", next: { id: "b", next: '{"id":"c"}' } }];
    expect(restoreArguments({ chain: null, pair }, schema)).toEqual({
      pair: ["x", { id: "a", next: { id: "b", next: { id: "c" } } }],
    });
  });

  it("never throws and never mutates, whatever the arguments and schema", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (args, schema) => {
        const before = JSON.stringify(args);
        restoreArguments(args, schema);
        expect(JSON.stringify(args)).toBe(before);
      }),
    );
    const cyclic: Record<string, unknown> = { type: "object" };
    cyclic.properties = { self: cyclic, any: { anyOf: [{ $ref: "#" }, { $ref: "#" }] } };
    expect(restoreArguments({ self: { self: "{}" }, any: "[]" }, cyclic)).toBeTypeOf("object");
    let value: unknown = "[]";
    for (let i = 0; i < 100_000; i++) value = { tree: value };
    let back = restoreArguments(value, tree) as { tree: unknown } | string;
    let levels = 0;
    for (; typeof back === "object"; levels++) back = back.tree as { tree: unknown } | string;
    expect([levels, back]).toEqual([100_000, "[]"]);
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    expect(restoreArguments({ a: 1 }, revoked.proxy)).toEqual({ a: 1 });
    expect(restoreArguments(revoked.proxy, tree)).toBe(revoked.proxy);
  });
});
