/**
 * Round 98 (f): two faults r98c's author left.
 *
 * A `type` naming null beside an enum without it — `{ type: ["string", "null"], enum: ["a"] }` —
 * was sent as `enum: ["a", null]`, though the original takes no null (a validator holds to both
 * keywords, and the enum refuses it): the model shown "a or null" wrote null for a required field,
 * `restoreArguments` kept it (the field is required, null is no optional's stand-in), and the call
 * was refused.
 *
 * And a union whose first variant's string has a pattern `mayBacktrack` calls risky (zod's email)
 * was read as met by any string there, since that pattern is never run: `{ c: "a", a: null }`,
 * written for the second variant, was read by the first, its null kept, and zod refused the call
 * (seed -98302 of tools' round-trip model, at 10×). A string lacking a character every match of
 * the pattern holds (`@`) now surely fails it, known without running it.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { charactersEveryMatchHolds } from "./backtracking.js";
import { restoreArguments } from "./optional-nulls.js";
import { sanitizeSchema } from "./sanitize-schema.js";

type Props = { properties: Record<string, { type?: unknown; enum?: unknown[]; anyOf?: unknown[] }> };

describe("a type that names null beside an enum that does not hold it", () => {
  const original = {
    type: "object",
    properties: {
      kind: { type: ["string", "null"], enum: ["a", "b"] },
      mode: { type: ["string", "null"], const: "x" },
      hint: { type: ["string", "null"], enum: ["a"] },
    },
    required: ["kind", "mode"],
  };

  it("is sent as the enum alone where the field is required, so the model is never shown null", () => {
    const sent = sanitizeSchema(original) as Props;
    // Before: type ["string", "null"] and enum ["a", "b", null] (and ["x", null]).
    expect(sent.properties.kind).toMatchObject({ type: "string", enum: ["a", "b"] });
    expect(sent.properties.mode).toMatchObject({ type: "string", enum: ["x"] });
  });

  it("still takes null where the field is optional, and null is read as the field left out", () => {
    const sent = sanitizeSchema(original) as Props;
    expect(sent.properties.hint).toMatchObject({ type: ["string", "null"], enum: ["a", null] });
    expect(restoreArguments({ kind: "a", mode: "x", hint: null }, original)).toEqual({
      kind: "a",
      mode: "x",
    });
  });

  it("comes back the same from a second pass", () => {
    const once = sanitizeSchema(original);
    expect(sanitizeSchema(once)).toEqual(once);
  });
});

describe("zod's .nullable() on an enum, which does take null", () => {
  const input = z.object({ kind: z.enum(["a", "b"]).nullable(), tag: z.literal("t").nullable() });

  it("keeps null in the enum as z.toJSONSchema writes it (anyOf with a null branch)", () => {
    const original = z.toJSONSchema(input, { io: "input" });
    const sent = sanitizeSchema(original) as Props;
    expect(sent.properties.kind).toMatchObject({ type: ["string", "null"], enum: ["a", "b", null] });
    expect(sent.properties.tag).toMatchObject({ type: ["string", "null"], enum: ["t", null] });
    const args = restoreArguments({ kind: null, tag: null }, original);
    expect(input.parse(args)).toEqual({ kind: null, tag: null });
  });

  it("keeps null in the enum where it is written with OpenAPI's nullable, or in the enum itself", () => {
    const openapi = z.toJSONSchema(input, { io: "input", target: "openapi-3.0" });
    const inEnum = {
      type: "object",
      properties: {
        kind: z.toJSONSchema(z.literal(["a", "b", null])),
        tag: { type: ["string", "null"], enum: ["t", null] },
      },
      required: ["kind", "tag"],
    };
    for (const original of [openapi, inEnum]) {
      const sent = sanitizeSchema(original) as Props;
      expect(sent.properties.kind).toMatchObject({ type: ["string", "null"], enum: ["a", "b", null] });
      expect(sent.properties.tag).toMatchObject({ type: ["string", "null"], enum: ["t", null] });
      expect(input.parse(restoreArguments({ kind: null, tag: null }, original))).toEqual({
        kind: null,
        tag: null,
      });
    }
  });
});

describe("a union whose first variant's string has zod's email pattern, which is never run", () => {
  const input = z.object({
    item: z.union([
      z.object({ c: z.email().nullable(), a: z.string().nullable().default("d") }),
      z.object({ c: z.string().regex(/^[a-z]+$/), a: z.object({}).default({}) }),
    ]),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("reads a string with no @ by the second variant, so its null is the field left out and zod takes the call", () => {
    const args = restoreArguments({ item: { c: "a", a: null } }, original);
    // Before: { c: "a", a: null } (read by the email variant, whose `a` takes null), refused by zod.
    expect(args).toEqual({ item: { c: "a" } });
    expect(input.parse(args)).toEqual({ item: { c: "a", a: {} } });
  });

  it("still reads an address, or a null, by the email variant", () => {
    for (const c of ["x@y.io", null]) {
      const args = restoreArguments({ item: { c, a: null } }, original);
      expect(args).toEqual({ item: { c, a: null } });
      expect(input.parse(args)).toEqual(args);
    }
  });
});

describe("the characters every match of a pattern holds", () => {
  it("are the literals outside groups, classes and escapes that no quantifier makes optional", () => {
    expect(charactersEveryMatchHolds(z.toJSONSchema(z.email()).pattern as string)).toEqual(["@"]);
    expect(charactersEveryMatchHolds("^a?b*c{0,2}d{1}e+?f{2,}?:$")).toEqual(["d", "e", "f", ":"]);
    expect(charactersEveryMatchHolds("x\\u{1F600}?\\x2Dy=😀")).toEqual(["x", "=", "😀"]);
    expect(charactersEveryMatchHolds("😀?")).toEqual([]);
  });

  it("are none where a | outside any group offers another way, or the pattern is no regular expression", () => {
    expect(charactersEveryMatchHolds("^a@|b$")).toEqual([]);
    expect(charactersEveryMatchHolds("(a@")).toEqual([]);
    expect(charactersEveryMatchHolds("(@|b)[@](?=@)\\@{0}")).toEqual([]);
  });

  it("are held by every string the pattern matches", () => {
    const cases: Array<[string, string[]]> = [
      ["^(?:[a-z]+\\.)*[a-z]*@[a-z]+$", ["ab.c@d", "@x", "a.@b"]],
      ["^a?b*c{0,2}d{1}e+?f{2,}?:$", ["deff:", "abccdeeefff:"]],
      ["x\\u{1F600}?\\x2Dy=😀", ["x-y=😀", "x😀-y=😀"]],
    ];
    for (const [pattern, matches] of cases) {
      const held = charactersEveryMatchHolds(pattern);
      for (const text of matches) {
        expect(new RegExp(pattern, "u").test(text), `${pattern} ${text}`).toBe(true);
        for (const c of held) expect(text.includes(c), `${pattern} ${text} ${c}`).toBe(true);
      }
    }
  });
});
