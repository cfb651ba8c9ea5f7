/**
 * r85 review of schema-compat reading a schema through a polluted `Object.prototype`: a schema is
 * JSON from a tool author or an MCP server, and a field counts where the schema object holds it (or
 * a prototype of its own does, a class's getter), never where only `Object.prototype` does. Before,
 * `Object.prototype.description = "POLLUTED"` wrote that text into every node of every schema,
 * `Object.prototype.$ref` read every schema as a reference to nothing (an object with no
 * properties), and `relaxSchema` threw "note is not a function".
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { checkStrictSchema } from "./check-strict.js";
import { restoreArguments, takesStringAt } from "./optional-nulls.js";
import { relaxSchema, sanitizeSchema } from "./sanitize-schema.js";

const proto = Object.prototype as Record<string, unknown>;

/** The fields a test set on Object.prototype: `clean()` (and the end of every test) takes them away. */
const pollutedFields: string[] = [];

function pollute(field: string, value: unknown): void {
  proto[field] = value;
  pollutedFields.push(field);
}

function clean(): void {
  for (const field of pollutedFields.splice(0)) delete proto[field];
}

/**
 * A test's body, with what it set on Object.prototype taken off as the body returns or throws, before
 * the test runner's own code runs again: an `afterEach` comes too late (see tool-calls'
 * polluted-prototype.test.ts — an inherited `return` there broke the runner's worker for the files
 * after it).
 */
function polluting(body: () => void): () => void {
  return () => {
    try {
      body();
    } finally {
      clean();
    }
  };
}

const schema = () => ({
  $defs: { Place: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
  type: "object",
  properties: {
    name: { type: "string", format: "email" },
    count: { type: "integer", minimum: 1 },
    tags: { type: "array", items: { type: "string" } },
    maybe: { anyOf: [{ type: "string" }, { type: "null" }] },
    place: { $ref: "#/$defs/Place" },
    both: { allOf: [{ type: "object", properties: { x: { type: "string" } } }, { required: ["x"] }] },
    kind: { enum: ["a", "b"] },
    pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }] },
    map: { type: "object", additionalProperties: { type: "string" } },
  },
  required: ["name"],
});

/** Every keyword the sanitizer reads, with values that would change what it makes of a schema. */
const KEYWORDS: Array<[string, unknown]> = [
  ["description", "POLLUTED"],
  ["title", "POLLUTED"],
  ["$ref", "#/$defs/Place"],
  ["type", "string"],
  ["properties", { evil: { type: "string" } }],
  ["required", ["evil"]],
  ["items", { type: "boolean" }],
  ["prefixItems", [{ type: "boolean" }]],
  ["enum", ["evil"]],
  ["const", "evil"],
  ["default", "evil"],
  ["anyOf", [{ type: "boolean" }, { type: "null" }]],
  ["oneOf", [{ type: "boolean" }, { type: "null" }]],
  ["allOf", [{ required: ["evil"] }]],
  ["not", {}],
  ["format", "evil"],
  ["pattern", "^evil$"],
  ["minimum", 5],
  ["maximum", 0],
  ["exclusiveMinimum", true],
  ["multipleOf", 7],
  ["minLength", 3],
  ["maxLength", 0],
  ["minItems", 2],
  ["maxItems", 0],
  ["uniqueItems", true],
  ["nullable", true],
  ["additionalProperties", { type: "string" }],
  ["patternProperties", { "^x": { type: "string" } }],
  ["maxProperties", 0],
];

