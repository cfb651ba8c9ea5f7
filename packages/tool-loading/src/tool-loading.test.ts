import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { ToolLoadingError } from "./errors.js";
import { holdsDefinitions } from "./load-result.js";
import { CALL_TOOL, LOAD_TOOLS, PROXY_TOOLS } from "./meta-tools.js";
import { type Body, drive, type Task } from "./test-support/drive.js";
import { CATALOG, TOOLS, thrown } from "./test-support/tools.js";
import { createToolLoading } from "./tool-loading.js";

const names = (tools: { function: { name: string } }[]) => tools.map((tool) => tool.function.name);
const SYSTEM = "You help with repositories.";

describe("createToolLoading: each mode's request", () => {
  it("eager declares every tool in name order, with the system prompt as given", () => {
    const loading = createToolLoading({ mode: "eager", tools: TOOLS, catalog: CATALOG });
    const request = loading.request({ step: 3, loaded: ["read_file"], system: SYSTEM });
    expect(names(request.tools)).toEqual([...names(TOOLS)].sort());
    expect(request.system).toBe(SYSTEM);
    expect(loading.catalogText).toBe("");
  });

  it("ondemand declares load_tools and what is loaded, with the same unmarked catalogue on every step", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    const first = loading.request({ step: 0, loaded: [], system: SYSTEM });
    const later = loading.request({ step: 4, loaded: ["write_file", "create_issue"], system: SYSTEM });
    expect(names(first.tools)).toEqual(["load_tools"]);
    expect(names(later.tools)).toEqual(["create_issue", "load_tools", "write_file"]);
    expect(later.system).toBe(first.system);
    expect(first.system?.startsWith(`${SYSTEM}\n\n`)).toBe(true);
    expect(first.system).toContain("github: create_issue, get_file, list_issues");
  });

  it("ondemand keeps the caller's order when told to, so a carried array stays a prefix", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG, order: false });
    const before = loading.request({ step: 1, loaded: ["write_file"] }).tools;
    const after = loading.request({ step: 2, loaded: ["write_file", "create_issue"] }).tools;
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after[0]).toBe(LOAD_TOOLS);
  });

  it("an exclusive preselection shapes the first step alone: those tools, no catalogue, no load_tools", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    const start = loading.start({ loaded: ["read_file"], preselected: ["list_issues", "nope"] });
    expect(start.preselected).toEqual(["list_issues"]);
    expect(start.loaded).toEqual(["read_file", "list_issues"]);
    const first = loading.request({ step: 0, ...start, system: SYSTEM });
    expect(names(first.tools)).toEqual(["list_issues"]);
    expect(first.system).toBe(SYSTEM);
    const second = loading.request({ step: 1, ...start, system: SYSTEM });
    expect(names(second.tools)).toEqual(["list_issues", "load_tools", "read_file"]);
    expect(second.system).toContain("# Tools you can load");
  });

  it("an appended preselection is loaded after what was carried, and the first step is like every other", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG, order: false });
    const start = loading.start({
      loaded: ["read_file", "list_issues"],
      preselected: ["list_issues", "get_file"],
    });
    expect(start.loaded).toEqual(["read_file", "list_issues", "get_file"]);
    const first = loading.request({ step: 0, ...start, routing: "append", system: SYSTEM });
    expect(names(first.tools)).toEqual(["load_tools", "read_file", "list_issues", "get_file"]);
    expect(first.system).toBe(
      loading.request({ step: 5, ...start, routing: "append", system: SYSTEM }).system,
    );
  });

  it("carries at most the carry cap, and only names still in the catalogue", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG, carryCap: 2 });
    expect(loading.start({ loaded: ["gone", "read_file", "get_file", "write_file"] }).loaded).toEqual([
      "get_file",
      "write_file",
    ]);
  });

  it("proxy declares call_tool and load_tools and nothing else, whatever is loaded", () => {
    const loading = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    const request = loading.request({ step: 7, loaded: ["read_file"], system: SYSTEM });
    expect(request.tools).toEqual([...PROXY_TOOLS]);
    expect(names(request.tools)).toEqual(["call_tool", "load_tools"]);
    expect(request.system).toContain("call_tool");
    expect(loading.start({ loaded: ["read_file"] }).loaded).toEqual([]);
  });

  it("refuses a mode, a routing or a cap it does not know", () => {
    expect(
      (thrown(() => createToolLoading({ mode: "lazy" as never, tools: TOOLS })) as ToolLoadingError).code,
    ).toBe("invalid-mode");
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS });
    expect(
      (thrown(() => loading.request({ step: 0, loaded: [], routing: "first" as never })) as ToolLoadingError)
        .code,
    ).toBe("invalid-mode");
    expect(
      (thrown(() => createToolLoading({ mode: "proxy", tools: TOOLS, loadCap: 0 })) as ToolLoadingError).code,
    ).toBe("invalid-cap");
    expect(
      (thrown(() => createToolLoading({ mode: "proxy", tools: "x" as never })) as ToolLoadingError).code,
    ).toBe("invalid-tools");
  });
});

