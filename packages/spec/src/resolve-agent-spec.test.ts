import { describe, expect, it } from "vitest";
import { AgentSpecError } from "./errors.js";
import { parseSpec } from "./parse-spec.js";
import { DEFAULT_MAX_TOOL_ITERATIONS, resolveAgentSpec } from "./resolve-agent-spec.js";
import { SPEC_TOKEN } from "./schema.js";
import type { AgentSpec } from "./types.js";

const layer = (rest: Omit<AgentSpec, "spec"> = {}): AgentSpec => ({ spec: SPEC_TOKEN, ...rest });

describe("resolveAgentSpec: a stronger layer wins where it speaks, and only there", () => {
  it.each<[string, AgentSpec[], Record<string, unknown>]>([
    [
      "a field the strong layer leaves out is inherited",
      [layer({ model: { name: "base", temperature: 0.2 } }), layer({ model: { name: "strong" } })],
      { model: "strong", temperature: 0.2 },
    ],
    [
      "0 from a stronger layer is a value, not inherit",
      [
        layer({ model: { maxTokens: 4096, temperature: 0.7 } }),
        layer({ model: { maxTokens: 0, temperature: 0 } }),
      ],
      { maxTokens: 0, temperature: 0 },
    ],
    [
      "an empty model name from a stronger layer is a value",
      [layer({ model: { name: "base" } }), layer({ model: { name: "" } })],
      { model: "" },
    ],
    [
      "endpoint fields inherit one by one",
      [
        layer({ model: { endpoint: { baseUrl: "http://a/v1", requestTimeoutSeconds: 30 } } }),
        layer({ model: { endpoint: { firstTokenSeconds: 300 } } }),
      ],
      { baseUrl: "http://a/v1", requestTimeoutSeconds: 30, firstTokenSeconds: 300 },
    ],
    [
      "extraBody is replaced whole, never merged",
      [
        layer({ model: { extraBody: { top_k: 20, min_p: 0.05 } } }),
        layer({ model: { extraBody: { top_p: 0.9 } } }),
      ],
      { extraBody: { top_p: 0.9 } },
    ],
    [
      "an empty extraBody clears the inherited one",
      [layer({ model: { extraBody: { top_k: 20 } } }), layer({ model: { extraBody: {} } })],
      { extraBody: {} },
    ],
    [
      "tools.servers absent inherits the weaker list",
      [layer({ tools: { servers: ["github"] } }), layer({ tools: { discovery: "proxy" } })],
      { servers: ["github"], toolDiscovery: "proxy" },
    ],
    [
      "tools.servers [] replaces a list: none, not a union",
      [layer({ tools: { servers: ["github", "fs"] } }), layer({ tools: { servers: [] } })],
      { servers: [] },
    ],
    [
      "tools.servers is replaced whole, never unioned",
      [layer({ tools: { servers: ["github", "fs"] } }), layer({ tools: { servers: ["fs", "web"] } })],
      { servers: ["fs", "web"] },
    ],
    [
      "limits inherit one by one",
      [layer({ limits: { maxToolIterations: 10, maxRetries: 2 } }), layer({ limits: { maxRetries: 0 } })],
      { maxToolIterations: 10, maxRetries: 0 },
    ],
    [
      "tool switches map to the loop's spelling",
      [
        layer({
          tools: {
            preselect: { enabled: true, keywords: false, routing: "append" },
            parallel: true,
            dedupe: false,
            recover: false,
            order: "given",
          },
        }),
      ],
      {
        preselect: true,
        preselectKeywords: false,
        preselectRouting: "append",
        parallel: true,
        dedupeToolCalls: false,
        recoverToolCalls: false,
        toolOrder: false,
      },
    ],
  ])("%s", (_, layers, expected) => {
    expect(resolveAgentSpec(layers)).toMatchObject(expected);
  });

  it("leaves out what no layer stated", () => {
    const config = resolveAgentSpec([layer({ model: { name: "m" } })]);
    expect(config).toEqual({
      baseUrl: "",
      apiKey: "",
      model: "m",
      maxToolIterations: DEFAULT_MAX_TOOL_ITERATIONS,
      prompt: [],
      hooks: [],
      tasks: {},
    });
    expect("servers" in config).toBe(false);
    expect("mcpServers" in config).toBe(false);
  });

  it("resolves no layers to the format's defaults", () => {
    expect(resolveAgentSpec([])).toEqual({
      baseUrl: "",
      apiKey: "",
      model: "",
      maxToolIterations: DEFAULT_MAX_TOOL_ITERATIONS,
      prompt: [],
      hooks: [],
      tasks: {},
    });
  });

  it("always resolves apiKey to the empty string, whatever the endpoint", () => {
    const config = resolveAgentSpec([
      layer({ model: { endpoint: { baseUrl: "https://api.openai.com/v1" } } }),
      layer({ tasks: { title: { endpoint: { baseUrl: "https://other.example/v1" } } } }),
    ]);
    expect(config.apiKey).toBe("");
    expect(config.tasks.title?.endpoint).toEqual({ baseUrl: "https://other.example/v1", apiKey: "" });
  });
});

