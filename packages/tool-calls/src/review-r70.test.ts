import { describe, expect, it } from "vitest";
import { ToolArgumentsError } from "./errors.js";
import { parseToolArguments } from "./parse-tool-arguments.js";

// R70F-3: arguments handed over as an object (a host's own, an SDK that parsed them) were copied
// through JSON, which writes NaN and ±Infinity as null: { limit: NaN } reached the tool as
// { limit: null }, silently, where the same NaN written as text is refused as malformed.

describe("R70F-3: an arguments object holding NaN or Infinity is refused, not handed over as null", () => {
  for (const [label, args] of [
    ["NaN", { query: "cats", limit: Number.NaN }],
    ["Infinity", { query: "cats", limit: Number.POSITIVE_INFINITY }],
    ["-Infinity in an array", { query: "cats", range: [Number.NEGATIVE_INFINITY, 3] }],
  ] as const) {
    it(`refuses ${label} as malformed, naming it`, () => {
      let caught: unknown;
      try {
        parseToolArguments(args, { name: "search" });
      } catch (error) {
        caught = error;
      }
      expect(ToolArgumentsError.isInstance(caught)).toBe(true);
      const error = caught as ToolArgumentsError;
      expect(error.kind).toBe("malformed");
      expect(error.message).toContain(label.split(" ")[0]);
      expect(error.message).toContain("the search call");
    });
  }

  it("still takes an object of finite numbers as it is", () => {
    const { value, json } = parseToolArguments({ query: "cats", limit: 1e308, offset: -0.5 });
    expect(value).toEqual({ query: "cats", limit: 1e308, offset: -0.5 });
    expect(json).toBe('{"query":"cats","limit":1e+308,"offset":-0.5}');
  });
});

// R70F-5: arguments nested deeper than 512 levels are refused (README, Limits), but the model was
// told they "could not be read as JSON" even when they were valid JSON: told it wrote no JSON, a
// model sends the same again. The refusal now names the depth.
describe("R70F-5: arguments refused for their depth say so", () => {
  for (const [label, text] of [
    ["valid JSON 600 levels deep", `{"a":${"[".repeat(600)}${"]".repeat(600)}}`],
    ["almost-JSON 600 levels deep", `{a:${"[".repeat(600)}${"]".repeat(600)},}`],
    ["valid JSON 100,000 levels deep", `{"a":${"[".repeat(100_000)}${"]".repeat(100_000)}}`],
  ] as const) {
    it(`names the depth for ${label}`, () => {
      let caught: unknown;
      try {
        parseToolArguments(text, { name: "write_file" });
      } catch (error) {
        caught = error;
      }
      expect(ToolArgumentsError.isInstance(caught)).toBe(true);
      expect((caught as ToolArgumentsError).kind).toBe("malformed");
      expect((caught as ToolArgumentsError).message).toContain("nest deeper than 512 levels");
    });
  }

  it("still reads 500 levels, and still says 'could not be read' of text that is no JSON", () => {
    expect(parseToolArguments(`{"a":${"[".repeat(500)}${"]".repeat(500)}}`).json).toContain("[[[");
    expect(() => parseToolArguments("{{{]]]")).toThrow(/could not be read as JSON/);
  });
});