describe("createToolLoading: input of the wrong shape from a loop of the host's own", () => {
  it("is refused with the package's typed error naming what was wrong, never a crash inside", () => {
    const state = { loaded: [], messages: [] };
    // Proxied, what is loaded is read off the transcript, so a loaded or preselected list given to
    // start or request is not read there (marked "ondemand").
    const cases: [string, (loading: ReturnType<typeof createToolLoading>) => unknown, RegExp, string?][] = [
      ["start(null)", (l) => l.start(null as never), /start needs/],
      ["start({ loaded: name })", (l) => l.start({ loaded: "read_file" as never }), /loaded/, "ondemand"],
      ["request(undefined)", (l) => l.request(undefined as never), /request needs/],
      [
        "request({ loaded: null })",
        (l) => l.request({ step: 1, loaded: null as never }),
        /loaded/,
        "ondemand",
      ],
      [
        "request({ preselected: name })",
        (l) => l.request({ step: 0, loaded: [], preselected: "read_file" as never }),
        /preselect/,
        "ondemand",
      ],
      ["route(null)", (l) => l.route(null as never, state), /route needs a call/],
      [
        "route(call_tool with null args)",
        (l) => l.route({ id: "c", name: "call_tool", args: null as never }, state),
        /call_tool/,
      ],
      ["route(state null)", (l) => l.route({ id: "c", name: "read_file", args: {} }, null as never), /state/],
      [
        "route(state.loaded a name)",
        (l) => l.route({ id: "c", name: "read_file", args: {} }, { loaded: "x" as never, messages: [] }),
        /loaded/,
      ],
    ];
    for (const mode of ["ondemand", "proxy"] as const) {
      const loading = createToolLoading({ mode, tools: TOOLS, catalog: CATALOG });
      for (const [label, run, message] of cases.filter(([, , , only]) => (only ?? mode) === mode)) {
        let outcome: unknown;
        try {
          const route = run(loading) as { kind?: string; error?: unknown } | undefined;
          outcome = route?.kind === "refuse" ? route.error : route;
        } catch (error) {
          outcome = error;
        }
        expect(ToolLoadingError.isInstance(outcome), `${mode} ${label}`).toBe(true);
        expect((outcome as Error).message, `${mode} ${label}`).toMatch(message);
      }
    }
    expect(ToolLoadingError.isInstance(thrown(() => createToolLoading(undefined as never)))).toBe(true);
  });
});

