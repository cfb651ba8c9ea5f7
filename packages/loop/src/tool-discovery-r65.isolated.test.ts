/**
 * Review r65 of the loop's tool discovery, over HTTP against the testkit: a host tool the
 * catalogue leaves out whose name goes on the wire as a meta-tool's (`load.tools`), a call outside
 * the catalogue on the first step of an exclusive preselection, and a step whose calls were routed
 * a second time after its first `call_tool`.
 */
import { beforeEach, describe, expect, it, vi } from "vitest";
import {
  CATALOG,
  call,
  callNamesIn,
  discoveryServer,
  optionError,
  TOOLS,
  tool,
  toolAnswer,
  toolNames,
} from "./test-support/discovery.js";

const routes = vi.hoisted(() => new Map<string, number>());
vi.mock("@loopwright/tool-loading", async (importOriginal) => {
  const { countingRoutes } = await import("./test-support/count-routes.js");
  return countingRoutes(await importOriginal<typeof import("@loopwright/tool-loading")>(), routes);
});

beforeEach(() => routes.clear());

const { run, bodies, close } = discoveryServer();

/** Another server's loader and caller, left out of the catalogue; both go on the wire as meta-tools' names. */
const OTHERS = [tool("load.tools", "another server's loader"), tool("call.tool", "another server's caller")];

describe("R65L-1: a host tool the catalogue leaves out, whose wire name is a meta-tool's", () => {
  it("proxied, the model's load_tools stays load_tools: a second load is answered from the transcript", async () => {
    const load = (id: string) => call(id, "load_tools", { names: ["read_file"] });
    const { result, watched, dispatched } = await run(
      [
        load("c1"),
        load("c2"),
        call("c3", "call_tool", { name: "read_file", arguments: { path: "a" } }),
        { content: "done" },
      ],
      { toolDiscovery: "proxy" },
      { tools: [...TOOLS, ...OTHERS] },
    );
    expect(toolAnswer(bodies()[2], "c2")).toContain("Already in this conversation: read_file");
    expect(result.metrics.toolsLoaded).toBe(1);
    expect(result.metrics.redundantLoads).toBe(1);
    expect(watched.map((w) => w.name)).toEqual(["load_tools", "load_tools", "read_file"]);
    expect(result.toolCalls.map((c) => c.name)).toEqual(["load_tools", "load_tools", "read_file"]);
    expect(dispatched.map((d) => d.name)).toEqual(["read_file"]);
    // The transcript handed back names the meta-tools, as the model wrote them.
    expect(callNamesIn(result.messages)).toEqual(["load_tools", "load_tools", "call_tool"]);
  });

  it("on demand, a load is told and counted as load_tools, not as the other server's tool", async () => {
    const { result, watched } = await run(
      [call("c1", "load_tools", { names: ["read_file"] }), { content: "done" }],
      { toolDiscovery: "ondemand" },
      { tools: [...TOOLS, ...OTHERS] },
    );
    expect(watched.map((w) => w.name)).toEqual(["load_tools"]);
    expect(result.toolCalls.map((c) => c.name)).toEqual(["load_tools"]);
    expect(callNamesIn(result.messages)).toEqual(["load_tools"]);
    expect(result.loaded).toEqual(["read_file"]);
  });

  it("on demand, a host call_tool the catalogue lists is still the host's, under its own name", async () => {
    const { dispatched } = await run(
      [call("c1", "call_tool", { x: 1 }), { content: "done" }],
      { toolDiscovery: "ondemand" },
      {
        tools: [...TOOLS, tool("call.tool", "the host's caller")],
        catalog: [...CATALOG, { name: "h", tools: [{ name: "call.tool" }] }],
      },
    );
    expect(dispatched.map((d) => [d.name, d.args])).toEqual([["call.tool", { x: 1 }]]);
  });

  it("a toolChoice naming that tool by its own name is refused as uncatalogued, not taken as the meta-tool", async () => {
    for (const mode of ["ondemand", "proxy"] as const) {
      const error = await run(
        [{ content: "never" }],
        { toolDiscovery: mode },
        {
          tools: [...TOOLS, ...OTHERS],
          beforeStep: () => ({ toolChoice: { type: "function", function: { name: "load.tools" } } }),
        },
      ).catch((e: unknown) => e);
      expect(bodies()).toHaveLength(0);
      await close();
      expect(String(optionError(error)?.message)).toContain(
        'names the tool "load.tools", which the catalogue does not list',
      );
    }
  });

  it("a toolChoice naming load_tools as it is named is the meta-tool's: the run goes, forcing a load", async () => {
    const { result } = await run(
      [call("c1", "load_tools", { names: ["read_file"] }), { content: "done" }],
      { toolDiscovery: "ondemand" },
      {
        tools: [...TOOLS, ...OTHERS],
        beforeStep: (_m: unknown, step: number) =>
          step === 1 ? { toolChoice: { type: "function", function: { name: "load_tools" } } } : undefined,
      },
    );
    expect(result.turn.content).toBe("done");
    expect((bodies()[0] as { tool_choice?: unknown }).tool_choice).toEqual({
      type: "function",
      function: { name: "load_tools" },
    });
    expect(result.loaded).toEqual(["read_file"]);
  });

  it("the model's load_tools is read as the meta-tool's call, not by that tool's schema", async () => {
    // The host's uncatalogued load_tools takes its names as a string; the meta-tool takes a list.
    const other = tool("load_tools", "another server's loader", { names: { type: "string" } });
    const { result, dispatched } = await run(
      [
        { toolCalls: [{ id: "c1", name: "load_tools", arguments: '{"names":12345678901234567890123}' }] },
        { content: "done" },
      ],
      { toolDiscovery: "ondemand" },
      { tools: [...TOOLS, other] },
    );
    expect(dispatched).toEqual([]);
    // Read by the other tool's schema, the digits became the name "12345678901234567890123"; the
    // meta-tool refuses the number it cannot hold, as for any load.
    expect(result.metrics.unknownToolNames).toEqual([]);
    expect(toolAnswer(bodies()[1], "c1")).toContain("past what a number can carry exactly");
  });
});

