/**
 * Round 99 (c): OpenAPI 3.0's `nullable: true` beside an enum that does not list null.
 *
 * OpenAPI 3.0.3 says `nullable: true` "adds "null" to the allowed types specified by the type
 * keyword … Other Schema Object constraints retain their defined behavior, and therefore may
 * disallow the use of null as a value" — the OAI's clarification (proposal 003) answers its own
 * example, `nullable: true` with `enum: [1, 2, 3]`, "No": the enum refuses null, and the way to take
 * one is to list it (`enum: [1, 2, 3, null]`). ajv, which reads `nullable`, refuses `null` there.
 * `sanitizeSchema` sent such a field as `enum: [1, 2, 3, null]`, so a model wrote null for a
 * required field and the tool refused the call; `restoreArguments` kept a null written for an
 * optional one (read as taken), which the tool refused too.
 *
 * zod's `.nullable()` on an enum is written in that form for OpenAPI 3.0, and zod takes null; sent
 * without it, every value the model can write is still one zod takes.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { restoreArguments } from "./optional-nulls.js";
import { relaxSchema, sanitizeSchema } from "./sanitize-schema.js";

type Props = { properties: Record<string, unknown> };

describe("OpenAPI's nullable: true beside an enum that does not list null", () => {
  // The clarification's own example, a const (pydantic's single Literal), and an enum with no type
  // (nullable then adds nothing, and the enum alone decides).
  const original = {
    type: "object",
    properties: {
      level: { type: "integer", enum: [1, 2, 3], nullable: true },
      mode: { type: "string", const: "fast", nullable: true },
      unit: { enum: ["cm", "in"], nullable: true },
      hint: { type: "string", enum: ["a", "b"], nullable: true },
    },
    required: ["level", "mode", "unit"],
  };

  it("is sent without null where the field is required, so the model is never offered one the tool refuses", () => {
    for (const sent of [sanitizeSchema(original), relaxSchema(original)] as Props[]) {
      // Before: type [T, "null"], enum [..., null].
      expect(sent.properties.level).toEqual({ type: "integer", enum: [1, 2, 3] });
      expect(sent.properties.mode).toEqual({ type: "string", enum: ["fast"] });
      expect(sent.properties.unit).toEqual({ type: "string", enum: ["cm", "in"] });
    }
  });

  it("reads a null written for an optional field as the field left out", () => {
    const sent = sanitizeSchema(original) as Props;
    expect(sent.properties.hint).toEqual({ type: ["string", "null"], enum: ["a", "b", null] });
    // Before: { level: 1, mode: "fast", unit: "cm", hint: null }, hint's null kept as taken.
    expect(restoreArguments({ level: 1, mode: "fast", unit: "cm", hint: null }, original)).toEqual({
      level: 1,
      mode: "fast",
      unit: "cm",
    });
  });

  it("still takes null where the enum lists it, or where no enum stands beside nullable", () => {
    const takes = {
      type: "object",
      properties: {
        level: { type: "integer", enum: [1, 2, null], nullable: true },
        note: { type: "string", nullable: true },
        hint: { type: "string", enum: ["a", null], nullable: true },
      },
      required: ["level", "note"],
    };
    const sent = sanitizeSchema(takes) as Props;
    expect(sent.properties.level).toEqual({ type: ["integer", "null"], enum: [1, 2, null] });
    expect(sent.properties.note).toEqual({ type: ["string", "null"] });
    expect(restoreArguments({ level: null, note: null, hint: null }, takes)).toEqual({
      level: null,
      note: null,
      hint: null,
    });
  });

  it("gives a zod tool declared for OpenAPI 3.0 values zod takes, a null for its optional field read as left out", () => {
    const input = z.object({
      kind: z.enum(["a", "b"]).nullable(),
      tag: z.literal("t").nullable().optional(),
    });
    const declared = z.toJSONSchema(input, { io: "input", target: "openapi-3.0" });
    const sent = sanitizeSchema(declared) as Props;
    expect(sent.properties.kind).toEqual({ type: "string", enum: ["a", "b"] });
    expect(input.parse(restoreArguments({ kind: "a", tag: null }, declared))).toEqual({ kind: "a" });
  });

  it("comes back the same from a second pass", () => {
    const once = sanitizeSchema(original);
    expect(sanitizeSchema(once)).toEqual(once);
  });
});
