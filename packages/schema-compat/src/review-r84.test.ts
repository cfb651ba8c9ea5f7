/**
 * r84: a schema that throws as it is read (a throwing getter, a revoked Proxy) was sent as a closed
 * `{}` with onNotice told nothing — the tool silently callable only with `{}`; and the "One of:"
 * list written when an enum contradicts its type or bounds was capped at 20 values but not by
 * length (20 values of 100 KB each went out as 2 MB in a description).
 */
import { describe, expect, it } from "vitest";
import { sanitizeSchema } from "./sanitize-schema.js";

const sanitized = (schema: unknown) => {
  const notices: string[] = [];
  const out = sanitizeSchema(schema, { onNotice: (n) => notices.push(n) });
  return { schema: out, notices, json: JSON.stringify(out) };
};

describe("a schema that cannot be read", () => {
  it("a throwing getter: the closed object is kept, onNotice names the path and the error, cut short", () => {
    const schema = {
      type: "object",
      properties: {
        a: { type: "string" },
        b: {
          get type(): string {
            throw new Error(`boom ${"x".repeat(5000)}`);
          },
        },
      },
    };
    const { schema: out, notices } = sanitized(schema);
    expect(out).toEqual({ type: "object", properties: {}, required: [], additionalProperties: false });
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/^This schema could not be read \(#\/properties\/b\/type: Error: boom x+…\)/);
    expect(notices[0]).toContain("the model can call the tool only with {}");
    expect((notices[0] as string).length).toBeLessThan(600);
  });

  it("a revoked Proxy, at the root or below it: the place named", () => {
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    expect(sanitized({ type: "object", properties: { "p/q": revoked.proxy } }).notices).toEqual([
      "This schema could not be read (#/properties/p~1q: TypeError: Cannot perform 'IsArray' on a proxy that has been revoked); it is sent as an object with no properties, so the model can call the tool only with {}.",
    ]);
    expect(sanitized(revoked.proxy).notices[0]).toMatch(/^This schema could not be read \(#: TypeError: /);
  });

  it("a readable schema tells nothing", () => {
    expect(sanitized({ type: "object", properties: { a: { type: "string" } } }).notices).toEqual([]);
  });
});

describe("an enum contradicting its type or bounds, of long values", () => {
  const big = Array.from({ length: 20 }, (_, i) => String(i).padEnd(100_000, "x"));

  it("against its type: 'One of:' cut by characters, the count said", () => {
    const { json, notices } = sanitized({
      type: "object",
      properties: { a: { type: "integer", enum: big } },
    });
    expect(json.length).toBeLessThan(4000);
    expect(json).toContain("(20 values in all)");
    expect(notices.join("").length).toBeLessThan(4000);
  });

  it("against its bounds: the same", () => {
    const { json, notices } = sanitized({
      type: "object",
      properties: { a: { type: "string", maxLength: 1, enum: big } },
    });
    expect(json.length).toBeLessThan(4000);
    expect(json).toContain("(20 values in all)");
    expect(notices.join("").length).toBeLessThan(4000);
  });

  it("short values are still listed whole", () => {
    const { schema } = sanitized({
      type: "object",
      properties: { a: { type: "integer", enum: ["x", "y"] } },
    });
    expect(JSON.stringify(schema)).toContain('One of: \\"x\\", \\"y\\".');
  });
});
