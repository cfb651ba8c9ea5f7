/**
 * Round 98 (c): what a union's variants ask for as JSON text is read for the variant the object is
 * read by. A union with no single-value tag — a zod `z.union` of objects, a discriminated union
 * whose tag is a `z.enum` or a nullable literal, a tool whose whole input is a union — read the
 * asks of all its variants at a key together: one variant asking for a map as JSON text made the
 * string "0" another variant's any-value field was given reach the tool as the number 0.
 *
 * And r97d's null-tag rule where the tag is given through a `$ref`, or as a const or null: the
 * sanitized schema a tag is read from holds the `$ref` inlined and the const-or-null as one enum.
 */
import { growth } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { restoreArguments } from "./optional-nulls.js";
import { sanitizeSchema } from "./sanitize-schema.js";

/** The strings a model may write for an any-value field that JSON text of a map would read otherwise. */
const SCALAR_TEXTS = ["0", "true", "null", "-1.5"];

describe("a union of objects with no tag, one variant taking any value, another a map", () => {
  const input = z.object({
    item: z.union([
      z.object({ name: z.string(), body: z.unknown() }),
      z.object({ id: z.number(), body: z.record(z.string(), z.string()) }),
    ]),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("hands the named variant's string body on as the string the model wrote", () => {
    for (const body of SCALAR_TEXTS) {
      const args = restoreArguments({ item: { name: "x", body } }, original);
      // Before: 0, true, null and -1.5 (the map variant's ask for JSON text, read for this one).
      expect(args).toEqual({ item: { name: "x", body } });
      expect(input.parse(args)).toEqual(args);
    }
  });

  it("still reads an object as JSON text for the any-value body, and the map variant's text", () => {
    expect(restoreArguments({ item: { name: "x", body: '{"a":1}' } }, original)).toEqual({
      item: { name: "x", body: { a: 1 } },
    });
    expect(restoreArguments({ item: { id: 1, body: '{"a":"b"}' } }, original)).toEqual({
      item: { id: 1, body: { a: "b" } },
    });
  });

  it("reads each item of a list by its own variant", () => {
    const list = z.object({ items: z.array(input.shape.item) });
    const schema = z.toJSONSchema(list, { io: "input" });
    const args = restoreArguments(
      {
        items: [
          { name: "a", body: "7" },
          { id: 2, body: '{"k":"v"}' },
          { name: "b", body: "[1]" },
        ],
      },
      schema,
    );
    expect(args).toEqual({
      items: [
        { name: "a", body: "7" },
        { id: 2, body: { k: "v" } },
        { name: "b", body: [1] },
      ],
    });
    expect(list.parse(args)).toEqual(args);
  });
});

describe("a union whose variants name the same field, one any value, the other a map", () => {
  const input = z.object({
    item: z.union([z.object({ body: z.unknown() }), z.object({ body: z.record(z.string(), z.string()) })]),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("reads the string by the first variant, as zod does, and an object's text too", () => {
    for (const body of SCALAR_TEXTS) {
      // Before: the number 0 (and so on) — text of no map, so only the any-value variant was written for.
      expect(restoreArguments({ item: { body } }, original)).toEqual({ item: { body } });
    }
    expect(restoreArguments({ item: { body: '{"a":"b"}' } }, original)).toEqual({
      item: { body: { a: "b" } },
    });
  });
});

describe("a tool whose whole input is a union of objects", () => {
  const input = z.union([
    z.object({ name: z.string(), body: z.unknown() }),
    z.object({ id: z.number(), body: z.record(z.string(), z.string()) }),
  ]);
  const original = z.toJSONSchema(input, { io: "input" });

  it("is declared as one object with the fields of both, each variant's own nullable", () => {
    expect(sanitizeSchema(original)).toMatchObject({
      properties: { name: { type: ["string", "null"] }, id: { type: ["number", "null"] } },
      required: ["name", "body", "id"],
    });
  });

  it("reads the body by the variant whose fields the model gave", () => {
    for (const body of SCALAR_TEXTS) {
      const args = restoreArguments({ name: "x", id: null, body }, original);
      // Before: the number the string spells (the map variant's ask, merged into the one object).
      expect(args).toEqual({ name: "x", body });
      expect(input.parse(args)).toEqual(args);
    }
    expect(restoreArguments({ name: "x", id: null, body: '{"a":1}' }, original)).toEqual({
      name: "x",
      body: { a: 1 },
    });
    expect(restoreArguments({ name: null, id: 3, body: '{"a":"b"}' }, original)).toEqual({
      id: 3,
      body: { a: "b" },
    });
  });
});

describe("a discriminated union whose tag takes several values, or null", () => {
  const variants = (tag: z.ZodType) =>
    z.object({
      item: z.union([
        z.object({ kind: z.literal("note"), body: z.unknown() }),
        z.object({ kind: tag, body: z.record(z.string(), z.string()) }),
      ]),
    });

  for (const [what, tag] of [
    ["a z.enum", z.enum(["map", "dict"])],
    ["a nullable literal", z.literal("map").nullable()],
  ] as const) {
    it(`hands the note's string body on as written where the map's tag is ${what}`, () => {
      const input = variants(tag);
      const original = z.toJSONSchema(input, { io: "input" });
      for (const body of SCALAR_TEXTS) {
        const args = restoreArguments({ item: { kind: "note", body } }, original);
        // Before: the map's tag was no single value, so its ask for JSON text was read for the note.
        expect(args).toEqual({ item: { kind: "note", body } });
        expect(input.parse(args)).toEqual(args);
      }
      const map = restoreArguments({ item: { kind: "map", body: '{"a":"b"}' } }, original);
      expect(map).toEqual({ item: { kind: "map", body: { a: "b" } } });
    });
  }
});

describe("a tag given through a $ref, written null where it has a default", () => {
  // The note's tag is optional (zod's `.default()` leaves it out of `required`); both tags are
  // definitions. The sanitized schema the tag is read from holds each inlined: `enum: ["map"]`.
  const original = {
    type: "object",
    properties: {
      item: {
        anyOf: [
          {
            type: "object",
            properties: { kind: { $ref: "#/$defs/Note" }, body: {} },
            required: ["body"],
          },
          {
            type: "object",
            properties: {
              kind: { $ref: "#/$defs/Map" },
              body: { type: "object", additionalProperties: { type: "string" } },
            },
            required: ["kind", "body"],
          },
        ],
      },
    },
    required: ["item"],
    $defs: { Note: { type: "string", const: "note" }, Map: { type: "string", const: "map" } },
  };

  it("passes the map over for the null, and reads the note's string as written", () => {
    for (const body of SCALAR_TEXTS) {
      expect(restoreArguments({ item: { kind: null, body } }, original)).toEqual({ item: { body } });
    }
    expect(restoreArguments({ item: { kind: "map", body: '{"a":"b"}' } }, original)).toEqual({
      item: { kind: "map", body: { a: "b" } },
    });
  });
});

describe("a tag that is a const or null (anyOf), written null", () => {
  // The map's tag takes null (`anyOf: [{ const: "map" }, { type: "null" }]`, sent as `enum: ["map",
  // null]`): a null there is the map's, and the note (whose tag takes none) is passed over.
  const input = z.object({
    item: z.union([
      z.object({ kind: z.literal("note"), body: z.string() }),
      z.object({ kind: z.literal("map").nullable(), body: z.record(z.string(), z.string()) }),
    ]),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("reads the map's JSON text for a null tag, and the note's string as written", () => {
    const map = restoreArguments({ item: { kind: null, body: '{"a":"b"}' } }, original);
    expect(map).toEqual({ item: { kind: null, body: { a: "b" } } });
    expect(input.parse(map)).toEqual(map);
    const note = restoreArguments({ item: { kind: "note", body: '{"a":"b"}' } }, original);
    expect(note).toEqual({ item: { kind: "note", body: '{"a":"b"}' } });
    expect(input.parse(note)).toEqual(note);
  });
});

describe("JSON text the model wrote for the alternative asking for it, read by another variant", () => {
  // Found at 10x by tools' round-trip model (seeds -98302, strict, and 98301, shallow): the map
  // (or the tagged union, past maxDepth) is asked for as JSON text, the list is not; a list written
  // as text fits only the first alternative's shape, and is the list the second variant reads.
  const input = z.object({
    a: z.union([
      z.object({ b: z.record(z.string(), z.string()) }),
      z.object({ b: z.array(z.string()) }),
      z.object({}),
    ]),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("parses the list's text, which the map's alternative asked for", () => {
    const declared = sanitizeSchema(original) as { properties: { a: { anyOf: unknown[] } } };
    expect(declared.properties.a.anyOf[0]).toMatchObject({ properties: { b: { type: "string" } } });
    for (const [b, parsed] of [
      ["[]", []],
      ['["x"]', ["x"]],
      ["{}", {}],
    ] as const) {
      const args = restoreArguments({ a: { b } }, original);
      // Before the fix was whole: the list variant's own alternative asks for no text, and the
      // string reached zod, which read the call by the empty variant and dropped `b`.
      expect(args).toEqual({ a: { b: parsed } });
      expect(input.parse(args)).toEqual(args);
    }
  });

  it("shallow: a tagged union past maxDepth asked for as text beside a list", () => {
    const shallow = z.object({
      a: z.union([
        z.object({
          c: z.discriminatedUnion("kind", [
            z.object({ kind: z.literal("k0") }),
            z.object({ kind: z.literal("k1") }),
          ]),
        }),
        z.object({ c: z.array(z.string()) }),
        z.object({}),
      ]),
    });
    const schema = z.toJSONSchema(shallow, { io: "input" });
    const options = { recursionLimit: 1, maxDepth: 2 };
    expect(restoreArguments({ a: { c: "[]" } }, schema, options)).toEqual({ a: { c: [] } });
    expect(restoreArguments({ a: { c: '{"kind":"k1"}' } }, schema, options)).toEqual({
      a: { c: { kind: "k1" } },
    });
  });
});

describe("W variants, a null only the first names, JSON text every variant refuses", () => {
  // r97d measured this shape 2-20x slower per object than before the other variants were tried
  // (each tried in turn, the text parsed and the object read for each). A variant the text's value
  // surely fails is now not tried; what the call comes to is unchanged.
  const variants = Array.from({ length: 20 }, (_, i) => ({
    type: "object",
    properties: {
      ...(i === 0 ? { note: { type: ["string", "null"] } } : {}),
      [`f${i}`]: { type: "string" },
      body: { type: "object", additionalProperties: { type: "integer" } },
    },
    required: ["body"],
  }));
  const schema = { type: "object", properties: { item: { anyOf: variants } }, required: ["item"] };

  it("reads the union whole, as before: the text parsed (the tool names what it refuses), the null kept", () => {
    expect(restoreArguments({ item: { note: null, body: '{"a":"s"}' } }, schema)).toEqual({
      item: { note: null, body: { a: "s" } },
    });
    expect(restoreArguments({ item: { note: null, body: '{"a":1}' } }, schema)).toEqual({
      item: { note: null, body: { a: 1 } },
    });
  });
});

describe("an object of many keys, each a map given as JSON text", () => {
  // Each key's place read the object's alternatives afresh (r96a's tag check walks every property
  // of each): 2,000 keys took 620 ms of CPU where 500 took 45 (13.6x for 4x). Read once per object.
  const sizes = new Map<number, { schema: unknown; args: unknown }>();
  const sized = (n: number) => {
    let made = sizes.get(n);
    if (made === undefined) {
      const map = { type: "object", additionalProperties: { type: "string" } };
      made = {
        schema: {
          type: "object",
          properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, map])),
        },
        args: Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `{"a":"${i}"}`])),
      };
      sizes.set(n, made);
    }
    return made;
  };

  it("costs about sixteen times as much at sixteen times the keys, each parsed", async () => {
    const { schema, args } = sized(3);
    expect(restoreArguments(args, schema)).toEqual({ k0: { a: "0" }, k1: { a: "1" }, k2: { a: "2" } });
    // 125 and 2,000 keys, each size read eight times so the smaller lasts some milliseconds of CPU.
    // Linear reads about 16 and the per-key reading far more (13x at 4x before): the bound sits
    // near their geometric middle, where a loaded host's 3x swing of a linear ratio stays under
    // it (at 4x with a bound of 9, linear read 4.6 beside a busy loop: 2x from failing).
    const ratio = await growth(
      (n) => {
        const { schema, args } = sized(n);
        for (let i = 0; i < 7; i++) restoreArguments(args, schema);
        return restoreArguments(args, schema);
      },
      125,
      16,
    );
    expect(ratio, `16x the keys took ${ratio.toFixed(1)}x the CPU`).toBeLessThan(64);
  }, 120_000);
});

describe("an optional union: the null the declaration adds is no object the model wrote", () => {
  // Seed 98305 at 10x of tools' round-trip model: the `null` strict mode adds for an optional union
  // of objects names no property, so every object "fit" it, and it alone was kept for the keys: `b`'s JSON text,
  // written for the first alternative (which asks for it), reached the tool unparsed.
  const input = z.object({
    e: z
      .union([
        z.object({
          b: z.union([z.object({}), z.object({})]).nullable(),
          d: z.string().nullable().default(null),
        }),
        z.object({ b: z.array(z.object({ n: z.number() })).default([]) }),
      ])
      .optional(),
  });
  const original = z.toJSONSchema(input, { io: "input" });

  it("parses the list's text the first alternative asked for, for the variant that reads it", () => {
    const args = restoreArguments({ e: { b: '[{"n":1}]', d: null } }, original);
    expect(args).toEqual({ e: { b: [{ n: 1 }] } });
    expect(input.parse(args)).toEqual(args);
  });
});