describe("r85: a polluted Object.prototype is not read as a schema's fields", () => {
  it(
    "sanitizeSchema and relaxSchema make the same schema whatever keyword Object.prototype holds",
    polluting(() => {
      const strict = JSON.stringify(sanitizeSchema(schema()));
      const relaxed = JSON.stringify(relaxSchema(schema()));
      for (const [keyword, value] of KEYWORDS) {
        const notices: string[] = [];
        pollute(keyword, value);
        expect(JSON.stringify(sanitizeSchema(schema(), { onNotice: (n) => notices.push(n) })), keyword).toBe(
          strict,
        );
        expect(JSON.stringify(relaxSchema(schema())), keyword).toBe(relaxed);
        clean();
        expect(notices, keyword).toEqual([]);
      }
    }),
  );

  it(
    "the options: an onNotice, maxDepth or recursionLimit only Object.prototype holds is not the host's",
    polluting(() => {
      const told: string[] = [];
      const deep = {
        type: "object",
        properties: { a: { type: "object", properties: { b: { type: "string" } } } },
      };
      const plain = JSON.stringify(sanitizeSchema(deep));
      pollute("onNotice", (n: string) => told.push(n));
      pollute("maxDepth", 1);
      expect(JSON.stringify(sanitizeSchema(deep, {}))).toBe(plain);
      clean();
      expect(told).toEqual([]);
    }),
  );

  it(
    "checkStrictSchema finds the same issues whatever keyword Object.prototype holds",
    polluting(() => {
      const sanitized = sanitizeSchema(schema());
      const raw = checkStrictSchema(schema());
      for (const [keyword, value] of KEYWORDS) {
        pollute(keyword, value);
        expect(checkStrictSchema(sanitized), keyword).toEqual([]);
        expect(checkStrictSchema(schema()), keyword).toEqual(raw);
        clean();
      }
    }),
  );

  it(
    "restoreArguments and takesStringAt read the schema as it is",
    polluting(() => {
      const args = { name: "a@b.c", count: null, maybe: null, map: '{"k":"v"}', place: { city: "Oslo" } };
      const restored = restoreArguments(args, schema());
      for (const [keyword, value] of KEYWORDS) {
        pollute(keyword, value);
        expect(restoreArguments(args, schema()), keyword).toEqual(restored);
        expect(takesStringAt(schema(), ["name"]), keyword).toBe(true);
        expect(takesStringAt(schema(), ["count"]), keyword).toBe(false);
        clean();
      }
    }),
  );

  it(
    "still reads a field a prototype of the schema's own holds (a class's getter)",
    polluting(() => {
      class Named {
        get type() {
          return "string";
        }
        get description() {
          return "A name.";
        }
      }
      const wrapped = { type: "object", properties: { name: new Named() }, required: ["name"] };
      const expected = {
        type: "object",
        properties: { name: { type: "string", description: "A name." } },
        required: ["name"],
        additionalProperties: false,
      };
      expect(sanitizeSchema(wrapped)).toEqual(expected);
      pollute("description", "POLLUTED");
      const read = sanitizeSchema(wrapped);
      clean();
      expect(read).toEqual(expected);
    }),
  );
});

/** `{ x: { type, [keyword]: value } }` sanitized, with what `onNotice` was told. */
function sanitizedAt(type: string, keyword: string, value: unknown) {
  const notices: string[] = [];
  const extra = type === "array" ? { items: { type: "string" } } : {};
  const out = sanitizeSchema(
    { type: "object", properties: { x: { type, [keyword]: value, ...extra } }, required: ["x"] },
    { onNotice: (n) => notices.push(n) },
  );
  return { x: (out.properties as Record<string, Record<string, unknown>>).x ?? {}, notices, out };
}

const NUMERIC: Array<[string, string]> = [
  ["number", "minimum"],
  ["number", "maximum"],
  ["number", "exclusiveMinimum"],
  ["number", "exclusiveMaximum"],
  ["number", "multipleOf"],
  ["integer", "minimum"],
  ["integer", "multipleOf"],
  ["string", "minLength"],
  ["string", "maxLength"],
  ["array", "minItems"],
  ["array", "maxItems"],
];

