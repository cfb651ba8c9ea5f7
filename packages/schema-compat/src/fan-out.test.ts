import { describe, expect, it } from "vitest";
import { checkStrictSchema } from "./check-strict.js";
import {
  JSON_TEXT_NOTE,
  MAX_EXPANDED_CHARS,
  MAX_EXPANDED_NODES,
  relaxSchema,
  sanitizeSchema,
} from "./sanitize-schema.js";
import type { JsonSchema } from "./types.js";

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

// Schemas of tens of thousands of nodes, each sanitized twice: a second or two on a busy machine
// (not a timing assert).
describe("sanitizeSchema past MAX_EXPANDED_NODES", { timeout: 60_000 }, () => {
  const fields = () => ({
    type: "object",
    properties: Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`f${i}`, { type: "string" }])),
    required: ["f0"],
  });
  const wide = (property: (i: number) => unknown, count: number) => ({
    type: "object",
    properties: Object.fromEntries(Array.from({ length: count }, (_, i) => [`p${i}`, property(i)])),
    required: ["p0"],
  });
  const sanitized = (schema: unknown) => {
    const notices: string[] = [];
    return { out: sanitizeSchema(schema, { onNotice: (n) => notices.push(n) }), notices };
  };
  const notesIn = (schema: JsonSchema) => JSON.stringify(schema).split(JSON_TEXT_NOTE).length - 1;

  it("keeps a large schema read once whole: 1,500 objects of 15 fields, and 20,001 strings", () => {
    for (const schema of [wide(fields, 1500), wide(() => ({ type: "string" }), 20_001)]) {
      const { out, notices } = sanitized(schema);
      expect(notesIn(out)).toBe(0);
      expect(notices).toEqual([]);
      expect(sanitizeSchema(out)).toEqual(out);
    }
    const last = sanitizeSchema(wide(() => ({ type: "string" }), 20_001)).properties as Record<
      string,
      unknown
    >;
    expect(last.p20000).toEqual({ type: ["string", "null"] });
    // A required name no property describes is a parameter too; none is dropped for size.
    const names = Array.from({ length: 20_001 }, (_, i) => `r${i}`);
    expect(sanitizeSchema({ type: "object", required: names }).required).toEqual(names);
  });

  it("keeps a scalar leaf shared by 30,000 places a scalar, never JSON text", () => {
    const leaf = { type: "string" };
    const { out, notices } = sanitized(wide(() => leaf, 30_000));
    const props = out.properties as Record<string, unknown>;
    expect(props.p29999).toEqual({ type: ["string", "null"] });
    expect(notesIn(out)).toBe(0);
    expect(notices).toEqual([]);
  });

  it("tells onNotice, naming the budget, when repeated objects past it are asked for as JSON text, and a second pass changes nothing", () => {
    const shared = fields();
    const { out, notices } = sanitized(wide(() => shared, 1500));
    expect(checkStrictSchema(out)).toEqual([]);
    const props = out.properties as Record<string, JsonSchema>;
    const cut = Object.keys(props).filter((k) => notesIn(props[k] as JsonSchema) > 0);
    expect(cut.length).toBeGreaterThan(0);
    expect(notices).toHaveLength(1);
    expect(MAX_EXPANDED_NODES).toBe(20_000);
    expect(notices[0]).toContain("MAX_EXPANDED_NODES");
    expect(notices[0]).toContain(String(MAX_EXPANDED_NODES));
    expect(notices[0]).toContain(`${cut.length} repeated objects`);
    // Every field of every property kept whole is still a string.
    const kept = props.p0 as JsonSchema;
    expect((kept.properties as Record<string, unknown>).f14).toEqual({ type: ["string", "null"] });
    const again = sanitized(out);
    expect(again.out).toEqual(out);
    expect(again.notices).toEqual([]);
    for (const key of cut) expect(notesIn(props[key] as JsonSchema)).toBe(1);
  });

  it("bounds a schema of shared objects nested 30 wide and 4 deep (810,000 places), told and idempotent", () => {
    let node: unknown = { type: "string" };
    for (let level = 0; level < 4; level++) {
      const inner = node;
      node = wide(() => inner, 30);
    }
    const { out, notices } = sanitized(node);
    expect(checkStrictSchema(out)).toEqual([]);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain("MAX_EXPANDED_NODES");
    expect(sanitizeSchema(out)).toEqual(out);
  });
});

describe("sanitizeSchema's numeric options", () => {
  // About 2 s of CPU (Infinity and 1e9 are each tried at the largest fitting limit, found by
  // halving). The bound is for a hang, as before the fix: at 20 s it ran out twice in two runs (27 s
  // and 33 s) on a two-core machine with two CPU burners and the rest of the suite beside it.
  it("reads a recursionLimit of Infinity, 1e9 or NaN without hanging, and NaN as the default", {
    timeout: 60_000,
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
