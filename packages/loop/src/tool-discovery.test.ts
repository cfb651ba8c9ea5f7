/**
 * The loop's discovery modes over HTTP against the testkit: each step's request body in eager,
 * ondemand and proxy mode, what a load answers, the prefix-cache hits the modes produce, calls to
 * unloaded and uncatalogued tools, call_tool, preselection (given, and made by the loop), a stop
 * during a load, carrying `loaded` between runs, and a compaction that folded a definition away.
 */
import type { RunEvent } from "@loopwright/events";
import { pruneToolResults } from "@loopwright/ledger";
import { PRESELECTED_NOTICE } from "@loopwright/side-task";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { catalogText, holdsDefinitions } from "@loopwright/tool-loading";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, LoopConfig, ToolDefinition } from "./config.js";
import { AgentLoopError, failedRun, LoopOptionError } from "./errors.js";
import { call, runDiscovery, toolAnswer, toolNames } from "./test-support/discovery.js";
import { unanswered } from "./test-support/transcript.js";

const tool = (
  name: string,
  description: string,
  properties: Record<string, unknown> = {},
): ToolDefinition => ({
  type: "function",
  function: {
    name,
    description,
    parameters: { type: "object", properties, required: Object.keys(properties) },
  },
});
const TOOLS = [
  tool("uninstall_helm_chart", "Uninstall a Helm release from the cluster", { release: { type: "string" } }),
  tool("list_pods", "List the pods in a namespace", { namespace: { type: "string" } }),
  tool("read_file", "Read a file from disk", { path: { type: "string" } }),
  tool("write_file", "Write text to a file on disk", { path: { type: "string" }, text: { type: "string" } }),
  tool("get_forecast", "Get the weather forecast for a city", { city: { type: "string" } }),
];
const CATALOG = [
  {
    name: "kubernetes",
    tools: [
      { name: "uninstall_helm_chart", description: "Uninstall a Helm release from the cluster" },
      { name: "list_pods", description: "List the pods in a namespace" },
    ],
  },
  {
    name: "files",
    tools: [
      { name: "read_file", description: "Read a file from disk" },
      { name: "write_file", description: "Write text to a file on disk" },
    ],
  },
  { name: "weather", tools: [{ name: "get_forecast", description: "Get the weather forecast for a city" }] },
];
const QUESTION: ChatMessage[] = [{ role: "user", content: "What does notes.txt say?" }];
const SYSTEM = "You are terse.";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Body = { model?: string; tools?: Array<{ function: { name: string } }>; messages: ChatMessage[] };
const bodies = () => (server?.chatRequests ?? []).map((r) => r.body as Body);
const systemOf = (body: Body | undefined) =>
  body?.messages[0]?.role === "system" ? String(body.messages[0].content) : undefined;

async function run(
  replies: Reply[],
  config: Partial<LoopConfig>,
  extra: Record<string, unknown> = {},
  serverOptions: Record<string, unknown> = {},
) {
  server ??= await startServer({ replies, ...serverOptions });
  const events: RunEvent[] = [];
  const ran = await runDiscovery(server, config, {
    system: SYSTEM,
    messages: QUESTION,
    tools: TOOLS,
    catalog: CATALOG,
    onEvent: (event: RunEvent) => events.push(event),
    ...extra,
  });
  return { ...ran, events };
}

const text = catalogText(CATALOG, { mode: "ondemand" });
const proxyText = catalogText(CATALOG, { mode: "proxy" });

describe("toolDiscovery: eager", () => {
  it("declares every tool on every step, with the system prompt as given and no catalogue", async () => {
    const { result } = await run([call("c1", "read_file", { path: "notes.txt" }), { content: "done" }], {});
    const [first, second] = bodies();
    expect(toolNames(first)).toEqual(TOOLS.map((t) => t.function.name).sort());
    expect(toolNames(second)).toEqual(toolNames(first));
    expect(systemOf(first)).toBe(SYSTEM);
    expect(result.loaded).toEqual([]);
    expect(result.metrics).toMatchObject({ toolsLoaded: 0, redundantLoads: 0, unknownToolNames: [] });
  });

  it("refuses a preselection before anything is sent: an eager run has nowhere to put it", async () => {
    server = await startServer({ replies: [{ content: "never" }] });
    const error = await run([], {}, { preselected: ["read_file"] }).catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    const cause = (error as AgentLoopError).cause as LoopOptionError;
    expect(LoopOptionError.isInstance(cause)).toBe(true);
    expect(cause.option).toBe("preselected");
    expect(server.chatRequests).toHaveLength(0);
  });
});

