/**
 * Round 100 (c).
 *
 * A discriminated union's tag that two variants leave optional, with no default. Strict mode asks
 * for it as required-nullable, and `restoreArguments` read the null a model writes there as the
 * tag left out — which zod's `discriminatedUnion` refuses (a missing tag may stand for one variant
 * only; "Invalid discriminator value"), and which a JSON Schema `oneOf` of open variants refuses
 * too (the object, untagged, is of both). The variant the object is read by names one value for
 * its tag: the tool now gets it. And a tag defaulted in two variants, written null for an object
 * both open variants may take, found both defaults (the variant passed over was asked too) and
 * wrote none.
 *
 * OpenAPI 3.0's `nullable: true` beside a union or an `allOf`.
 *
 * A zod regular expression's flags: `z.toJSONSchema` writes the source alone, so they never reach
 * this package; what the model is then held to, as the README says.
 *
 * Review of last round's `defaultOf` and `patternTest`: a default JSON cannot carry (NaN,
 * Infinity, from a host's schema built in code) was handed to the tool in a null's place; a
 * pattern only the `v` flag reads (zod's `/v`, class set operations) was read without a flag, so a
 * string zod takes was called one the variant surely refuses.
 *
 * OpenAPI 3.0.3: `nullable: true` "adds "null" to the allowed types specified by the type
 * keyword, only if type is explicitly defined within the same Schema Object. Other Schema Object
 * constraints retain their defined behavior" (the OAI's clarification, proposal 003). Beside an
 * `anyOf`/`oneOf`/`allOf` with no `type` it adds nothing, and beside a `type` and an `allOf` whose
 * part refuses null the part still refuses it. ajv 8 reads it so: it refuses to compile
 * `nullable` with no `type`, and with one it refuses null where an `allOf` part does.
 * `sanitizeSchema` sent both with null (a union gained a null branch, an `allOf` merged into
 * `type: [T, "null"]`), a model wrote null for a required field, and an OpenAPI validator refused
 * the call; `restoreArguments` kept a null written for an optional field beside a union.
 *
 * zod writes its `.nullable()` of a union that way for OpenAPI 3.0 (`{ nullable: true, anyOf }`)
 * and would take null; sent without it, every value the model can write is still one zod takes.
 */
import { Ajv } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { propertyRuns } from "../../../test-support/properties.js";
import { patternTest } from "./backtracking.js";
import { dropOptionalNulls, restoreArguments } from "./optional-nulls.js";
import { relaxSchema, sanitizeSchema } from "./sanitize-schema.js";

type Props = { properties: Record<string, unknown> };

/** Whether a sanitized property's schema takes null, as it is sent. */
function sendsNull(schema: unknown): boolean {
  const s = schema as { type?: unknown; anyOf?: unknown[] };
  if (s.type === "null" || (Array.isArray(s.type) && s.type.includes("null"))) return true;
  return Array.isArray(s.anyOf) && s.anyOf.some(sendsNull);
}

