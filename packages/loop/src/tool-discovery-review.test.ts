/**
 * Review r62 of the loop's tool discovery, over HTTP against the testkit: a proxied preselection's
 * id against a carried transcript, a changed definition sent again, an uncatalogued host tool
 * refused whichever way it is called, a host tool named as a meta-tool refused up front, a huge
 * pattern answered quickly and stored short, the unknown names capped, a refused toolChoice that
 * loads nothing, a renamed tool's host name taken by call_tool, and what counts as redundant.
 */
import { countWork } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { failedRun, LoopOptionError } from "./errors.js";
import { createRuntime } from "./runtime.js";
import {
  CATALOG,
  call,
  discoveryServer,
  QUESTION,
  TOOLS,
  tool,
  toolAnswer,
  toolNames,
} from "./test-support/discovery.js";
import { transcriptFaults } from "./test-support/transcript.js";

const { run, bodies, start, close } = discoveryServer();

describe("r62-1: a proxied preselection's id", () => {
  it("is one the carried transcript does not use, so the request holds no id twice", async () => {
    const carried: ChatMessage[] = [
      { role: "user", content: "pods?" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_preselected_4",
            type: "function",
            function: { name: "load_tools", arguments: '{"names":["list_pods"]}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_preselected_4", content: "No tool was loaded." },
      { role: "assistant", content: "ok" },
      { role: "user", content: "now read" },
    ];
    const { result } = await run(
      [{ content: "done" }],
      { toolDiscovery: "proxy" },
      {
        messages: carried.slice(1),
        preselected: ["read_file"],
      },
    );
    const [first] = bodies();
    expect(transcriptFaults(first?.messages ?? [])).toEqual([]);
    const ids = (first?.messages ?? []).flatMap((m) =>
      m.role === "assistant" ? (m.tool_calls ?? []).map((c) => c.id) : [],
    );
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(2);
    expect(result.preselected).toEqual(["read_file"]);
    expect(result.metrics.toolsLoaded).toBe(1);
  });
});

describe("r62-2: a tool whose definition changed (proxy)", () => {
  const READ_V2 = tool("read_file", "Read a file, a range of it", {
    path: { type: "string" },
    lines: { type: "string" },
  });
  const V2 = TOOLS.map((t) => (t.function.name === "read_file" ? READ_V2 : t));

  it("mid-run, from a step's plan: a load of it sends the new definition, and counts it loaded", async () => {
    const { result } = await run(
      [
        call("c1", "load_tools", { names: ["read_file"] }),
        call("c2", "load_tools", { names: ["read_file"] }),
        { content: "done" },
      ],
      { toolDiscovery: "proxy" },
      { beforeStep: (_m: unknown, step: number) => (step === 2 ? { tools: V2 } : undefined) },
    );
    const last = bodies().at(-1);
    expect(toolAnswer(last, "c1")).not.toContain('"lines"');
    expect(toolAnswer(last, "c2")).toContain('"lines":');
    expect(toolAnswer(last, "c2")).not.toContain("Already in this conversation");
    expect(result.metrics).toMatchObject({ toolsLoaded: 2, redundantLoads: 0 });
  });

  it("across runs, through carried messages: the preselection sends it again", async () => {
    const first = await run([call("c1", "load_tools", { names: ["read_file"] }), { content: "done" }], {
      toolDiscovery: "proxy",
    });
    await close();
    const { result } = await run(
      [{ content: "done" }],
      { toolDiscovery: "proxy" },
      {
        tools: V2,
        messages: [...first.result.messages, { role: "user", content: "again" }],
        preselected: ["read_file"],
      },
    );
    const [body] = bodies();
    const preselection = body?.messages.filter((m) => m.role === "tool").at(-1);
    expect(String(preselection?.content)).toContain('"lines":');
    expect(result.metrics.toolsLoaded).toBe(1);
  });
});

describe("r62-3: a host tool the catalogue does not list", () => {
  for (const mode of ["ondemand", "proxy"] as const) {
    it(`${mode}: is never declared, and a call to it by its own name is refused as call_tool refuses it`, async () => {
      const { result, dispatched } = await run(
        [
          {
            toolCalls: [
              { id: "c1", name: "delete_all", arguments: "{}" },
              { id: "c2", name: "call_tool", arguments: '{"name":"delete_all","arguments":{}}' },
            ],
          },
          { content: "done" },
        ],
        { toolDiscovery: mode },
      );
      for (const body of bodies()) expect(toolNames(body)).not.toContain("delete_all");
      expect(dispatched).toEqual([]);
      const last = bodies().at(-1);
      expect(toolAnswer(last, "c1")).toContain('"delete_all" is not in the catalogue');
      expect(toolAnswer(last, "c2")).toContain('"delete_all" is not in the catalogue');
      expect(result.metrics.unknownToolNames).toEqual(["delete_all"]);
      expect(result.toolCalls.map((c) => c.ok)).toEqual([false, false]);
    });
  }

  it("ondemand: a loaded tool a step's plan took out of the catalogue is refused when called", async () => {
    const { result, dispatched } = await run(
      [
        call("c1", "load_tools", { names: ["write_file"] }),
        call("c2", "write_file", { path: "a", text: "b" }),
        { content: "done" },
      ],
      { toolDiscovery: "ondemand" },
      {
        beforeStep: (_m: unknown, step: number) =>
          step === 2 ? { catalog: [{ name: "files", tools: [{ name: "read_file" }] }] } : undefined,
      },
    );
    expect(toolNames(bodies()[1])).toEqual(["load_tools"]);
    expect(dispatched).toEqual([]);
    expect(toolAnswer(bodies().at(-1), "c2")).toContain('"write_file" is not in the catalogue');
    expect(result.metrics.unknownToolNames).toEqual(["write_file"]);
    expect(result.loaded).toEqual([]);
  });
});

describe("r62-4: a host tool declared under a meta-tool's name", () => {
  const refusal = async (mode: "ondemand" | "proxy" | undefined, name: string, plan = false) => {
    const server = await start([call("c1", "read_file", { path: "a" }), { content: "never" }]);
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", ...(mode ? { toolDiscovery: mode } : {}) },
        messages: QUESTION,
        tools: plan ? TOOLS : [...TOOLS, tool(name, "mine")],
        ...(plan
          ? {
              beforeStep: (_m: unknown, step: number) =>
                step === 2 ? { tools: [...TOOLS, tool(name, "mine")] } : undefined,
            }
          : {}),
        dispatch: () => "ran",
      })
      .catch((e: unknown) => e);
    const sent = server.chatRequests.length;
    await close();
    return { error, sent };
  };

  it("is refused up front with tool-name-collision where the mode declares that meta-tool", async () => {
    for (const [mode, name] of [
      ["ondemand", "load_tools"],
      ["ondemand", "load.tools"],
      ["proxy", "load_tools"],
      ["proxy", "call_tool"],
      ["proxy", "call.tool"],
    ] as const) {
      const { error, sent } = await refusal(mode, name);
      const cause = LoopOptionError.isInstance(error) ? error : (error as { cause?: unknown }).cause;
      expect(LoopOptionError.isInstance(cause), `${mode} ${name}`).toBe(true);
      expect((cause as LoopOptionError).code).toBe("tool-name-collision");
      expect((cause as Error).message).toContain(`"${name}"`);
      expect(sent).toBe(0);
    }
  });

  it("is refused when a step's plan brings it, before that step's request", async () => {
    const { error, sent } = await refusal("proxy", "call_tool", true);
    const cause = LoopOptionError.isInstance(error) ? error : (error as { cause?: unknown }).cause;
    expect((cause as LoopOptionError).code).toBe("tool-name-collision");
    expect(sent).toBe(1);
  });

  it("is the host's where the mode declares no such meta-tool: eager, and call_tool on demand", async () => {
    for (const [mode, name] of [
      [undefined, "load_tools"],
      ["ondemand", "call_tool"],
    ] as const) {
      const { error } = await refusal(mode, name);
      expect(LoopOptionError.isInstance(error), `${mode} ${name}`).toBe(false);
    }
  });
});