describe("toolDiscovery: ondemand", () => {
  it("declares load_tools and what is loaded, the catalogue unmarked on the same system prompt every step", async () => {
    const { result, dispatched } = await run(
      [
        call("c1", "load_tools", { names: ["read_file"] }),
        call("c2", "read_file", { path: "notes.txt" }),
        call("c3", "load_tools", { names: ["read_file"] }),
        { content: "It says hello." },
      ],
      { toolDiscovery: "ondemand" },
    );
    const steps = bodies();
    expect(steps.map(toolNames)).toEqual([
      ["load_tools"],
      ["load_tools", "read_file"],
      ["load_tools", "read_file"],
      ["load_tools", "read_file"],
    ]);
    for (const body of steps) expect(systemOf(body)).toBe(`${SYSTEM}\n\n${text}`);
    expect(toolAnswer(steps[1], "c1")).toMatch(/read_file/);
    expect(toolAnswer(steps[3], "c3")).toMatch(/already/i);
    // load_tools is answered by the loop, never dispatched.
    expect(dispatched.map((d) => d.name)).toEqual(["read_file"]);
    expect(result.loaded).toEqual(["read_file"]);
    expect(result.metrics).toMatchObject({ toolsLoaded: 1, redundantLoads: 1, unknownToolNames: [] });
    expect(result.toolCalls.map((c) => [c.name, c.source])).toEqual([
      ["load_tools", "loop"],
      ["read_file", "dispatched"],
      ["load_tools", "loop"],
    ]);
  });

  it("loads and runs a catalogued tool the model calls without loading it", async () => {
    const { result, dispatched } = await run(
      [call("c1", "write_file", { path: "a", text: "b" }), { content: "written" }],
      { toolDiscovery: "ondemand" },
    );
    expect(dispatched).toMatchObject([{ id: "c1", name: "write_file", args: { path: "a", text: "b" } }]);
    expect(toolNames(bodies()[1])).toEqual(["load_tools", "write_file"]);
    expect(result.loaded).toEqual(["write_file"]);
    expect(result.metrics.toolsLoaded).toBe(1);
  });

  it("tells the model a name outside the catalogue is not there, and counts it", async () => {
    const { result, dispatched } = await run(
      [call("c1", "load_tools", { names: ["send_fax", "read_file"] }), { content: "no fax" }],
      { toolDiscovery: "ondemand" },
    );
    expect(toolAnswer(bodies()[1], "c1")).toMatch(/send_fax/);
    expect(dispatched).toEqual([]);
    expect(result.metrics.unknownToolNames).toEqual(["send_fax"]);
    expect(result.loaded).toEqual(["read_file"]);
  });

  it("honours call_tool (arguments as JSON in a string), unless the host has a tool of that name", async () => {
    const args = { name: "read_file", arguments: '{"path":"notes.txt"}' };
    const first = await run([call("c1", "call_tool", args), { content: "ok" }], {
      toolDiscovery: "ondemand",
    });
    expect(first.dispatched).toMatchObject([{ id: "c1", name: "read_file", args: { path: "notes.txt" } }]);
    expect(first.result.loaded).toEqual(["read_file"]);
    await server?.close();
    server = undefined;
    const own = tool("call_tool", "The host's own", {
      name: { type: "string" },
      arguments: { type: "string" },
    });
    const second = await run(
      [call("c1", "call_tool", args), { content: "ok" }],
      { toolDiscovery: "ondemand" },
      {
        tools: [...TOOLS, own],
        catalog: [...CATALOG, { name: "host", tools: [{ name: "call_tool" }] }],
      },
    );
    expect(second.dispatched).toMatchObject([{ id: "c1", name: "call_tool", args }]);
  });

  it("carries loaded into the next run: declared from its first step", async () => {
    const first = await run(
      [call("c1", "load_tools", { names: ["read_file", "list_pods"] }), { content: "loaded" }],
      { toolDiscovery: "ondemand" },
    );
    expect(first.result.loaded).toEqual(["read_file", "list_pods"]);
    await server?.close();
    server = undefined;
    await run([{ content: "again" }], { toolDiscovery: "ondemand" }, { loaded: first.result.loaded });
    expect(toolNames(bodies()[0])).toEqual(["list_pods", "load_tools", "read_file"]);
  });

  it("exclusive preselection: the first step declares the shortlist alone, no catalogue; then as every step", async () => {
    const { result } = await run(
      [call("c1", "read_file", { path: "notes.txt" }), { content: "done" }],
      { toolDiscovery: "ondemand" },
      { preselected: ["read_file"] },
    );
    const [first, second] = bodies();
    expect(toolNames(first)).toEqual(["read_file"]);
    expect(systemOf(first)).toBe(SYSTEM);
    expect(toolNames(second)).toEqual(["load_tools", "read_file"]);
    expect(systemOf(second)).toBe(`${SYSTEM}\n\n${text}`);
    expect(result.preselected).toEqual(["read_file"]);
    expect(result.loaded).toEqual(["read_file"]);
  });

  it("append preselection: loaded after what was carried, each once, and the first step like every other", async () => {
    const { result } = await run(
      [{ content: "done" }],
      { toolDiscovery: "ondemand", preselectRouting: "append" },
      { preselected: ["read_file", "write_file"], loaded: ["read_file"] },
    );
    const [first] = bodies();
    expect(toolNames(first)).toEqual(["load_tools", "read_file", "write_file"]);
    expect(systemOf(first)).toBe(`${SYSTEM}\n\n${text}`);
    expect(result.loaded).toEqual(["read_file", "write_file"]);
  });

  it("breaks the prefix cache on each load (the tool array is at the head of the prompt)", async () => {
    const { result } = await run(
      [
        call("c1", "load_tools", { names: ["read_file"] }),
        call("c2", "read_file", { path: "notes.txt" }),
        call("c3", "load_tools", { names: ["write_file"] }),
        { content: "done" },
      ],
      { toolDiscovery: "ondemand" },
      {},
      { prefixCache: true },
    );
    expect(result.metrics.cacheBreaks).toBe(2);
    expect(result.metrics.cacheBreaksByReason).toEqual({ "tools-changed": 2 });
  });

  it("a stop during a load: every call answered, nothing loaded by the calls that did not run", async () => {
    const controller = new AbortController();
    server = await startServer({
      replies: [
        call("c1", "load_tools", { names: ["read_file"] }),
        {
          toolCalls: [
            { id: "c2", name: "read_file", arguments: '{"path":"a"}' },
            { id: "c3", name: "load_tools", arguments: '{"names":["write_file"]}' },
          ],
        },
        { content: "never" },
      ],
    });
    const error = await run(
      [],
      { toolDiscovery: "ondemand" },
      {
        signal: controller.signal,
        dispatch: () => {
          controller.abort(new Error("stopped by the user"));
          return "late";
        },
      },
    ).catch((e: unknown) => e);
    const state = failedRun(error);
    expect(state?.loaded).toEqual(["read_file"]);
    expect(unanswered(state?.messages ?? [])).toEqual([]);
    const answers = (state?.messages ?? []).filter((m) => m.role === "tool").map((m) => m.content);
    expect(answers.slice(-2)).toEqual([
      "Stopped before this call finished.",
      "Not run: the run stopped first.",
    ]);
    expect(server.chatRequests).toHaveLength(2);
  });

  it("works with renamed tools: the model loads and calls the wire's name, the host sees its own", async () => {
    const renamed = tool("fs.read", "Read a file", { path: { type: "string" } });
    const { result, dispatched } = await run(
      [
        call("c1", "load_tools", { names: ["fs_read"] }),
        call("c2", "fs_read", { path: "x" }),
        { content: "ok" },
      ],
      { toolDiscovery: "ondemand" },
      { tools: [renamed], catalog: [{ name: "fs", tools: [{ name: "fs.read" }] }] },
    );
    expect(systemOf(bodies()[0])).toContain("fs_read");
    expect(toolNames(bodies()[1])).toEqual(["fs_read", "load_tools"]);
    expect(dispatched).toMatchObject([{ id: "c2", name: "fs.read", args: { path: "x" } }]);
    expect(result.loaded).toEqual(["fs.read"]);
  });
});