describe("route: a call in the wrong shape", () => {
  const state = { loaded: [], messages: [] };
  const modes = ["eager", "ondemand", "proxy"] as const;

  it("refuses the SDK's and the stream's call shape with invalid-call, saying how to convert it", () => {
    const sdk = { id: "c1", type: "function", function: { name: "read_file", arguments: '{"path":"a"}' } };
    for (const mode of modes) {
      const loading = createToolLoading({ mode, tools: TOOLS, catalog: CATALOG });
      const error = thrown(() => loading.route(sdk as never, state)) as ToolLoadingError;
      expect(ToolLoadingError.isInstance(error), mode).toBe(true);
      expect(error.code).toBe("invalid-call");
      expect(error.message).toMatch(/\{ id, type, function: \{ name, arguments \} \}/);
      expect(error.message).toContain(
        "{ id: call.id, name: call.function.name, args: JSON.parse(call.function.arguments) }",
      );
    }
  });

  it("refuses arguments given as text rather than dispatching a string, and any other wrong field", () => {
    const cases: [unknown, RegExp][] = [
      [
        { id: "c2", name: "read_file", args: '{"path":"a"}' },
        /args is the string .*parse the arguments text/,
      ],
      [{ id: "c3", name: "read_file", args: ["a"] }, /args is an array/],
      [{ id: "c4", name: "read_file", args: new Map([["path", "a"]]) }, /args is a Map/],
      [{ id: "c5", name: "read_file" }, /args is nothing/],
      [{ id: 5, name: "read_file", args: {} }, /id is the number 5/],
      [{ name: "read_file", args: {} }, /id is nothing/],
      [{ id: "c6", name: null, args: {} }, /name is null/],
      [{ id: "c7", name: "read_file", args: {}, raw: {} }, /raw is an object/],
    ];
    for (const mode of modes) {
      const loading = createToolLoading({ mode, tools: TOOLS, catalog: CATALOG });
      for (const [call, words] of cases) {
        const error = thrown(() => loading.route(call as never, state)) as ToolLoadingError;
        expect(ToolLoadingError.isInstance(error), `${mode} ${JSON.stringify(call)}`).toBe(true);
        expect(error.code).toBe("invalid-call");
        expect(error.message, `${mode} ${JSON.stringify(call)}`).toMatch(words);
      }
    }
  });

  it("routes the converted stream call as before", () => {
    const sdk = { id: "c1", type: "function", function: { name: "read_file", arguments: '{"path":"a"}' } };
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    const route = loading.route(
      {
        id: sdk.id,
        name: sdk.function.name,
        args: JSON.parse(sdk.function.arguments),
        raw: sdk.function.arguments,
      },
      state,
    );
    expect(route).toMatchObject({
      kind: "dispatch",
      id: "c1",
      name: "read_file",
      args: { path: "a" },
      loaded: ["read_file"],
    });
  });
});

