import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { dropOptionalNulls } from "./optional-nulls.js";
import { sanitizeSchema } from "./sanitize-schema.js";

const here = dirname(fileURLToPath(import.meta.url));
const filesystem = JSON.parse(
  readFileSync(join(here, "../test-fixtures/server-filesystem.tools.json"), "utf8"),
) as {
  tools: Array<{ name: string; inputSchema: Record<string, unknown> }>;
};
const schemaOf = (name: string) => filesystem.tools.find((t) => t.name === name)?.inputSchema;

describe("dropOptionalNulls", () => {
  it("turns a strict-mode call back into what the MCP server expects", () => {
    const readFile = schemaOf("read_file");
    // What a model answering the sanitized schema writes for "no head, no tail".
    const strictArgs = { path: "notes.md", tail: null, head: null };
    expect(sanitizeSchema(readFile).required).toEqual(["path", "tail", "head"]);
    expect(dropOptionalNulls(strictArgs, readFile)).toEqual({ path: "notes.md" });
    expect(strictArgs).toEqual({ path: "notes.md", tail: null, head: null });
  });

  it("reaches nested objects through items and $ref, and keeps nulls the schema allows", () => {
    const schema = {
      type: "object",
      $defs: {
        edit: {
          type: "object",
          properties: { old: { type: "string" }, note: { type: "string" } },
          required: ["old"],
        },
      },
      properties: {
        edits: { type: "array", items: { $ref: "#/$defs/edit" } },
        reason: { type: ["string", "null"] },
        must: { type: "string" },
      },
      required: ["must"],
    };
    const args = { edits: [{ old: "a", note: null }], reason: null, must: null, extra: null };
    expect(dropOptionalNulls(args, schema)).toEqual({
      edits: [{ old: "a" }],
      reason: null,
      must: null,
      extra: null,
    });
  });

  it("never throws, whatever the arguments and schema", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (args, schema) => {
        dropOptionalNulls(args, schema);
      }),
    );
  });
});

describe("dropOptionalNulls gives the tool back the call the original schema describes", () => {
  it("drops the null strict mode put in an optional pydantic v1 field written as allOf: [$ref]", () => {
    const schema = {
      type: "object",
      properties: {
        mode: { allOf: [{ $ref: "#/definitions/Mode" }], description: "How." },
        query: { type: "string" },
      },
      required: ["query"],
      definitions: { Mode: { type: "string", enum: ["fast", "slow"] } },
    };
    expect(dropOptionalNulls({ query: "x", mode: null }, schema)).toEqual({ query: "x" });
    // With a default the enum (read through the $ref) names, the null stands for it (see review-r99e).
    const defaulted = structuredClone(schema);
    Object.assign(defaulted.properties.mode, { default: "fast" });
    expect(dropOptionalNulls({ query: "x", mode: null }, defaulted)).toEqual({ query: "x", mode: "fast" });
  });

  it("drops the nulls for the other alternatives of a root anyOf that sanitizeSchema merged into one object", () => {
    // zod's z.union of two z.objects: each branch closed.
    const schema = {
      anyOf: [
        {
          type: "object",
          properties: { id: { type: "string" } },
          required: ["id"],
          additionalProperties: false,
        },
        {
          type: "object",
          properties: { name: { type: "string" } },
          required: ["name"],
          additionalProperties: false,
        },
      ],
    };
    expect(sanitizeSchema(schema).required).toEqual(["id", "name"]);
    expect(dropOptionalNulls({ id: "7", name: null }, schema)).toEqual({ id: "7" });
    expect(dropOptionalNulls({ id: null, name: "n" }, schema)).toEqual({ name: "n" });
  });

  it("reaches optional fields inside allOf parts, anyOf/oneOf branches and tuple items", () => {
    const schema = {
      type: "object",
      allOf: [
        { properties: { a: { type: "string" } } },
        { properties: { b: { type: "string" } }, required: ["b"] },
      ],
      properties: {
        pick: {
          oneOf: [
            {
              type: "object",
              properties: { k: { type: "string" }, z: { type: "integer" } },
              required: ["k"],
            },
            { type: "string" },
          ],
        },
        pair: {
          type: "array",
          prefixItems: [{ type: "object", properties: { o: { type: "string" } } }, { type: "string" }],
        },
      },
      required: ["pick", "pair"],
    };
    expect(
      dropOptionalNulls({ a: null, b: "x", pick: { k: "v", z: null }, pair: [{ o: null }, "s"] }, schema),
    ).toEqual({ b: "x", pick: { k: "v" }, pair: [{}, "s"] });
  });

  it("drops a null for an optional field given by an anyOf of $refs, and for one no value satisfies", () => {
    const schema = {
      type: "object",
      properties: {
        value: { anyOf: [{ $ref: "#/$defs/A" }, { $ref: "#/$defs/B" }] },
        unused: { not: {} },
        note: { anyOf: [{ $ref: "#/$defs/A" }, { type: "null" }] },
      },
      $defs: { A: { type: "string" }, B: { type: "number" } },
    };
    expect(dropOptionalNulls({ value: null, unused: null, note: null }, schema)).toEqual({ note: null });
  });

  it("keeps the referenced definition's fields and the $ref's sibling fields both", () => {
    const schema = {
      type: "object",
      properties: {
        target: { $ref: "#/$defs/base", properties: { extra: { type: "string" } } },
      },
      required: ["target"],
      $defs: { base: { type: "object", properties: { id: { type: "string" } } } },
    };
    expect(dropOptionalNulls({ target: { id: null, extra: null } }, schema)).toEqual({ target: {} });
  });
});

describe("dropOptionalNulls on recursive schemas", () => {
  it("drops an optional field's null in a union that refers to itself, as well as through a recursive tree", () => {
    const selfUnion = {
      $defs: {
        x: {
          anyOf: [{ $ref: "#/$defs/x" }, { type: "object", properties: { a: { type: "string" } } }],
        },
      },
      $ref: "#/$defs/x",
    };
    expect(dropOptionalNulls({ a: null }, selfUnion)).toEqual({});
    const tree = {
      $defs: {
        node: {
          type: "object",
          properties: {
            name: { type: "string" },
            note: { type: "string" },
            children: { type: "array", items: { $ref: "#/$defs/node" } },
          },
          required: ["name"],
        },
      },
      $ref: "#/$defs/node",
    };
    expect(
      dropOptionalNulls(
        { name: "a", note: null, children: [{ name: "b", note: null, children: null }] },
        tree,
      ),
    ).toEqual({ name: "a", children: [{ name: "b" }] });
  });
});
