import { describe, expect, it } from "vitest";
import { AgentSpecError } from "./errors.js";
import { exportSpec } from "./export-spec.js";
import { parseSpec } from "./parse-spec.js";
import { SPEC_TOKEN } from "./schema.js";
import type { AgentSpec } from "./types.js";

const spec: AgentSpec = {
  spec: SPEC_TOKEN,
  model: { name: "m", extraBody: { top_k: 20 } },
  bundle: {
    mcpServers: [
      {
        name: "gh",
        command: "npx",
        args: ["gh-mcp", "--token", "abc"],
        env: { GITHUB_TOKEN: "ghp_x", DEBUG: "1" },
        cwd: "/srv",
      },
      { name: "mem", url: "https://mem.example/mcp?token=abc", headers: { Authorization: "Bearer abc" } },
    ],
  },
};

describe("exportSpec", () => {
  it("strips every bundled server's env and headers, and keeps the rest", () => {
    expect(exportSpec(spec)).toEqual({
      spec: SPEC_TOKEN,
      model: { name: "m", extraBody: { top_k: 20 } },
      bundle: {
        mcpServers: [
          { name: "gh", command: "npx", args: ["gh-mcp", "--token", "abc"], cwd: "/srv" },
          { name: "mem", url: "https://mem.example/mcp?token=abc" },
        ],
      },
    });
  });

  it("yields a document that parses back whole", () => {
    const text = JSON.stringify(exportSpec(spec));
    const again = parseSpec(JSON.parse(text), { bundle: true });
    expect(again.errors).toEqual([]);
    expect(again.warnings).toEqual([]);
    expect(again.spec).toEqual(exportSpec(spec));
  });

  it("never changes its argument", () => {
    const before = JSON.stringify(spec);
    exportSpec(spec);
    expect(JSON.stringify(spec)).toBe(before);
  });

  it("leaves a spec with nothing bundled as it was", () => {
    const plain: AgentSpec = { spec: SPEC_TOKEN, prompt: [{ id: "a", text: "b" }] };
    expect(exportSpec(plain)).toEqual(plain);
  });

  it("throws an AgentSpecError naming the problem for something that is not a parsed spec", () => {
    const bad = { spec: SPEC_TOKEN, model: { temperature: 9 } } as AgentSpec;
    expect(() => exportSpec(bad)).toThrow(AgentSpecError);
    expect(() => exportSpec(bad)).toThrow(
      /exportSpec: the spec is not a parsed agent spec: model\.temperature/,
    );
  });
});