describe("createToolLoading: answering calls", () => {
  const call = (name: string, args: Record<string, unknown>, id = "c1") => ({ id, name, args });

  it("ondemand answers load_tools itself, and tells a model that loads twice it already has the tool", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    const first = loading.route(call("load_tools", { names: ["read_file", "send_email"] }), {
      loaded: [],
      messages: [],
    });
    expect(first).toMatchObject({ kind: "load", loaded: ["read_file"], fresh: ["read_file"], repeated: [] });
    expect(first.kind === "load" && first.resolution.unknown).toEqual(["send_email"]);
    const again = loading.route(call("load_tools", { names: "read_file" }), {
      loaded: first.loaded,
      messages: [],
    });
    expect(again).toMatchObject({ kind: "load", loaded: ["read_file"], fresh: [], repeated: ["read_file"] });
    expect(again.kind === "load" && again.content).toContain("Already loaded: read_file");
  });

  it("ondemand loads and runs a catalogued tool the model called without loading it", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    const route = loading.route(call("write_file", { path: "a" }), { loaded: ["read_file"], messages: [] });
    expect(route).toMatchObject({
      kind: "dispatch",
      name: "write_file",
      args: { path: "a" },
      loaded: ["read_file", "write_file"],
      loadedNow: "write_file",
    });
  });

  it("call_tool reaches dispatch as the tool it names, under the call's own id, in ondemand and proxy", () => {
    for (const mode of ["ondemand", "proxy"] as const) {
      const loading = createToolLoading({ mode, tools: TOOLS, catalog: CATALOG });
      for (const args of [{ path: "a.txt" }, '{"path":"a.txt"}']) {
        const route = loading.route(call("call_tool", { name: "read_file", arguments: args }, "call_9"), {
          loaded: [],
          messages: [],
        });
        expect(route).toMatchObject({
          kind: "dispatch",
          id: "call_9",
          name: "read_file",
          args: { path: "a.txt" },
        });
        expect(route.kind === "dispatch" && route.proxied).toBe(true);
      }
    }
  });

  it("refuses call_tool for a name outside the catalogue, with a result the model reads", () => {
    const loading = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    const route = loading.route(call("call_tool", { name: "send_email", arguments: {} }), {
      loaded: [],
      messages: [],
    });
    expect(route.kind).toBe("refuse");
    expect(route.kind === "refuse" && route.unknown).toEqual(["send_email"]);
    expect(route.kind === "refuse" && route.content).toContain("not in the catalogue");
  });

  it("refuses a direct call to a name neither declared nor catalogued in ondemand and proxy, as call_tool does; eager dispatches it", () => {
    for (const mode of ["ondemand", "proxy"] as const) {
      const loading = createToolLoading({ mode, tools: TOOLS, catalog: CATALOG });
      for (const name of ["delete_everything", "constructor", "toString", "__proto__"]) {
        const direct = loading.route(call(name, {}), { loaded: ["read_file"], messages: [] });
        const proxied = loading.route(call("call_tool", { name, arguments: {} }), {
          loaded: ["read_file"],
          messages: [],
        });
        expect(direct).toMatchObject({ kind: "refuse", loaded: ["read_file"], unknown: [name] });
        expect(direct.kind === "refuse" && direct.error.code).toBe("unknown-tool");
        expect(direct.kind === "refuse" && direct.content).toContain(`"${name}" is not in the catalogue`);
        expect(proxied.kind).toBe("refuse");
      }
    }
    // A tool the host declares but the catalogue leaves out is never declared in these modes, so
    // calling it by its own name is refused as call_tool refuses it (r62-3).
    const own = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG.slice(0, 1) });
    expect(own.route(call("read_file", { path: "a" }), { loaded: [], messages: [] })).toMatchObject({
      kind: "refuse",
      unknown: ["read_file"],
    });
    const eager = createToolLoading({ mode: "eager", tools: TOOLS });
    expect(eager.route(call("delete_everything", {}), { loaded: [], messages: [] })).toMatchObject({
      kind: "dispatch",
      name: "delete_everything",
    });
  });

  it("refuses a load_tools that names nothing", () => {
    const loading = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    const route = loading.route(call("load_tools", {}), { loaded: [], messages: [] });
    expect(route.kind === "refuse" && route.error.code).toBe("invalid-names");
  });

  it("leaves call_tool to the host in ondemand mode when the host has a tool of that name, and eager never knows it", () => {
    const own = { ...CALL_TOOL, function: { ...CALL_TOOL.function, description: "The host's own." } };
    const ondemand = createToolLoading({ mode: "ondemand", tools: [...TOOLS, own] });
    const route = ondemand.route(call("call_tool", { name: "read_file" }), { loaded: [], messages: [] });
    expect(route).toMatchObject({ kind: "dispatch", name: "call_tool", proxied: false });
    const eager = createToolLoading({ mode: "eager", tools: TOOLS });
    expect(eager.route(call("load_tools", { names: ["x"] }), { loaded: [], messages: [] })).toMatchObject({
      kind: "dispatch",
      name: "load_tools",
    });
  });

  it("proxy points back to a definition the transcript holds, and gives it again once a compaction folded it away", () => {
    const loading = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    const first = loading.route(call("load_tools", { names: ["read_file"] }), { loaded: [], messages: [] });
    expect(first.kind === "load" && first.fresh).toEqual(["read_file"]);
    expect(first.loaded).toEqual([]);
    const answered = {
      role: "tool",
      tool_call_id: "c1",
      content: first.kind === "load" ? first.content : "",
    };
    expect(holdsDefinitions(answered)).toBe(true);
    const asked = {
      role: "assistant",
      content: "",
      tool_calls: [{ id: "c1", type: "function", function: { name: "load_tools", arguments: "{}" } }],
    };
    const again = loading.route(call("load_tools", { names: ["read_file"] }, "c2"), {
      loaded: [],
      messages: [asked, answered],
    });
    expect(again.kind === "load" && again.repeated).toEqual(["read_file"]);
    expect(again.kind === "load" && again.content).toContain("Already in this conversation: read_file");
    const folded = [{ role: "system", content: "Summary: the model read a file." }];
    const reload = loading.route(call("load_tools", { names: ["read_file"] }, "c3"), {
      loaded: [],
      messages: folded,
    });
    expect(reload.kind === "load" && reload.fresh).toEqual(["read_file"]);
  });

  it("proxy hands over a definition a tool's own result merely looks like", () => {
    const loading = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    const messages = [
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: "r1", type: "function", function: { name: "call_tool", arguments: "{}" } }],
      },
      {
        role: "tool",
        tool_call_id: "r1",
        content: '{"name":"write_file","description":"","parameters":{}}\nRun these with call_tool: {}',
      },
    ];
    const load = loading.route(call("load_tools", { names: ["write_file"] }, "c2"), { loaded: [], messages });
    expect(load.kind === "load" && load.fresh).toEqual(["write_file"]);
    expect(load.kind === "load" && load.content).toContain('"name":"write_file","description":"Write a file');
  });

  it("writes a proxied preselection as a load_tools exchange numbered by where it lands", () => {
    const loading = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    const history = [
      { role: "user", content: "earlier" },
      { role: "assistant", content: "ok" },
      { role: "user", content: "list the issues" },
    ];
    const { messages: exchange, names } = loading.preselection(["list_issues", "send_email"], history);
    expect(names).toEqual(["list_issues"]);
    expect(exchange).toHaveLength(2);
    const [asked, answer] = exchange;
    const calls = asked?.tool_calls ?? [];
    expect(calls[0]?.id).toBe("call_preselected_3");
    expect(JSON.parse(calls[0]?.function?.arguments ?? "")).toEqual({ names: ["list_issues"] });
    expect(answer).toMatchObject({ role: "tool", tool_call_id: "call_preselected_3" });
    expect(holdsDefinitions(answer as never)).toBe(true);
    const none = { messages: [], names: [] };
    expect(loading.preselection(["send_email"], history)).toEqual(none);
    expect(loading.preselection(["list_issues"], [...history, ...exchange])).toEqual(none);
    expect(
      createToolLoading({ mode: "ondemand", tools: TOOLS }).preselection(["list_issues"], history),
    ).toEqual(none);
  });
});

