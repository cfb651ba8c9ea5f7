/**
 * Left over from review r65 of the loop's tool discovery, over HTTP against the testkit: a
 * `beforeStep` toolChoice naming a meta-tool on the first step of an exclusive preselection, which
 * declares the shortlist alone.
 */
import { describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import { call, discoveryServer, optionError, TOOLS, tool } from "./test-support/discovery.js";

const { run, bodies, close } = discoveryServer();

/** An exclusive preselection of `read_file`, with `beforeStep` choosing `name` on the first step. */
const choosing = (name: string, tools: readonly ToolDefinition[] = TOOLS) => ({
  tools: [...tools],
  preselected: ["read_file"],
  preselectRouting: "exclusive",
  beforeStep: (_m: unknown, step: number) =>
    step === 1 ? { toolChoice: { type: "function", function: { name } } } : undefined,
});

describe("a toolChoice naming a meta-tool on the first step of an exclusive preselection", () => {
  it("is refused for what that step declares, naming its shortlist, before anything is sent", async () => {
    const cases = [
      ["load_tools", TOOLS, "name one of them"],
      // The host's own tool of that exact name, left out of the catalogue, changes nothing.
      ["load_tools", [...TOOLS, tool("load_tools", "another server's loader")], "name one of them"],
      // A catalogued tool left off the shortlist: loading it would not declare it on that step either.
      ["write_file", TOOLS, "preselect it"],
    ] as const;
    for (const [name, tools, remedy] of cases) {
      const error = await run(
        [{ content: "never" }],
        { toolDiscovery: "ondemand" },
        choosing(name, tools),
      ).catch((e: unknown) => e);
      expect(bodies()).toHaveLength(0);
      await close();
      expect(String(optionError(error)?.message), name).toBe(
        `beforeStep planned a toolChoice that names the tool "${name}", which the first step of an exclusive ` +
          `preselection does not declare: it declares the shortlist alone (read_file). On that step, ${remedy}, ` +
          'or use preselectRouting "append".',
      );
    }
  });

  it("on a later step, names the meta-tool the loop answers: the run goes, forcing it", async () => {
    const { result } = await run(
      [
        call("c1", "read_file", { path: "notes.txt" }),
        call("c2", "load_tools", { names: ["write_file"] }),
        { content: "done" },
      ],
      { toolDiscovery: "ondemand" },
      {
        ...choosing("read_file"),
        beforeStep: (_m: unknown, step: number) =>
          step === 2 ? { toolChoice: { type: "function", function: { name: "load_tools" } } } : undefined,
      },
    );
    expect(result.turn.content).toBe("done");
    expect((bodies()[1] as { tool_choice?: unknown }).tool_choice).toEqual({
      type: "function",
      function: { name: "load_tools" },
    });
    expect(result.loaded).toEqual(["read_file", "write_file"]);
  });
});
