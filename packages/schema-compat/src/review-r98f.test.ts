/**
 * Round 98 (f): two faults r98c's author left.
 *
 * A `type` naming null beside an enum without it — `{ type: ["string", "null"], enum: ["a"] }` —
 * was sent as `enum: ["a", null]`, though the original takes no null (a validator holds to both
 * keywords, and the enum refuses it): the model shown "a or null" wrote null for a required field,
 * `restoreArguments` kept it (the field is required, null is no optional's stand-in), and the call
 * was refused.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
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
