/**
 * Review r64 of the loop's tool discovery, over HTTP against the testkit: a host tool under a
 * meta-tool's name that the catalogue leaves out, a definition changed and changed back, a step's
 * plan refused part-way, a toolChoice naming an uncatalogued tool, and a refused call_tool that
 * loaded its tool all the same.
 */
import { describe, expect, it } from "vitest";
import { failedRun } from "./errors.js";
import {
  CATALOG,
  call,
  discoveryServer,
  optionError,
  TOOLS,
  tool,
  toolAnswer,
  toolNames,
} from "./test-support/discovery.js";

const { run, bodies, start, close } = discoveryServer();
const choice = (name: string) => ({ type: "function" as const, function: { name } });

describe("R64L-1: a host tool under a meta-tool's name", () => {
  it("that the catalogue leaves out is no collision: the run goes, and the name stays the meta-tool's", async () => {
    const { result, dispatched } = await run(
      [call("c1", "load_tools", { names: ["read_file"] }), { content: "done" }],
      { toolDiscovery: "ondemand" },
      { tools: [...TOOLS, tool("load_tools", "another server's loader")] },
    );
    expect(dispatched).toEqual([]);
    expect(result.loaded).toEqual(["read_file"]);
    expect(toolNames(bodies()[1])).toContain("read_file");
  });

  it("proxied, an uncatalogued host call_tool leaves call_tool the meta-tool's", async () => {
    const { dispatched } = await run(
      [call("c1", "call_tool", { name: "read_file", arguments: { path: "a" } }), { content: "done" }],
      { toolDiscovery: "proxy" },
      { tools: [...TOOLS, tool("call_tool", "another server's caller")] },
    );
    expect(dispatched.map((d) => [d.name, d.args])).toEqual([["read_file", { path: "a" }]]);
  });

  it("on demand, an uncatalogued host call_tool is never reached: call_tool is unwrapped", async () => {
    const { dispatched, result } = await run(
      [call("c1", "call_tool", { name: "read_file", arguments: { path: "a" } }), { content: "done" }],
      { toolDiscovery: "ondemand" },
      { tools: [...TOOLS, tool("call_tool", "another server's caller")] },
    );
    expect(dispatched.map((d) => [d.name, d.args])).toEqual([["read_file", { path: "a" }]]);
    expect(result.metrics.unknownToolNames).toEqual([]);
  });

  it("that the catalogue lists is still refused before anything is sent, in words that say what to do", async () => {
    const server = await start([{ content: "never" }]);
    const error = await run(
      [],
      { toolDiscovery: "ondemand" },
      {
        tools: [...TOOLS, tool("load_tools", "another server's loader")],
        catalog: [...CATALOG, { name: "other", tools: [{ name: "load_tools" }] }],
      },
    ).catch((e: unknown) => e);
    expect(optionError(error)?.code).toBe("tool-name-collision");
    expect(optionError(error)?.message).toContain(
      'The tool "load_tools" is catalogued as "load_tools", the name of the meta-tool an on-demand run declares itself',
    );
    expect(optionError(error)?.message).toContain("Rename the tool, or leave it out of the catalogue.");
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("R64L-2: a proxied definition changed and changed back", () => {
  it("is sent again: the newest copy in the transcript is the old one's", async () => {
    const V2 = TOOLS.map((t) =>
      t.function.name === "read_file"
        ? tool("read_file", "Read a file", { path: { type: "string" }, lines: { type: "number" } })
        : t,
    );
    const load = (id: string) => call(id, "load_tools", { names: ["read_file"] });
    const { result } = await run(
      [load("c1"), load("c2"), load("c3"), { content: "done" }],
      { toolDiscovery: "proxy" },
      {
        beforeStep: (_m: unknown, step: number) =>
          step === 2 ? { tools: V2 } : step === 3 ? { tools: TOOLS } : undefined,
      },
    );
    const last = bodies()[3];
    expect(toolAnswer(last, "c2")).toContain('"lines"');
    // c3: the tool is back to its first definition, but the model's newest copy (c2's) has `lines`.
    expect(toolAnswer(last, "c3")).not.toContain("Already in this conversation");
    expect(toolAnswer(last, "c3")).toContain('"name":"read_file"');
    expect(toolAnswer(last, "c3")).not.toContain('"lines"');
    expect(result.metrics.toolsLoaded).toBe(3);
    expect(result.metrics.redundantLoads).toBe(0);
  });
});

describe("R64L-3: a step's plan refused part-way changes nothing", () => {
  it("a refused transcript does not load the tool its toolChoice named", async () => {
    const error = await run(
      [call("c1", "list_pods", {}), { content: "x" }],
      { toolDiscovery: "ondemand" },
      {
        beforeStep: (_m: unknown, step: number) =>
          step === 2
            ? { toolChoice: choice("read_file"), messages: [{ role: "bogus", content: "x" }] }
            : undefined,
      },
    ).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/beforeStep returned a transcript/);
    expect(failedRun(error)?.loaded).toEqual(["list_pods"]);
  });

  it("a refused toolChoice does not leave the plan's catalogue applied", async () => {
    const error = await run(
      [call("c1", "read_file", { path: "a" }), { content: "x" }],
      { toolDiscovery: "ondemand" },
      {
        beforeStep: (_m: unknown, step: number) =>
          step === 2
            ? { catalog: [{ name: "k", tools: [{ name: "list_pods" }] }], toolChoice: choice("delete_all") }
            : undefined,
      },
    ).catch((e: unknown) => e);
    expect(optionError(error)?.message).toContain('names the tool "delete_all"');
    expect(failedRun(error)?.loaded).toEqual(["read_file"]);
  });
});

describe("R64L-4: a toolChoice naming a host tool the catalogue leaves out", () => {
  it("is refused in words that say the catalogue does not list it, listing only what it does", async () => {
    for (const mode of ["ondemand", "proxy"] as const) {
      const error = await run(
        [{ content: "never" }],
        { toolDiscovery: mode },
        {
          beforeStep: () => ({ toolChoice: choice("delete_all") }),
        },
      ).catch((e: unknown) => e);
      await close();
      const message = String(optionError(error)?.message);
      expect(message).toContain('names the tool "delete_all", which the catalogue does not list');
      expect(message).toContain(
        `${mode === "proxy" ? "a proxy" : "an on-demand"} run never declares or runs a tool outside it`,
      );
      expect(message).toContain("(list_pods, read_file, write_file)");
    }
  });
});

describe("R64L-5: a call_tool refused for a number JS cannot hold outside its inner arguments", () => {
  it("loads nothing: a later load of the step does not carry it", async () => {
    const { result, dispatched } = await run(
      [
        {
          toolCalls: [
            {
              id: "c1",
              name: "call_tool",
              arguments: '{"name":"read_file","arguments":{"path":"a"},"extra":12345678901234567890123}',
            },
            { id: "c2", name: "load_tools", arguments: '{"names":["list_pods"]}' },
          ],
        },
        { content: "done" },
      ],
      { toolDiscovery: "ondemand" },
    );
    expect(dispatched).toEqual([]);
    expect(result.loaded).toEqual(["list_pods"]);
    expect(toolNames(bodies()[1])).not.toContain("read_file");
    expect(result.metrics.toolsLoaded).toBe(1);
  });
});

describe("R64L-6: a renamed host tool the catalogue leaves out, named by call_tool", () => {
  it("is refused under the name the model wrote, as a direct call is", async () => {
    const { result, dispatched } = await run(
      [call("c1", "call_tool", { name: "fs.read", arguments: { path: "a" } }), { content: "done" }],
      { toolDiscovery: "proxy" },
      { tools: [...TOOLS, tool("fs.read", "Read a file", { path: { type: "string" } })] },
    );
    expect(dispatched).toEqual([]);
    expect(toolAnswer(bodies()[1], "c1")).toContain("fs.read");
    expect(toolAnswer(bodies()[1], "c1")).not.toContain("fs_read");
    expect(result.metrics.unknownToolNames).toEqual(["fs.read"]);
  });
});
