/// <reference types="node" />
import { readFileSync } from "node:fs";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { z } from "zod";
import { parseSpec } from "./parse-spec.js";
import { AGENT_SPEC_SCHEMA_ID, agentSpecJsonSchema, agentSpecSchema, SPEC_TOKEN } from "./schema.js";
import type { AgentSpec } from "./types.js";

// The zod output type with null taken out at every depth: what a parsed spec can hold.
type Present<T> = T extends readonly (infer U)[]
  ? Present<U>[]
  : T extends object
    ? { [K in keyof T]: Present<Exclude<T[K], null>> }
    : T;

describe("the JSON Schema", () => {
  it("is committed as generated from the zod schema (pnpm schema rewrites it)", () => {
    const committed = readFileSync(new URL("../schema/agent.schema.json", import.meta.url), "utf8");
    expect(committed).toBe(`${JSON.stringify(agentSpecJsonSchema(), null, 2)}\n`);
  });

  it("carries an $id and the 2020-12 dialect, so editors can find and read it", () => {
    const schema = agentSpecJsonSchema();
    expect(schema.$id).toBe(AGENT_SPEC_SCHEMA_ID);
    expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    expect(schema.required).toEqual(["spec"]);
  });

  it("has URL patterns an editor reads in one pass on a long URL that fails them", () => {
    const patterns = new Set<string>();
    JSON.stringify(agentSpecJsonSchema(), (key, value) => {
      if (key === "pattern" && String(value).startsWith("^https?")) patterns.add(value);
      return value;
    });
    expect(patterns.size).toBe(1);
    // 100,000 characters and a trailing space: about 13 s when the host and the rest overlapped.
    const bad = `http://${"a".repeat(100_000)} `;
    for (const pattern of patterns) {
      expect(new RegExp(pattern, "u").test(bad)).toBe(false);
      expect(new RegExp(pattern, "u").test(bad.trim())).toBe(true);
    }
  });

  it("is what package.json publishes as ./schema.json", () => {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    expect(pkg.exports["./schema.json"]).toBe("./schema/agent.schema.json");
    expect(pkg.files).toContain("schema");
  });
});

describe("the zod schema", () => {
  it("agrees with the AgentSpec type, field for field", () => {
    expectTypeOf<Present<z.output<typeof agentSpecSchema>>>().toEqualTypeOf<AgentSpec>();
  });

  it("accepts null as an entry's value in tasks, env and headers, which parseSpec reads as absent", () => {
    const document = {
      spec: SPEC_TOKEN,
      tasks: { title: null },
      bundle: { mcpServers: [{ name: "gh", command: "x", env: { A: null }, headers: { B: null } }] },
    };
    expect(parseSpec(document, { bundle: true })).toMatchObject({ errors: [], warnings: [] });
    expect(agentSpecSchema.safeParse(document).success).toBe(true);
    // The JSON Schema an editor reads says the same: each entry's value may be null.
    // biome-ignore lint/suspicious/noExplicitAny: walking the generated JSON document by its known paths
    const json = agentSpecJsonSchema() as any;
    const server = json.properties.bundle.anyOf[0].properties.mcpServers.anyOf[0].items.properties;
    for (const entries of [json.properties.tasks.anyOf[0], server.env.anyOf[0], server.headers.anyOf[0]]) {
      expect(JSON.stringify(entries.additionalProperties)).toContain('"null"');
    }
  });

  it("accepts null where a field is optional, as parseSpec does", () => {
    expect(agentSpecSchema.safeParse({ spec: SPEC_TOKEN, model: { name: null }, tools: null }).success).toBe(
      true,
    );
  });
});
