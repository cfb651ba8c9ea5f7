/**
 * Round 97 (d): r96a's rule — under a discriminated union, what is asked at a key is read from the
 * variants the object's tag allows — where the tag has a default (or is optional). zod's input
 * schema then leaves the tag out of `required`, the strict declaration asks for it as "note" or
 * null, and a model leaving it out writes null: a null the other variants' tags (one value each,
 * no null) refuse as surely as another value. Those variants' asks — JSON text for a map — were
 * read for the key, and the string the model wrote for the note's any-value body was parsed.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { restoreArguments } from "./optional-nulls.js";
import { sanitizeSchema } from "./sanitize-schema.js";

describe("a discriminated union whose tag has a default, written null", () => {
  const input = z.object({
    item: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("note").default("note"), body: z.unknown() }),
      z.object({ kind: z.literal("map"), body: z.record(z.string(), z.string()) }),
    ]),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("is declared with the note's tag as 'note' or null, the map's as 'map' alone", () => {
    const declared = sanitizeSchema(original) as { properties: { item: { anyOf: unknown[] } } };
    expect(declared.properties.item.anyOf[0]).toMatchObject({
      properties: { kind: { enum: ["note", null] } },
    });
    expect(declared.properties.item.anyOf[1]).toMatchObject({ properties: { kind: { enum: ["map"] } } });
  });

  it("hands the note's string body on as the string the model wrote", () => {
    for (const body of ["0", "true", "null", "plain"]) {
      const args = restoreArguments({ item: { kind: null, body } }, original);
      // Before: "0", "true" and "null" reached the tool as 0, true and null (read as the map
      // variant's JSON text), a value zod's reading of the call never holds. The null written for
      // the tag stands for its default (review-r99e).
      expect(args).toEqual({ item: { kind: "note", body } });
      expect(input.parse(args)).toEqual({ item: { kind: "note", body } });
    }
  });

  it("still reads an object or an array as JSON text for the note, and the map's text", () => {
    expect(restoreArguments({ item: { kind: null, body: '{"a":1}' } }, original)).toEqual({
      item: { kind: "note", body: { a: 1 } },
    });
    expect(restoreArguments({ item: { kind: "map", body: '{"a":"b"}' } }, original)).toEqual({
      item: { kind: "map", body: { a: "b" } },
    });
  });
});

describe("a union whose first variant's tag is optional, inside a list", () => {
  const input = z.object({
    items: z.array(
      z.union([
        z.object({ kind: z.literal("note").optional(), body: z.unknown() }),
        z.object({ kind: z.literal("map"), body: z.record(z.string(), z.string()) }),
      ]),
    ),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("reads each item's body by the variant its tag (or the null written for it) allows", () => {
    const model = {
      items: [
        { kind: null, body: "7" },
        { kind: "map", body: '{"k":"v"}' },
        { kind: "note", body: "7" },
      ],
    };
    const args = restoreArguments(model, original);
    // Before: the first item's body reached the tool as the number 7.
    expect(args).toEqual({
      items: [{ body: "7" }, { kind: "map", body: { k: "v" } }, { kind: "note", body: "7" }],
    });
    expect(input.parse(args)).toEqual(args);
  });
});
