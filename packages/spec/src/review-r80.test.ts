/// <reference types="node" />
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets } from "./find-spec-secrets.js";
import { parseSpec } from "./parse-spec.js";
import { resolveAgentSpec } from "./resolve-agent-spec.js";
import { agentSpecSchema, SPEC_TOKEN } from "./schema.js";
import type { AgentSpec } from "./types.js";

// Review r80e: what r79a left on the document side.

/** The shipped JSON Schema, as an editor reads it. */
const validate = new Ajv2020({ strict: false }).compile(
  JSON.parse(readFileSync(new URL("../schema/agent.schema.json", import.meta.url), "utf8")),
);

/** Parses a layer the way a host does (bundled servers accepted), failing on any warning. */
function layer(document: Record<string, unknown>): AgentSpec {
  const { spec, errors, warnings } = parseSpec({ spec: SPEC_TOKEN, ...document }, { bundle: true });
  expect([...errors, ...warnings].map(String)).toEqual([]);
  return spec as AgentSpec;
}

describe("a switch-off entry in a stronger layer (r80e #1)", () => {
  // SPEC.md: "enabled: false switches off a server a weaker layer bundled" (and a hook a weaker
  // layer declared). Written as { name, enabled: false }, it was dropped for lacking command/url
  // (events for a hook), so the weaker layer's server and hook kept running.
  const host = {
    hooks: [
      { id: "audit", events: ["afterTurn"], server: "log", tool: "write" },
      { id: "greet", events: ["sessionStart"] },
    ],
    bundle: {
      mcpServers: [
        { name: "github", command: "npx", args: ["-y", "github-mcp"] },
        { name: "docs", url: "http://127.0.0.1:9000/mcp" },
      ],
    },
  };
  const off = {
    hooks: [{ id: "audit", enabled: false }],
    bundle: { mcpServers: [{ name: "github", enabled: false }] },
  };

  it("switches the weaker layer's server and hook off, end to end", () => {
    const config = resolveAgentSpec([layer(host), layer(off)]);
    expect(config.hooks.map((hook) => hook.id)).toEqual(["greet"]);
    expect(config.mcpServers?.map((server) => server.name)).toEqual(["docs"]);
  });

  it("is what the zod schema and the shipped JSON Schema accept, and an export keeps", () => {
    const document = { spec: SPEC_TOKEN, ...off };
    expect(agentSpecSchema.safeParse(document).success).toBe(true);
    expect(validate(document)).toBe(true);
    const exported = exportSpec(layer(off));
    expect(exported).toEqual(document);
    expect(resolveAgentSpec([layer(host), exported]).mcpServers?.map((server) => server.name)).toEqual([
      "docs",
    ]);
  });

  it("a still stronger layer turns back on with a whole entry; a bare id without enabled: false is still dropped", () => {
    const again = layer({ hooks: [{ id: "audit", events: ["beforeTurn"] }] });
    const config = resolveAgentSpec([layer(host), layer(off), again]);
    expect(config.hooks).toEqual([
      { id: "audit", events: ["beforeTurn"] },
      { id: "greet", events: ["sessionStart"] },
    ]);
    for (const entry of [{ id: "audit" }, { id: "audit", enabled: true }]) {
      const { warnings } = parseSpec({ spec: SPEC_TOKEN, hooks: [entry] });
      expect(warnings.map(String)).toEqual(["hooks[0]: events is missing; dropped whole."]);
      expect(validate({ spec: SPEC_TOKEN, hooks: [entry] })).toBe(false);
    }
    for (const entry of [{ name: "github" }, { name: "github", enabled: true }]) {
      const document = { spec: SPEC_TOKEN, bundle: { mcpServers: [entry] } };
      expect(parseSpec(document, { bundle: true }).warnings.map((warning) => warning.code)).toEqual([
        "incomplete",
      ]);
      expect(validate(document)).toBe(false);
    }
    // A switch-off still holds to the other rules: not both command and url.
    const both = { name: "github", command: "x", url: "http://h/", enabled: false };
    expect(validate({ spec: SPEC_TOKEN, bundle: { mcpServers: [both] } })).toBe(false);
  });
});