describe("toolDiscovery: proxy", () => {
  it("declares call_tool and load_tools on every step; a load answers with definitions as JSON lines", async () => {
    const { result, dispatched, watched, events } = await run(
      [
        call("c1", "load_tools", { names: ["read_file"] }),
        call("c2", "call_tool", { name: "read_file", arguments: '{"path":"notes.txt"}' }),
        call("c3", "call_tool", { name: "read_file", arguments: { path: "other.txt" } }),
        call("c4", "load_tools", { names: ["read_file"] }),
        { content: "done" },
      ],
      { toolDiscovery: "proxy" },
    );
    const steps = bodies();
    for (const body of steps) {
      expect(toolNames(body)).toEqual(["call_tool", "load_tools"]);
      expect(systemOf(body)).toBe(`${SYSTEM}\n\n${proxyText}`);
    }
    const line = JSON.parse(toolAnswer(steps[1], "c1").split("\n")[0] ?? "");
    expect(line).toMatchObject({
      name: "read_file",
      description: "Read a file from disk",
      parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
    });
    // A second load of the same tool points back rather than sending the definition again.
    expect(toolAnswer(steps[4], "c4")).not.toContain('"parameters"');
    // dispatch and watchers see the inner tool under the call's own id, with string or object arguments.
    expect(dispatched).toMatchObject([
      { id: "c2", name: "read_file", args: { path: "notes.txt" } },
      { id: "c3", name: "read_file", args: { path: "other.txt" } },
    ]);
    expect(watched.map((w) => [w.id, w.name])).toEqual([
      ["c1", "load_tools"],
      ["c2", "read_file"],
      ["c3", "read_file"],
      ["c4", "load_tools"],
    ]);
    expect(events.filter((e) => e.kind === "tool-call").map((e) => (e as { name: string }).name)).toEqual([
      "load_tools",
      "read_file",
      "read_file",
      "load_tools",
    ]);
    expect(result.toolCalls.map((c) => c.name)).toEqual([
      "load_tools",
      "read_file",
      "read_file",
      "load_tools",
    ]);
    // The transcript keeps what the model wrote.
    expect(result.messages[3]).toMatchObject({ tool_calls: [{ id: "c2", function: { name: "call_tool" } }] });
    expect(result.loaded).toEqual([]);
    expect(result.metrics).toMatchObject({ toolsLoaded: 1, redundantLoads: 1 });
  });

  it("keeps the prefix cache whole across loads: no break in the run", async () => {
    const { result } = await run(
      [
        call("c1", "load_tools", { names: ["read_file"] }),
        call("c2", "call_tool", { name: "read_file", arguments: { path: "notes.txt" } }),
        call("c3", "load_tools", { names: ["write_file"] }),
        { content: "done" },
      ],
      { toolDiscovery: "proxy" },
      {},
      { prefixCache: true },
    );
    expect(result.metrics.cacheBreaks).toBe(0);
    expect(result.metrics.cacheHitRatio).toBeGreaterThan(0.5);
  });

  it("refuses a call_tool naming a tool outside the catalogue, without dispatching it", async () => {
    const { result, dispatched } = await run(
      [call("c1", "call_tool", { name: "send_fax", arguments: {} }), { content: "cannot" }],
      { toolDiscovery: "proxy" },
    );
    expect(dispatched).toEqual([]);
    expect(toolAnswer(bodies()[1], "c1")).toMatch(/send_fax/);
    expect(result.toolCalls).toMatchObject([{ id: "c1", ok: false }]);
    expect(result.metrics.unknownToolNames).toEqual(["send_fax"]);
  });

  it("refuses a direct call to a name neither declared nor catalogued, as call_tool does, in ondemand and proxy", async () => {
    // Each mode's run on a server of its own.
    const fresh = async () => {
      await server?.close();
      server = undefined;
    };
    for (const mode of ["ondemand", "proxy"] as const) {
      await fresh();
      const { result, dispatched, events } = await run(
        [call("c1", "delete_everything", {}), { content: "cannot" }],
        { toolDiscovery: mode },
      );
      expect(dispatched).toEqual([]);
      expect(toolAnswer(bodies()[1], "c1")).toMatch(/"delete_everything" is not in the catalogue/);
      expect(result.toolCalls).toMatchObject([{ id: "c1", ok: false }]);
      expect(result.metrics.unknownToolNames).toEqual(["delete_everything"]);
      expect(events.some((e) => e.kind === "tool-result" && e.id === "c1" && !e.ok)).toBe(true);
    }
    // Eager mode has no catalogue to gate on: the name reaches the host's dispatch, which decides.
    await fresh();
    const eager = await run([call("c1", "delete_everything", {}), { content: "ran" }], {});
    expect(eager.dispatched).toMatchObject([{ id: "c1", name: "delete_everything" }]);
  });

  it("shares one answer between identical proxied calls (the dedupe compares the inner call)", async () => {
    const inner = { name: "read_file", arguments: { path: "a" } };
    const { dispatched, result } = await run(
      [
        {
          toolCalls: [
            { id: "c1", name: "call_tool", arguments: JSON.stringify(inner) },
            {
              id: "c2",
              name: "call_tool",
              arguments: JSON.stringify({ ...inner, arguments: '{"path":"a"}' }),
            },
          ],
        },
        { content: "ok" },
      ],
      { toolDiscovery: "proxy" },
    );
    expect(dispatched).toHaveLength(1);
    expect(result.toolCalls.map((c) => c.source)).toEqual(["dispatched", "repeat"]);
  });

  it("sends a definition once when two loads of one step name it, and counts the second as redundant", async () => {
    const { result } = await run(
      [
        {
          toolCalls: [
            { id: "l1", name: "load_tools", arguments: JSON.stringify({ names: ["read_file"] }) },
            {
              id: "l2",
              name: "load_tools",
              arguments: JSON.stringify({ names: ["read_file", "list_pods"] }),
            },
          ],
        },
        { content: "ok" },
      ],
      { toolDiscovery: "proxy" },
    );
    const answers =
      bodies()[1]
        ?.messages.filter((m) => m.role === "tool")
        .map((m) => String(m.content)) ?? [];
    const definitions = answers.join("\n").match(/"name":"read_file"/g) ?? [];
    expect(definitions).toHaveLength(1);
    expect(answers[1]).toMatch(/"name":"list_pods"/);
    expect(result.metrics.toolsLoaded).toBe(2);
    expect(result.metrics.redundantLoads).toBe(1);
  });

  it("writes a preselection into the transcript as a load_tools exchange the model did not make", async () => {
    const { result, watched, events } = await run(
      [{ content: "done" }],
      { toolDiscovery: "proxy" },
      {
        preselected: ["read_file", "not_catalogued"],
      },
    );
    const [first] = bodies();
    expect(toolNames(first)).toEqual(["call_tool", "load_tools"]);
    expect(first?.messages.slice(1)).toMatchObject([
      QUESTION[0] as ChatMessage,
      {
        role: "assistant",
        tool_calls: [
          {
            id: "call_preselected_1",
            function: { name: "load_tools", arguments: '{"names":["read_file"]}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_preselected_1" },
    ]);
    expect(toolAnswer(first, "call_preselected_1")).toContain('"name":"read_file"');
    expect(result.messages).toHaveLength(4);
    expect(result.preselected).toEqual(["read_file"]);
    expect(watched.map((w) => w.id)).toEqual(["call_preselected_1"]);
    expect(events.filter((e) => e.kind === "tool-result")).toHaveLength(1);
    expect(result.toolCalls).toEqual([
      { id: "call_preselected_1", name: "load_tools", source: "loop", ok: true },
    ]);
    expect(result.metrics.toolsLoaded).toBe(1);
  });

  it("loads a definition again after a compaction folded it away", async () => {
    const { result } = await run(
      [
        call("c1", "load_tools", { names: ["read_file"] }),
        call("c2", "load_tools", { names: ["read_file"] }),
        { content: "done" },
      ],
      { toolDiscovery: "proxy" },
      {
        // Before step 2: the first load's exchange is folded into a summary.
        beforeStep: (messages: readonly ChatMessage[], step: number) =>
          step === 2
            ? [messages[0] as ChatMessage, { role: "user", content: "(summary: tools were loaded)" }]
            : undefined,
      },
    );
    const steps = bodies();
    expect(toolAnswer(steps[2], "c2")).toContain('"parameters"');
    expect(result.metrics).toMatchObject({ toolsLoaded: 2, redundantLoads: 0 });
  });

  it("never has a definition-holding load result cleared by a prune", async () => {
    const { result } = await run(
      [
        call("c1", "load_tools", { names: ["read_file"] }),
        call("c2", "call_tool", { name: "read_file", arguments: { path: "notes.txt" } }),
        { content: "done" },
      ],
      { toolDiscovery: "proxy" },
    );
    const pruned = pruneToolResults(result.messages, { keepLast: 0, maxChars: 0 });
    const load = pruned.find((m) => m.tool_call_id === "c1");
    expect(holdsDefinitions(load as ChatMessage)).toBe(true);
    expect(String(pruned.find((m) => m.tool_call_id === "c2")?.content)).toMatch(/cleared/);
  });

  it("drops a null the model wrote for the inner tool's optional parameter (strict schemas make it nullable)", async () => {
    const pods = tool("list_pods", "List the pods in a namespace", { namespace: { type: "string" } });
    const optional: ToolDefinition = {
      ...pods,
      function: {
        ...pods.function,
        parameters: {
          type: "object",
          properties: { namespace: { type: "string" }, label: { type: "string" } },
          required: ["namespace"],
        },
      },
    };
    const { dispatched } = await run(
      [
        call("c1", "call_tool", { name: "list_pods", arguments: { namespace: "web", label: null } }),
        { content: "ok" },
      ],
      { toolDiscovery: "proxy" },
      { tools: [optional], catalog: [{ name: "k8s", tools: [{ name: "list_pods" }] }] },
    );
    expect(dispatched).toMatchObject([{ id: "c1", name: "list_pods" }]);
    expect(dispatched[0]?.args).toEqual({ namespace: "web" });
    // The definition a load sends is the strict one the endpoint would have been declared.
    await server?.close();
    server = undefined;
    await run(
      [call("c1", "load_tools", { names: ["list_pods"] }), { content: "ok" }],
      { toolDiscovery: "proxy" },
      {
        tools: [optional],
        catalog: [{ name: "k8s", tools: [{ name: "list_pods" }] }],
      },
    );
    const line = JSON.parse(toolAnswer(bodies()[1], "c1").split("\n")[0] ?? "");
    expect(line.parameters.required).toEqual(["namespace", "label"]);
  });

  it("tells watchers the inner tool of a call_tool the step limit left unrun", async () => {
    server = await startServer({
      replies: [call("c1", "call_tool", { name: "read_file", arguments: { path: "a" } })],
    });
    const error = await run([], { toolDiscovery: "proxy", maxToolIterations: 0 }).catch((e: unknown) => e);
    expect(failedRun(error)?.toolCalls).toMatchObject([{ id: "c1", name: "read_file", source: "refused" }]);
    expect(failedRun(error)?.messages[1]).toMatchObject({
      tool_calls: [{ function: { name: "call_tool" } }],
    });
  });

  it("works with renamed tools: call_tool names the wire's tool, dispatch gets the host's", async () => {
    const renamed = tool("fs.read", "Read a file", { path: { type: "string" } });
    const { dispatched } = await run(
      [call("c1", "call_tool", { name: "fs_read", arguments: { path: "x" } }), { content: "ok" }],
      { toolDiscovery: "proxy" },
      { tools: [renamed], catalog: [{ name: "fs", tools: [{ name: "fs.read" }] }] },
    );
    expect(dispatched).toMatchObject([{ id: "c1", name: "fs.read", args: { path: "x" } }]);
  });
});

describe("preselect: true", () => {
  it("settles the shortlist by keywords with no side-task request, and says so in a notice", async () => {
    const { result, events } = await run(
      [{ content: "uninstalled" }],
      { toolDiscovery: "ondemand", preselect: true, toolSelectModel: "picker", preselectKeywords: true },
      { messages: [{ role: "user", content: "Uninstall the prometheus helm release" }] },
    );
    expect(bodies().map((b) => b.model)).toEqual(["sim"]);
    expect(toolNames(bodies()[0])).toEqual(["uninstall_helm_chart"]);
    expect(result.preselected).toEqual(["uninstall_helm_chart"]);
    const noticeAt = events.findIndex((e) => e.kind === "notice" && e.text.startsWith(PRESELECTED_NOTICE));
    expect(noticeAt).toBeGreaterThanOrEqual(0);
    expect(noticeAt).toBeLessThan(events.findIndex((e) => e.kind === "turn"));
    expect((events[noticeAt] as { text: string }).text).toBe(`${PRESELECTED_NOTICE}uninstall_helm_chart`);
  });

  it("asks toolSelectModel where the words do not settle it, then opens the run with its pick", async () => {
    const { result } = await run(
      [{ content: '{"tools":["get_forecast"]}' }, { content: "sunny" }],
      { toolDiscovery: "ondemand", preselect: true, toolSelectModel: "picker", preselectKeywords: true },
      { messages: [{ role: "user", content: "Do I need an umbrella in Oslo tomorrow?" }] },
    );
    const [pick, main] = bodies();
    expect(pick?.model).toBe("picker");
    expect(pick?.tools).toBeUndefined();
    expect(main?.model).toBe("sim");
    expect(toolNames(main)).toEqual(["get_forecast"]);
    expect(result.preselected).toEqual(["get_forecast"]);
  });

  it("makes no preselection for an empty toolSelectModel, and the host's own shortlist wins", async () => {
    const none = await run([{ content: "ok" }], {
      toolDiscovery: "ondemand",
      preselect: true,
      toolSelectModel: "",
    });
    expect(bodies().map((b) => b.model)).toEqual(["sim"]);
    expect(none.result.preselected).toEqual([]);
    await server?.close();
    server = undefined;
    const own = await run(
      [{ content: "ok" }],
      { toolDiscovery: "proxy", preselect: true, toolSelectModel: "picker" },
      { preselected: ["list_pods"] },
    );
    expect(bodies().map((b) => b.model)).toEqual(["sim"]);
    expect(own.result.preselected).toEqual(["list_pods"]);
    expect(own.events.some((e) => e.kind === "notice" && e.text.startsWith(PRESELECTED_NOTICE))).toBe(false);
  });
});

describe("toolDiscovery: ondemand, a catalogued tool called unloaded under another spelling", () => {
  it("runs under the catalogued name, as load_tools and call_tool would read it", async () => {
    for (const written of ["files.read_file", "functions.read_file", "Read_File"]) {
      const { result, dispatched } = await run(
        [call("c1", written, { path: "notes.txt" }), { content: "It says hello." }],
        { toolDiscovery: "ondemand" },
      );
      expect(dispatched).toMatchObject([{ id: "c1", name: "read_file", args: { path: "notes.txt" } }]);
      expect(result.loaded).toEqual(["read_file"]);
      expect(toolAnswer(bodies()[1], "c1")).toBe("ran read_file");
      await server?.close();
      server = undefined;
    }
  });
});
