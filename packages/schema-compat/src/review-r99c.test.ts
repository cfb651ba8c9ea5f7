/**
 * Round 99 (c): OpenAPI 3.0's `nullable: true` beside an enum that does not list null.
 *
 * OpenAPI 3.0.3 says `nullable: true` "adds "null" to the allowed types specified by the type
 * keyword … Other Schema Object constraints retain their defined behavior, and therefore may
 * disallow the use of null as a value" — the OAI's clarification (proposal 003) answers its own
 * example, `nullable: true` with `enum: [1, 2, 3]`, "No": the enum refuses null, and the way to take
 * one is to list it (`enum: [1, 2, 3, null]`). ajv, which reads `nullable`, refuses `null` there.
 * `sanitizeSchema` sent such a field as `enum: [1, 2, 3, null]`, so a model wrote null for a
 * required field and the tool refused the call; `restoreArguments` kept a null written for an
 * optional one (read as taken), which the tool refused too.
 *
 * zod's `.nullable()` on an enum is written in that form for OpenAPI 3.0, and zod takes null; sent
 * without it, every value the model can write is still one zod takes.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { charactersEveryMatchHolds } from "./backtracking.js";
import { restoreArguments } from "./optional-nulls.js";
import { relaxSchema, sanitizeSchema } from "./sanitize-schema.js";

type Props = { properties: Record<string, unknown> };

describe("OpenAPI's nullable: true beside an enum that does not list null", () => {
  // The clarification's own example, a const (pydantic's single Literal), and an enum with no type
  // (nullable then adds nothing, and the enum alone decides).
  const original = {
    type: "object",
    properties: {
      level: { type: "integer", enum: [1, 2, 3], nullable: true },
      mode: { type: "string", const: "fast", nullable: true },
      unit: { enum: ["cm", "in"], nullable: true },
      hint: { type: "string", enum: ["a", "b"], nullable: true },
    },
    required: ["level", "mode", "unit"],
  };

  it("is sent without null where the field is required, so the model is never offered one the tool refuses", () => {
    for (const sent of [sanitizeSchema(original), relaxSchema(original)] as Props[]) {
      // Before: type [T, "null"], enum [..., null].
      expect(sent.properties.level).toEqual({ type: "integer", enum: [1, 2, 3] });
      expect(sent.properties.mode).toEqual({ type: "string", enum: ["fast"] });
      expect(sent.properties.unit).toEqual({ type: "string", enum: ["cm", "in"] });
    }
  });

  it("reads a null written for an optional field as the field left out", () => {
    const sent = sanitizeSchema(original) as Props;
    expect(sent.properties.hint).toEqual({ type: ["string", "null"], enum: ["a", "b", null] });
    // Before: { level: 1, mode: "fast", unit: "cm", hint: null }, hint's null kept as taken.
    expect(restoreArguments({ level: 1, mode: "fast", unit: "cm", hint: null }, original)).toEqual({
      level: 1,
      mode: "fast",
      unit: "cm",
    });
  });

  it("still takes null where the enum lists it, or where no enum stands beside nullable", () => {
    const takes = {
      type: "object",
      properties: {
        level: { type: "integer", enum: [1, 2, null], nullable: true },
        note: { type: "string", nullable: true },
        hint: { type: "string", enum: ["a", null], nullable: true },
      },
      required: ["level", "note"],
    };
    const sent = sanitizeSchema(takes) as Props;
    expect(sent.properties.level).toEqual({ type: ["integer", "null"], enum: [1, 2, null] });
    expect(sent.properties.note).toEqual({ type: ["string", "null"] });
    expect(restoreArguments({ level: null, note: null, hint: null }, takes)).toEqual({
      level: null,
      note: null,
      hint: null,
    });
  });

  it("gives a zod tool declared for OpenAPI 3.0 values zod takes, a null for its optional field read as left out", () => {
    const input = z.object({
      kind: z.enum(["a", "b"]).nullable(),
      tag: z.literal("t").nullable().optional(),
    });
    const declared = z.toJSONSchema(input, { io: "input", target: "openapi-3.0" });
    const sent = sanitizeSchema(declared) as Props;
    expect(sent.properties.kind).toEqual({ type: "string", enum: ["a", "b"] });
    expect(input.parse(restoreArguments({ kind: "a", tag: null }, declared))).toEqual({ kind: "a" });
  });

  it("comes back the same from a second pass", () => {
    const once = sanitizeSchema(original);
    expect(sanitizeSchema(once)).toEqual(once);
  });
});

describe("a union variant whose risky pattern holds a property escape or a named back-reference", () => {
  // mayBacktrack calls both patterns risky (a back-reference; a nested quantifier), so they are
  // never run: charactersEveryMatchHolds decides whether a string surely fails them. It counted the
  // `=` of `\p{Script=Greek}` and the `>` (and `$`-named group's tail) of `\k<a$>` as literals every
  // match holds, though with the `u` flag (ajv's, zod's for `\p`) they name a property or a group.
  for (const [pattern, regex, written] of [
    ["^(?<a$>x)\\k<a$>$", /^(?<a$>x)\k<a$>$/u, "xx"],
    ["^(?<é>x)\\k<é>$", /^(?<é>x)\k<é>$/u, "xx"],
    ["^([a-z]+\\s?)+\\p{Script=Greek}$", /^([a-z]+\s?)+\p{Script=Greek}$/u, "abcα"],
  ] as const) {
    it(`keeps the null written for the variant whose pattern ${pattern} the string matches`, () => {
      const input = z.object({
        item: z.union([
          z.object({ c: z.string().regex(regex), a: z.string().nullable() }),
          z.object({ c: z.string(), a: z.string().default("d") }),
        ]),
      });
      const original = z.toJSONSchema(input, { io: "input" });
      const args = restoreArguments({ item: { c: written, a: null } }, original);
      // Before: { c, a: null } read by the second variant (the first "surely" failed), its null
      // dropped, and zod handed the tool a: "d" for the null the model wrote.
      expect(args).toEqual({ item: { c: written, a: null } });
      expect(input.parse(args)).toEqual({ item: { c: written, a: null } });
    });
  }

  it("holds none of the characters that name a property or a group", () => {
    expect(charactersEveryMatchHolds("^(a+)+\\p{General_Category=Letter}@$")).toEqual(["@"]);
    expect(charactersEveryMatchHolds("^(?<a$>x)\\k<a$>@$")).toEqual(["@"]);
    expect(charactersEveryMatchHolds("^(?<é>x)\\k<é>=$")).toEqual(["="]);
    expect(charactersEveryMatchHolds("^\\P{Script_Extensions=Latin}+:\\p{Lu}$")).toEqual([":"]);
  });
});

describe("a pattern written in the u flag's grammar (\\p{L}, \\u{…}, a . taking an astral character whole)", () => {
  // JSON Schema's patterns are read with the `u` flag (ajv; zod's own `/u` expressions); the
  // reading of a pattern mayBacktrack passes ran it without, where `^\p{L}+$` is `p{L}` repeated.
  const variants = (regex: RegExp) =>
    z.object({
      item: z.union([
        z.object({ c: z.string().regex(regex), a: z.string().nullable() }),
        z.object({ c: z.string(), a: z.string().default("d") }),
      ]),
    });

  for (const [regex, written] of [
    [/^\p{L}+$/u, "héllo"],
    [/^\u{1F600}$/u, "😀"],
    [/^[^x]$/u, "😀"],
  ] as const) {
    it(`reads ${JSON.stringify(written)} as meeting ${regex.source}, so the null written for that variant is kept`, () => {
      const input = variants(regex);
      const args = restoreArguments(
        { item: { c: written, a: null } },
        z.toJSONSchema(input, { io: "input" }),
      );
      // Before: read by the second variant, its null dropped, and zod handed the tool a: "d".
      expect(args).toEqual({ item: { c: written, a: null } });
      expect(input.parse(args)).toEqual(args);
    });
  }

  it("still reads a string no grammar of the pattern takes as failing it", () => {
    const input = variants(/^\p{L}+$/u);
    const args = restoreArguments({ item: { c: "123", a: null } }, z.toJSONSchema(input, { io: "input" }));
    expect(args).toEqual({ item: { c: "123" } });
    expect(input.parse(args)).toEqual({ item: { c: "123", a: "d" } });
  });

  it("keeps the enum values such a pattern takes, and leaves out those it refuses", () => {
    const sent = sanitizeSchema({
      type: "object",
      properties: {
        letter: { type: "string", enum: ["é", "a", "1"], pattern: "^\\p{L}$" },
        face: { type: "string", enum: ["😀", "ab"], pattern: "^.$" },
      },
      required: ["letter", "face"],
    }) as Props;
    // Before: letter's enum went into the description ("no value its pattern admits"), the type
    // sent alone; face's 😀 was left out (two UTF-16 units for the `.`).
    expect(sent.properties.letter).toMatchObject({ type: "string", enum: ["é", "a"] });
    expect(sent.properties.face).toMatchObject({ type: "string", enum: ["😀"] });
  });
});
