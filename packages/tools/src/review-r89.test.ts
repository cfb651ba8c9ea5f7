import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool } from "./index.js";

// Found by the round-trip model (round-trip-model.test.ts), whose records are made without a
// prototype (fast-check's dictionaries).

describe("an argument object without a prototype, holding one that declares an Object.prototype name", () => {
  const executed: unknown[] = [];
  const tool = defineTool({
    name: "t",
    description: "The tool under test.",
    input: z.object({
      byName: z.record(z.string(), z.object({ constructor: z.string().optional() })),
      nested: z.object({ inner: z.object({ toString: z.string().default("s") }) }).optional(),
    }),
    execute: (args) => {
      executed.push(args);
      return "done";
    },
  });
  const toolset = createToolset([tool]);
  const bare = (entries: Record<string, unknown>) => Object.assign(Object.create(null), entries);

  it("reads the inner object's left-out name as left out, not as the inherited member", async () => {
    // A host's own parser (or Object.create(null)) made the containers; the inner objects are ordinary.
    const args = { byName: bare({ k: {} }), nested: bare({ inner: {} }) };
    expect(JSON.stringify(tool.parse(args))).toBe('{"byName":{"k":{}},"nested":{"inner":{"toString":"s"}}}');
    await toolset.dispatch({ id: "c", name: "t", args });
    expect(JSON.stringify(executed)).toBe('[{"byName":{"k":{}},"nested":{"inner":{"toString":"s"}}}]');
  });
});
