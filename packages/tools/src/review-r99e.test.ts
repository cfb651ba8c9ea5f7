// r99e: a discriminated union whose variants' tags all have defaults, through dispatch as the loop
// restores a call. The strict declaration asks for each tag as its value or null; a model leaving
// it out writes null, restoreArguments read that as the tag left out, and zod, which picks the
// variant by the tag, refused the call. The null now stands for the tag's default. A plain JSON
// Schema tool (z.fromJSONSchema) gets for an enum's default what it gets with the key left out.
import { restoreArguments } from "@loopwright/schema-compat";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { executed } from "../test-support/restored-dispatch.js";

describe("a discriminated union whose variants' tags all have defaults, the tag written null", () => {
  it("execute gets the object with the tag of the variant it was written for", async () => {
    const input = z.object({
      item: z.discriminatedUnion("kind", [
        z.object({ kind: z.literal("note").default("note"), body: z.string() }),
        z.object({ kind: z.literal("map").default("map"), n: z.number() }),
      ]),
    });
    // Before: dispatch rejected both with ToolInputError (invalid-arguments: the discriminator).
    const got = await executed(input, [{ item: { kind: null, body: "0" } }, { item: { kind: null, n: 1 } }]);
    expect(got).toEqual([{ item: { kind: "note", body: "0" } }, { item: { kind: "map", n: 1 } }]);
  });
});

describe("a plain JSON Schema tool's defaulted fields, written null", () => {
  it("execute gets what it gets with the keys left out", async () => {
    const schema: z.core.JSONSchema.JSONSchema = {
      type: "object",
      properties: {
        q: { type: "string" },
        mode: { type: "string", enum: ["fast", "slow"], default: "fast" },
        limit: { type: "integer", default: 10 },
        pad: { type: "string", default: " x " },
      },
      required: ["q"],
    };
    const input = z.fromJSONSchema(schema) as z.ZodType<Record<string, unknown>>;
    // The enum's default is written in the null's place, the others left out (before, all three).
    const declared = z.toJSONSchema(input, { io: "input" });
    expect(restoreArguments({ q: "a", mode: null, limit: null, pad: null }, declared)).toEqual({
      q: "a",
      mode: "fast",
    });
    const got = await executed(input, [{ q: "a", mode: null, limit: null, pad: null }, { q: "a" }]);
    expect(got[0]).toEqual({ q: "a", mode: "fast", limit: 10, pad: " x " });
    expect(got[1]).toEqual(got[0]);
  });
});
