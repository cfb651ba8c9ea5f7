import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { documentArb } from "../test-support/arbitraries.js";
import { checkStrictSchema } from "./check-strict.js";
import { RELAXED_KEYWORDS, STRICT_KEYWORDS } from "./keywords.js";
import { relaxSchema, sanitizeSchema } from "./sanitize-schema.js";
import type { JsonSchema } from "./types.js";

const runs = propertyRuns(400);

function keywords(schema: unknown, into = new Set<string>()): Set<string> {
  if (typeof schema !== "object" || schema === null) return into;
  const s = schema as Record<string, unknown>;
  for (const key of Object.keys(s)) into.add(key);
  if (s.properties && typeof s.properties === "object") {
    for (const sub of Object.values(s.properties)) keywords(sub, into);
  }
  if (s.items) keywords(s.items, into);
  if (Array.isArray(s.anyOf)) for (const b of s.anyOf) keywords(b, into);
  return into;
}

// Thousands of generated schemas each: seconds alone, more on a busy machine (not a timing assert).
describe("sanitizeSchema on any input (property tests)", { timeout: propertyTimeout(60_000) }, () => {
  it("never throws on an arbitrary JSON value and always answers an object schema", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(checkStrictSchema(sanitizeSchema(value))).toEqual([]);
      }),
      runs,
    );
  });

  it("turns every generated schema into one inside the strict subset", () => {
    fc.assert(
      fc.property(documentArb, (doc) => {
        expect(checkStrictSchema(sanitizeSchema(doc))).toEqual([]);
      }),
      runs,
    );
  });

  it("is idempotent: sanitizing a sanitized schema changes nothing", () => {
    fc.assert(
      fc.property(documentArb, (doc) => {
        const once = sanitizeSchema(doc);
        expect(sanitizeSchema(once)).toEqual(once);
      }),
      runs,
    );
  });

  it("never mutates the schema it is given", () => {
    fc.assert(
      fc.property(documentArb, (doc) => {
        const before = JSON.stringify(doc);
        sanitizeSchema(doc);
        relaxSchema(doc);
        expect(JSON.stringify(doc)).toBe(before);
      }),
      propertyRuns(150),
    );
  });

  it("relaxes into a subset of the sanitized keywords, and relaxing twice changes nothing", () => {
    fc.assert(
      fc.property(documentArb, (doc) => {
        const relaxed = relaxSchema(doc);
        expect(checkStrictSchema(relaxed, { relaxed: true })).toEqual([]);
        for (const key of keywords(relaxed)) expect(RELAXED_KEYWORDS).toContain(key);
        expect(relaxSchema(relaxed)).toEqual(relaxed);
        expect(relaxSchema(sanitizeSchema(doc))).toEqual(relaxed);
      }),
      runs,
    );
  });

  it("keeps the relaxed keyword list inside the strict one", () => {
    for (const key of RELAXED_KEYWORDS) expect(STRICT_KEYWORDS).toContain(key);
  });
});

