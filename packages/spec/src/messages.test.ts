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

describe("spec messages never quote a credential back", () => {
  const key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx";

  it("does not quote a key pasted as a requires entry, and says where it was", () => {
    const result = parseSpec(doc({ requires: ["hooks", key] }));
    expect(result.spec).toBeUndefined();
    const [error] = result.errors;
    expect(error?.path).toBe("requires[1]");
    expect(error?.message).toMatch(/^requires\[1\]: /);
    expect(error?.message).not.toContain("AbCdEfGhIjKl");
    expect(error?.message).toContain("${SECRET}");
  });

  it("still quotes an unknown feature name that is not shaped like a key", () => {
    expect(String(parseSpec(doc({ requires: ["teleport"] })).errors[0])).toContain('"teleport"');
  });

  it("does not quote a key pasted as a field name in any path or message", () => {
    const result = parseSpec(doc({ [key]: true, model: { [key]: 1 }, tasks: { [key]: { model: 1 } } }));
    const said = [...result.errors, ...result.warnings].map((found) => `${found.path}\n${found.message}`);
    expect(said.length).toBeGreaterThanOrEqual(3);
    for (const text of said) expect(text).not.toContain("AbCdEfGhIjKl");
  });

  it("redacts the shortest key shapes there are in a field name", () => {
    for (const name of ["Basic abcdefgh", "xoxb-abcdefghij"]) {
      const [warning] = parseSpec(doc({ [name]: 1 })).warnings;
      expect(warning?.path).toBe('["${SECRET}"]');
    }
  });

  it("names a huge field name in at most a line", () => {
    const long = `x-${"a".repeat(100_000)}`;
    const [warning] = parseSpec(doc({ [long]: 1 })).warnings;
    expect(warning?.code).toBe("unknown-field");
    expect(warning?.message.length).toBeLessThan(300);
  });
});
