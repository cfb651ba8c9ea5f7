import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { checkStrictSchema } from "./check-strict.js";
import { restoreArguments } from "./optional-nulls.js";
import { sanitizeSchema } from "./sanitize-schema.js";
import type { JsonSchema } from "./types.js";

const propsOf = (schema: JsonSchema) => schema.properties as Record<string, JsonSchema>;

describe("sanitizeSchema keeps every argument the original schema takes", () => {
  it("keeps a referenced definition's properties when the $ref has sibling properties of its own", () => {
    const out = sanitizeSchema({
      type: "object",
      properties: {
        target: {
          $ref: "#/$defs/base",
          properties: { extra: { type: "string" } },
          description: "The target.",
        },
      },
      required: ["target"],
      $defs: {
        base: { type: "object", properties: { id: { type: "integer" } }, required: ["id"] },
      },
    });
    const target = propsOf(out).target as JsonSchema;
    // { id: 1, extra: "x" } is valid for the original (the $ref and its siblings both apply).
    expect(target.properties).toEqual({ id: { type: "integer" }, extra: { type: ["string", "null"] } });
    expect(target.required).toEqual(["id", "extra"]);
    expect(target.description).toBe("The target.");
    expect(checkStrictSchema(out)).toEqual([]);
  });

  it("keeps a required name the schema gives no property for as a parameter the model can fill", () => {
    // Every value the original takes has `path`; without it in properties a strict server refuses it.
    const out = sanitizeSchema({
      type: "object",
      properties: { glob: { type: "string" } },
      required: ["path"],
    });
    expect(out.required).toEqual(["glob", "path"]);
    expect(propsOf(out).path?.anyOf).toBeDefined();
    expect(checkStrictSchema(out)).toEqual([]);
    expect(sanitizeSchema(out)).toEqual(out);
    // With a schema for the other keys, that is the one a required unnamed key takes.
    const typed = sanitizeSchema({
      type: "object",
      required: ["token"],
      additionalProperties: { type: "string" },
    });
    expect(propsOf(typed).token).toEqual({ type: "string" });
  });

  it("lets the model give a free-form object (GitHub's ruleset conditions, a dict, a const object) as JSON text, parsed back by restoreArguments", () => {
    const schema = {
      type: "object",
      properties: {
        name: { type: "string" },
        // github/github-mcp-server create_repository_ruleset (test-fixtures/mcp-published.tools.json).
        conditions: {
          description:
            'Conditions for when this ruleset applies, e.g. {"ref_name": {"include": ["refs/heads/main"], "exclude": []}}',
          type: "object",
        },
        // pydantic's dict[str, str].
        headers: { type: "object", additionalProperties: { type: "string" }, title: "Headers" },
        labels: {
          type: "object",
          patternProperties: { "^[a-z]+$": { type: "string" } },
          additionalProperties: false,
        },
        version: { const: { major: 1 } },
      },
      required: ["name", "version"],
    };
    const out = sanitizeSchema(schema);
    expect(checkStrictSchema(out)).toEqual([]);
    expect(sanitizeSchema(out)).toEqual(out);
    const call = {
      name: "main",
      conditions: { ref_name: { include: ["refs/heads/main"], exclude: [] } },
      headers: { Accept: "text/plain" },
      labels: { team: "core" },
      version: { major: 1 },
    };
    // Each free-form object takes a string in the sanitized schema (a closed object with no
    // properties takes only {}), and its description still says what goes there.
    for (const key of ["conditions", "headers", "labels", "version"] as const) {
      const sub = propsOf(out)[key] as JsonSchema;
      expect([sub.type].flat(), key).toContain("string");
      expect(sub.properties, key).toBeUndefined();
    }
    expect(propsOf(out).conditions?.description).toContain('e.g. {"ref_name"');
    expect(propsOf(out).version?.description).toContain('{"major":1}');
    const written = {
      name: "main",
      conditions: JSON.stringify(call.conditions),
      headers: JSON.stringify(call.headers),
      labels: JSON.stringify(call.labels),
      version: JSON.stringify(call.version),
    };
    expect(restoreArguments(written, schema)).toEqual(call);
    // Left out, as a model answering the sanitized schema leaves an optional one out: gone again.
    const sparse = { name: "main", conditions: null, headers: null, labels: null, version: '{"major":1}' };
    expect(restoreArguments(sparse, schema)).toEqual({ name: "main", version: { major: 1 } });
    // An object closed to other keys (`false`, or `{ not: {} }` as some generators write it) stays {}.
    for (const additionalProperties of [false, { not: {} }]) {
      const closed = sanitizeSchema({
        type: "object",
        properties: { none: { type: "object", properties: {}, additionalProperties } },
        required: ["none"],
      });
      expect(propsOf(closed).none, JSON.stringify(additionalProperties)).toEqual({
        type: "object",
        properties: {},
        required: [],
        additionalProperties: false,
      });
    }
    // The root is the tool's arguments object, free-form or not.
    expect(sanitizeSchema({ type: "object" })).toEqual({
      type: "object",
      properties: {},
      required: [],
      additionalProperties: false,
    });
  });

  it("reads allOf nested 20,000 deep as the one type it asks for, not as an empty object", () => {
    let inner: unknown = { type: "string", description: "The name." };
    for (let i = 0; i < 20_000; i++) inner = { allOf: [inner] };
    const out = sanitizeSchema({ type: "object", properties: { name: inner }, required: ["name"] });
    expect(propsOf(out).name).toEqual({ type: "string", description: "The name." });
  });

  it("merges an allOf of 3,000 parts into every property and requirement they name", () => {
    const parts = Array.from({ length: 3000 }, (_, i) => ({
      properties: { shared: { type: "string" }, [`p${i}`]: { type: "integer" } },
      required: [`p${i}`],
    }));
    const out = sanitizeSchema({ type: "object", allOf: parts });
    expect(Object.keys(propsOf(out))).toHaveLength(3001);
    expect(propsOf(out).shared).toEqual({ type: ["string", "null"] });
    expect(propsOf(out).p2999).toEqual({ type: "integer" });
  });
});

