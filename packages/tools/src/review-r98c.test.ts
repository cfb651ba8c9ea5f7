// r98c: a union of objects with no single-value tag, through dispatch as the loop restores a call.
// The named variant takes any value at `body`, the other a map (asked for as JSON text); the map's
// ask was read for the named variant's body too, and execute was handed the number the string spells.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { executed } from "../test-support/restored-dispatch.js";

describe("a union of objects with no single-value tag", () => {
  it("execute gets the named variant's string body as the model wrote it, and the map's text parsed", async () => {
    const input = z.object({
      item: z.union([
        z.object({ name: z.string(), body: z.unknown() }),
        z.object({ id: z.number(), body: z.record(z.string(), z.string()) }),
      ]),
    });
    const got = await executed(input, [
      { item: { name: "x", body: "0" } },
      { item: { name: "x", body: "true" } },
      { item: { id: 1, body: '{"a":"b"}' } },
    ]);
    // Before: { name: "x", body: 0 }, then true.
    expect(got).toEqual([
      { item: { name: "x", body: "0" } },
      { item: { name: "x", body: "true" } },
      { item: { id: 1, body: { a: "b" } } },
    ]);
  });

  it("a discriminated union keyed by a z.enum: the note's string body reaches execute as written", async () => {
    const input = z.object({
      item: z.discriminatedUnion("kind", [
        z.object({ kind: z.literal("note"), body: z.unknown() }),
        z.object({ kind: z.enum(["map", "dict"]), body: z.record(z.string(), z.string()) }),
      ]),
    });
    const got = await executed(input, [{ item: { kind: "note", body: "0" } }]);
    // Before: { kind: "note", body: 0 }.
    expect(got).toEqual([{ item: { kind: "note", body: "0" } }]);
  });
});
