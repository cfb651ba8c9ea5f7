// r91: a tool's `check` is the check a toolset's `dispatch` makes, so an adapter that runs the tool
// in another agent (`toAgentTool` of @loopwright/agent) refuses and accepts exactly what `dispatch`
// does. `parse` alone could not: a schema with an asynchronous refinement throws zod's own error there.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool, ToolInputError } from "./index.js";

const known = defineTool({
  name: "weather",
  description: "The weather for a known city.",
  input: z.object({
    city: z.string().refine(async (city) => city !== "Atlantis", "no such city"),
    days: z.number().default(1),
  }),
  execute: ({ city, days }) => `${city}: ${days}`,
});
const toolset = createToolset([known]);

describe("Tool.check", () => {
  it("awaits an asynchronous refinement and fills defaults, as dispatch does", async () => {
    await expect(known.check({ city: "Oslo" })).resolves.toEqual({ city: "Oslo", days: 1 });
    await expect(toolset.dispatch({ id: "c", name: "weather", args: { city: "Oslo" } })).resolves.toBe(
      "Oslo: 1",
    );
    // parse is synchronous: zod refuses to await the refinement there.
    expect(() => known.parse({ city: "Oslo" })).toThrow(/Encountered Promise during synchronous parse/);
  });

  it("refuses what dispatch refuses, with the same ToolInputError message", async () => {
    for (const args of [
      { city: "Atlantis" },
      { city: 5 },
      { city: "Oslo", nested: JSON.parse('{"__proto__":1}') },
    ]) {
      const checked = await known.check(args).then(
        () => undefined,
        (error: unknown) => error,
      );
      const dispatched = await toolset.dispatch({ id: "c", name: "weather", args }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(ToolInputError.isInstance(checked)).toBe(true);
      expect((checked as ToolInputError).code).toBe("invalid-arguments");
      expect((checked as Error).message).toBe((dispatched as Error).message);
    }
  });
});