/**
 * How llama.cpp's converter reads a pattern: it insists on `^…$`, strips them, and matches the
 * rest against the whole string — so `^a|b$` is `a` or `b` there, where JavaScript (and OpenAI)
 * read "starts with a, or ends with b".
 */
const grammarReading = (pattern: string) => new RegExp(`^(?:${pattern.slice(1, -1)})$`);

describe("sanitizeSchema's patterns mean the same to a grammar server and to JavaScript", () => {
  const emitted = (pattern: string) =>
    propsOf(
      sanitizeSchema({ type: "object", properties: { a: { type: "string", pattern } }, required: ["a"] }),
    ).a?.pattern as string;

  it("anchors each alternative of a top-level | on its own", () => {
    for (const [pattern, valid] of [
      ["^a|b$", ["axx", "xxb"]],
      ["^a|b", ["axx", "xbx"]],
      ["a|b$", ["xax", "xxb"]],
      ["^ab|cd|ef$", ["abx", "xcdx", "xef"]],
    ] as const) {
      const out = emitted(pattern);
      for (const text of valid) {
        expect(new RegExp(pattern).test(text)).toBe(true);
        expect(new RegExp(out).test(text), `${out} on ${text}`).toBe(true);
        expect(grammarReading(out).test(text), `${out} read by a grammar server on ${text}`).toBe(true);
      }
    }
  });

  it("accepts exactly the quote-free strings the original pattern accepts, in both readings", () => {
    const atom = fc.constantFrom("a", "b", "ab", "a+", "(a|b)", "[ab]", ".", "b*");
    const alternative = fc.array(atom, { minLength: 1, maxLength: 3 }).map((a) => a.join(""));
    const patternArb = fc
      .tuple(fc.boolean(), fc.array(alternative, { minLength: 1, maxLength: 3 }), fc.boolean())
      .map(([start, alts, end]) => `${start ? "^" : ""}${alts.join("|")}${end ? "$" : ""}`);
    const textArb = fc.stringMatching(/^[abx]{0,6}$/);
    fc.assert(
      fc.property(patternArb, fc.array(textArb, { minLength: 1, maxLength: 8 }), (pattern, texts) => {
        const out = emitted(pattern);
        if (out === undefined) return;
        for (const text of texts) {
          const original = new RegExp(pattern).test(text);
          expect(new RegExp(out).test(text)).toBe(original);
          expect(grammarReading(out).test(text)).toBe(original);
        }
      }),
      propertyRuns(500, { seed: 7 }),
    );
  });
});

describe("sanitizeSchema at the root", () => {
  it("keeps the object alternative of a root union that also allows a non-object (a tool's arguments are an object)", () => {
    for (const schema of [
      {
        anyOf: [
          { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
          { type: "string" },
        ],
      },
      { type: ["object", "string"], properties: { path: { type: "string" } }, required: ["path"] },
    ]) {
      const out = sanitizeSchema(schema);
      expect(out.properties).toEqual({ path: { type: "string" } });
      expect(out.required).toEqual(["path"]);
      expect(checkStrictSchema(out)).toEqual([]);
      expect(sanitizeSchema(out)).toEqual(out);
    }
  });
});
