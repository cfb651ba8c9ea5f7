// Review round r72: arguments with so many mismatches that zod's checker overflows the stack.
// zod 4 gathers each element's issues onto its parent with `push(...issues)`, so an array of a
// few hundred thousand wrong elements threw a bare RangeError out of `dispatch` (its synchronous
// `parse` does not gather that way and was refused as usual).
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool, ToolInputError } from "./index.js";

const tags = defineTool({
  name: "tag_files",
  description: "Tags files.",
  input: z.object({ tags: z.array(z.string()) }),
  execute: () => "tagged",
});
// A quarter of a million numbers where strings are wanted: as many issues (200,000 overflowed).
const flood = { tags: Array.from({ length: 250_000 }, () => 1) };

async function refusal(work: () => unknown): Promise<unknown> {
  try {
    await work();
  } catch (error) {
    return error;
  }
  throw new Error("it was not refused");
}

describe("R72T-1: too many mismatches to gather", () => {
  it("dispatch refuses with invalid-arguments saying so, and execute never runs", async () => {
    const error = await refusal(() =>
      createToolset([tags]).dispatch({ id: "c1", name: "tag_files", args: flood }),
    );
    expect(ToolInputError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "invalid-arguments", tool: "tag_files" });
    expect((error as Error).message).toMatch(/^tag_files was not run: its arguments are too large to check/);
    expect((error as Error).message).toContain("Call it again");
  });

  it("a RangeError the host's own refinement throws still passes through as it is", async () => {
    const picky = defineTool({
      name: "picky",
      description: "Refines.",
      input: z.object({ n: z.number() }).refine(() => {
        throw new RangeError("host's own range check");
      }),
      execute: () => "ran",
    });
    const error = await refusal(() =>
      createToolset([picky]).dispatch({ id: "c2", name: "picky", args: { n: 1 } }),
    );
    expect(error).toBeInstanceOf(RangeError);
    expect((error as Error).message).toBe("host's own range check");
  });
});
