// r97d: a discriminated union whose tag has a default, through dispatch as the loop restores a call.
// The strict declaration asks for the tag as "note" or null; a model leaving it out writes null, and
// the note's any-value body the string it means. restoreArguments read the map variant's ask (JSON
// text) for that body, and execute was handed the number the string spells.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { executed } from "../test-support/restored-dispatch.js";

describe("a discriminated union whose tag has a default, the tag written null", () => {
  it("execute gets the note's string body as the model wrote it, and its default tag", async () => {
    const input = z.object({
      item: z.discriminatedUnion("kind", [
        z.object({ kind: z.literal("note").default("note"), body: z.unknown() }),
        z.object({ kind: z.literal("map"), body: z.record(z.string(), z.string()) }),
      ]),
    });
    const got = await executed(
      input,
      ["0", "true", "null"].map((body) => ({ item: { kind: null, body } })),
    );
    // Before: { kind: "note", body: 0 }, then true and null.
    expect(got).toEqual(["0", "true", "null"].map((body) => ({ item: { kind: "note", body } })));
  });
});
