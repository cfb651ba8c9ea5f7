/**
 * r85 review of schema-compat reading a schema through a polluted `Object.prototype`: a schema is
 * JSON from a tool author or an MCP server, and a field counts where the schema object holds it (or
 * a prototype of its own does, a class's getter), never where only `Object.prototype` does. Before,
 * `Object.prototype.description = "POLLUTED"` wrote that text into every node of every schema,
 * `Object.prototype.$ref` read every schema as a reference to nothing (an object with no
 * properties), and `relaxSchema` threw "note is not a function".
 */
import { describe, expect, it } from "vitest";
import { checkStrictSchema } from "./check-strict.js";
import { restoreArguments, takesStringAt } from "./optional-nulls.js";
import { relaxSchema, sanitizeSchema } from "./sanitize-schema.js";

const proto = Object.prototype as Record<string, unknown>;

/** Runs `body` with `Object.prototype[field]` set to `value`, taken away again whatever happens. */
function polluted<T>(field: string, value: unknown, body: () => T): T {
  proto[field] = value;
  try {
    return body();
  } finally {
    delete proto[field];
  }
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
  it("sanitizeSchema and relaxSchema make the same schema whatever keyword Object.prototype holds", () => {
    const strict = JSON.stringify(sanitizeSchema(schema()));
    const relaxed = JSON.stringify(relaxSchema(schema()));
    for (const [keyword, value] of KEYWORDS) {
      const notices: string[] = [];
      polluted(keyword, value, () => {
        expect(JSON.stringify(sanitizeSchema(schema(), { onNotice: (n) => notices.push(n) })), keyword).toBe(
          strict,
        );
        expect(JSON.stringify(relaxSchema(schema())), keyword).toBe(relaxed);
      });
      expect(notices, keyword).toEqual([]);
    }
  });

  it("the options: an onNotice, maxDepth or recursionLimit only Object.prototype holds is not the host's", () => {
    const told: string[] = [];
    const deep = {
      type: "object",
      properties: { a: { type: "object", properties: { b: { type: "string" } } } },
    };
    const plain = JSON.stringify(sanitizeSchema(deep));
    polluted(
      "onNotice",
      (n: string) => told.push(n),
      () => polluted("maxDepth", 1, () => expect(JSON.stringify(sanitizeSchema(deep, {}))).toBe(plain)),
    );
    expect(told).toEqual([]);
  });

  it("checkStrictSchema finds the same issues whatever keyword Object.prototype holds", () => {
    const sanitized = sanitizeSchema(schema());
    const raw = checkStrictSchema(schema());
    for (const [keyword, value] of KEYWORDS) {
      polluted(keyword, value, () => {
        expect(checkStrictSchema(sanitized), keyword).toEqual([]);
        expect(checkStrictSchema(schema()), keyword).toEqual(raw);
      });
    }
  });

  it("restoreArguments and takesStringAt read the schema as it is", () => {
    const args = { name: "a@b.c", count: null, maybe: null, map: '{"k":"v"}', place: { city: "Oslo" } };
    const restored = restoreArguments(args, schema());
    for (const [keyword, value] of KEYWORDS) {
      polluted(keyword, value, () => {
        expect(restoreArguments(args, schema()), keyword).toEqual(restored);
        expect(takesStringAt(schema(), ["name"]), keyword).toBe(true);
        expect(takesStringAt(schema(), ["count"]), keyword).toBe(false);
      });
    }
  });

  it("still reads a field a prototype of the schema's own holds (a class's getter)", () => {
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
    expect(polluted("description", "POLLUTED", () => sanitizeSchema(wrapped))).toEqual(expected);
  });
});
