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
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { propertyRuns } from "../../../test-support/properties.js";
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

  it("keeps null in the enum where it is written in the enum itself", () => {
    // OpenAPI 3.0's `nullable: true` beside an enum without null takes none: see review-r99c.
    const inEnum = {
      type: "object",
      properties: {
        kind: z.toJSONSchema(z.literal(["a", "b", null])),
        tag: { type: ["string", "null"], enum: ["t", null] },
      },
      required: ["kind", "tag"],
    };
    const sent = sanitizeSchema(inEnum) as Props;
    expect(sent.properties.kind).toMatchObject({ type: ["string", "null"], enum: ["a", "b", null] });
    expect(sent.properties.tag).toMatchObject({ type: ["string", "null"], enum: ["t", null] });
    expect(input.parse(restoreArguments({ kind: null, tag: null }, inEnum))).toEqual({
      kind: null,
      tag: null,
    });
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

describe("the characters every match of a pattern holds, as a property", () => {
  // A pattern drawn from literals, escapes, classes, groups, alternation and every quantifier form,
  // each with a way to write a string it matches (a seeded draw), so the strings come from the same
  // tree as the pattern. A character the reading calls held that such a string lacks would let a
  // restore pass over the variant a model wrote for. Groups take only bounded quantifiers, so
  // checking that each string matches never backtracks for long.
  type Node = { re: string; make: (draw: () => number) => string };
  const pick = <T>(items: readonly T[], draw: () => number): T =>
    items[Math.floor(draw() * items.length)] as T;
  const ANY = ["a", "b", "@", "=", "x", ".", "7", " ", "é"];
  const leaves: Node[] = [
    ...["a", "b", "@", "=", "x"].map((c) => ({ re: c, make: () => c })),
    { re: "\\.", make: () => "." },
    { re: "\\x40", make: () => "@" },
    { re: "\\d", make: (draw) => String(Math.floor(draw() * 10)) },
    { re: "[@a]", make: (draw) => pick(["@", "a"], draw) },
    { re: "[^b]", make: (draw) => pick(["a", "@", "=", "x", "."], draw) },
    { re: ".", make: (draw) => pick(ANY, draw) },
    // Property escapes, read with the `u` flag as JSON Schema's validators read them: what stands
    // in their braces (`=`, the property's name) is no character a match holds.
    { re: "\\p{Script=Greek}", make: (draw) => pick(["α", "β", "Ω"], draw) },
    { re: "\\p{L}", make: (draw) => pick(["a", "é", "Ω"], draw) },
    { re: "\\P{L}", make: (draw) => pick(["7", "@", "="], draw) },
  ];
  // A named group and a back-reference to it (the name holding `$` and a non-ASCII letter, both
  // legal): the reference matches what the group took. Each name is drawn once, so a pattern never
  // holds two groups of one name; what the names are never changes what matches.
  let groups = 0;
  const backReferenced = (inner: Node): Node => {
    const name = `é$${groups++}`;
    return {
      re: `(?<${name}>${inner.re})\\k<${name}>`,
      make: (draw) => {
        const text = inner.make(draw);
        return text + text;
      },
    };
  };
  /** A quantifier: its text, and the fewest and most times it repeats (the open end capped at 3). */
  const ANY_COUNT: Array<[string, number, number]> = [
    ["", 1, 1],
    ["", 1, 1],
    ["?", 0, 1],
    ["*", 0, 3],
    ["+", 1, 3],
    ["{0,2}", 0, 2],
    ["{1}", 1, 1],
    ["{2,3}", 2, 3],
    ["+?", 1, 3],
    ["{0}", 0, 0],
    ["??", 0, 1],
  ];
  const BOUNDED = ANY_COUNT.filter(([, , most]) => most <= 1);
  const repeated = (node: Node, [q, fewest, most]: [string, number, number]): Node => ({
    re: `${node.re}${q}`,
    make: (draw) => {
      const times = fewest + Math.floor(draw() * (most - fewest + 1));
      let text = "";
      for (let i = 0; i < times; i++) text += node.make(draw);
      return text;
    },
  });
  const atom: fc.Memo<Node> = fc.memo((n) =>
    n <= 1
      ? fc
          .tuple(fc.constantFrom(...leaves), fc.constantFrom(...ANY_COUNT))
          .map(([leaf, q]) => repeated(leaf, q))
      : fc.oneof(
          { depthSize: "small" },
          atom(1),
          fc
            .tuple(fc.constantFrom("(", "(?:"), sequence(n - 1), fc.constantFrom(...BOUNDED))
            .map(([open, inner, q]) => repeated({ re: `${open}${inner.re})`, make: inner.make }, q)),
          sequence(n - 1).map(backReferenced),
          fc
            .tuple(sequence(n - 1), sequence(n - 1), fc.constantFrom(...BOUNDED))
            .map(([l, r, q]) =>
              repeated({ re: `(?:${l.re}|${r.re})`, make: (draw) => (draw() < 0.5 ? l : r).make(draw) }, q),
            ),
        ),
  );
  const sequence: fc.Memo<Node> = fc.memo((n) =>
    fc.array(atom(n), { minLength: 1, maxLength: 4 }).map((parts) => ({
      re: parts.map((p) => p.re).join(""),
      make: (draw: () => number) => parts.map((p) => p.make(draw)).join(""),
    })),
  );
  // `^head$`, or one time in five `^head|other$`: a match of either side, anything around it.
  const pattern = fc.tuple(sequence(3), fc.option(sequence(2), { nil: undefined, freq: 4 })).map(
    ([head, other]): Node =>
      other === undefined
        ? { re: `^${head.re}$`, make: head.make }
        : {
            re: `^${head.re}|${other.re}$`,
            make: (draw) =>
              draw() < 0.5 ? head.make(draw) + pick(ANY, draw) : pick(ANY, draw) + other.make(draw),
          },
  );

  it("holds for every string the pattern matches", () => {
    fc.assert(
      fc.property(pattern, fc.array(fc.integer(), { minLength: 1, maxLength: 4 }), (node, seeds) => {
        const held = charactersEveryMatchHolds(node.re);
        for (const seed of seeds) {
          // A small linear congruential draw: the same seed writes the same string (a replay holds).
          let state = seed >>> 0;
          const draw = () => {
            state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
            return state / 2 ** 32;
          };
          const text = node.make(draw);
          expect(new RegExp(node.re, "u").test(text), `${node.re} matches ${JSON.stringify(text)}`).toBe(
            true,
          );
          for (const c of held)
            expect(text.includes(c), `${node.re}: ${JSON.stringify(text)} lacks ${c}`).toBe(true);
        }
      }),
      propertyRuns(300),
    );
  });
});