describe("sanitizeSchema keeps the meaning", () => {
  it("closes objects and keeps optional properties optional by making them nullable", () => {
    const out = sanitizeSchema({
      type: "object",
      properties: { city: { type: "string" }, unit: { type: "string", enum: ["c", "f"] } },
      required: ["city"],
    });
    expect(out).toEqual({
      type: "object",
      properties: {
        city: { type: "string" },
        unit: { type: ["string", "null"], enum: ["c", "f", null] },
      },
      required: ["city", "unit"],
      additionalProperties: false,
    });
  });

  it("reads a missing or empty schema as a tool that takes no arguments", () => {
    const empty = { type: "object", properties: {}, required: [], additionalProperties: false };
    expect(sanitizeSchema(undefined)).toEqual(empty);
    expect(sanitizeSchema({})).toEqual(empty);
    expect(sanitizeSchema({ type: "object" })).toEqual(empty);
  });

  it("gives a property without a type (llama.cpp's 'Unrecognized schema') a type the model can fill", () => {
    const out = sanitizeSchema({
      type: "object",
      properties: { args: { description: "Arguments for the tool (JSON object)" } },
      required: ["args"],
    });
    const args = (out.properties as Record<string, Record<string, unknown>>).args;
    expect(args?.anyOf).toContainEqual({ type: "string" });
    expect(args?.description).toContain("Arguments for the tool");
    expect(args?.description).toContain("JSON text");
  });

  it("anchors an unanchored pattern keeping what it matches in quote-free text, and moves a lookahead into the description", () => {
    const out = sanitizeSchema({
      type: "object",
      properties: { a: { type: "string", pattern: "abc" }, b: { type: "string", pattern: "^(?!x).*$" } },
      required: ["a", "b"],
    });
    const props = out.properties as Record<string, Record<string, unknown>>;
    expect(props.a?.pattern).toBe('^[^"\\\\]*(abc)[^"\\\\]*$');
    expect(new RegExp(props.a?.pattern as string).test("xxabcxx")).toBe(true);
    expect(props.b?.pattern).toBeUndefined();
    expect(props.b?.description).toBe("Must match the regular expression ^(?!x).*$.");
  });

  it("moves formats llama.cpp lacks (email, uri) into the description and keeps date-time", () => {
    const out = sanitizeSchema({
      type: "object",
      properties: { when: { type: "string", format: "date-time" }, who: { type: "string", format: "email" } },
      required: ["when", "who"],
    });
    const props = out.properties as Record<string, Record<string, unknown>>;
    expect(props.when).toEqual({ type: "string", format: "date-time" });
    expect(props.who).toEqual({ type: "string", description: "Format: email." });
  });

  it("inlines $defs and bounds a recursive schema instead of looping", () => {
    const out = sanitizeSchema(
      {
        type: "object",
        $defs: {
          node: {
            type: "object",
            properties: {
              name: { type: "string" },
              children: { type: "array", items: { $ref: "#/$defs/node" } },
            },
            required: ["name", "children"],
          },
        },
        properties: { root: { $ref: "#/$defs/node" } },
        required: ["root"],
      },
      { recursionLimit: 1 },
    );
    expect(JSON.stringify(out)).not.toContain("$ref");
    const root = (out.properties as Record<string, Record<string, unknown>>).root as Record<string, unknown>;
    const children = (root.properties as Record<string, Record<string, unknown>>).children;
    expect(children?.items).toEqual({ type: "string", description: "Give this value as JSON text." });
  });

  it("reads oneOf as anyOf and merges allOf", () => {
    const out = sanitizeSchema({
      allOf: [
        { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
        { properties: { b: { oneOf: [{ type: "string" }, { type: "integer" }] } }, required: ["b"] },
      ],
    });
    expect(out).toEqual({
      type: "object",
      properties: { a: { type: "string" }, b: { anyOf: [{ type: "string" }, { type: "integer" }] } },
      required: ["a", "b"],
      additionalProperties: false,
    });
  });

  it("merges a root anyOf of objects into one object, since strict mode refuses anyOf at the root", () => {
    const out = sanitizeSchema({
      anyOf: [
        { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
        { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
      ],
    });
    expect(out.type).toBe("object");
    expect(out.properties).toEqual({ id: { type: ["string", "null"] }, name: { type: ["string", "null"] } });
  });

  it("turns tuple items into an array of the element types, and nullable into a type list", () => {
    const out = sanitizeSchema({
      type: "object",
      properties: {
        point: { type: "array", items: [{ type: "number" }, { type: "number" }], additionalItems: false },
        note: { type: "string", nullable: true },
      },
      required: ["point", "note"],
    });
    const props = out.properties as Record<string, Record<string, unknown>>;
    expect(props.point).toEqual({
      type: "array",
      items: { type: "number" },
      maxItems: 2,
      description: "Items in this order: number, number.",
    });
    expect(props.note).toEqual({ type: ["string", "null"] });
  });

  it("keeps mixed-type enums and consts by splitting them per type", () => {
    const out = sanitizeSchema({
      type: "object",
      properties: { v: { enum: ["a", 1, true] }, c: { const: "fixed" } },
      required: ["v", "c"],
    });
    const props = out.properties as Record<string, Record<string, unknown>>;
    expect(props.v).toEqual({
      anyOf: [
        { type: "string", enum: ["a"] },
        { type: "integer", enum: [1] },
        { type: "boolean", enum: [true] },
      ],
    });
    expect(props.c).toEqual({ type: "string", enum: ["fixed"] });
  });

  it("asks for objects nested deeper than the limit as JSON text", () => {
    let schema: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 12; i++) schema = { type: "object", properties: { x: schema }, required: ["x"] };
    const out = sanitizeSchema(schema);
    expect(checkStrictSchema(out)).toEqual([]);
    expect(JSON.stringify(out)).toContain("JSON text");
  });
});

describe("sanitizeSchema within strict mode's size limits", () => {
  const countEnumValues = (node: unknown): number => {
    if (Array.isArray(node)) return node.reduce<number>((n, x) => n + countEnumValues(x), 0);
    if (typeof node !== "object" || node === null) return 0;
    const record = node as Record<string, unknown>;
    const own = Array.isArray(record.enum) ? record.enum.length : 0;
    return own + Object.entries(record).reduce((n, [k, v]) => n + (k === "enum" ? 0 : countEnumValues(v)), 0);
  };

  it("lists an enum too large for strict mode in the description and keeps the others", () => {
    const countries = Array.from(
      { length: 300 },
      (_, i) => `Country number ${i} with a long official name, as the registry spells it`,
    );
    const out = sanitizeSchema({
      type: "object",
      properties: {
        country: { type: "string", enum: countries, description: "Where" },
        unit: { enum: ["c", "f"] },
      },
      required: ["country", "unit"],
    });
    const props = out.properties as Record<string, JsonSchema>;
    expect(props.country?.enum).toBeUndefined();
    expect(props.country?.type).toBe("string");
    expect(props.country?.description).toMatch(
      /^Where\. One of 300 values, among them: "Country number 0 with/,
    );
    expect(props.unit).toEqual({ type: "string", enum: ["c", "f"] });
    expect(sanitizeSchema(out)).toEqual(out);
  });

  it("never holds more than 1,000 enum values across the schema, and says what the rest allow", () => {
    const properties: Record<string, unknown> = {};
    for (let p = 0; p < 4; p++) {
      properties[`field${p}`] = { type: "string", enum: Array.from({ length: 400 }, (_, i) => `v${p}_${i}`) };
    }
    const out = sanitizeSchema({ type: "object", properties });
    expect(countEnumValues(out)).toBeLessThanOrEqual(1000);
    const props = out.properties as Record<string, JsonSchema>;
    expect(props.field0?.enum).toHaveLength(401);
    expect(props.field3?.enum).toBeUndefined();
    expect(props.field3?.description).toContain('"v3_0", "v3_1"');
    expect(sanitizeSchema(out)).toEqual(out);
  });
});

describe("every pattern sanitize emits keeps a grammar server inside the string", () => {
  // llama.cpp b9749 matched `^.*(abc).*$` against the string's raw text: `.` admitted a raw `"`,
  // the model walked out of the string, and the server failed mid-stream (issue 12, item 11).
  const emitted = (pattern: string) => {
    const out = sanitizeSchema({
      type: "object",
      properties: { a: { type: "string", pattern } },
      required: ["a"],
    });
    return (out.properties as Record<string, Record<string, unknown>>).a;
  };
  /** True when some text the emitted pattern admits holds a raw quote or backslash. */
  const admitsQuote = (pattern: string) =>
    ['"', "\\", 'x"y', "a\\b", 'abc"', '"abc'].some((text) => new RegExp(pattern).test(text));

  it('puts [^"\\\\] where it anchored with .*, and in place of every . that and the line terminators', () => {
    expect(emitted("abc")?.pattern).toBe('^[^"\\\\]*(abc)[^"\\\\]*$');
    expect(emitted("^a.b$")?.pattern).toBe('^a[^"\\\\\\n\\r\\u2028\\u2029]b$');
    expect(emitted("^.+$")?.pattern).toBe('^[^"\\\\\\n\\r\\u2028\\u2029]+$');
  });

  it("makes negated classes and \\S, \\W, \\D leave out the quote and backslash too", () => {
    expect(emitted("^[^a-z]+$")?.pattern).toBe('^[^a-z"\\\\]+$');
    expect(emitted("^\\S+$")?.pattern).toBe(
      '^[^\\t\\n\\x0B\\x0C\\r \\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF"\\\\]+$',
    );
    expect(emitted('^[^"]*$')?.pattern).toBe('^[^"\\\\]*$');
  });

  it("moves a pattern that names a quote or a backslash, or a class range across one, into the description", () => {
    for (const pattern of ['^"[a-z]+"$', "^[ -~]+$", "^a\\\\b$", '^[a"]$', "\\x22"]) {
      expect(emitted(pattern)).toEqual({
        type: "string",
        description: `Must match the regular expression ${pattern}.`,
      });
    }
  });

  it("never emits a pattern admitting a raw quote, and a second pass changes nothing", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^\^?(?:[a-z.]|\[\^?[a-z"\\-]{1,4}\]|\\[sSwWdD.]|\(\?:[a-z.]+\)|[*+?])*\$?$/),
        (pattern) => {
          const out = emitted(pattern);
          if (typeof out?.pattern !== "string") return;
          expect(admitsQuote(out.pattern)).toBe(false);
          expect(emitted(out.pattern)).toEqual(out);
        },
      ),
      propertyRuns(2000, { seed: 11 }),
    );
  });
});

// Thousands of generated patterns: a second alone, more on a busy machine (not a timing assert).
describe("a class with \\t, \\n, \\v, \\f, \\r, \\0 or \\b in a range keeps what it matches", {
  timeout: propertyTimeout(60_000),
}, () => {
  const emitted = (pattern: string) => {
    const out = sanitizeSchema({
      type: "object",
      properties: { a: { type: "string", pattern } },
      required: ["a"],
    });
    return (out.properties as Record<string, Record<string, unknown>>).a;
  };

  it("keeps a no-control-characters range a range, so a hyphen is still allowed and a tab is not", () => {
    const out = emitted("^[^\\0-\\x1f]*$");
    expect(out?.pattern).toBe('^[^\\x00-\\x1F"\\\\]*$');
    const re = new RegExp(out?.pattern as string);
    expect(re.test("my-file.txt")).toBe(true);
    expect(re.test("2024-01-01")).toBe(true);
    expect(re.test("\t\n")).toBe(false);
    expect(emitted("^[\\t-\\r ]+$")?.pattern).toBe("^[\\t-\\r ]+$");
    expect(new RegExp(emitted("^[\\t-\\r ]+$")?.pattern as string).test("-")).toBe(false);
  });

  it("moves a range across the quote or the backslash, and one it cannot read, into the description", () => {
    for (const pattern of ["^[\\0-\\x7f]+$", "^[\\b-z]$", "^[\\42]$", "^\\042$", "^[a-\\d]$", "^[\\x-z]$"]) {
      expect(emitted(pattern)).toEqual({
        type: "string",
        description: `Must match the regular expression ${pattern}.`,
      });
    }
  });

  it("reads the - after a range as a hyphen, even after a one-character range", () => {
    // ECMAScript: `\\0-\\0` (NUL), then a hyphen, then z; never a range from NUL to z.
    const out = emitted("^[\\0-\\0-z]+$");
    expect(out?.pattern).toBe("^[\\x00-\\x00\\x2Dz]+$");
    const re = new RegExp(out?.pattern as string);
    expect(re.test("-z")).toBe(true);
    expect(re.test("a")).toBe(false);
  });

  it("moves a set at either end of a range into the description, where engines read the - differently", () => {
    for (const pattern of ["^[a-\\d]$", "^[\\s-a-z]+$", "^[^\\W--\\x7f]$"]) {
      expect(emitted(pattern)?.description).toBe(`Must match the regular expression ${pattern}.`);
    }
    expect(emitted("^[\\d-]+$")?.pattern).toBe("^[0-9\\x2D]+$");
  });

  it("reads [] as matching nothing and [^] as any character, as ECMAScript does", () => {
    expect(emitted("^[^]a]$")?.pattern).toBe('^[^"\\\\]a]$');
    expect(new RegExp(emitted("^[^]a]$")?.pattern as string).test("xa]")).toBe(true);
  });

  // Every character a class with these escapes can name or range over, plus the quote and the
  // backslash the sanitized class must leave out.
  const chars = [...'\0\b\t\n\v\f\r\x0e\x1f -!#,./09AZ[]^_`az~\x7f"\\'];
  const atom = fc.constantFrom(
    "\\0",
    "\\b",
    "\\t",
    "\\n",
    "\\v",
    "\\f",
    "\\r",
    "\\x00",
    "\\x1f",
    "\\x20",
    "\\x7f",
    "\\-",
    " ",
    "!",
    "#",
    "-",
    "0",
    "9",
    "A",
    "Z",
    "a",
    "z",
    "~",
  );
  const item = fc.oneof(
    atom,
    fc.tuple(atom, atom).map(([low, high]) => `${low}-${high}`),
  );
  const classPattern = fc
    .tuple(fc.boolean(), fc.array(item, { minLength: 1, maxLength: 4 }), fc.constantFrom("*", "+", ""))
    .map(([negated, items, repeat]) => `^[${negated ? "^" : ""}${items.join("")}]${repeat}$`);

  it("keeps a class's meaning on every text without a quote or a backslash, or moves it to the description (property)", () => {
    fc.assert(
      fc.property(
        classPattern,
        fc.array(fc.string({ unit: fc.constantFrom(...chars), maxLength: 6 }), {
          minLength: 20,
          maxLength: 20,
        }),
        (pattern, texts) => {
          let original: RegExp;
          try {
            original = new RegExp(pattern);
          } catch {
            return; // a reversed range: not a pattern at all
          }
          const out = emitted(pattern);
          if (typeof out?.pattern !== "string") {
            expect(out?.description).toBe(`Must match the regular expression ${pattern}.`);
            return;
          }
          const kept = new RegExp(out.pattern);
          for (const text of [...texts, ...chars]) {
            const plain = !text.includes('"') && !text.includes("\\");
            expect(kept.test(text), `${JSON.stringify(text)} against ${pattern} → ${out.pattern}`).toBe(
              plain && original.test(text),
            );
          }
          expect(emitted(out.pattern)).toEqual(out);
        },
      ),
      propertyRuns(3000, { seed: 3 }),
    );
  });

  it("does the same for classes mixing sets, control letters and escaped brackets, between other atoms (property)", () => {
    const wider = fc.constantFrom(
      ...["\\0", "\\b", "\\t", "\\x1f", "\\x22", "\\\\", '"', "\\-", "\\]", "\\^", "\\[", "\\cA", "\\cZ"],
      ...[
        "\\u0041",
        "\\u00e9",
        "\\d",
        "\\w",
        "\\s",
        "\\D",
        "\\W",
        "\\S",
        "\\/",
        "-",
        "0",
        "9",
        "a",
        "z",
        "^",
        "[",
        ".",
        "é",
      ],
    );
    const wideItem = fc.oneof(
      wider,
      fc.tuple(wider, wider).map(([low, high]) => `${low}-${high}`),
    );
    const wideClass = fc
      .tuple(fc.boolean(), fc.array(wideItem, { maxLength: 5 }))
      .map(([negated, items]) => `[${negated ? "^" : ""}${items.join("")}]`);
    const piece = fc
      .tuple(
        fc.oneof(wideClass, fc.constantFrom("a", "-", "\\d", "\\t", "\\0", "\\x41")),
        fc.constantFrom("", "*", "+", "?"),
      )
      .map(([atom, repeat]) => atom + repeat);
    const pattern = fc
      .tuple(fc.array(piece, { minLength: 1, maxLength: 3 }), fc.boolean(), fc.boolean())
      .map(([pieces, start, end]) => `${start ? "^" : ""}${pieces.join("")}${end ? "$" : ""}`);
    const texts = [...'\0\x01\b\t\n\x1f -09AZ[]^_az"\\é'];
    fc.assert(
      fc.property(
        pattern,
        fc.array(fc.string({ unit: fc.constantFrom(...texts), maxLength: 6 }), {
          minLength: 20,
          maxLength: 20,
        }),
        (source, generated) => {
          let original: RegExp;
          try {
            original = new RegExp(source);
          } catch {
            return;
          }
          const out = emitted(source);
          if (typeof out?.pattern !== "string") return;
          const kept = new RegExp(out.pattern);
          for (const text of [...generated, ...texts]) {
            const plain = !text.includes('"') && !text.includes("\\");
            expect(kept.test(text), `${JSON.stringify(text)} against ${source} → ${out.pattern}`).toBe(
              plain && original.test(text),
            );
          }
          expect(emitted(out.pattern)).toEqual(out);
        },
      ),
      propertyRuns(3000, { seed: 5 }),
    );
  });
});

describe("sanitizeSchema on what grammar builders reject", () => {
  it("leaves nothing llama.cpp refuses: unanchored patterns, lookaheads, huge repeats, formats, refs, oneOf", () => {
    const out = sanitizeSchema({
      type: "object",
      definitions: { id: { type: "string", pattern: "^[a-f0-9]{0,10000}$" } },
      properties: {
        slug: { type: "string", pattern: "\\S" },
        safe: { type: "string", pattern: "^(?=.*[A-Z]).{8,}$" },
        id: { $ref: "#/definitions/id" },
        url: { type: "string", format: "uri" },
        either: { oneOf: [{ type: "string" }, { type: "number" }] },
      },
      required: ["slug", "safe", "id", "url", "either"],
    });
    expect(checkStrictSchema(out)).toEqual([]);
    const props = out.properties as Record<string, Record<string, unknown>>;
    expect(props.slug).toEqual({
      type: "string",
      pattern:
        '^[^"\\\\]*([^\\t\\n\\x0B\\x0C\\r \\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000\\uFEFF"\\\\])[^"\\\\]*$',
    });
    expect(props.safe).toEqual({
      type: "string",
      description: "Must match the regular expression ^(?=.*[A-Z]).{8,}$.",
    });
    expect(props.id).toEqual({
      type: "string",
      description: "Must match the regular expression ^[a-f0-9]{0,10000}$.",
    });
    expect(props.url).toEqual({ type: "string", description: "Format: uri." });
    expect(props.either).toEqual({ anyOf: [{ type: "string" }, { type: "number" }] });
  });
});

describe("relaxSchema", () => {
  it("keeps the structure and moves every constraint into the description", () => {
    const out = relaxSchema({
      type: "object",
      properties: {
        code: { type: "string", pattern: "^[A-Z]{3}$", description: "Airport" },
        n: { type: "integer", minimum: 1, maximum: 9 },
        tags: { type: "array", items: { type: "string", format: "date" }, maxItems: 3 },
      },
      required: ["code", "n", "tags"],
    });
    expect(out).toEqual({
      type: "object",
      properties: {
        code: { type: "string", description: "Airport. Must match the regular expression ^[A-Z]{3}$." },
        n: { type: "integer", description: "At least 1. At most 9." },
        tags: {
          type: "array",
          items: { type: "string", description: "Format: date." },
          description: "At most 3 items.",
        },
      },
      required: ["code", "n", "tags"],
      additionalProperties: false,
    });
  });
});