describe("r62-5 and r62-6: huge and many unknown names", () => {
  const many = Array.from({ length: 10_000 }, (_, i) => tool(`tool_${i}`, `tool ${i}`));
  const bigCatalog = [{ name: "srv", tools: many.map((t) => ({ name: t.function.name })) }];

  it("a 100,000-character pattern through the loop is answered at once, and stored cut short", async () => {
    /** The run with one unknown name in its load, on a server of its own. */
    const once = async (name: string) => {
      await close();
      return (
        await run(
          [call("c1", "load_tools", { names: [name] }), { content: "done" }],
          { toolDiscovery: "ondemand" },
          { tools: many, catalog: bigCatalog },
        )
      ).result;
    };
    // A wildcard pattern of 100,000 characters against a run whose unknown name is as long but
    // holds no wildcard: the name's length costs both alike (it travels in the transcript, is
    // parsed, estimated and rendered), so what is left is the matching. Matching the whole pattern
    // against the 10,000 names took about 16 s (5.9 s of matching, routed twice) against well under
    // a second for the plain name. Timed, the ratio was about 1 with the fix under a bound of 4, a
    // loaded host's drift away; counted instead (the array elements walked while each run is
    // answered, the same for both but for the matching): the pattern, cut at 256 characters, walks
    // no tool (measured 828 more than the plain name, of 1.12 million); matched against the names
    // (the cut taken out) it walks them in each routing, 71,073 more. Bound: one walk of the names.
    const pattern = `${"*".repeat(100_000)}q`;
    const matched = await countWork(() => once(pattern));
    const plain = await countWork(() => once("a".repeat(100_001)));
    expect(matched.elements - plain.elements).toBeLessThan(10_000);
    const result = await once(pattern);
    expect(toolAnswer(bodies().at(-1), "c1")).toContain("A name is read up to 256 characters");
    expect(result.metrics.unknownToolNames).toHaveLength(1);
    expect(result.metrics.unknownToolNames[0]?.length).toBeLessThanOrEqual(257);
    expect(result.metrics.unknownToolNames[0]?.endsWith("…")).toBe(true);
  }, 120_000);

  it("keeps the first 100 unknown names, each once", async () => {
    const names = Array.from({ length: 150 }, (_, i) => `made_up_${i}`);
    const { result } = await run(
      [
        call("c1", "load_tools", { names }),
        call("c2", "load_tools", { names: ["made_up_3", "made_up_149"] }),
        { content: "done" },
      ],
      { toolDiscovery: "proxy" },
    );
    expect(result.metrics.unknownToolNames).toEqual(names.slice(0, 100));
  });
});

