/**
 * Round 100 (c): OpenAPI 3.0's `nullable: true` beside a union or an `allOf`.
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
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { restoreArguments } from "./optional-nulls.js";
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
