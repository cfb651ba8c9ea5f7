// defineTool's argument reading below an argument object without a prototype (a host's own parser,
// `Object.create(null)`, a bare record): an ordinary object under it that declares an
// Object.prototype name (constructor, toString) and leaves it out reads it as absent, as it does
// anywhere else. The same gap the round-trip model found in @loopwright/tools (review r89).
import { describe, expect, it } from "vitest";
import type { AgentToolContext } from "./index.js";
import { defineTool } from "./index.js";

const bare = (entries: Record<string, unknown>) => Object.assign(Object.create(null), entries);

describe("defineTool below an argument object without a prototype", () => {
  const seen: unknown[] = [];
  const tool = defineTool<{ byName: Record<string, { constructor?: string }> }>({
    name: "index",
    description: "Indexes entries by name.",
    parameters: {
      type: "object",
      properties: {
        byName: {
          type: "object",
          additionalProperties: { type: "object", properties: { constructor: { type: "string" } } },
        },
      },
      required: ["byName"],
    },
    execute: (args) => {
      const entry = args.byName.k;
      seen.push(typeof entry?.constructor, entry !== undefined && "constructor" in entry);
      return "indexed";
    },
  });

  it("reads the inner object's left-out constructor as absent, never the inherited function", async () => {
    const args = { byName: bare({ k: {} }) };
    await tool.execute(args, {} as AgentToolContext);
    expect(seen).toEqual(["undefined", false]);
    // The call's own objects are not written into, and the container keeps having no prototype.
    expect(Object.getPrototypeOf(args.byName.k)).toBe(Object.prototype);
    expect(JSON.stringify(args)).toBe('{"byName":{"k":{}}}');
  });

  it("hands a bare container with nothing to change on as it is", async () => {
    const seenArgs: unknown[] = [];
    const passthrough = defineTool<{ byName: Record<string, { constructor?: string }> }>({
      ...tool,
      execute: (args) => {
        seenArgs.push(args.byName);
        return "";
      },
    });
    const byName = bare({ k: bare({ constructor: "Point" }) });
    await passthrough.execute({ byName }, {} as AgentToolContext);
    expect(seenArgs[0]).toBe(byName);
  });
});
