import { describe, expect, it } from "vitest";
import { checkStrictSchema } from "./check-strict.js";
import { dropOptionalNulls } from "./optional-nulls.js";
import { relaxSchema, sanitizeSchema } from "./sanitize-schema.js";

function nested(levels: number, wrap: (inner: unknown) => unknown): unknown {
  let schema: unknown = { type: "string" };
  for (let i = 0; i < levels; i++) schema = wrap(schema);
  return { type: "object", properties: { a: schema }, required: ["a"] };
}

/** The exotic values a host's own code may hand over: none of them is JSON. */
function exotic(): unknown[] {
  const cycle: Record<string, unknown> = { type: "object" };
  cycle.properties = { self: cycle };
  const getter = Object.defineProperty({ type: "object" }, "properties", {
    enumerable: true,
    get() {
      throw new Error("no");
    },
  });
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return [
    cycle,
    getter,
    proxy,
    { type: "object", properties: { n: { type: "integer", minimum: 1n } } },
    { type: "object", properties: { s: { type: "string", default: Symbol("s") } } },
    { type: "object", properties: { p: proxy } },
    Object.create(null),
  ];
}

describe("schema-compat never throws, however deep or strange the schema", () => {
  it("sanitizes and relaxes items nested 5,000 deep and anyOf nested 2,000 deep, asking for JSON text past the limit", () => {
    for (const schema of [
      nested(5000, (inner) => ({ type: "array", items: inner })),
      nested(2000, (inner) => ({ anyOf: [inner, { type: "null" }] })),
    ]) {
      const out = sanitizeSchema(schema);
      expect(checkStrictSchema(out)).toEqual([]);
      expect(JSON.stringify(out)).toContain("JSON text");
      expect(sanitizeSchema(out)).toEqual(out);
      expect(checkStrictSchema(relaxSchema(schema), { relaxed: true })).toEqual([]);
    }
  });

  it("answers an issue, not a RangeError, for a schema nested past the stack", () => {
    const issues = checkStrictSchema(nested(20_000, (inner) => ({ type: "array", items: inner })));
    expect(issues.length).toBeGreaterThan(0);
  });

  it("reads cycles, BigInts, symbols, throwing getters and Proxies without throwing", () => {
    for (const schema of exotic()) {
      expect(checkStrictSchema(sanitizeSchema(schema))).toEqual([]);
      expect(checkStrictSchema(relaxSchema(schema), { relaxed: true })).toEqual([]);
      expect(Array.isArray(checkStrictSchema(schema))).toBe(true);
      expect(dropOptionalNulls({ a: null }, schema)).toBeDefined();
      expect(
        dropOptionalNulls(schema, { type: "object", properties: { a: { type: "string" } } }),
      ).toBeDefined();
    }
  });
});
