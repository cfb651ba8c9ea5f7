import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import {
  dropOptionalNulls,
  restoreArguments,
  sanitizeSchema,
  takesOnlyStringAt,
  takesStringAt,
} from "./index.js";

// zod's z.toJSONSchema of a recursive tree: the reference is expanded twice, then asked for as JSON text.
const tree = {
  type: "object",
  properties: { tree: { $ref: "#/$defs/node" }, note: { type: "string" } },
  required: ["tree"],
  $defs: {
    node: {
      type: "object",
      properties: { name: { type: "string" }, children: { type: "array", items: { $ref: "#/$defs/node" } } },
      required: ["name"],
    },
  },
};
const deep = [{ name: "leaf", children: [{ name: "deepest" }] }];

type Raw = Record<string, unknown>;

/** The sanitized schema at a path of property names (`[]` for an array's items). */
function at(schema: unknown, path: string[]): Raw {
  let node = schema as Raw;
  for (const key of path) {
    const plain = (Array.isArray(node.anyOf) ? node.anyOf[0] : node) as Raw;
    node = (key === "[]" ? plain.items : (plain.properties as Raw)[key]) as Raw;
  }
  return node;
}

describe("restoreArguments", () => {
  it("parses back the JSON text a recursive $ref past recursionLimit was asked for, and drops the optional nulls", () => {
    const strict = sanitizeSchema(tree);
    expect(at(strict, ["tree", "children", "[]", "children"]).description).toContain("JSON text");
    const args = {
      tree: { name: "root", children: [{ name: "kid", children: JSON.stringify(deep) }] },
      note: null,
    };
    const before = structuredClone(args);
    expect(restoreArguments(args, tree)).toEqual({
      tree: { name: "root", children: [{ name: "kid", children: deep }] },
    });
    expect(args).toEqual(before);
    // dropOptionalNulls alone leaves the text a string, which the tool refuses.
    expect(dropOptionalNulls(args, tree)).toEqual({
      tree: { name: "root", children: [{ name: "kid", children: JSON.stringify(deep) }] },
    });
  });

  it("asks for a recursive $ref written as allOf: [$ref] (pydantic v1) as JSON text past recursionLimit, and parses it back", () => {
    const schema = {
      type: "object",
      properties: { head: { allOf: [{ $ref: "#/definitions/Item" }], description: "First item." } },
      required: ["head"],
      definitions: {
        Item: {
          type: "object",
          properties: { value: { type: "integer" }, next: { allOf: [{ $ref: "#/definitions/Item" }] } },
          required: ["value"],
        },
      },
    };
    const strict = sanitizeSchema(schema, { recursionLimit: 1 });
    // Before: the reference was dropped and `next` read as any scalar, so no item could be given there.
    expect(at(strict, ["head", "next"])).toMatchObject({
      type: ["string", "null"],
      description: expect.stringContaining("Give this value as JSON text."),
    });
    const args = { head: { value: 1, next: '{"value":2,"next":{"value":3,"next":{"value":4}}}' } };
    expect(restoreArguments(args, schema, { recursionLimit: 1 })).toEqual({
      head: { value: 1, next: { value: 2, next: { value: 3, next: { value: 4 } } } },
    });
  });

  it("says an object goes as JSON text where one alternative of a union takes any value, and parses it back", () => {
    const schema = {
      type: "object",
      properties: { value: { anyOf: [{ type: "integer" }, { description: "Anything else." }] } },
      required: ["value"],
    };
    // Before: the untyped alternative was flattened into the union and its note lost, so the model
    // was never told an object could be given, and no text was parsed back.
    expect(at(sanitizeSchema(schema), ["value"]).description).toContain(
      "give an object or an array as JSON text",
    );
    expect(restoreArguments({ value: '{"a":1}' }, schema)).toEqual({ value: { a: 1 } });
    expect(restoreArguments({ value: 7 }, schema)).toEqual({ value: 7 });
  });

  it("parses back an object nested past maxDepth, with the maxDepth the schema was sanitized with", () => {
    const schema = {
      type: "object",
      properties: {
        outer: {
          type: "object",
          properties: { inner: { type: "object", properties: { x: { type: "integer" } }, required: ["x"] } },
          required: ["inner"],
        },
      },
      required: ["outer"],
    };
    expect(at(sanitizeSchema(schema, { maxDepth: 2 }), ["outer", "inner"]).description).toContain(
      "JSON text",
    );
    const args = { outer: { inner: '{"x": 3}' } };
    expect(restoreArguments(args, schema, { maxDepth: 2 })).toEqual({ outer: { inner: { x: 3 } } });
    // With the default maxDepth that place was an object, not text: a string there is the model's mistake, kept.
    expect(restoreArguments(args, schema)).toEqual(args);
  });

  it("parses back an object or an array given for a value with no type, and leaves other strings as strings", () => {
    const schema = {
      type: "object",
      properties: { value: { description: "Anything." }, label: { type: "string" } },
      required: ["value", "label"],
    };
    expect(at(sanitizeSchema(schema), ["value"]).description).toContain("as JSON text");
    expect(restoreArguments({ value: '{"a":[1,2]}', label: '{"a":1}' }, schema)).toEqual({
      value: { a: [1, 2] },
      label: '{"a":1}',
    });
    expect(restoreArguments({ value: "[1]", label: "x" }, schema)).toEqual({ value: [1], label: "x" });
    // A number, a quoted string, true, null written as text stay the string the model wrote.
    for (const text of ["12", '"hi"', "true", "null", "plain words", "{broken"]) {
      expect(restoreArguments({ value: text, label: "x" }, schema)).toEqual({ value: text, label: "x" });
    }
  });

  it("leaves JSON text that does not parse, or parses to a kind the original does not take there, as it was", () => {
    const args = (text: string) => ({ tree: { name: "r", children: [{ name: "k", children: text }] } });
    expect(restoreArguments(args("[{name:"), tree)).toEqual(args("[{name:"));
    // The original takes an array of nodes there, not an object or a number.
    expect(restoreArguments(args('{"name":"x"}'), tree)).toEqual(args('{"name":"x"}'));
    expect(restoreArguments(args("3"), tree)).toEqual(args("3"));
  });

  it("leaves JSON text holding an integer JavaScript would change as text, rather than parsing in another number", () => {
    const args = (text: string) => ({ tree: { name: "r", children: [{ name: "k", children: text }] } });
    // Before: parsed, and the tool was handed id 12345678901234567000.
    const changed = '[{"name":"a","id":12345678901234567891},{"name":"b","size":1e400}]';
    expect(restoreArguments(args(changed), tree)).toEqual(args(changed));
    const held = '[{"name":"a","id":12345678901234567000}]';
    expect(restoreArguments(args(held), tree)).toEqual({
      tree: { name: "r", children: [{ name: "k", children: [{ name: "a", id: 12345678901234567000 }] }] },
    });
  });

  // An object nested past maxDepth 2: asked for as JSON text, parsed back.
  const nested = {
    type: "object",
    properties: {
      outer: {
        type: "object",
        properties: {
          inner: {
            type: "object",
            properties: { b: { type: "integer" }, c: { type: "integer" }, note: { type: "string" } },
          },
        },
        required: ["inner"],
      },
    },
    required: ["outer"],
  };
  const innerText = (text: string) => ({ outer: { inner: text } });

  it("leaves JSON text as text when another number in it, or a string, has the digits its changed integer reads as", () => {
    expect(at(sanitizeSchema(nested, { maxDepth: 2 }), ["outer", "inner"]).description).toContain(
      "JSON text",
    );
    // Before: both were parsed, and the tool was handed b: 12345678901234567000, a number the model
    // never wrote (its digits were found elsewhere in the text: c's number, or the note).
    for (const text of [
      '{"b": 12345678901234567891, "c": 12345678901234567000}',
      '{"b": 12345678901234567891, "note": "12345678901234567000"}',
      '{"b": 1e-400, "c": 0}',
    ]) {
      expect(restoreArguments(innerText(text), nested, { maxDepth: 2 })).toEqual(innerText(text));
    }
    // Numbers that read back as written are parsed, a long decimal as its nearest double.
    const held = '{"b": 12345678901234567000, "c": 1e21, "note": "12345678901234567891"}';
    expect(restoreArguments(innerText(held), nested, { maxDepth: 2 })).toEqual({
      outer: { inner: { b: 12345678901234567000, c: 1e21, note: "12345678901234567891" } },
    });
  });

  it("parses JSON text back only when each number in it reads back as written (property)", () => {
    /** The exact value a numeral names, as `[mantissa, power of ten]` with no trailing zeros. */
    const exact = (numeral: string): [bigint, number] => {
      const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(numeral) as RegExpExecArray;
      let mantissa = BigInt(`${m[1]}${m[2]}${m[3] ?? ""}`);
      let power = Number(m[4] ?? "0") - (m[3] ?? "").length;
      if (mantissa === 0n) return [0n, 0];
      while (mantissa % 10n === 0n) {
        mantissa /= 10n;
        power++;
      }
      return [mantissa, power];
    };
    const same = (a: string, b: string) => {
      const [ma, pa] = exact(a);
      const [mb, pb] = exact(b);
      return ma === mb && pa === pb;
    };
    const integer = fc.oneof(
      fc.bigInt({ min: -(10n ** 22n), max: 10n ** 22n }).map(String),
      fc.bigInt({ min: 2n ** 53n - 4n, max: 2n ** 64n }).map(String),
    );
    const numeral = fc.oneof(
      integer,
      fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
      fc
        .tuple(fc.integer({ min: 1, max: 9 }), fc.integer({ min: -420, max: 420 }))
        .map(([digit, power]) => `${digit}e${power}`),
    );
    fc.assert(
      fc.property(numeral, numeral, fc.boolean(), (b, c, quoted) => {
        // c's digits, or the digits b reads as, sit in a string or as another number beside b.
        const other = quoted ? `"note": "${String(Number(b))}"` : `"c": ${c}`;
        const text = `{"b": ${b}, ${other}}`;
        const out = restoreArguments(innerText(text), nested, { maxDepth: 2 }) as {
          outer: { inner: unknown };
        };
        const numerals = quoted ? [b] : [b, c];
        // Written back as JavaScript writes a number, each reads as the same number it was written as
        // (a decimal longer than a double keeps: rounded, as every JSON reader does).
        const holds = (n: string) =>
          Number.isFinite(Number(n)) &&
          (same(n, String(Number(n))) || (!/^-?\d+$/.test(n) && (Number(n) !== 0 || exact(n)[0] === 0n)));
        if (numerals.every(holds)) expect(out.outer.inner).toEqual(JSON.parse(text));
        else expect(out.outer.inner).toBe(text);
      }),
      propertyRuns(2000),
    );
  });

  it("does not parse a string where the original takes a string, even under the JSON-text wording", () => {
    const schema = {
      type: "object",
      properties: { code: { type: "string", description: "Give this value as JSON text." } },
      required: ["code"],
    };
    expect(restoreArguments({ code: '{"a":1}' }, schema)).toEqual({ code: '{"a":1}' });
  });

  it("keeps a string where the tool's own description uses the JSON-text wording and a string is one of its alternatives", () => {
    // Before: the note was looked for in the sanitized description, which carried the tool's own
    // words, so this string was parsed into an object the model never meant.
    const schema = {
      type: "object",
      properties: {
        query: {
          anyOf: [
            { type: "string" },
            { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
          ],
          description: "A search, or a raw query. Give this value as JSON text.",
        },
        value: {
          type: ["string", "object"],
          description: "Any JSON value; give an object or an array as JSON text.",
        },
      },
      required: ["query", "value"],
    };
    const args = { query: '{"q":"cats"}', value: '{"a":1}' };
    expect(restoreArguments(args, schema)).toEqual(args);
    // Where the sanitizer did ask for JSON text (a recursion past its limit), it is still parsed back.
    const args2 = { tree: { name: "r", children: [{ name: "k", children: JSON.stringify(deep) }] } };
    expect(restoreArguments(args2, tree)).toEqual({
      tree: { name: "r", children: [{ name: "k", children: deep }] },
    });
  });

  it("sanitizes a schema once however many calls restore arguments against it", () => {
    // A read only the sanitizer makes (not an enumerable key, which the argument walk copies).
    let sanitized = 0;
    const label: Record<string, unknown> = { type: "string" };
    Object.defineProperty(label, "maxLength", {
      enumerable: false,
      get: () => {
        sanitized++;
        return 80;
      },
    });
    const schema = { ...tree, properties: { ...tree.properties, label } };
    const args = {
      tree: { name: "r", children: [{ name: "k", children: JSON.stringify(deep) }] },
      label: "x",
    };
    for (let i = 0; i < 1000; i++) {
      expect(restoreArguments(args, schema)).toEqual({
        ...args,
        tree: { ...args.tree, children: [{ name: "k", children: deep }] },
      });
    }
    // Before: once per call (1000).
    expect(sanitized).toBe(1);
    // Other options are another sanitized form, read once too.
    restoreArguments(args, schema, { recursionLimit: 1 });
    restoreArguments(args, schema, { recursionLimit: 1 });
    expect(sanitized).toBe(2);
  });

  it("follows the shapes dropOptionalNulls follows: allOf, oneOf branches, tuples, a root union", () => {
    const node = {
      type: "object",
      properties: { id: { type: "string" }, next: { $ref: "#/$defs/node" } },
      required: ["id"],
    };
    const schema = {
      anyOf: [
        {
          type: "object",
          properties: { chain: { allOf: [{ $ref: "#/$defs/node" }] } },
          required: ["chain"],
          additionalProperties: false,
        },
        {
          type: "object",
          properties: {
            pair: {
              type: "array",
              prefixItems: [{ type: "string" }, { oneOf: [{ type: "integer" }, { $ref: "#/$defs/node" }] }],
            },
          },
          required: ["pair"],
          additionalProperties: false,
        },
      ],
      $defs: { node },
    };
    const chain = { id: "a", next: { id: "b", next: '{"id":"c","next":{"id":"d"}}' } };
    expect(restoreArguments({ chain, pair: null }, schema)).toEqual({
      chain: { id: "a", next: { id: "b", next: { id: "c", next: { id: "d" } } } },
    });
    const pair = ["x", { id: "a", next: { id: "b", next: '{"id":"c"}' } }];
    expect(restoreArguments({ chain: null, pair }, schema)).toEqual({
      pair: ["x", { id: "a", next: { id: "b", next: { id: "c" } } }],
    });
  });

  it("never throws and never mutates, whatever the arguments and schema", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (args, schema) => {
        const before = JSON.stringify(args);
        restoreArguments(args, schema);
        expect(JSON.stringify(args)).toBe(before);
      }),
    );
    const cyclic: Record<string, unknown> = { type: "object" };
    cyclic.properties = { self: cyclic, any: { anyOf: [{ $ref: "#" }, { $ref: "#" }] } };
    expect(restoreArguments({ self: { self: "{}" }, any: "[]" }, cyclic)).toBeTypeOf("object");
    let value: unknown = "[]";
    for (let i = 0; i < 100_000; i++) value = { tree: value };
    let back = restoreArguments(value, tree) as { tree: unknown } | string;
    let levels = 0;
    for (; typeof back === "object"; levels++) back = back.tree as { tree: unknown } | string;
    expect([levels, back]).toEqual([100_000, "[]"]);
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    expect(restoreArguments({ a: 1 }, revoked.proxy)).toEqual({ a: 1 });
    expect(restoreArguments(revoked.proxy, tree)).toBe(revoked.proxy);
  });
});

