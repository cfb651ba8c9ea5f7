/**
 * r83: a number JSON cannot carry — what `JSON.parse` makes of `1e309` (Infinity), or a host's
 * NaN — in an enum, a const or a default was written into the description by `JSON.stringify`,
 * which writes it `null`: `{ type: "number", const: 1e309 }` went out as "Must be exactly null.",
 * `enum: [1e309, 2]` as "Also allowed: null.", `default: 1e309` as "Default: null." — the model
 * told a value the schema never named. Such a value is left out (no model can send it), onNotice
 * told; a default holding one is not written.
 */
import { describe, expect, it } from "vitest";
import { checkStrictSchema } from "./check-strict.js";
import { sanitizeSchema } from "./sanitize-schema.js";

const sanitized = (text: string) => {
  const notices: string[] = [];
  const schema = sanitizeSchema(JSON.parse(text), { onNotice: (n) => notices.push(n) });
  return { schema, notices, json: JSON.stringify(schema) };
};

describe("a number JSON cannot carry (1e309 parsed to Infinity) in an enum, const or default", () => {
  it("is never written as null: the value is left out of an enum, onNotice told", () => {
    const { schema, notices } = sanitized(
      '{"type":"object","properties":{"a":{"type":"number","enum":[1e309,2,-1e309]}},"required":["a"]}',
    );
    expect(schema.properties).toEqual({ a: { type: "number", enum: [2] } });
    expect(notices).toEqual([
      "A schema's enum holds a number JSON cannot carry (Infinity, -Infinity, NaN or a BigInt; JSON text such as 1e309 parses to Infinity): 2 values are left out, as no model can send them.",
    ]);
  });

  it("an enum with no type: its type read from the values left", () => {
    const { schema } = sanitized('{"type":"object","properties":{"c":{"enum":[1e309,1]}},"required":["c"]}');
    expect(schema.properties).toEqual({ c: { type: "integer", enum: [1] } });
  });

  it("a const of one: no value is valid (never 'Must be exactly null')", () => {
    const { json, notices } = sanitized(
      '{"type":"object","properties":{"d":{"type":"number","const":1e309}},"required":["d"]}',
    );
    expect(json).not.toMatch(/null/);
    expect(json).toContain("no value is valid here");
    expect(notices[0]).toMatch(
      /^A schema's const holds a number JSON cannot carry .*: that value is left out/,
    );
  });

  it("an object or array value holding one is left out too (never written with null inside)", () => {
    const { json } = sanitized(
      '{"type":"object","properties":{"o":{"enum":[{"x":1e309},{"x":1}]},"l":{"const":[1,1e309]}},"required":["o","l"]}',
    );
    expect(json).toContain('Also allowed: {\\"x\\":1}.');
    expect(json).not.toMatch(/\{\\"x\\":null\}|\[1,null\]/);
  });

  it("a default holding one is not written", () => {
    const { schema } = sanitized(
      '{"type":"object","properties":{"h":{"type":"number","default":1e309},"i":{"type":"array","items":{"type":"number"},"default":[1,-1e309]},"j":{"type":"number","default":3}},"required":["h","i","j"]}',
    );
    expect(schema.properties).toEqual({
      h: { type: "number" },
      i: { type: "array", items: { type: "number" } },
      j: { type: "number", description: "Default: 3." },
    });
  });

  it("a host's NaN likewise, and the result is strict, and the same sanitized again", () => {
    const raw = {
      type: "object",
      properties: { n: { type: "number", enum: [Number.NaN, 4], default: Number.NaN } },
      required: ["n"],
    };
    const once = sanitizeSchema(raw);
    expect(once.properties).toEqual({ n: { type: "number", enum: [4] } });
    expect(checkStrictSchema(once)).toEqual([]);
    expect(sanitizeSchema(once)).toEqual(once);
  });
});

