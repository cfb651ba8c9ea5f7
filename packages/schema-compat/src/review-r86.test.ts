import { describe, expect, it } from "vitest";
import { sanitizeSchema } from "./index.js";

// Found by the idempotence property test in CI (seed 1863946405): a `const`/`enum` value the given
// pattern admits but the pattern as it is sent does not. `^.*$` is sent with `.` as any character
// but a line break, the quote and the backslash (a grammar server writes a string's text raw), so
// `const: "\\"` beside it asks for a value nothing satisfies. The first pass kept both (a grammar of
// nothing); the second pass, reading the sent pattern, dropped them into the description.
describe("an enum beside a pattern that, as sent, admits none of its values", () => {
  const schema = {
    type: "object",
    properties: { path: { type: "string", pattern: "^.*$", const: "\\" } },
    required: ["path"],
  };

  it("is written into the description on the first pass, not sent as a schema nothing satisfies", () => {
    const once = sanitizeSchema(schema) as { properties: { path: Record<string, unknown> } };
    expect(once.properties.path.enum).toBeUndefined();
    expect(once.properties.path.description).toContain('Must be exactly "\\\\".');
  });

  it("comes back the same from a second pass", () => {
    const once = sanitizeSchema(schema);
    expect(sanitizeSchema(once)).toEqual(once);
  });

  it("keeps a value the sent pattern admits", () => {
    const kept = sanitizeSchema({
      type: "object",
      properties: { p: { type: "string", pattern: "^a.*$", enum: ["a/b", 'a "hi"'] } },
    }) as { properties: { p: { enum?: unknown[]; pattern?: string } } };
    // Optional, so nullable: null joins the enum.
    expect(kept.properties.p.enum).toEqual(["a/b", null]);
    expect(kept.properties.p.pattern).toBeDefined();
  });
});