describe("takesStringAt (and takesOnlyStringAt: never throws)", () => {
  const schema = {
    type: "object",
    properties: {
      id: { type: "string" },
      count: { type: "integer" },
      either: { anyOf: [{ type: "string" }, { type: "integer" }] },
      anything: {},
      items: { type: "array", items: { $ref: "#/$defs/item" } },
      pair: { type: "array", prefixItems: [{ type: "integer" }, { type: "string" }] },
      extra: { type: "object", additionalProperties: { type: "string" } },
    },
    $defs: { item: { type: "object", properties: { sku: { type: ["string", "null"] } } } },
  };

  it("says where the original schema takes a string, through refs, items, tuples, unions and additionalProperties", () => {
    const answers = Object.fromEntries(
      [
        ["id"],
        ["count"],
        ["either"],
        ["anything"],
        ["items", 3, "sku"],
        ["pair", 0],
        ["pair", 1],
        ["extra", "free"],
        ["unknown"],
        [],
      ].map((path) => [JSON.stringify(path), takesStringAt(schema, path)]),
    );
    expect(answers).toEqual({
      '["id"]': true,
      '["count"]': false,
      '["either"]': true,
      // A place the schema leaves untyped says nothing about strings.
      '["anything"]': false,
      '["items",3,"sku"]': true,
      '["pair",0]': false,
      '["pair",1]': true,
      '["extra","free"]': true,
      '["unknown"]': false,
      "[]": false,
    });
  });

  it("never throws, whatever the schema and path", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.array(fc.oneof(fc.string(), fc.nat())), (value, path) => {
        expect(typeof takesStringAt(value, path)).toBe("boolean");
        expect(typeof takesOnlyStringAt(value, path)).toBe("boolean");
      }),
    );
    const revoked = Proxy.revocable({}, {});
    revoked.revoke();
    expect(takesStringAt(revoked.proxy, ["a"])).toBe(false);
    expect(takesOnlyStringAt(revoked.proxy, ["a"])).toBe(false);
  });
});

