// r97d: a discriminated union whose tag has a default, through dispatch as the loop restores a call.
// The strict declaration asks for the tag as "note" or null; a model leaving it out writes null, and
// the note's any-value body the string it means. restoreArguments read the map variant's ask (JSON
// text) for that body, and execute was handed the number the string spells.
import { restoreArguments } from "@loopwright/schema-compat";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool } from "./index.js";

describe("a discriminated union whose tag has a default, the tag written null", () => {
  it("execute gets the note's string body as the model wrote it, and its default tag", async () => {
    const input = z.object({
      item: z.discriminatedUnion("kind", [
        z.object({ kind: z.literal("note").default("note"), body: z.unknown() }),
        z.object({ kind: z.literal("map"), body: z.record(z.string(), z.string()) }),
      ]),
    });
    const got: unknown[] = [];
    const tool = defineTool({
      name: "t",
      description: "The tool under test.",
      input,
      execute: (args) => {
        got.push(args);
        return "done";
      },
    });
    const original = tool.declaration.function.parameters;
    const toolset = createToolset([tool]);
    for (const body of ["0", "true", "null"]) {
      const args = restoreArguments({ item: { kind: null, body } }, original);
      await toolset.dispatch({ id: "c", name: "t", args });
    }
    // Before: { kind: "note", body: 0 }, then true and null.
    expect(got).toEqual(["0", "true", "null"].map((body) => ({ item: { kind: "note", body } })));
  });
});
