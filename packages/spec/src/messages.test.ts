import { describe, expect, it } from "vitest";
import { AgentSpecError } from "./errors.js";
import { parseSpec } from "./parse-spec.js";
import { resolveAgentSpec } from "./resolve-agent-spec.js";
import { SPEC_TOKEN } from "./schema.js";
import type { AgentSpec } from "./types.js";

const doc = (fields: Record<string, unknown>) => ({ spec: SPEC_TOKEN, ...fields });
const warningAt = (value: unknown, path: string) =>
  parseSpec(value).warnings.find((found) => found.path === path)?.message ?? "";

describe("spec messages name what is allowed", () => {
  it("lists the accepted values of a field with a fixed set", () => {
    const message = warningAt(doc({ model: { reasoningEffort: "ultra" } }), "model.reasoningEffort");
    expect(message).toContain('one of "off", "none", "minimal", "low", "medium", "high", "xhigh", "max"');
    expect(message).not.toContain("ultra");
    expect(message).not.toMatch(/string of \d/);
  });

  it("states a number's range without echoing the number", () => {
    const message = warningAt(doc({ model: { temperature: 3 } }), "model.temperature");
    expect(message).toMatch(/^model\.temperature: expected a number from 0 to 2, got a number;/);
    expect(message).not.toMatch(/\b3\b/);
  });

  it("names the kind expected for a mistyped value", () => {
    expect(warningAt(doc({ model: { maxTokens: "many" } }), "model.maxTokens")).toMatch(
      /expected a whole number of at least 0, got a string/,
    );
    expect(warningAt(doc({ tools: { parallel: "yes" } }), "tools.parallel")).toMatch(
      /expected true or false, got a string/,
    );
  });

  it("says what a document is when handed a list", () => {
    const [error] = parseSpec([]).errors;
    expect(String(error)).toContain(`a JSON object such as { "spec": "${SPEC_TOKEN}" }`);
    expect(String(error)).not.toMatch(/list of 0/);
  });

  it("suggests JSON.parse when handed JSON text", () => {
    const [error] = parseSpec(JSON.stringify(doc({ name: "x" }))).errors;
    expect(String(error)).toContain("JSON.parse");
  });

  it("calls a wrong container by its kind, not its length", () => {
    expect(String(parseSpec(doc({ model: [] })).errors[0])).toBe("model: must be an object, not a list.");
  });
});

describe("resolveAgentSpec's errors read as errors", () => {
  it("says what is wrong without a warning's 'dropped' wording", () => {
    let thrown: unknown;
    try {
      resolveAgentSpec([doc({ model: { temperature: 5 } }) as AgentSpec]);
    } catch (error) {
      thrown = error;
    }
    expect(AgentSpecError.isInstance(thrown)).toBe(true);
    const message = (thrown as Error).message;
    expect(message).toContain("model.temperature: expected a number from 0 to 2, got a number");
    expect(message).not.toMatch(/dropped|not corrected|weaker layer/);
  });
});