describe("R65L-2: a call outside the catalogue on the first step of an exclusive preselection", () => {
  it("is told to call one of the shortlist that step offered, not to load from a catalogue it did not show", async () => {
    const { result, dispatched } = await run(
      [
        {
          toolCalls: [
            { id: "c1", name: "delete_all", arguments: "{}" },
            { id: "c2", name: "call_tool", arguments: JSON.stringify({ name: "nope", arguments: {} }) },
          ],
        },
        call("c3", "delete_all", {}),
        { content: "done" },
      ],
      { toolDiscovery: "ondemand" },
      { preselected: ["read_file", "list_pods"] },
    );
    expect(toolNames(bodies()[0])).toEqual(["list_pods", "read_file"]);
    expect(dispatched).toEqual([]);
    const first = toolAnswer(bodies()[1], "c1");
    expect(first).toBe(
      '"delete_all" is not one of the tools this step offers, so nothing was run. Call one of them: list_pods, read_file.',
    );
    expect(first).not.toContain("load_tools");
    expect(toolAnswer(bodies()[1], "c2")).toBe(
      'call_tool: "nope" is not one of the tools this step offers, so nothing was run. Call one of them: list_pods, read_file.',
    );
    // From the second step on the catalogue and load_tools are offered, and the answer says so.
    expect(toolAnswer(bodies()[2], "c3")).toContain(
      "Call one of the tools the catalogue lists, loaded with load_tools.",
    );
    expect(result.metrics.unknownToolNames).toEqual(["delete_all", "nope"]);
  });

  it("with append routing the first step offers the catalogue, and the answer points at it", async () => {
    await run(
      [call("c1", "delete_all", {}), { content: "done" }],
      { toolDiscovery: "ondemand" },
      {
        preselected: ["read_file"],
        preselectRouting: "append",
      },
    );
    expect(toolAnswer(bodies()[1], "c1")).toContain(
      "Call one of the tools the catalogue lists, loaded with load_tools.",
    );
  });
});

describe("R65L-3: a step's calls are routed once, a call_tool among them", () => {
  it("loads after a call_tool are not routed again, and the call_tool reaches its tool as written", async () => {
    const { result, dispatched } = await run(
      [
        {
          toolCalls: [
            // A number token where read_file takes only a string: handed over as the text written.
            { id: "c1", name: "call_tool", arguments: '{"name":"read_file","arguments":{"path":02134}}' },
            { id: "c2", name: "load_tools", arguments: '{"names":["list_pods"]}' },
            { id: "c3", name: "files.write_file", arguments: '{"path":"b","text":"t"}' },
            { id: "c4", name: "load_tools", arguments: '{"names":["files"]}' },
          ],
        },
        { content: "done" },
      ],
      { toolDiscovery: "ondemand" },
    );
    // Each load routed once (first reading), the calls handed on once more each, for this reading.
    expect(routes.get("load_tools")).toBe(2);
    expect(routes.get("call_tool")).toBe(2);
    expect(dispatched.map((d) => [d.name, d.args])).toEqual([
      ["read_file", { path: "02134" }],
      ["write_file", { path: "b", text: "t" }],
    ]);
    expect(result.loaded).toEqual(["read_file", "list_pods", "write_file"]);
    expect(result.metrics.toolsLoaded).toBe(3);
    expect(result.metrics.redundantLoads).toBe(2);
    expect(toolAnswer(bodies()[1], "c4")).toContain("read_file");
  });
});
