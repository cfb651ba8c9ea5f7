/**
 * Round 96 (a): a union's object read by the variant that takes it when a value in it came as JSON
 * text. Where a server is sent a shallow declaration (`maxDepth`), an object nested below it is
 * asked for as JSON text, and a union's variants then differ to the model only in their other
 * fields. The model writes every field of the variant it picks, `null` for those it leaves out;
 * `restoreArguments` must read that call by a variant that takes it once the text is parsed, not
 * keep a null for a variant whose filter refuses the value.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { restoreArguments } from "./optional-nulls.js";
import { sanitizeSchema } from "./sanitize-schema.js";

const shallow = { recursionLimit: 1, maxDepth: 2 };

describe("a union whose variants hold JSON text under a shallow declaration", () => {
  // A search by tag (with an optional limit) or by text. Both take an optional note: the tag
  // variant's takes null, the text variant's does not. Both filters are nested past maxDepth.
  const input = z.object({
    target: z.union([
      z.object({
        filter: z.strictObject({ tag: z.string() }),
        note: z.string().nullable().optional(),
        limit: z.number().nullable().optional(),
      }),
      z.object({ filter: z.object({ text: z.string() }), note: z.string().optional() }),
    ]),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("is declared with each filter as JSON text the model fills in", () => {
    const declared = sanitizeSchema(original, shallow) as { properties: { target: { anyOf: unknown[] } } };
    expect(declared.properties.target.anyOf[0]).toMatchObject({
      properties: {
        filter: { type: "string", description: expect.stringContaining("JSON text") },
        note: { type: ["string", "null"] },
        limit: { type: ["number", "null"] },
      },
      required: ["filter", "note", "limit"],
    });
  });

  it("a text filter written in the first variant's shape reaches the tool as the text variant takes it", () => {
    // The model filled in the first variant the declaration lists, leaving the note and the limit out.
    const model = { target: { filter: '{"text":"rust"}', note: null, limit: null } };
    const args = restoreArguments(model, original, shallow);
    // Before: the note's null was kept (the tag variant takes it there, and only that variant names
    // the limit), and zod refused the call — the tag variant for its filter, the text variant for its
    // note ("target: Invalid input").
    expect(args).toEqual({ target: { filter: { text: "rust" } } });
    expect(input.safeParse(args).success).toBe(true);
  });

  it("a tag filter keeps the nulls its own variant takes", () => {
    const model = { target: { filter: '{"tag":"rust"}', note: null, limit: null } };
    const args = restoreArguments(model, original, shallow);
    expect(args).toEqual({ target: { filter: { tag: "rust" }, note: null, limit: null } });
    expect(input.parse(args)).toEqual({ target: { filter: { tag: "rust" }, note: null, limit: null } });
  });

  it("reads the call as it reads the same call written with the filter as an object", () => {
    const asText = restoreArguments(
      { target: { filter: '{"text":"rust"}', note: null, limit: null } },
      original,
      shallow,
    );
    const asObject = restoreArguments(
      { target: { filter: { text: "rust" }, note: null, limit: null } },
      original,
      shallow,
    );
    expect(asText).toEqual(asObject);
  });
});

describe("a discriminated union's variant taking any value beside one asking for JSON text", () => {
  // The round-trip model's seed 1286858130 (strict dialect): the "note" variant takes any value at
  // `body`, the "map" variant a map of strings there, which the declaration asks for as JSON text.
  const input = z.object({
    item: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("note"), body: z.unknown() }),
      z.object({ kind: z.literal("map"), body: z.record(z.string(), z.string()) }),
    ]),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("hands the note variant's string on as the string the model wrote", () => {
    for (const body of ["0", "true", "null", "plain"]) {
      const args = restoreArguments({ item: { kind: "note", body } }, original);
      // Before: "0", "true" and "null" reached the tool as 0, true and null (read as the map
      // variant's JSON text), a value zod's reading of the call never holds.
      expect(args).toEqual({ item: { kind: "note", body } });
      expect(input.parse(args)).toEqual({ item: { kind: "note", body } });
    }
  });

  it("still reads an object or an array as JSON text for the note variant, and the map variant's text", () => {
    expect(restoreArguments({ item: { kind: "note", body: '{"a":1}' } }, original)).toEqual({
      item: { kind: "note", body: { a: 1 } },
    });
    expect(restoreArguments({ item: { kind: "map", body: '{"a":"b"}' } }, original)).toEqual({
      item: { kind: "map", body: { a: "b" } },
    });
  });
});
