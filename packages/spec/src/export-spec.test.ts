// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these strings are shell commands and spec placeholders, where ${…} is meant literally.
import { describe, expect, it } from "vitest";
import { AgentSpecError } from "./errors.js";
import { exportSpec } from "./export-spec.js";
import { findSpecSecrets } from "./find-spec-secrets.js";
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
  it("strips every bundled server's env and headers, redacts flagged places, and keeps the rest", () => {
    expect(exportSpec(spec)).toEqual({
      spec: SPEC_TOKEN,
      model: { name: "m", extraBody: { top_k: 20 } },
      bundle: {
        mcpServers: [
          { name: "gh", command: "npx", args: ["gh-mcp", "--token", "${TOKEN}"], cwd: "/srv" },
          { name: "mem", url: "https://mem.example/mcp" },
        ],
      },
    });
  });

  it("takes userinfo and key-like query parameters out of URLs, keeping the rest as written", () => {
    const withUrls: AgentSpec = {
      spec: SPEC_TOKEN,
      model: { endpoint: { baseUrl: "https://me:pw@api.example/v1?api_key=abc&region=${REGION}#x" } },
      tasks: { title: { endpoint: { baseUrl: "http://ghp_abcdefghijklmnopqrstuvwx@h.example/v1" } } },
    };
    const exported = exportSpec(withUrls);
    expect(exported.model?.endpoint?.baseUrl).toBe("https://api.example/v1?region=${REGION}#x");
    expect(exported.tasks?.title?.endpoint?.baseUrl).toBe("http://h.example/v1");
    expect(findSpecSecrets(exported)).toEqual([]);
  });

  it("replaces flagged arguments and telling extraBody fields with references a host fills in", () => {
    const flagged: AgentSpec = {
      spec: SPEC_TOKEN,
      model: { extraBody: { api_key: "abc", nested: { list: ["sk-abcdefghijklmnopqrstuvwx"] } } },
      bundle: {
        mcpServers: [
          {
            name: "s",
            command: "docker",
            args: [
              "run",
              "-e",
              "GITHUB_TOKEN=ghp_x",
              "--api-key=abc",
              "Authorization: Bearer abcdefgh1",
              "img",
            ],
          },
        ],
      },
    };
    const exported = exportSpec(flagged);
    expect(exported.model?.extraBody).toEqual({ api_key: "${API_KEY}", nested: { list: ["${SECRET}"] } });
    expect(exported.bundle?.mcpServers?.[0]?.args).toEqual([
      "run",
      "-e",
      "GITHUB_TOKEN=${GITHUB_TOKEN}",
      "--api-key=${API_KEY}",
      "Authorization: ${AUTHORIZATION}",
      "img",
    ]);
    expect(findSpecSecrets(exported)).toEqual([]);
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