describe("resolveAgentSpec merges prompt, hooks, tasks and bundled servers by id", () => {
  it("stacks new prompt ids and replaces a known one in its place", () => {
    const config = resolveAgentSpec([
      layer({
        prompt: [
          { id: "house", text: "House rules." },
          { id: "role", text: "You are helpful." },
        ],
      }),
      layer({
        prompt: [
          { id: "role", text: "You review code." },
          { id: "style", text: "Be brief." },
        ],
      }),
    ]);
    expect(config.prompt).toEqual([
      { id: "house", text: "House rules." },
      { id: "role", text: "You review code." },
      { id: "style", text: "Be brief." },
    ]);
  });

  it("lets an empty prompt text replace an inherited entry with nothing", () => {
    const config = resolveAgentSpec([
      layer({ prompt: [{ id: "role", text: "x" }] }),
      layer({ prompt: [{ id: "role", text: "" }] }),
    ]);
    expect(config.prompt).toEqual([{ id: "role", text: "" }]);
  });

  it("replaces a hook by id, and leaves out one a stronger layer switched off", () => {
    const config = resolveAgentSpec([
      layer({
        hooks: [
          { id: "recall", events: ["beforeTurn"], maxTokens: 500 },
          { id: "audit", events: ["afterTurn"] },
        ],
      }),
      layer({
        hooks: [
          { id: "recall", events: ["beforeTurn", "sessionStart"] },
          { id: "audit", events: ["afterTurn"], enabled: false },
        ],
      }),
    ]);
    expect(config.hooks).toEqual([{ id: "recall", events: ["beforeTurn", "sessionStart"] }]);
  });

  it("replaces a task whole: it holds only what the layer naming it stated", () => {
    const config = resolveAgentSpec([
      layer({
        model: { name: "main", temperature: 1 },
        tasks: {
          title: { model: "small", temperature: 0.3, maxTokens: 32 },
          compaction: { model: "big" },
        },
      }),
      layer({ tasks: { title: { model: "tiny" } } }),
    ]);
    expect(config.tasks).toEqual({ title: { model: "tiny" }, compaction: { model: "big" } });
    expect(config.tasks.title?.temperature).toBeUndefined();
  });

  it("keeps bundled servers by name and leaves out a switched-off one", () => {
    const config = resolveAgentSpec([
      layer({
        bundle: {
          mcpServers: [
            { name: "gh", command: "gh-mcp" },
            { name: "fs", command: "fs-mcp" },
          ],
        },
      }),
      layer({
        bundle: {
          mcpServers: [
            { name: "gh", command: "gh-mcp", args: ["--read-only"] },
            { name: "fs", command: "fs-mcp", enabled: false },
          ],
        },
      }),
    ]);
    expect(config.mcpServers).toEqual([{ name: "gh", command: "gh-mcp", args: ["--read-only"] }]);
  });

  it("shares nothing with its layers", () => {
    const base = layer({ model: { extraBody: { stop: ["x"] } }, tools: { servers: ["a"] } });
    const config = resolveAgentSpec([base]);
    (config.extraBody?.stop as string[] | undefined)?.push("y");
    config.servers?.push("b");
    expect(base.model?.extraBody).toEqual({ stop: ["x"] });
    expect(base.tools?.servers).toEqual(["a"]);
  });

  it("resolves the seed's example: host settings under a pasted document", () => {
    const pasted = parseSpec({
      spec: SPEC_TOKEN,
      model: { name: "qwen3-32b", reasoningEffort: "low" },
      tools: { servers: [] },
      prompt: [{ id: "role", text: "You name things." }],
    });
    if (!pasted.spec) throw new Error(pasted.errors.join("\n"));
    const settings = layer({
      model: { name: "gpt-4o", endpoint: { baseUrl: "http://127.0.0.1:8080/v1" }, temperature: 0.7 },
      limits: { maxToolIterations: 12 },
    });
    expect(resolveAgentSpec([settings, pasted.spec])).toMatchObject({
      baseUrl: "http://127.0.0.1:8080/v1",
      apiKey: "",
      model: "qwen3-32b",
      temperature: 0.7,
      reasoningEffort: "low",
      maxToolIterations: 12,
      servers: [],
      prompt: [{ id: "role", text: "You name things." }],
    });
  });
});

