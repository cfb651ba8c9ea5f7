// Review r85 (spec, the lead's): a field some code set on a polluted Object.prototype made zod's
// strict objects refuse every part of every document ("Unrecognized key"): parseSpec dropped the
// model and its endpoint whole, and resolveAgentSpec refused every spec. Fails before the fix.
import { describe, expect, it } from "vitest";
import { parseSpec, resolveAgentSpec } from "./index.js";

const DOC = {
  spec: "loopwright.agent/1",
  name: "helper",
  model: {
    name: "m",
    temperature: 0.2,
    endpoint: { baseUrl: "http://127.0.0.1:8080/v1" },
    extraBody: { top_k: 40, nested: { a: [1, { b: 2 }] } },
  },
  tasks: { compaction: { model: "small" } },
};

function polluted<T>(name: string, body: () => T): T {
  Object.defineProperty(Object.prototype, name, {
    value: 1,
    configurable: true,
    writable: true,
    enumerable: true,
  });
  try {
    return body();
  } finally {
    delete (Object.prototype as Record<string, unknown>)[name];
  }
}

describe("R85P-1: documents read the same under a polluted Object.prototype", () => {
  it("parseSpec keeps every part, with no warning, and hands back plain objects", () => {
    const clean = parseSpec(DOC);
    expect(clean.warnings).toEqual([]);
    for (const name of ["x", "tool_calls", "enabled"]) {
      const read = polluted(name, () => parseSpec(DOC));
      expect({ name, read }).toEqual({ name, read: clean });
    }
    const read = polluted("x", () => parseSpec(DOC));
    expect(Object.getPrototypeOf(read.spec?.model?.extraBody?.nested)).toBe(Object.prototype);
  });

  it("resolveAgentSpec resolves a spec it resolves unpolluted", () => {
    const resolve = () => {
      const { spec } = parseSpec(DOC);
      return spec === undefined ? undefined : resolveAgentSpec([spec]);
    };
    const clean = resolve();
    expect(clean?.model).toBe("m");
    expect(polluted("x", resolve)).toEqual(clean);
  });
});
