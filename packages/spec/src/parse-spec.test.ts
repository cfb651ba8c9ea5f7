import { describe, expect, it } from "vitest";
import { parseSpec } from "./parse-spec.js";
import { agentSpecSchema, SPEC_TOKEN } from "./schema.js";

const doc = (rest: Record<string, unknown> = {}) => ({ spec: SPEC_TOKEN, ...rest });
const codes = (issues: readonly { path: string; code: string }[]) =>
  issues.map(({ path, code }) => [path, code]);

describe("parseSpec refuses only faults of the document itself", () => {
  it.each([
    ["a string", "loopwright.agent/1", "", "not-object"],
    ["a number", 42, "", "not-object"],
    ["null", null, "", "not-object"],
    ["undefined", undefined, "", "not-object"],
    ["a list", [doc()], "", "not-object"],
    ["a Date", new Date(0), "", "not-object"],
    ["no spec token", { model: { name: "m" } }, "spec", "spec"],
    ["a spec token that is not a string", { spec: 1 }, "spec", "spec"],
    ["another format's token", { spec: "other.agent/1" }, "spec", "spec"],
    ["a token of another major", { spec: "loopwright.agent/2" }, "spec", "spec"],
    ["a token of major 0", { spec: "loopwright.agent/0.9" }, "spec", "spec"],
    // The JSON Schema's pattern refuses these; the reader must agree with what editors flag.
    ["a major written with a leading zero", { spec: "loopwright.agent/01" }, "spec", "spec"],
    ["a token with surrounding space", { spec: " loopwright.agent/1" }, "spec", "spec"],
  ])("refuses %s", (_, value, path, code) => {
    const result = parseSpec(value);
    expect(result.spec).toBeUndefined();
    expect(codes(result.errors)).toEqual([[path, code]]);
  });

  it("agrees with the JSON Schema's spec pattern on every token it accepts", () => {
    for (const spec of ["loopwright.agent/1", "loopwright.agent/1.0", "loopwright.agent/1.12"]) {
      expect(parseSpec({ spec }).errors).toEqual([]);
      expect(agentSpecSchema.safeParse({ spec }).success).toBe(true);
    }
  });

  it("reads null options as none, as null reads as absent in a document", () => {
    const result = parseSpec(doc({ name: "ok", requires: ["hooks"], bundle: { mcpServers: [] } }), null);
    expect(result.errors).toEqual([]);
    expect(codes(result.warnings)).toEqual([["bundle", "bundle-ignored"]]);
    expect(result.spec).toEqual({ spec: SPEC_TOKEN, requires: ["hooks"], name: "ok" });
    expect(parseSpec(doc({ requires: ["teleport"] }), null).errors.map(String)).toEqual([
      'requires[0]: this host does not understand "teleport", so it cannot run the agent as meant.',
    ]);
  });

  it("accepts a later minor of the same major", () => {
    const result = parseSpec({ spec: "loopwright.agent/1.7" });
    expect(result.errors).toEqual([]);
    expect(result.spec).toEqual({ spec: "loopwright.agent/1.7" });
  });

  it.each([
    ["a feature this host does not know", ["hooks", "teleport"], "requires[1]"],
    ["an entry that is not a name", [7], "requires[0]"],
    ["an empty name", [""], "requires[0]"],
    ["bundle, when the call did not accept bundled servers", ["bundle"], "requires[0]"],
  ])("refuses a requires entry: %s", (_, requires, path) => {
    const result = parseSpec(doc({ requires }));
    expect(result.spec).toBeUndefined();
    expect(codes(result.errors)).toEqual([[path, "requires"]]);
  });

  it("refuses requires when the host's features are not a list, rather than matching substrings of a string", () => {
    for (const features of ["tasks,hooks", 5, { hooks: true }]) {
      const result = parseSpec(doc({ requires: ["ask"] }), { features } as never);
      expect(result.spec).toBeUndefined();
      expect(codes(result.errors)).toEqual([["requires", "requires"]]);
      expect(String(result.errors[0])).toMatch(/^requires: this host's features option is not a list/);
    }
    // Without requires there is nothing to check the option against.
    expect(parseSpec(doc(), { features: "tasks" } as never).errors).toEqual([]);
  });

  it("accepts requires bundle when the call accepts bundled servers", () => {
    const result = parseSpec(doc({ requires: ["bundle", "hooks"] }), { bundle: true });
    expect(result.errors).toEqual([]);
    expect(result.spec?.requires).toEqual(["bundle", "hooks"]);
  });

  it("honours a host's own list of features", () => {
    expect(parseSpec(doc({ requires: ["hooks"] }), { features: ["tasks"] }).errors).toHaveLength(1);
    expect(parseSpec(doc({ requires: ["x-host.memory"] }), { features: ["x-host.memory"] }).errors).toEqual(
      [],
    );
  });

  it.each([
    ["model", "gpt-4o", "model"],
    ["model", ["gpt-4o"], "model"],
    ["prompt", { id: "a", text: "b" }, "prompt"],
    ["prompt", ["just text"], "prompt[0]"],
    ["tools", true, "tools"],
    ["tools", { servers: "github" }, "tools.servers"],
    ["tools", { preselect: true }, "tools.preselect"],
    ["hooks", {}, "hooks"],
    ["hooks", [{ id: "h", events: "beforeTurn" }], "hooks[0].events"],
    ["tasks", [], "tasks"],
    ["tasks", { title: "small" }, "tasks.title"],
    ["limits", 5, "limits"],
    ["requires", "bundle", "requires"],
    ["model", { extraBody: [] }, "model.extraBody"],
    ["model", { endpoint: "http://x" }, "model.endpoint"],
  ])("refuses %s holding a container of the wrong kind (%j)", (field, value, path) => {
    const result = parseSpec(doc({ [field]: value }));
    expect(result.spec).toBeUndefined();
    expect(codes(result.errors)).toEqual([[path, "container"]]);
  });

  it("refuses a bundled server list of the wrong kind when bundles are read", () => {
    const result = parseSpec(doc({ bundle: { mcpServers: { gh: { command: "x" } } } }), { bundle: true });
    expect(codes(result.errors)).toEqual([["bundle.mcpServers", "container"]]);
  });

  it("reports every problem at once", () => {
    const result = parseSpec({
      spec: "loopwright.agent/3",
      requires: ["warp"],
      model: "m",
      tools: { servers: "all" },
      limits: { maxToolIterations: -1 },
      colour: "blue",
    });
    expect(codes(result.errors)).toEqual([
      ["spec", "spec"],
      ["requires[0]", "requires"],
      ["model", "container"],
      ["tools.servers", "container"],
    ]);
    expect(codes(result.warnings)).toEqual([
      ["limits.maxToolIterations", "invalid-value"],
      ["colour", "unknown-field"],
    ]);
  });
});

describe("parseSpec drops what does not pass, with a warning naming its path", () => {
  it.each([
    ["temperature above 2", { model: { temperature: 2.5 } }, "model.temperature"],
    ["negative temperature", { model: { temperature: -0.1 } }, "model.temperature"],
    ["a temperature given as text", { model: { temperature: "0.7" } }, "model.temperature"],
    ["maxTokens of -1", { model: { maxTokens: -1 } }, "model.maxTokens"],
    ["fractional maxTokens", { model: { maxTokens: 10.5 } }, "model.maxTokens"],
    ["an unknown reasoning effort", { model: { reasoningEffort: "extreme" } }, "model.reasoningEffort"],
    ["a model name that is not a string", { model: { name: 4 } }, "model.name"],
    ["a negative contextLength", { model: { contextLength: -1 } }, "model.contextLength"],
    [
      "a base URL that is not http(s)",
      { model: { endpoint: { baseUrl: "ftp://x" } } },
      "model.endpoint.baseUrl",
    ],
    [
      "a base URL that is a reference",
      { model: { endpoint: { baseUrl: `\${BASE}` } } },
      "model.endpoint.baseUrl",
    ],
    [
      "a negative timeout",
      { model: { endpoint: { requestTimeoutSeconds: -5 } } },
      "model.endpoint.requestTimeoutSeconds",
    ],
    ["an unknown discovery mode", { tools: { discovery: "lazy" } }, "tools.discovery"],
    ["an empty server name", { tools: { servers: ["a", ""] } }, "tools.servers[1]"],
    ["an unknown tool order", { tools: { order: "random" } }, "tools.order"],
    [
      "a preselect flag given as text",
      { tools: { preselect: { enabled: "yes" } } },
      "tools.preselect.enabled",
    ],
    ["an unknown hook event", { hooks: [{ id: "h", events: ["onTuesday"] }] }, "hooks[0].events[0]"],
    ["maxToolIterations of -1", { limits: { maxToolIterations: -1 } }, "limits.maxToolIterations"],
    ["an infinite retry count", { limits: { maxRetries: Number.POSITIVE_INFINITY } }, "limits.maxRetries"],
    ["a compact flag given as 1", { limits: { compact: 1 } }, "limits.compact"],
    ["a task temperature above 2", { tasks: { title: { temperature: 9 } } }, "tasks.title.temperature"],
    ["a task key that is not a name", { tasks: { "my task": { model: "m" } } }, 'tasks["my task"]'],
    [
      "an extraBody field the loop owns",
      { model: { extraBody: { messages: [] } } },
      "model.extraBody.messages",
    ],
    ["an extraBody value that is not JSON", { model: { extraBody: { f: () => 1 } } }, "model.extraBody.f"],
    ["a name that is not a string", { name: ["x"] }, "name"],
  ])("drops %s", (_, fields, path) => {
    const result = parseSpec(doc(fields));
    expect(result.errors).toEqual([]);
    expect(codes(result.warnings)).toEqual([[path, "invalid-value"]]);
  });

  it("drops an out-of-range number instead of clamping it", () => {
    const { spec } = parseSpec(doc({ model: { name: "m", temperature: 7, maxTokens: 100 } }));
    expect(spec?.model).toEqual({ name: "m", maxTokens: 100 });
  });

  it.each([
    ["an unknown top-level field", { colour: "blue" }, "colour", "unknown-field"],
    ["an unknown model field", { model: { topK: 3 } }, "model.topK", "unknown-field"],
    [
      "a key on the endpoint",
      { model: { endpoint: { apiKey: "sk-x" } } },
      "model.endpoint.apiKey",
      "credential",
    ],
    ["a token on a task", { tasks: { title: { token: "t" } } }, "tasks.title.token", "credential"],
    ["a password at the top", { password: "hunter2" }, "password", "credential"],
    ["a prompt entry with no id", { prompt: [{ text: "hello" }] }, "prompt[0]", "incomplete"],
    ["a prompt entry with no text", { prompt: [{ id: "a" }] }, "prompt[0]", "incomplete"],
    ["a hook with no events", { hooks: [{ id: "h" }] }, "hooks[0]", "incomplete"],
    [
      "a task endpoint with no base URL",
      { tasks: { title: { endpoint: { requestTimeoutSeconds: 3 } } } },
      "tasks.title.endpoint",
      "incomplete",
    ],
    ["a null prompt entry", { prompt: [null] }, "prompt[0]", "null-entry"],
    ["a bundle, when bundles are not read", { bundle: { mcpServers: [] } }, "bundle", "bundle-ignored"],
  ])("drops %s", (_, fields, path, code) => {
    const result = parseSpec(doc(fields));
    expect(result.errors).toEqual([]);
    expect(codes(result.warnings)).toEqual([[path, code]]);
  });

  it("drops a prompt entry whose id was invalid, saying both why and what went", () => {
    const result = parseSpec(
      doc({
        prompt: [
          { id: "", text: "x" },
          { id: "b", text: "y" },
        ],
      }),
    );
    expect(codes(result.warnings)).toEqual([
      ["prompt[0].id", "invalid-value"],
      ["prompt[0]", "incomplete"],
    ]);
    expect(result.spec?.prompt).toEqual([{ id: "b", text: "y" }]);
  });

  it("keeps one entry per id within a document, the later replacing the earlier in place", () => {
    const result = parseSpec(
      doc({
        prompt: [
          { id: "a", text: "first" },
          { id: "b", text: "second" },
          { id: "a", text: "again" },
        ],
      }),
    );
    expect(codes(result.warnings)).toEqual([["prompt[2]", "duplicate-id"]]);
    expect(result.spec?.prompt).toEqual([
      { id: "a", text: "again" },
      { id: "b", text: "second" },
    ]);
  });

  it("names a repeated entry by its place in the document when an earlier entry was dropped", () => {
    const result = parseSpec(
      doc({
        prompt: [null, { id: "x" }, { id: "role", text: "A" }, { id: "role", text: "B" }],
        hooks: [{ id: "bad" }, { id: "h", events: [] }, { id: "h", events: ["afterTurn"] }],
      }),
    );
    expect(codes(result.warnings)).toEqual([
      ["prompt[0]", "null-entry"],
      ["prompt[1]", "incomplete"],
      ["prompt[3]", "duplicate-id"],
      ["hooks[0]", "incomplete"],
      ["hooks[2]", "duplicate-id"],
    ]);
    expect(result.errors).toEqual([]);
    expect(String(result.warnings[2])).toBe("prompt[3]: repeats id of entry 2; it replaces that entry.");
    expect(String(result.warnings[4])).toBe("hooks[2]: repeats id of entry 1; it replaces that entry.");
    expect(result.spec?.prompt).toEqual([{ id: "role", text: "B" }]);
  });

  it("keeps one hook per id and one bundled server per name, the later winning", () => {
    const result = parseSpec(
      doc({
        hooks: [
          { id: "h", events: [] },
          { id: "h", events: ["afterTurn"] },
        ],
        bundle: {
          mcpServers: [
            { name: "s", command: "a" },
            { name: "s", command: "b" },
          ],
        },
      }),
      { bundle: true },
    );
    expect(codes(result.warnings)).toEqual([
      ["hooks[1]", "duplicate-id"],
      ["bundle.mcpServers[1]", "duplicate-id"],
    ]);
    expect(result.spec?.hooks).toEqual([{ id: "h", events: ["afterTurn"] }]);
    expect(result.spec?.bundle?.mcpServers).toEqual([{ name: "s", command: "b" }]);
  });

  it.each([
    ["neither command nor url", { name: "x" }],
    ["both command and url", { name: "x", command: "c", url: "http://h" }],
    ["a stdio type with a url", { name: "x", type: "stdio", url: "http://h" }],
    ["an http type with a command", { name: "x", type: "http", command: "c" }],
    ["no name", { command: "c" }],
  ])("drops a bundled server with %s", (_, server) => {
    const result = parseSpec(doc({ bundle: { mcpServers: [server] } }), { bundle: true });
    expect(result.errors).toEqual([]);
    expect(codes(result.warnings)).toEqual([["bundle.mcpServers[0]", "incomplete"]]);
    expect(result.spec?.bundle).toEqual({ mcpServers: [] });
  });

  it("reads a 100,000-character URL that fails its pattern in one pass, in every URL field", () => {
    // The pattern once let its host and its rest match the same characters, so a long URL that
    // failed (one trailing space) was retried at every split point: 100,000 characters took
    // about 13 s. Each field here would take that long; the test's timeout is 5 s for all three.
    const bad = `http://${"a".repeat(100_000)} `;
    const result = parseSpec(
      doc({
        model: { endpoint: { baseUrl: bad } },
        tasks: { title: { endpoint: { baseUrl: `https://h/${"a".repeat(100_000)} ` } } },
        bundle: { mcpServers: [{ name: "s", url: bad }] },
      }),
      { bundle: true },
    );
    expect(result.errors).toEqual([]);
    expect(codes(result.warnings)).toEqual([
      ["model.endpoint.baseUrl", "invalid-value"],
      ["tasks.title.endpoint.baseUrl", "invalid-value"],
      ["tasks.title.endpoint", "incomplete"],
      ["bundle.mcpServers[0].url", "invalid-value"],
      ["bundle.mcpServers[0]", "incomplete"],
    ]);
  });

  it.each([
    ["a host alone", "http://h", true],
    ["a host and port", "https://127.0.0.1:8080", true],
    ["a path", "http://h/v1/", true],
    ["a query on the host", "http://h?x=1", true],
    ["a fragment on the host", "https://h#top", true],
    ["no host", "http:///v1", false],
    ["a space in the path", "http://h/a b", false],
    ["a trailing space", "http://h/v1 ", false],
  ])("agrees with the JSON Schema's URL pattern on %s", (_, baseUrl, ok) => {
    expect(parseSpec(doc({ model: { endpoint: { baseUrl } } })).warnings.length === 0).toBe(ok);
    expect(agentSpecSchema.safeParse(doc({ model: { endpoint: { baseUrl } } })).success).toBe(ok);
  });

  it("never quotes a string value from the document in a message", () => {
    const secret = "sk-proj-abcdefghijklmnopqrstuvwxyz";
    const result = parseSpec(
      doc({
        model: { name: 1, endpoint: { apiKey: secret, baseUrl: secret }, reasoningEffort: secret },
        tasks: { title: { model: 5, endpoint: { baseUrl: secret }, extraBody: { f: Number.NaN } } },
      }),
    );
    for (const found of [...result.errors, ...result.warnings]) expect(found.message).not.toContain(secret);
  });

  it("reads as text when joined, as the seed's example does", () => {
    const { errors } = parseSpec({ spec: "loopwright.agent/2" });
    expect(errors.join("\n")).toMatch(/^spec: is major version 2/);
  });
});

describe("parseSpec: absent inherits, and nothing else does", () => {
  it("reads null as absent at every depth, without a warning", () => {
    const result = parseSpec(
      doc({
        name: null,
        model: { name: "m", temperature: null, endpoint: null, extraBody: { top_k: null, min_p: 0.05 } },
        tools: null,
        tasks: { title: { model: null, maxTokens: 64 } },
        limits: { maxRetries: null },
      }),
    );
    expect(result.warnings).toEqual([]);
    expect(result.spec).toEqual({
      spec: SPEC_TOKEN,
      model: { name: "m", extraBody: { min_p: 0.05 } },
      tasks: { title: { maxTokens: 64 } },
      limits: {},
    });
  });

  it("keeps 0, an empty string and an empty list as the values they are", () => {
    const { spec, warnings } = parseSpec(
      doc({
        model: { name: "", temperature: 0, maxTokens: 0, contextLength: 0, extraBody: {} },
        prompt: [],
        tools: { servers: [] },
        hooks: [{ id: "h", events: [] }],
        limits: { maxToolIterations: 0, maxRetries: 0, loadingTimeoutSeconds: 0 },
      }),
    );
    expect(warnings).toEqual([]);
    expect(spec).toMatchObject({
      model: { name: "", temperature: 0, maxTokens: 0, contextLength: 0, extraBody: {} },
      prompt: [],
      tools: { servers: [] },
      hooks: [{ id: "h", events: [] }],
      limits: { maxToolIterations: 0, maxRetries: 0, loadingTimeoutSeconds: 0 },
    });
  });

  it(`keeps \${VAR} strings literal, never expanded`, () => {
    const { spec } = parseSpec(
      doc({
        model: { name: `\${MODEL}`, extraBody: { user: `\${USER}` } },
        prompt: [{ id: "p", text: `Hello \${NAME}` }],
        bundle: {
          mcpServers: [{ name: "gh", command: "gh-mcp", env: { GITHUB_TOKEN: `\${GITHUB_TOKEN}` } }],
        },
      }),
      { bundle: true },
    );
    expect(spec?.model?.name).toBe(`\${MODEL}`);
    expect(spec?.model?.extraBody).toEqual({ user: `\${USER}` });
    expect(spec?.prompt?.[0]?.text).toBe(`Hello \${NAME}`);
    expect(spec?.bundle?.mcpServers?.[0]?.env).toEqual({ GITHUB_TOKEN: `\${GITHUB_TOKEN}` });
  });

  it("keeps tools.servers absent when the document does not say", () => {
    expect(parseSpec(doc({ tools: { discovery: "ondemand" } })).spec?.tools).toEqual({
      discovery: "ondemand",
    });
  });

  it("keeps a __proto__ key inside an extraBody field as data, and drops one that would be a field", () => {
    // A request body cannot carry a __proto__ field (negotiate's buildBody refuses one): dropped.
    const value = JSON.parse(
      `{"spec":"${SPEC_TOKEN}","model":{"extraBody":{"__proto__":{"x":1},"k":{"__proto__":{"x":1}}}}}`,
    );
    const { spec, warnings } = parseSpec(value);
    const body = spec?.model?.extraBody ?? {};
    expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
    expect(Object.keys(body)).toEqual(["k"]);
    expect(Object.getPrototypeOf(body.k)).toBe(Object.prototype);
    expect(Object.keys(body.k as object)).toEqual(["__proto__"]);
    expect(warnings.map((warning) => warning.path)).toEqual(["model.extraBody.__proto__"]);
  });

  it("copies the document rather than sharing it", () => {
    const value = doc({ model: { extraBody: { stop: ["a"] } }, tools: { servers: ["gh"] } });
    const { spec } = parseSpec(value);
    (spec?.model?.extraBody?.stop as string[] | undefined)?.push("b");
    spec?.tools?.servers?.push("x");
    expect(value).toEqual(doc({ model: { extraBody: { stop: ["a"] } }, tools: { servers: ["gh"] } }));
  });

  it("reads a whole document", () => {
    const full = {
      $schema: "https://unpkg.com/@loopwright/spec/schema/agent.schema.json",
      spec: SPEC_TOKEN,
      requires: ["hooks"],
      name: "Reviewer",
      description: "Reviews pull requests.",
      model: {
        name: "qwen3-32b",
        endpoint: { baseUrl: "http://127.0.0.1:8080/v1", requestTimeoutSeconds: 120, firstTokenSeconds: 600 },
        temperature: 0.6,
        maxTokens: 4096,
        reasoningEffort: "low",
        extraBody: { top_k: 20, chat_template_kwargs: { enable_thinking: false } },
        contextLength: 32768,
      },
      prompt: [{ id: "role", text: "You review code." }],
      tools: {
        servers: ["github"],
        discovery: "ondemand",
        preselect: { enabled: true, keywords: true, routing: "append" },
        parallel: true,
        dedupe: false,
        recover: true,
        order: "given",
      },
      hooks: [
        {
          id: "recall",
          events: ["beforeTurn"],
          server: "memory",
          tool: "recall",
          maxTokens: 500,
          timeoutSeconds: 5,
        },
      ],
      tasks: {
        title: { model: "small", maxTokens: 32, temperature: 0.3 },
        compaction: {
          model: "big",
          endpoint: { baseUrl: "https://api.example.com/v1" },
          reasoningEffort: "high",
          extraBody: { min_p: 0.1 },
        },
      },
      limits: {
        maxToolIterations: 30,
        maxRetries: 3,
        maxContinuations: 1,
        loadingTimeoutSeconds: 120,
        compact: true,
      },
      bundle: {
        mcpServers: [
          {
            name: "github",
            type: "stdio",
            command: "npx",
            args: ["-y", "gh-mcp"],
            env: { GH_TOKEN: `\${GH}` },
          },
          { name: "memory", type: "http", url: "https://mem.example.com/mcp", headers: { "X-Team": "core" } },
        ],
      },
    };
    const result = parseSpec(full, { bundle: true });
    expect(result.errors).toEqual([]);
    expect(result.warnings).toEqual([]);
    expect(result.spec).toEqual(full);
  });
});

describe("parseSpec says why a free-form value is not JSON", () => {
  const doc = (extraBody: unknown) => ({ spec: SPEC_TOKEN, model: { extraBody: { x: extraBody } } });
  const warning = (value: unknown) => String(parseSpec(doc(value)).warnings[0]);

  it.each([
    [
      "nesting past 64 levels (a hostile document), without a stack overflow",
      (() => {
        let deep: unknown = 1;
        for (let i = 0; i < 100_000; i++) deep = { a: [deep] };
        return deep;
      })(),
      /^model\.extraBody\.x: is not a JSON value \(it nests deeper than 64 levels\); dropped\.$/,
    ],
    [
      "a cycle",
      (() => {
        const cycle: Record<string, unknown> = {};
        cycle.self = { back: cycle };
        return cycle;
      })(),
      /\(it refers to itself\)/,
    ],
    [
      "a number JSON cannot write",
      { n: Number.POSITIVE_INFINITY },
      /\(it holds a number JSON cannot write\)/,
    ],
    ["a class instance", { when: new Date(0) }, /\(it holds an object that is not plain data\)/],
    ["a function", [() => 1], /\(it holds a function\)/],
  ])("names %s", (_, value, said) => {
    expect(warning(value)).toMatch(said);
  });
});
