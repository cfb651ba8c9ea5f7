/// <reference types="node" />
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { exportSpec } from "./export-spec.js";
import { parseSpec } from "./parse-spec.js";
import { resolveAgentSpec } from "./resolve-agent-spec.js";
import { SPEC_TOKEN } from "./schema.js";

// Review r79a: the document side (parse, layer, export).

/** The shipped JSON Schema, as an editor reads it. */
const validate = new Ajv2020({ strict: false }).compile(
  JSON.parse(readFileSync(new URL("../schema/agent.schema.json", import.meta.url), "utf8")),
);

describe("an extraBody __proto__ key (r79a #1)", () => {
  // As JSON text gives it: an own key. Resolved, it reached @loopwright/negotiate's buildBody,
  // which refuses a config whose extraBody holds one, so a document that parsed without a word
  // failed every request of the run.
  const text = `{
    "spec": "${SPEC_TOKEN}",
    "model": { "name": "m", "extraBody": { "__proto__": { "top_k": 5 }, "min_p": 0.1 } },
    "tasks": { "title": { "extraBody": { "__proto__": 1, "top_k": 2 } } }
  }`;

  it("is dropped with a warning naming it, the rest of the body kept", () => {
    const { spec, warnings } = parseSpec(JSON.parse(text));
    expect(warnings.map(String)).toEqual([
      "model.extraBody.__proto__: is not an accepted name (a request body cannot carry a __proto__ field); dropped.",
      "tasks.title.extraBody.__proto__: is not an accepted name (a request body cannot carry a __proto__ field); dropped.",
    ]);
    const config = resolveAgentSpec([spec as NonNullable<typeof spec>]);
    expect(Object.keys(config.extraBody ?? {})).toEqual(["min_p"]);
    expect(Object.keys(config.tasks.title?.extraBody ?? {})).toEqual(["top_k"]);
  });

  it("is refused by the JSON Schema too, and kept deeper inside a field's value", () => {
    expect(validate(JSON.parse(text))).toBe(false);
    const nested = JSON.parse(
      `{ "spec": "${SPEC_TOKEN}", "model": { "extraBody": { "chat_template_kwargs": { "__proto__": 1 } } } }`,
    );
    expect(validate(nested)).toBe(true);
    const { spec, warnings } = parseSpec(nested);
    expect(warnings).toEqual([]);
    expect(JSON.stringify(exportSpec(spec as NonNullable<typeof spec>).model)).toBe(
      '{"extraBody":{"chat_template_kwargs":{"__proto__":1}}}',
    );
  });
});
