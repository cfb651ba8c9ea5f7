import { restoreArguments } from "@loopwright/schema-compat";
import { createToolset, defineTool, type ObjectSchema } from "../src/index.js";

/**
 * Dispatches each call the model wrote, restored against the tool's own schema (its declaration's
 * parameters) as the loop restores one; what execute got, in order. A call dispatch refuses rejects.
 */
export async function executed(input: ObjectSchema, written: Record<string, unknown>[]): Promise<unknown[]> {
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
  const toolset = createToolset([tool]);
  for (const args of written) {
    const restored = restoreArguments(args, tool.declaration.function.parameters);
    await toolset.dispatch({ id: "c", name: "t", args: restored });
  }
  return got;
}
