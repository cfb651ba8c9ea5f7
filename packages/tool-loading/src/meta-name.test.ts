/**
 * createToolLoading used without the loop refuses a tool named as a meta-tool its mode declares, as
 * the loop does: a call to one could not be told from a call to the other.
 */
import type { FunctionToolLike } from "@loopwright/schema-compat";
import { describe, expect, it } from "vitest";
import { ToolLoadingError } from "./errors.js";
import { createToolLoading } from "./tool-loading.js";

const tool = (name: string): FunctionToolLike => ({
  type: "function",
  function: { name, description: name, parameters: { type: "object", properties: {} } },
});

/** The ToolLoadingError createToolLoading throws for `mode` over `tools`, or undefined if none. */
function refusal(mode: "eager" | "ondemand" | "proxy", names: string[]): ToolLoadingError | undefined {
  try {
    createToolLoading({ mode, tools: names.map(tool) });
    return undefined;
  } catch (error) {
    if (ToolLoadingError.isInstance(error)) return error;
    throw error;
  }
}

describe("createToolLoading: a tool named as a meta-tool", () => {
  it("is refused (invalid-tools) where the mode declares that meta-tool, naming it and saying to rename it", () => {
    for (const [mode, name] of [
      ["ondemand", "load_tools"],
      ["proxy", "load_tools"],
      ["proxy", "call_tool"],
    ] as const) {
      const error = refusal(mode, ["read_file", name]);
      expect(error?.code).toBe("invalid-tools");
      expect(error?.message).toContain(
        `the tool "${name}" has the name of the meta-tool a ${mode} run declares`,
      );
      expect(error?.message).toContain("Rename the tool.");
    }
  });

  it("is the host's own tool where the mode declares no such meta-tool: eager, and call_tool on demand", () => {
    expect(refusal("eager", ["load_tools", "call_tool"])).toBeUndefined();
    const loading = createToolLoading({ mode: "ondemand", tools: [tool("read_file"), tool("call_tool")] });
    // On demand, the host's call_tool is run as the host's tool, not unwrapped.
    const route = loading.route(
      { id: "c1", name: "call_tool", args: { name: "read_file", arguments: {} } },
      { loaded: ["call_tool"], messages: [] },
    );
    expect(route).toMatchObject({ kind: "dispatch", name: "call_tool", proxied: false });
  });
});