describe("OpenAPI's nullable: true beside a union or an allOf", () => {
  const pet = { type: "object", properties: { name: { type: "string" } }, required: ["name"] };
  const original = {
    type: "object",
    properties: {
      // zod's openapi-3.0 .nullable() of a union, and the same as oneOf.
      id: { nullable: true, anyOf: [{ type: "string" }, { type: "integer" }] },
      ref: { nullable: true, oneOf: [{ type: "string" }, { type: "integer" }] },
      // The common 3.0 idiom for a nullable reference, with and without a type beside it.
      owner: { nullable: true, allOf: [{ $ref: "#/definitions/Pet" }] },
      keeper: { type: "object", nullable: true, allOf: [{ $ref: "#/definitions/Pet" }] },
      hint: { nullable: true, anyOf: [{ type: "string" }, { type: "integer" }] },
    },
    required: ["id", "ref", "owner", "keeper"],
    definitions: { Pet: pet },
  };

  it("is sent without null where the field is required, as an OpenAPI validator reads it", () => {
    // ajv, as an OpenAPI 3.0 server validating with it would be configured (nullable is its keyword).
    expect(() => new Ajv({ strict: false }).compile(original)).toThrow(
      /"nullable" cannot be used without "type"/,
    );
    const typed = new Ajv({ strict: false }).compile({
      type: "object",
      properties: { keeper: original.properties.keeper },
      definitions: { Pet: pet },
    });
    expect(typed({ keeper: null })).toBe(false);
    for (const sent of [sanitizeSchema(original), relaxSchema(original)] as Props[]) {
      // Before: each took null (a null branch added, or type ["object", "null"]).
      for (const name of ["id", "ref", "owner", "keeper"])
        expect(sendsNull(sent.properties[name])).toBe(false);
      // The optional one still takes null, read as left out.
      expect(sendsNull(sent.properties.hint)).toBe(true);
    }
  });

  it("reads a null written for an optional field beside a union as the field left out", () => {
    // Before: { hint: null } was kept, which the tool refused.
    expect(
      restoreArguments(
        { id: "a", ref: 1, owner: { name: "x" }, keeper: { name: "y" }, hint: null },
        original,
      ),
    ).toEqual({
      id: "a",
      ref: 1,
      owner: { name: "x" },
      keeper: { name: "y" },
    });
  });

  it("still sends null where the type beside nullable is widened and nothing else refuses it", () => {
    const open = {
      type: "object",
      properties: {
        note: { type: "string", nullable: true },
        either: { type: "string", nullable: true, anyOf: [{ minLength: 1 }, { maxLength: 0 }] },
        listed: { nullable: true, anyOf: [{ type: "string" }, { type: "null" }] },
      },
      required: ["note", "either", "listed"],
    };
    const validate = new Ajv({ strict: false }).compile({
      type: "object",
      properties: { note: open.properties.note, either: open.properties.either },
    });
    expect(validate({ note: null, either: null })).toBe(true);
    const sent = sanitizeSchema(open) as Props;
    for (const name of ["note", "either", "listed"]) expect(sendsNull(sent.properties[name])).toBe(true);
    expect(restoreArguments({ note: null, either: null, listed: null }, open)).toEqual({
      note: null,
      either: null,
      listed: null,
    });
  });

  it("gives zod's openapi-3.0 nullable union only values zod takes", () => {
    const input = z.object({ id: z.union([z.string(), z.number()]).nullable() });
    const declared = z.toJSONSchema(input, { target: "openapi-3.0", io: "input" });
    expect(declared).toMatchObject({ properties: { id: { nullable: true, anyOf: expect.any(Array) } } });
    const sent = sanitizeSchema(declared) as Props;
    expect(sent.properties.id).toEqual({ anyOf: [{ type: "string" }, { type: "number" }] });
    expect(input.safeParse(restoreArguments({ id: 3 }, declared)).success).toBe(true);
  });
});