describe("a BigInt in an enum, const or default (r83)", () => {
  // Before, JSON.stringify threw on it and the whole schema was read as a closed empty object:
  // every other property lost, onNotice told nothing.
  it("is left out (onNotice told) and every other property kept", () => {
    for (const extra of [{ default: 10n }, { enum: [1, 10n] }, { const: 10n }]) {
      const notices: string[] = [];
      const schema = sanitizeSchema(
        {
          type: "object",
          properties: { keep: { type: "string" }, b: { type: "integer", ...extra } },
          required: ["keep", "b"],
        },
        { onNotice: (n) => notices.push(n) },
      );
      const properties = schema.properties as Record<string, unknown>;
      expect(properties.keep, JSON.stringify(Object.keys(extra))).toEqual({ type: "string" });
      expect(properties.b).toMatchObject({ type: "integer" });
      expect(JSON.stringify(schema)).not.toMatch(/10/);
      if ("default" in extra) expect(notices).toEqual([]);
      else
        expect(notices[0]).toMatch(/holds a number JSON cannot carry \(Infinity, -Infinity, NaN or a BigInt/);
    }
  });
});

/**
 * r83: an enum's object values, a const object and a default were written into the description
 * whole, however large: an enum of 100,000 objects went out as a 1.5 MB schema with every request
 * (an enum of scalars that large is listed "among them", 1,500 characters). Each is now listed as
 * far as those 1,500 characters go, then "… (N values in all)" / "… (N characters in all)".
 */
describe("an enum of objects, a const object or a default of megabytes", () => {
  const sized = (property: Record<string, unknown>) => {
    const schema = sanitizeSchema({ type: "object", properties: { a: property }, required: ["a"] });
    return {
      text: JSON.stringify(schema),
      description: String((schema.properties as Record<string, { description?: unknown }>).a?.description),
    };
  };

  it("lists as many enum objects as 1,500 characters hold, and how many there are", () => {
    const { text, description } = sized({ enum: Array.from({ length: 20_000 }, (_, k) => ({ k })) });
    expect(text.length).toBeLessThan(2500);
    expect(description).toMatch(
      /^Also allowed: \{"k":0\}, \{"k":1\}, .*\{"k":\d+\}, … \(20000 values in all\)\. Give this value as JSON text\.$/,
    );
  });

  it("cuts a const object's or a default's JSON text, saying how long it is", () => {
    const big = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i]));
    const length = JSON.stringify(big).length;
    const asConst = sized({ const: big });
    expect(asConst.text.length).toBeLessThan(2500);
    expect(asConst.description).toMatch(
      new RegExp(
        `^Must be exactly \\{"k0":0,"k1":1,.*… \\(${length} characters in all\\)\\. Give this value as JSON text\\.$`,
      ),
    );
    const asDefault = sized({
      type: "array",
      items: { type: "integer" },
      default: Array.from({ length: 20_000 }, (_, i) => i),
    });
    expect(asDefault.text.length).toBeLessThan(2500);
    expect(asDefault.description).toMatch(/^Default: \[0,1,2,.*… \(\d+ characters in all\)\.$/);
  });

  it("writes a short one whole, as before", () => {
    expect(sized({ type: "array", items: { type: "integer" }, default: [1, 2] }).description).toBe(
      "Default: [1,2].",
    );
    expect(sized({ enum: [{ k: 1 }, { k: 2 }] }).description).toBe(
      'Also allowed: {"k":1}, {"k":2}. Give this value as JSON text.',
    );
  });
});

/**
 * r83: a tool whose arguments are a map (`{ type: "object", additionalProperties: { type: "string" } }`,
 * or `patternProperties`) is sent closed with no properties — the model can give it only {} —
 * and onNotice was told nothing (below the root such an object is asked for as JSON text; the
 * root cannot be).
 */
describe("a root object that takes only keys it does not name", () => {
  const told = (schema: Record<string, unknown>) => {
    const notices: string[] = [];
    const out = sanitizeSchema(schema, { onNotice: (n) => notices.push(n) });
    return { out, notices };
  };

  it("is sent closed, and onNotice says the model can give the tool only {}", () => {
    for (const schema of [
      { type: "object", additionalProperties: { type: "string" } },
      { type: "object", additionalProperties: true },
      { type: "object", patternProperties: { "^env_": { type: "string" } } },
    ]) {
      const { out, notices } = told(schema);
      expect(out).toEqual({ type: "object", properties: {}, required: [], additionalProperties: false });
      expect(notices, JSON.stringify(schema)).toEqual([
        expect.stringMatching(
          /^The root object takes only keys it does not name .*the model can give the tool only \{\}/,
        ),
      ]);
    }
  });

  it("tells nothing for a tool with no parameters, a closed object, or a map below the root", () => {
    for (const schema of [
      { type: "object" },
      { type: "object", properties: {} },
      { type: "object", additionalProperties: false },
      { type: "object", properties: { env: { type: "object", additionalProperties: { type: "string" } } } },
    ]) {
      expect(told(schema).notices, JSON.stringify(schema)).toEqual([]);
    }
  });
});