describe("an empty task model (r80e #2)", () => {
  // "" passed as a value and overrode the host's default for the task (toolSelectModel): the side
  // task then refused a call with no model at run time. No model has an empty or blank name.
  it("is dropped with a warning, so the side task's default model applies", () => {
    for (const name of ["", " ", "\t\n"]) {
      const document = { spec: SPEC_TOKEN, tasks: { toolSelect: { model: name, maxTokens: 64 } } };
      const { spec, warnings } = parseSpec(document);
      expect(warnings.map(String)).toEqual([
        "tasks.toolSelect.model: expected a model name, not empty and not only blanks, got a string; dropped, not corrected, so the side task's own default applies.",
      ]);
      expect(validate(document)).toBe(false);
      const config = resolveAgentSpec([
        layer({ tasks: { toolSelect: { model: "small" } } }),
        spec as AgentSpec,
      ]);
      expect(config.tasks).toEqual({ toolSelect: { maxTokens: 64 } });
    }
  });

  it("keeps any model name that has a character, and the main model's empty name (a value there)", () => {
    const { spec, warnings } = parseSpec({
      spec: SPEC_TOKEN,
      model: { name: "" },
      tasks: { title: { model: " qwen3:0.6b " } },
    });
    expect(warnings).toEqual([]);
    expect(resolveAgentSpec([spec as AgentSpec])).toMatchObject({
      model: "",
      tasks: { title: { model: " qwen3:0.6b " } },
    });
  });
});

describe("a credential pasted as a name, other than a key shape (r80e #3)", () => {
  // r79a dropped a key-shaped name (ghp_…) in env, headers, tasks and extraBody; a name holding a
  // URL's credentials or a telling pair was kept: findSpecSecrets read values, not names, so it
  // said nothing, and exportSpec handed an extraBody field named so on in clear.
  const names = [
    "postgres://app:Zq7xW2pLm9@db/app",
    "https://h/mcp?api_key=Zq7xW2pLm9",
    "password=Zq7xW2pLm9",
    "--api-key=Zq7xW2pLm9",
  ];

  it("is dropped with a credential warning whose path never quotes it, and never reaches an export", () => {
    for (const name of names) {
      const { spec, warnings } = parseSpec(
        {
          spec: SPEC_TOKEN,
          model: { extraBody: { [name]: 1, top_k: 5, kwargs: { [name]: "x" } } },
          bundle: {
            mcpServers: [{ name: "s", command: "srv", env: { [name]: "1" }, headers: { [name]: "v" } }],
          },
        },
        { bundle: true },
      );
      expect(warnings.map((warning) => warning.code)).toEqual([
        "credential",
        "credential",
        "credential",
        "credential",
      ]);
      expect(warnings.join("\n")).not.toContain("Zq7xW2pLm9");
      expect(warnings.join("\n")).toContain("is a name holding a credential");
      const parsed = spec as AgentSpec;
      expect(findSpecSecrets(parsed)).toEqual([]);
      expect(exportSpec(parsed)).toEqual({
        spec: SPEC_TOKEN,
        model: { extraBody: { top_k: 5 } },
        bundle: { mcpServers: [{ name: "s", command: "srv" }] },
      });
      // Built in code, such a spec is refused by both, as one with a key-shaped name is.
      const built = { spec: SPEC_TOKEN, model: { extraBody: { [name]: 1 } } } as AgentSpec;
      expect(() => exportSpec(built)).toThrow(/name holding a credential/);
      expect(() => findSpecSecrets(built)).toThrow(/name holding a credential/);
      expect(() => exportSpec(built)).not.toThrow(/Zq7xW2pLm9/);
    }
  });

  it("keeps a name that holds none: a reference in the pair, a URL without credentials, a plain field", () => {
    const { warnings } = parseSpec({
      spec: SPEC_TOKEN,
      model: {
        extraBody: {
          "password=${DB_PASSWORD}": 1,
          "https://example.com/schema": 2,
          "mode=fast": 3,
          api_key_header: 4,
        },
      },
    });
    expect(warnings).toEqual([]);
  });
});