describe("a union's tag two variants leave optional, with no default, written null", () => {
  const variants = {
    // zod 4 builds it; it refuses an object with the tag left out ("Invalid discriminator value").
    optional: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("file").optional(), path: z.string() }),
      z.object({ kind: z.literal("dir").optional(), depth: z.number() }),
    ]),
    // One variant's tag optional, the other's defaulted: neither may be left out either.
    mixed: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("file").optional(), path: z.string() }),
      z.object({ kind: z.literal("dir").default("dir"), depth: z.number() }),
    ]),
  };

  it("hands the tool the tag of the variant the object is written for, so zod can pick it", () => {
    for (const union of Object.values(variants)) {
      const input = z.object({ item: union });
      const original = z.toJSONSchema(input, { io: "input" });
      const validate = new Ajv2020({ strict: false }).compile(original);
      const file = restoreArguments({ item: { kind: null, path: "a.txt" } }, original);
      const dir = restoreArguments({ item: { kind: null, depth: 2 } }, original);
      // Before: { path: "a.txt" }, which zod refused.
      expect(file).toEqual({ item: { kind: "file", path: "a.txt" } });
      expect(dir).toEqual({ item: { kind: "dir", depth: 2 } });
      expect(input.safeParse({ item: { path: "a.txt" } }).success).toBe(false);
      for (const args of [file, dir]) {
        expect(input.safeParse(args).success).toBe(true);
        expect(validate(args)).toBe(true);
      }
      // dropOptionalNulls alone gives the same.
      expect(dropOptionalNulls({ item: { kind: null, path: "a.txt" } }, original)).toEqual(file);
    }
  });

  it("is declared with each tag as its value or null", () => {
    const original = z.toJSONSchema(z.object({ item: variants.optional }), { io: "input" });
    const declared = sanitizeSchema(original) as { properties: { item: { anyOf: unknown[] } } };
    expect(declared.properties.item.anyOf[0]).toMatchObject({
      properties: { kind: { enum: ["file", null] } },
    });
  });

  it("gives a JSON Schema oneOf of open variants an object only one of them takes", () => {
    const original = {
      type: "object",
      properties: {
        item: {
          oneOf: [
            { type: "object", properties: { kind: { const: "a" }, x: { type: "string" } } },
            { type: "object", properties: { kind: { const: "b" }, y: { type: "number" } } },
          ],
        },
      },
      required: ["item"],
    };
    const validate = new Ajv2020({ strict: false }).compile(original);
    const args = restoreArguments({ item: { kind: null, x: "s", y: null } }, original);
    // Before: { x: "s" }, which both variants take, so the oneOf refused it.
    expect(args).toEqual({ item: { kind: "a", x: "s" } });
    expect(validate(args)).toBe(true);
    expect(validate({ item: { x: "s" } })).toBe(false);
  });

  it("writes a defaulted tag where both open variants may take the object", () => {
    const input = z.object({
      item: z.discriminatedUnion("kind", [
        z.object({ kind: z.literal("a").default("a"), x: z.string().optional() }),
        z.object({ kind: z.literal("b").default("b"), y: z.number().optional() }),
      ]),
    });
    const original = z.toJSONSchema(input, { io: "input" });
    const args = restoreArguments({ item: { kind: null, x: "s" } }, original);
    // Before: { x: "s" }: the "b" variant, passed over, was asked for its default too.
    expect(args).toEqual({ item: { kind: "a", x: "s" } });
    expect(input.safeParse(args).success).toBe(true);
  });

  it("leaves a tag out where one variant alone leaves it optional, or the variant names several values", () => {
    const one = z.object({
      item: z.discriminatedUnion("kind", [
        z.object({ kind: z.literal("file").optional(), path: z.string() }),
        z.object({ kind: z.literal("dir"), depth: z.number() }),
      ]),
    });
    const args = restoreArguments({ item: { kind: null, path: "a" } }, z.toJSONSchema(one, { io: "input" }));
    expect(args).toEqual({ item: { path: "a" } });
    expect(one.safeParse(args).success).toBe(true);
    const several = z.toJSONSchema(
      z.object({
        item: z.union([
          z.object({ kind: z.enum(["file", "link"]).optional(), path: z.string() }),
          z.object({ kind: z.literal("dir").optional(), depth: z.number() }),
        ]),
      }),
      { io: "input" },
    );
    // Which of file and link the model meant is not known: left out, for the tool to name.
    expect(restoreArguments({ item: { kind: null, path: "a" } }, several)).toEqual({ item: { path: "a" } });
    // A field the variants share without telling them apart is no tag (seed 100301 of tools'
    // round-trip model at 5×: c: "v1" was written, a value the model never wrote).
    const shared = z.object({
      a: z.discriminatedUnion("kind", [
        z.object({ kind: z.literal("k0"), c: z.string().nullable().optional() }),
        z.object({ kind: z.literal("k1"), c: z.literal("v1").optional() }),
        z.object({ kind: z.literal("k2") }),
      ]),
    });
    expect(restoreArguments({ a: { kind: "k1", c: null } }, z.toJSONSchema(shared, { io: "input" }))).toEqual(
      {
        a: { kind: "k1" },
      },
    );
    // A plain optional literal, under no union, is left out as before.
    const plain = { type: "object", properties: { mode: { const: "fast" } } };
    expect(restoreArguments({ mode: null }, plain)).toEqual({});
  });
});

describe("a default or tag JSON cannot carry, written null", () => {
  it("is left out, not handed to the tool as a number the model never wrote", () => {
    // A host's schema built in code (zod's z.literal(Infinity).default(Infinity) is refused by
    // z.toJSONSchema; a hand-built one is not).
    const original = {
      type: "object",
      properties: {
        k: { enum: [Number.NaN, 1], default: Number.NaN },
        i: { type: "number", enum: [Number.POSITIVE_INFINITY], default: Number.POSITIVE_INFINITY },
      },
    };
    const args = restoreArguments({ k: null, i: null }, original);
    // Before: { k: NaN, i: Infinity }, sent on to an MCP server as { "k": null, "i": null }.
    expect(args).toEqual({});
    expect(dropOptionalNulls({ k: null, i: null }, original)).toEqual({});
  });
});