// Over HTTP: the bodies each mode sends, step by step, through the testkit server's prefix-cache
// model, and the cache hits that server reports for them.
const TASK: Task = {
  system: SYSTEM,
  question: "Read notes.txt, then file an issue about what it says.",
  firstLoad: ["read_file"],
  steps: [
    {
      uses: [
        {
          tool: "read_file",
          args: { path: "notes.txt" },
          result: "The build is slow on Mondays. ".repeat(8),
        },
      ],
    },
    {
      uses: [
        { tool: "list_issues", args: { repo: "acme/app" }, result: '[{"number":1,"title":"Slow builds"}]' },
      ],
      load: ["list_issues", "create_issue"],
    },
    {
      uses: [
        {
          tool: "create_issue",
          args: { repo: "acme/app", title: "Slow on Mondays" },
          result: '{"number":2}',
        },
      ],
    },
    {
      uses: [
        {
          tool: "read_file",
          args: { path: "notes.txt" },
          result: "The build is slow on Mondays. ".repeat(8),
        },
      ],
    },
  ],
  answer: "Filed issue #2.",
};

describe("each mode's requests against a prefix-caching server", () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function cachedTokens(bodies: Body[]): Promise<{ prompt: number; cached: number }[]> {
    // The server of a call before in the same test is closed first (afterEach closes only the last).
    await server?.close();
    server = await startServer({ prefixCache: true, replies: () => ({ content: "ok" }) });
    const out: { prompt: number; cached: number }[] = [];
    for (const body of bodies) {
      const response = await fetch(`${server.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", ...body }),
      });
      const usage = ((await response.json()) as { usage: Record<string, unknown> }).usage as {
        prompt_tokens: number;
        prompt_tokens_details: { cached_tokens: number };
      };
      out.push({ prompt: usage.prompt_tokens, cached: usage.prompt_tokens_details.cached_tokens });
    }
    return out;
  }

  /** Whether each request after the first found the previous prompt in the cache (90% of it, the seed's line for a broken cache: the generation prompt's last token runs into the reply). */
  const appendedOnly = (counts: { prompt: number; cached: number }[]) =>
    counts.slice(1).map((count, i) => count.cached >= 0.9 * (counts[i]?.prompt ?? 0));

  it("proxy: the same head on every step, so every request only appends and the cache always holds", async () => {
    const run = drive(TASK, { mode: "proxy", tools: TOOLS, catalog: CATALOG });
    expect(run.bodies).toHaveLength(6);
    for (const body of run.bodies) expect(names(body.tools)).toEqual(["call_tool", "load_tools"]);
    expect(new Set(run.bodies.map((body) => body.messages[0]?.content)).size).toBe(1);
    const loads = run.messages.filter((message) => holdsDefinitions(message));
    expect(loads).toHaveLength(2);
    expect(appendedOnly(await cachedTokens(run.bodies))).toEqual([true, true, true, true, true]);
  });

  it("ondemand: a load grows the tool array at the head of the prompt, and the next request misses the cache", async () => {
    const run = drive(TASK, { mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    expect(run.bodies.map((body) => names(body.tools))).toEqual([
      ["load_tools"],
      ["load_tools", "read_file"],
      ["load_tools", "read_file"],
      ["create_issue", "list_issues", "load_tools", "read_file"],
      ["create_issue", "list_issues", "load_tools", "read_file"],
      ["create_issue", "list_issues", "load_tools", "read_file"],
    ]);
    expect(run.loaded).toEqual(["read_file", "list_issues", "create_issue"]);
    const counts = await cachedTokens(run.bodies);
    expect(appendedOnly(counts)).toEqual([false, true, false, true, true]);
  });

  it("eager: every tool on every step, and a cache that always holds", async () => {
    const run = drive(TASK, { mode: "eager", tools: TOOLS, catalog: CATALOG });
    expect(run.bodies).toHaveLength(5);
    for (const body of run.bodies) expect(body.tools).toHaveLength(TOOLS.length);
    const counts = await cachedTokens(run.bodies);
    expect(appendedOnly(counts)).toEqual([true, true, true, true]);
    const proxied = await cachedTokens(drive(TASK, { mode: "proxy", tools: TOOLS, catalog: CATALOG }).bodies);
    expect(proxied[0]?.prompt).toBeLessThan(counts[0]?.prompt ?? 0);
  });

  it("an exclusive preselection costs two heads; an appended one keeps the first step like the rest", async () => {
    const preselected = ["read_file"];
    const exclusive = drive(TASK, { mode: "ondemand", tools: TOOLS, catalog: CATALOG, preselected });
    expect(names(exclusive.bodies[0]?.tools ?? [])).toEqual(["read_file"]);
    expect(appendedOnly(await cachedTokens(exclusive.bodies))[0]).toBe(false);
    await server?.close();
    const appended = drive(TASK, {
      mode: "ondemand",
      tools: TOOLS,
      catalog: CATALOG,
      preselected,
      routing: "append",
    });
    expect(names(appended.bodies[0]?.tools ?? [])).toEqual(["load_tools", "read_file"]);
    expect(appendedOnly(await cachedTokens(appended.bodies))[0]).toBe(true);
  });

  it("a proxied preselection is written into the transcript, not the tool array", () => {
    const run = drive(TASK, { mode: "proxy", tools: TOOLS, catalog: CATALOG, preselected: ["read_file"] });
    const first = run.bodies[0] as Body;
    expect(names(first.tools)).toEqual(["call_tool", "load_tools"]);
    expect(first.messages.map((message) => message.role)).toEqual(["system", "user", "assistant", "tool"]);
    expect(first.messages[2]?.tool_calls?.[0]?.id).toBe("call_preselected_1");
    expect(run.loaded).toEqual([]);
    expect(run.toolsLoaded).toBe(1 + 2); // the preselection's, then list_issues and create_issue
  });

  it("the loaded set carries across two runs", () => {
    const first = drive(TASK, { mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    const second = drive(
      { ...TASK, firstLoad: [], steps: TASK.steps.slice(2) },
      { mode: "ondemand", tools: TOOLS, catalog: CATALOG, loaded: first.loaded },
    );
    expect(names(second.bodies[0]?.tools ?? [])).toEqual([
      "create_issue",
      "list_issues",
      "load_tools",
      "read_file",
    ]);
    expect(second.toolsLoaded).toBe(0);
  });
});

describe("a catalogue that lists a tool the run has no definition for", () => {
  const catalog = [...CATALOG, { name: "mail", tools: [{ name: "send_email" }] }];

  it("leaves it out of the catalogue text, and a load or call_tool naming it is told it is not there", () => {
    for (const mode of ["ondemand", "proxy"] as const) {
      const loading = createToolLoading({ mode, tools: TOOLS, catalog });
      expect(loading.catalogText).not.toContain("send_email");
      const load = loading.route(
        { id: "c1", name: "load_tools", args: { names: ["send_email", "read_file"] } },
        { loaded: [], messages: [] },
      );
      expect(load.kind === "load" && load.resolution.unknown).toEqual(["send_email"]);
      expect(load.kind === "load" && load.fresh).toEqual(["read_file"]);
      const call = loading.route(
        { id: "c2", name: "call_tool", args: { name: "send_email", arguments: {} } },
        { loaded: [], messages: [] },
      );
      expect(call.kind).toBe("refuse");
    }
  });
});

describe("a load the cap held back, asked for again", () => {
  // One server of fourteen tools: a load of its name reaches all of them, twelve at a time.
  const fourteen = Array.from({ length: 14 }, (_, i) => `tool_${String(i).padStart(2, "0")}`);
  const tools = fourteen.map((name) => ({
    type: "function" as const,
    function: { name, description: `Tool ${name}.`, parameters: { type: "object", properties: {} } },
  }));
  const catalog = [{ name: "files", tools: fourteen.map((name) => ({ name })) }];

  /** Loads `names` twice the way a loop would, the transcript growing with each exchange. */
  const loadTwice = (mode: "ondemand" | "proxy", names: string[]) => {
    const loading = createToolLoading({ mode, tools, catalog });
    const messages: { role: string; content?: unknown; tool_call_id?: string; tool_calls?: unknown[] }[] = [
      { role: "user", content: "Tidy the folder." },
    ];
    let loaded: string[] = [];
    const routes = ["c1", "c2"].map((id) => {
      const route = loading.route({ id, name: "load_tools", args: { names } }, { loaded, messages } as never);
      loaded = route.loaded;
      messages.push({
        role: "assistant",
        content: "",
        tool_calls: [
          { id, type: "function", function: { name: "load_tools", arguments: JSON.stringify({ names }) } },
        ],
      });
      messages.push({ role: "tool", tool_call_id: id, content: route.kind === "load" ? route.content : "" });
      return route;
    });
    return { routes, loaded };
  };

  it("loads what the cap left out the first time, instead of spending the cap on tools already loaded", () => {
    for (const mode of ["ondemand", "proxy"] as const) {
      for (const names of [["files"], ["tool_*"], fourteen]) {
        const { routes, loaded } = loadTwice(mode, names);
        const [first, second] = routes;
        expect(first?.kind === "load" && first.fresh).toEqual(fourteen.slice(0, 12));
        expect(second?.kind === "load" && second.fresh).toEqual(["tool_12", "tool_13"]);
        expect(second?.kind === "load" && second.resolution.overCap).toEqual([]);
        const content = second?.kind === "load" ? second.content : "";
        expect(content).not.toContain("were not loaded");
        if (mode === "ondemand") {
          expect(loaded).toEqual(fourteen);
          expect(content).toContain("Loaded: tool_12, tool_13.");
        } else {
          expect(content).toContain('{"name":"tool_12"');
          expect(content).toContain('{"name":"tool_13"');
        }
      }
    }
  });

  it("adds at most the cap a load, never a tool twice, and reaches every tool in as few loads as the cap allows (fast-check)", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 15 }), (count, cap) => {
        const all = Array.from({ length: count }, (_, i) => `t${String(i).padStart(2, "0")}`);
        const loading = createToolLoading({
          mode: "ondemand",
          tools: all.map((name) => ({ type: "function" as const, function: { name } })),
          catalog: [{ name: "srv", tools: all.map((name) => ({ name })) }],
          loadCap: cap,
        });
        let loaded: string[] = [];
        for (let i = 0; i < Math.ceil(count / cap); i++) {
          const route = loading.route(
            { id: `c${i}`, name: "load_tools", args: { names: ["srv"] } },
            { loaded, messages: [] },
          );
          if (route.kind !== "load") throw new Error(route.kind);
          expect(route.fresh.length).toBeLessThanOrEqual(cap);
          loaded = route.loaded;
        }
        expect(new Set(loaded).size).toBe(loaded.length);
        expect([...loaded].sort()).toEqual(all);
      }),
    );
  });

  it("still holds what one load adds to the cap, and names the rest", () => {
    const many = Array.from({ length: 40 }, (_, i) => `t${String(i).padStart(2, "0")}`);
    const loading = createToolLoading({
      mode: "ondemand",
      tools: many.map((name) => ({ type: "function" as const, function: { name } })),
      catalog: [{ name: "big", tools: many.map((name) => ({ name })) }],
    });
    const route = loading.route(
      { id: "c1", name: "load_tools", args: { names: ["big"] } },
      { loaded: many.slice(0, 30), messages: [] },
    );
    expect(route.kind === "load" && route.fresh).toEqual(many.slice(30, 40));
    expect(route.kind === "load" && route.repeated).toHaveLength(30);
    const again = loading.route(
      { id: "c2", name: "load_tools", args: { names: ["big"] } },
      { loaded: many.slice(0, 5), messages: [] },
    );
    expect(again.kind === "load" && again.fresh).toEqual(many.slice(5, 17));
    expect(again.kind === "load" && again.resolution.overCap).toEqual(many.slice(17));
    const content = again.kind === "load" ? again.content : "";
    expect(content).toContain("Held to 12 tools a load, so these were not loaded: t17, t18");
    // Already-loaded names are said in a line of bounded length, however many there are.
    const full = loading.route(
      { id: "c3", name: "load_tools", args: { names: ["big"] } },
      { loaded: many, messages: [] },
    );
    expect(full.kind === "load" && full.content.length).toBeLessThan(400);
  });
});

describe("a catalogued tool called directly in proxy mode", () => {
  it("reaches dispatch as the catalogued tool however it was spelled, as on demand", () => {
    const loading = createToolLoading({ mode: "proxy", tools: TOOLS, catalog: CATALOG });
    for (const spelled of ["functions.read_file", "filesystem.read_file", "Read_File"]) {
      const route = loading.route(
        { id: "c1", name: spelled, args: { path: "a" } },
        { loaded: [], messages: [] },
      );
      expect(route).toMatchObject({
        kind: "dispatch",
        id: "c1",
        name: "read_file",
        args: { path: "a" },
        loaded: [],
      });
    }
  });
});

describe("an exclusive first step whose preselection has no definition", () => {
  it("declares load_tools and shows the catalogue, never an empty tool array", () => {
    const loading = createToolLoading({ mode: "ondemand", tools: TOOLS, catalog: CATALOG });
    const first = loading.request({ step: 0, loaded: [], preselected: ["send_email"], system: SYSTEM });
    expect(names(first.tools)).toEqual(["load_tools"]);
    expect(first.system).toContain("# Tools you can load");
  });
});
