import { describe, expect, it } from "vitest";
import { checkStrictSchema } from "./check-strict.js";
import { MAX_EXPANDED_CHARS, relaxSchema, sanitizeSchema } from "./sanitize-schema.js";

/** Three definitions in a cycle, each referring to the next eight times: under 1 KB of schema. */
function fanOut(): Record<string, unknown> {
  const def = (next: string) => ({
    type: "object",
    properties: Object.fromEntries(
      Array.from({ length: 8 }, (_, i) => [`p${i}`, { $ref: `#/$defs/${next}` }]),
    ),
  });
  return {
    type: "object",
    properties: { root: { $ref: "#/$defs/a" } },
    $defs: { a: def("b"), b: def("c"), c: def("a") },
  };
}

describe("sanitizeSchema on a $ref fan-out", () => {
  it("keeps a small schema small: the expansion stays under the documented cap, and the host is told", () => {
    const schema = fanOut();
    expect(JSON.stringify(schema).length).toBeLessThan(1000);
    const notices: string[] = [];
    const out = sanitizeSchema(schema, { onNotice: (n) => notices.push(n) });
    expect(JSON.stringify(out).length).toBeLessThanOrEqual(MAX_EXPANDED_CHARS);
    expect(checkStrictSchema(out)).toEqual([]);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/\$refs made it \d+ characters/);
    // What could not be inlined is asked for as JSON text, as recursion is.
    expect(JSON.stringify(out)).toContain("JSON text");
  });

  it("is idempotent on it, and relaxSchema stays bounded too", () => {
    const once = sanitizeSchema(fanOut());
    expect(sanitizeSchema(once)).toEqual(once);
    expect(JSON.stringify(relaxSchema(fanOut())).length).toBeLessThanOrEqual(MAX_EXPANDED_CHARS);
  });

  it("says nothing, and changes nothing, for a schema whose references stay small", () => {
    const notices: string[] = [];
    const out = sanitizeSchema(
      {
        type: "object",
        properties: { a: { $ref: "#/$defs/x" }, b: { $ref: "#/$defs/x" } },
        $defs: { x: { type: "string" } },
      },
      { onNotice: (n) => notices.push(n) },
    );
    expect(notices).toEqual([]);
    expect(out.properties).toEqual({ a: { type: ["string", "null"] }, b: { type: ["string", "null"] } });
    expect(out.required).toEqual(["a", "b"]);
  });
});

describe("sanitizeSchema on keywords beside a wide anyOf", () => {
  /** "Give at least one of these fields": 100 properties, and one branch requiring each. */
  const atLeastOne = () => {
    const names = Array.from({ length: 100 }, (_, i) => `field_${i}`);
    return {
      type: "object",
      properties: {
        update: {
          type: "object",
          properties: Object.fromEntries(names.map((n) => [n, { type: "string", description: `The ${n}.` }])),
          anyOf: names.map((n) => ({ required: [n] })),
        },
      },
      required: ["update"],
    };
  };

  it("stays under the documented cap instead of copying the properties into every branch, and says so", () => {
    const schema = atLeastOne();
    expect(JSON.stringify(schema).length).toBeLessThan(10_000);
    const notices: string[] = [];
    const out = sanitizeSchema(schema, { onNotice: (n) => notices.push(n) });
    expect(JSON.stringify(out).length).toBeLessThanOrEqual(MAX_EXPANDED_CHARS);
    expect(checkStrictSchema(out)).toEqual([]);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/100 alternatives/);
    const update = (out.properties as Record<string, Record<string, unknown>>).update as Record<
      string,
      unknown
    >;
    // Every field is still there for the model to give, and the rule is in words.
    expect(Object.keys(update.properties as object)).toHaveLength(100);
    expect(update.description).toMatch(/one of 100 alternatives/);
    expect(sanitizeSchema(out)).toEqual(out);
  });

  it("still pushes the shared keywords into each branch while that stays small", () => {
    const out = sanitizeSchema({
      type: "object",
      properties: {
        target: {
          type: "object",
          properties: { id: { type: "string" }, name: { type: "string" } },
          anyOf: [{ required: ["id"] }, { required: ["name"] }],
        },
      },
      required: ["target"],
    });
    const target = (out.properties as Record<string, Record<string, unknown>>).target;
    expect(target?.anyOf).toEqual([
      {
        type: "object",
        properties: { id: { type: "string" }, name: { type: ["string", "null"] } },
        required: ["id", "name"],
        additionalProperties: false,
      },
      {
        type: "object",
        properties: { id: { type: ["string", "null"] }, name: { type: "string" } },
        required: ["id", "name"],
        additionalProperties: false,
      },
    ]);
  });
});

describe("sanitizeSchema's numeric options", () => {
  it("reads a recursionLimit of Infinity, 1e9 or NaN without hanging, and NaN as the default", {
    timeout: 20_000,
  }, () => {
    const schema = fanOut();
    for (const recursionLimit of [Number.POSITIVE_INFINITY, 1e9]) {
      const out = sanitizeSchema(schema, { recursionLimit });
      expect(JSON.stringify(out).length).toBeLessThanOrEqual(MAX_EXPANDED_CHARS);
      expect(checkStrictSchema(out)).toEqual([]);
    }
    expect(sanitizeSchema(schema, { recursionLimit: Number.NaN })).toEqual(sanitizeSchema(schema));
  });

  it("reads a maxDepth of NaN as the default ten levels", () => {
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 12; i++) deep = { type: "object", properties: { x: deep }, required: ["x"] };
    expect(sanitizeSchema(deep, { maxDepth: Number.NaN })).toEqual(sanitizeSchema(deep));
  });
});