describe("takesOnlyStringAt", () => {
  const schema = {
    type: "object",
    properties: {
      zip: { type: "string", pattern: "^\\d{5}$" },
      id: { type: ["string", "integer"] },
      either: { anyOf: [{ type: "string" }, { type: "number" }] },
      code: { enum: ["01", "02"] },
      mixed: { enum: ["01", 2] },
      maybe: { type: ["string", "null"] },
      anything: {},
      skus: { type: "array", items: { $ref: "#/$defs/sku" } },
    },
    $defs: { sku: { type: "string" } },
  };

  it("says where a string is taken and no number, so a number token there is meant as text", () => {
    const paths = [
      ["zip"],
      ["id"],
      ["either"],
      ["code"],
      ["mixed"],
      ["maybe"],
      ["anything"],
      ["skus", 4],
      ["none"],
      [],
    ];
    expect(
      Object.fromEntries(paths.map((path) => [JSON.stringify(path), takesOnlyStringAt(schema, path)])),
    ).toEqual({
      '["zip"]': true,
      // A string beside a number: the number the model wrote is one the tool takes.
      '["id"]': false,
      '["either"]': false,
      '["code"]': true,
      '["mixed"]': false,
      '["maybe"]': true,
      '["anything"]': false,
      '["skus",4]': true,
      '["none"]': false,
      "[]": false,
    });
  });
});