describe("r85: a numeric keyword JSON cannot carry is told, never dropped silently", () => {
  it("minimum: 1e309 (Infinity) is named with its path and written into the description", () => {
    const schema = JSON.parse('{"type":"object","properties":{"n":{"type":"number","minimum":1e309}}}');
    const notices: string[] = [];
    const out = sanitizeSchema(schema, { onNotice: (n) => notices.push(n) });
    expect(out.properties).toEqual({ n: { type: ["number", "null"], description: "At least Infinity." } });
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain("minimum at #/properties/n is Infinity");
  });

  it("a bound on the side that bounds nothing (-Infinity, NaN) is left out, told", () => {
    for (const value of [Number.NEGATIVE_INFINITY, Number.NaN]) {
      const { x, notices } = sanitizedAt("number", "minimum", value);
      expect(x).toEqual({ type: "number" });
      expect(notices, String(value)).toEqual([expect.stringContaining("minimum at #/properties/x")]);
    }
  });

  it("a BigInt an exact number holds is that number; a numeric string is written into the description", () => {
    expect(sanitizedAt("integer", "minimum", 5n).x).toEqual({ type: "integer", minimum: 5 });
    expect(sanitizedAt("array", "maxItems", 3n).x).toMatchObject({ maxItems: 3 });
    expect(sanitizedAt("string", "minLength", 2n).x).toEqual({
      type: "string",
      description: "At least 2 characters.",
    });
    const step = sanitizedAt("number", "multipleOf", "5");
    expect(step.x).toEqual({ type: "number", description: "A multiple of 5." });
    expect(step.notices).toEqual([expect.stringContaining('multipleOf at #/properties/x is the string "5"')]);
  });

  it("a fractional count is the whole count it means, told", () => {
    const { x, notices } = sanitizedAt("array", "minItems", 2.5);
    expect(x).toMatchObject({ minItems: 3 });
    expect(notices).toEqual([expect.stringContaining("read as 3")]);
  });

  it("names the place below items and anyOf branches", () => {
    const notices: string[] = [];
    sanitizeSchema(
      {
        type: "object",
        properties: {
          list: {
            type: "array",
            items: { anyOf: [{ type: "string" }, { type: "number", maximum: Number.NaN }] },
          },
        },
      },
      { onNotice: (n) => notices.push(n) },
    );
    expect(notices).toEqual([expect.stringContaining("maximum at #/properties/list/items/anyOf/1 is NaN")]);
  });

  it("property: any value of any numeric keyword sends JSON whose numbers are finite, and one not read as given is told", () => {
    const value = fc.oneof(
      fc.double(),
      fc.constantFrom(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, -1, 0, 2.5),
      fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
      fc.string({ maxLength: 6 }),
      fc.constantFrom(null, true, false, [], {}),
    );
    fc.assert(
      fc.property(fc.constantFrom(...NUMERIC), value, ([type, keyword], given) => {
        const { out, x, notices } = sanitizedAt(type, keyword, given);
        const text = JSON.stringify(out);
        expect(text).not.toMatch(/:null[,}]/);
        // Written whole: a BigInt would have thrown above, Infinity or NaN read as null (-0 reads as 0, the same bound).
        const kept = x[keyword];
        if (kept !== undefined) expect(Number.isFinite(kept)).toBe(true);
        const exact = typeof given === "number" && Number.isFinite(given);
        if (!exact && !(typeof given === "boolean" && keyword.startsWith("exclusive"))) {
          expect(notices.length).toBeGreaterThan(0);
        }
      }),
      propertyRuns(300),
    );
  });
});

describe("r85: a keyword the sanitizer cannot read is told, not turned silently into any value", () => {
  const told = (property: unknown) => {
    const notices: string[] = [];
    const out = sanitizeSchema(
      { type: "object", properties: { x: property }, required: ["x"] },
      { onNotice: (n) => notices.push(n) },
    );
    return { x: (out.properties as Record<string, unknown>).x, notices };
  };

  it("a $ref that names nothing in the schema", () => {
    const { notices } = told({ $ref: "#/$defs/Missing" });
    expect(notices).toEqual([
      expect.stringContaining('$ref at #/properties/x ("#/$defs/Missing") names nothing'),
    ]);
    expect(told({ $ref: "https://example.com/schema.json" }).notices).toHaveLength(1);
  });

  it("a type that is no JSON Schema type", () => {
    const { x, notices } = told({ type: "int" });
    expect(x).toMatchObject({ anyOf: expect.any(Array) });
    expect(notices).toEqual([
      expect.stringContaining('type at #/properties/x ("int") is no JSON Schema type'),
    ]);
    expect(told({ type: ["string", "str"] }).notices).toEqual([expect.stringContaining("read as string")]);
  });

  it("a pattern, format, enum, properties or items of the wrong kind", () => {
    expect(told({ type: "string", pattern: 5 }).notices).toEqual([
      expect.stringContaining("pattern at #/properties/x is 5"),
    ]);
    expect(told({ type: "string", format: ["email"] }).notices).toEqual([
      expect.stringContaining("format at #/properties/x"),
    ]);
    expect(told({ type: "string", enum: "a" }).notices).toEqual([
      expect.stringContaining("enum at #/properties/x"),
    ]);
    expect(told({ type: "object", properties: [] }).notices).toEqual([
      expect.stringContaining("properties at #/properties/x is an array"),
    ]);
    expect(told({ type: "array", items: "string" }).notices).toEqual([
      expect.stringContaining("items at #/properties/x"),
    ]);
  });

  it("tells nothing of a schema that reads as written", () => {
    expect(told({ type: "array", items: { type: "string" }, minItems: 1 }).notices).toEqual([]);
    expect(told({ type: ["string", "null"], format: "email", enum: ["a@b.c", null] }).notices).toEqual([]);
    expect(told({ $ref: "#", description: "recursive" }).notices).toEqual([]);
  });
});
