/**
 * Round 99 (e): a null written for a key whose default is known.
 *
 * Strict mode asks for an optional key as required-nullable, and `restoreArguments` reads the
 * null a model writes there as the key left out. Under a zod `discriminatedUnion` whose variants'
 * tags both have defaults, that is a call zod refuses: it picks the variant by the tag, and with
 * the tag left out it cannot (zod's own limit; it reads a missing tag as `undefined`, which only
 * one variant may claim). The tag's default is known — the variant's `const` or `enum` names it —
 * so the null now stands for it. Other defaulted fields are left out as before: zod hands a
 * default on unparsed, so a `.trim()` or `.toLowerCase()` field takes a written default otherwise
 * than one left out, and a default its own bounds refuse would be refused once written.
 *
 * And a null branch's own description (`anyOf: [T, { type: "null", description }]`), which went
 * with the branch when the union was merged into `type: [T, "null"]`.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { dropOptionalNulls, restoreArguments } from "./optional-nulls.js";
import { relaxSchema, sanitizeSchema } from "./sanitize-schema.js";

type Props = { properties: Record<string, unknown> };

describe("a discriminated union whose variants' tags all have defaults, the tag written null", () => {
  const input = z.object({
    item: z.discriminatedUnion("kind", [
      z.object({ kind: z.literal("note").default("note"), body: z.string() }),
      z.object({ kind: z.literal("map").default("map"), n: z.number() }),
    ]),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("is declared with each tag as its value or null", () => {
    const declared = sanitizeSchema(original) as { properties: { item: { anyOf: unknown[] } } };
    expect(declared.properties.item.anyOf[0]).toMatchObject({
      properties: { kind: { enum: ["note", null] } },
    });
    expect(declared.properties.item.anyOf[1]).toMatchObject({
      properties: { kind: { enum: ["map", null] } },
    });
  });

  it("hands the tool the tag of the variant the object is written for, so zod can pick it", () => {
    const note = restoreArguments({ item: { kind: null, body: "0" } }, original);
    const map = restoreArguments({ item: { kind: null, n: 1 } }, original);
    // Before: { body: "0" } and { n: 1 }, which zod refuses ("Invalid discriminator value").
    expect(note).toEqual({ item: { kind: "note", body: "0" } });
    expect(map).toEqual({ item: { kind: "map", n: 1 } });
    expect(input.parse(note)).toEqual(note);
    expect(input.parse(map)).toEqual(map);
    expect(input.safeParse({ item: { body: "0" } }).success).toBe(false);
    // dropOptionalNulls, called before restoreArguments or alone, gives the same.
    expect(dropOptionalNulls({ item: { kind: null, n: 1 } }, original)).toEqual(map);
  });

  it("keeps a tag the model wrote", () => {
    expect(restoreArguments({ item: { kind: "map", n: 1 } }, original)).toEqual({
      item: { kind: "map", n: 1 },
    });
  });

  it("writes an enum tag's default, inside a list", () => {
    const items = z.object({
      items: z.array(
        z.discriminatedUnion("kind", [
          z.object({ kind: z.enum(["a", "b"]).default("a"), body: z.string() }),
          z.object({ kind: z.literal("c").default("c"), n: z.number() }),
        ]),
      ),
    });
    const args = restoreArguments(
      {
        items: [
          { kind: null, body: "x" },
          { kind: "b", body: "y" },
          { kind: null, n: 2 },
        ],
      },
      z.toJSONSchema(items, { io: "input" }),
    );
    // Before: the first and last items lost their tags, and zod refused the call.
    expect(args).toEqual({
      items: [
        { kind: "a", body: "x" },
        { kind: "b", body: "y" },
        { kind: "c", n: 2 },
      ],
    });
    expect(items.parse(args)).toEqual(args);
  });
});

describe("a null written for another defaulted field", () => {
  const input = z.object({
    count: z.number().default(3),
    flag: z.boolean().default(false),
    name: z.string().trim().default(" x "),
    level: z.string().toLowerCase().default("FAST"),
    short: z.string().min(5).default("ab"),
    box: z.object({ a: z.number() }).default({ a: 1 }),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("leaves it out, so zod fills in its default as it would for any call leaving it out", () => {
    const nulls = { count: null, flag: null, name: null, level: null, short: null, box: null };
    const args = restoreArguments(nulls, original);
    expect(args).toEqual({});
    expect(input.parse(args)).toEqual({
      count: 3,
      flag: false,
      name: " x ",
      level: "FAST",
      short: "ab",
      box: { a: 1 },
    });
    // Written, zod parses the default: the trimmed and lower-cased fields change, the short one is
    // refused. Left out, it is handed on as the schema declares it.
    expect(input.safeParse({ name: " x ", level: "FAST" }).data).toMatchObject({ name: "x", level: "fast" });
    expect(input.safeParse({ short: "ab" }).success).toBe(false);
  });

  it("writes an enum field's default only where the enum takes it", () => {
    const schema = {
      type: "object",
      properties: {
        mode: { type: "string", enum: ["fast", "slow"], default: "fast" },
        sort: { type: "string", enum: ["asc", "desc"], default: "none" },
        unit: { anyOf: [{ const: "cm" }, { const: "in" }], default: "cm" },
        nil: { type: "string", enum: ["a"], default: null },
      },
    };
    expect(restoreArguments({ mode: null, sort: null, unit: null, nil: null }, schema)).toEqual({
      mode: "fast",
      unit: "cm",
    });
  });
});

describe("a null branch's own description, once the union is merged into type: [T, null]", () => {
  // The null branch says when to write null (or what it means); sent as `type: [T, "null"]`, the
  // branch is gone, and with it what it told the model. It follows the description sent as "Null: …".
  const at = (schema: unknown) =>
    (sanitizeSchema({ type: "object", properties: { x: schema }, required: ["x"] }) as Props).properties.x;

  it("follows T's description, or the union's, as 'Null: …'", () => {
    for (const send of [sanitizeSchema, relaxSchema]) {
      const sent = send({
        type: "object",
        properties: {
          a: {
            anyOf: [
              { type: "string", description: "a" },
              { type: "null", description: "none: when unknown" },
            ],
          },
          b: {
            anyOf: [{ type: "integer" }, { type: "null", description: "Unlimited." }],
            description: "The limit.",
          },
          c: {
            anyOf: [
              { type: "string", enum: ["x", "y"] },
              { type: "null", description: "Either." },
            ],
          },
        },
        required: ["a", "b", "c"],
      }) as Props;
      // Before: "a", "The limit." and no description.
      expect(sent.properties.a).toEqual({
        type: ["string", "null"],
        description: "a. Null: none: when unknown.",
      });
      expect(sent.properties.b).toEqual({
        type: ["integer", "null"],
        description: "The limit. Null: Unlimited.",
      });
      expect(sent.properties.c).toEqual({
        type: ["string", "null"],
        enum: ["x", "y", null],
        description: "Null: Either.",
      });
    }
  });

  it("is written for zod's union with a described null", () => {
    const input = z.object({
      name: z.union([z.string().describe("The name."), z.null().describe("Not known yet.")]),
    });
    const sent = sanitizeSchema(z.toJSONSchema(input, { io: "input" })) as Props;
    expect(sent.properties.name).toEqual({
      type: ["string", "null"],
      description: "The name. Null: Not known yet.",
    });
  });

  it("is not written twice, nor for a title that only names null", () => {
    expect(
      at({
        anyOf: [{ type: "string" }, { type: "null", description: "Unknown." }],
        description: "Name. Unknown.",
      }),
    ).toEqual({
      type: ["string", "null"],
      description: "Name. Unknown.",
    });
    expect(at({ anyOf: [{ type: "string" }, { type: "null", title: "None" }] })).toEqual({
      type: ["string", "null"],
    });
    expect(at({ anyOf: [{ type: "string" }, { type: "null" }] })).toEqual({ type: ["string", "null"] });
  });

  it("comes back the same from a second pass", () => {
    const once = sanitizeSchema({
      type: "object",
      properties: { a: { anyOf: [{ type: "string" }, { type: "null", description: "When unknown" }] } },
      required: ["a"],
    });
    expect((once as Props).properties.a).toEqual({
      type: ["string", "null"],
      description: "Null: When unknown.",
    });
    expect(sanitizeSchema(once)).toEqual(once);
  });
});