describe("r62-8: a toolChoice the first step of an exclusive preselection cannot declare", () => {
  it("refuses the run before any request and loads nothing for it", async () => {
    const server = await start([{ content: "never" }]);
    const error = await run(
      [],
      { toolDiscovery: "ondemand" },
      {
        preselected: ["list_pods"],
        beforeStep: () => ({ toolChoice: { type: "function", function: { name: "read_file" } } }),
      },
    ).catch((e: unknown) => e);
    expect(server.chatRequests).toHaveLength(0);
    expect(String((error as Error).message)).toMatch(/exclusive preselection/);
    expect(failedRun(error)?.loaded).toEqual(["list_pods"]);
  });
});

describe("r62-9: a renamed tool (fs.read goes as fs_read)", () => {
  const FS_READ = tool("fs.read", "Read a file", { path: { type: "string" } });
  const catalog = [...CATALOG, { name: "fs", tools: [{ name: "fs.read" }] }];

  it("call_tool takes its host name as it takes its wire name, and never counts it unknown", async () => {
    const { result, dispatched } = await run(
      [
        call("c1", "call_tool", { name: "fs.read", arguments: { path: "a" } }),
        call("c2", "call_tool", { name: "fs_read", arguments: { path: "b" } }),
        { content: "done" },
      ],
      { toolDiscovery: "proxy" },
      { tools: [...TOOLS, FS_READ], catalog },
    );
    expect(dispatched.map((d) => [d.name, d.args])).toEqual([
      ["fs.read", { path: "a" }],
      ["fs.read", { path: "b" }],
    ]);
    expect(result.metrics.unknownToolNames).toEqual([]);
  });

  it("a proxied preselection is told to onToolCall under the host's names, as preselected says", async () => {
    const { result, watched } = await run(
      [{ content: "done" }],
      { toolDiscovery: "proxy" },
      {
        tools: [...TOOLS, FS_READ],
        catalog,
        preselected: ["fs.read"],
      },
    );
    expect(result.preselected).toEqual(["fs.read"]);
    expect(watched[0]?.args).toEqual({ names: ["fs.read"] });
    // The transcript carries the wire's name, as the model reads it.
    expect(bodies()[0]?.messages.some((m) => JSON.stringify(m).includes('\\"fs_read\\"'))).toBe(true);
  });
});