describe("resolveAgentSpec refuses what is not a parsed spec", () => {
  it.each<[string, unknown, string]>([
    ["a layer list that is not a list", { spec: SPEC_TOKEN }, "not-a-list"],
    ["an undefined layer", [undefined], "not-a-spec"],
    ["a raw string", ["loopwright.agent/1"], "not-a-spec"],
    ["a hand-built layer with a temperature of 5", [layer({ model: { temperature: 5 } })], "not-a-spec"],
    ["a layer of another major", [{ spec: "loopwright.agent/2" }], "not-a-spec"],
    ["a list of one hole", new Array(1), "not-a-spec"],
    // biome-ignore lint/suspicious/noSparseArray: a hole between two layers, meant.
    ["a hole between two layers", [layer(), , layer()], "not-a-spec"],
  ])("throws an AgentSpecError for %s", (_, layers, code) => {
    let thrown: unknown;
    try {
      resolveAgentSpec(layers as AgentSpec[]);
    } catch (error) {
      thrown = error;
    }
    expect(AgentSpecError.isInstance(thrown)).toBe(true);
    expect((thrown as AgentSpecError).code).toBe(code);
    expect((thrown as AgentSpecError).message).toMatch(/^resolveAgentSpec: /);
  });

  it("names the layer a hole stands in", () => {
    // biome-ignore lint/suspicious/noSparseArray: a hole between two layers, meant.
    expect(() => resolveAgentSpec([layer(), , layer()] as AgentSpec[])).toThrow(
      /^resolveAgentSpec: layer 1 is not a parsed agent spec: an agent document is a JSON object/,
    );
  });

  it("names the layer and the problem, in sentences that end once", () => {
    expect(() => resolveAgentSpec([layer(), layer({ model: { temperature: 5 } })])).toThrow(
      /layer 1 is not a parsed agent spec: model\.temperature: expected a number from 0 to 2/,
    );
    expect(() => resolveAgentSpec([layer({ model: { temperature: 5 } })])).not.toThrow(/\.\./);
  });

  it("accepts a spec that requires a feature the host added", () => {
    const parsed = parseSpec(
      { spec: SPEC_TOKEN, requires: ["x-host.memory"] },
      { features: ["x-host.memory"] },
    );
    expect(() => resolveAgentSpec([parsed.spec as AgentSpec])).not.toThrow();
  });
});
