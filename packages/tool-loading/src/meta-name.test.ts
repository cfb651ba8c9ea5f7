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
  it("is refused (invalid-tools) where the mode declares that meta-tool and the catalogue lists it", () => {
    for (const [mode, name, run] of [
      ["ondemand", "load_tools", "an on-demand"],
      ["proxy", "load_tools", "a proxy"],
      ["proxy", "call_tool", "a proxy"],
    ] as const) {
      const error = refusal(mode, ["read_file", name]);
      expect(error?.code).toBe("invalid-tools");
      expect(error?.message).toContain(
        `the tool "${name}" is catalogued under the name of the meta-tool ${run} run declares itself`,
      );
      expect(error?.message).toContain("Rename the tool, or leave it out of the catalogue.");
    }
  });

  it("is left alone where the catalogue leaves it out: never reached, the name is the meta-tool's", () => {
    const catalog = [{ name: "files", tools: [{ name: "read_file" }] }];
    for (const mode of ["ondemand", "proxy"] as const) {
      const loading = createToolLoading({
        mode,
        tools: [tool("read_file"), tool("load_tools"), tool("call_tool")],
        catalog,
      });
      // A load goes to the meta-tool and loads the catalogued tool.
      const load = loading.route(
        { id: "l1", name: "load_tools", args: { names: ["read_file"] } },
        { loaded: [], messages: [] },
      );
      expect(load.kind).toBe("load");
      // call_tool is unwrapped to the catalogued tool it names, on demand too.
      const call = loading.route(
        { id: "c1", name: "call_tool", args: { name: "read_file", arguments: { path: "a" } } },
        { loaded: [], messages: [] },
      );
      expect(call).toMatchObject({ kind: "dispatch", name: "read_file", args: { path: "a" }, proxied: true });
    }
  });

  it("is the host's own tool where the mode declares no such meta-tool: eager, and a catalogued call_tool on demand", () => {
    expect(refusal("eager", ["load_tools", "call_tool"])).toBeUndefined();
    const loading = createToolLoading({ mode: "ondemand", tools: [tool("read_file"), tool("call_tool")] });
    // On demand, the host's catalogued call_tool is run as the host's tool, not unwrapped.
    const route = loading.route(
      { id: "c1", name: "call_tool", args: { name: "read_file", arguments: {} } },
      { loaded: ["call_tool"], messages: [] },
    );
    expect(route).toMatchObject({ kind: "dispatch", name: "call_tool", proxied: false });
  });
});