describe("a pattern only the v flag reads", () => {
  // Typed as a string: TypeScript refuses the flag below an es2024 target; Node 20 reads it.
  const V: string = "v";
  it("takes what zod's /v expression takes, so the union variant written for it is read", () => {
    const input = z.object({
      item: z.union([
        z.object({ c: z.string().regex(new RegExp("^[[a-zé]&&[^a-z]]$", V)), a: z.string().nullable() }),
        z.object({ c: z.string(), a: z.string().default("d") }),
      ]),
    });
    const original = z.toJSONSchema(input, { io: "input" });
    const args = restoreArguments({ item: { c: "é", a: null } }, original);
    // Before: read without a flag it is the class [, a-z, é, then "&&", [^a-z] and "]", so é
    // "surely" failed the first variant; its null was dropped and zod handed the tool the
    // second's "d".
    expect(args).toEqual({ item: { c: "é", a: null } });
    expect(input.parse(args)).toEqual({ item: { c: "é", a: null } });
  });

  it("is not run where a class of strings could backtrack, nor for a property of strings", () => {
    // With the v flag this is (a|aa)+: run on 60 a's and a b it would take hours (on 30, 65 ms,
    // each a more about 1.6 times as long).
    const strings = patternTest("^[\\q{a|aa}]+$");
    expect(strings?.test(`${"a".repeat(60)}b`)).toBe(false);
    const emoji = patternTest("^[\\p{RGI_Emoji}]+$");
    expect(emoji?.test("😀")).toBe(false);
  });

  // Classes built with set operations over a few letters, inside a quantified group or alone.
  const operand = fc.constantFrom("[a-c]", "[b-d]", "[^a]", "\\p{Ll}", "[\\p{L}--[a-z]]", "[aeé]", "x");
  const setClass = fc
    .tuple(operand, fc.constantFrom("--", "&&"), operand)
    .map(([left, op, right]) => `[${left}${op}${right}]`);
  const setPattern = fc
    .tuple(setClass, fc.constantFrom("", "+", "{1,3}", "?"), fc.constantFrom("", "z"))
    .map(([cls, quantifier, tail]) => `^(?:${cls}${tail})${quantifier}$`);

  it("takes every string the v flag reads the pattern as matching", () => {
    fc.assert(
      fc.property(
        setPattern,
        fc.string({ unit: fc.constantFrom("a", "b", "c", "d", "e", "é", "x", "z", "Ü"), maxLength: 4 }),
        (pattern, text) => {
          const v = new RegExp(pattern, V);
          if (!v.test(text)) return;
          // Undefined (it compiles in no grammar read) is never run: any string may meet it.
          const test = patternTest(pattern);
          expect(test === undefined || test.test(text), `${pattern} takes ${JSON.stringify(text)}`).toBe(
            true,
          );
        },
      ),
      { ...propertyRuns(300), examples: [["^(?:[[a-c]&&[b-d]])$", "b"]] },
    );
  });
});

describe("a zod regular expression's flags, which z.toJSONSchema does not write", () => {
  const input = z.object({
    name: z.string().regex(/^[a-z]+$/i),
    line: z.string().regex(/^ok$/m),
    any: z.string().regex(/^a.b$/s),
    head: z.string().regex(/x/y),
  });
  const original = z.toJSONSchema(input, { io: "input" });
  const sent = sanitizeSchema(original) as { properties: Record<string, { pattern?: string }> };
  const pattern = (name: string) => new RegExp(sent.properties[name]?.pattern ?? "", "u");

  it("reach the model as the source alone", () => {
    expect(sent.properties.name?.pattern).toBe("^[a-z]+$");
    expect(sent.properties.line?.pattern).toBe("^ok$");
  });

  it("hold the model to values the tool takes where the flag widens the expression (i, m, s)", () => {
    const unit = fc.constantFrom("a", "B", "o", "k", "O", "\n", "x", "é");
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 5 }), (text) => {
        for (const name of ["name", "line", "any"]) {
          if (!pattern(name).test(text)) continue;
          const args = { name: "a", line: "ok", any: "a-b", head: "x", [name]: text };
          expect(input.safeParse(args).success, `${name}: ${JSON.stringify(text)}`).toBe(true);
        }
      }),
      propertyRuns(200),
    );
    // The model is never offered what only the flag takes.
    expect(pattern("name").test("ABC")).toBe(false);
    expect(input.shape.name.safeParse("ABC").success).toBe(true);
  });

  it("let the model write a value the tool refuses where the flag narrows it (y), which the tool names", () => {
    expect(pattern("head").test("ax")).toBe(true);
    const refused = input.safeParse({ name: "a", line: "ok", any: "a-b", head: "ax" });
    expect(refused.error?.issues.map((issue) => issue.path)).toEqual([["head"]]);
  });
});
