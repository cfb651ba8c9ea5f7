import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ToolCallsError } from "./errors.js";
import { recoverToolCalls, toolForArguments } from "./index.js";

// `toolForArguments` names the tool a call that names none is for, by its arguments' keys: the
// rule recoverToolCalls reads a Harmony commentary call with no recipient by, exported for a host
// (and the loop) whose server parsed such a call itself.

function tool(name: string, properties: readonly string[], required: readonly string[]) {
  return {
    type: "function" as const,
    function: {
      name,
      parameters: {
        type: "object",
        properties: Object.fromEntries(properties.map((p) => [p, { type: "string" }])),
        required: [...required],
      },
    },
  };
}

describe("toolForArguments", () => {
  const tools = [tool("get_weather", ["city", "unit"], ["city"]), tool("read_file", ["path"], ["path"])];

  it("names the one tool whose parameters list every key given and whose required keys are all given", () => {
    expect(toolForArguments({ city: "Oslo" }, tools)).toBe("get_weather");
    expect(toolForArguments({ city: "Oslo", unit: "C" }, tools)).toBe("get_weather");
    expect(toolForArguments({ path: "a.txt" }, tools)).toBe("read_file");
  });

  it("names none for a key no tool lists, a required key left out, or two tools that fit", () => {
    expect(toolForArguments({ city: "Oslo", path: "a" }, tools)).toBeUndefined();
    expect(toolForArguments({ unit: "C" }, tools)).toBeUndefined();
    expect(
      toolForArguments({ path: "a" }, [...tools, tool("search", ["path", "query"], [])]),
    ).toBeUndefined();
    // A tool with no parameters schema is never guessed.
    expect(toolForArguments({}, ["ls"])).toBeUndefined();
  });

  it("reads the arguments' own keys only, never a polluted prototype's", () => {
    const args = Object.create({ path: "inherited" }) as Record<string, unknown>;
    args.city = "Oslo";
    expect(toolForArguments(args, tools)).toBe("get_weather");
  });

  it("refuses arguments that are not an object and tools that are not an array, with a typed error naming them", () => {
    for (const bad of [null, "{}", ["a"], 3]) {
      const error = (() => {
        try {
          toolForArguments(bad as never, tools);
        } catch (e) {
          return e;
        }
      })();
      expect(ToolCallsError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: "invalid-arguments" });
      expect((error as Error).message).toMatch(/toolForArguments needs the call's arguments as an object/);
    }
    expect(() => toolForArguments({}, "read_file" as never)).toThrow(
      expect.objectContaining({ code: "invalid-tools" }),
    );
  });

  it("agrees with recoverToolCalls reading the same call written as a Harmony commentary message with no recipient", () => {
    const key = fc.constantFrom("a", "b", "c", "d", "path", "city");
    const toolArb = fc
      .tuple(fc.uniqueArray(key, { maxLength: 4 }), fc.nat())
      .map(([props, n]) => ({ props, required: props.filter((_, i) => (n >> i) & 1) }));
    fc.assert(
      fc.property(
        fc.array(toolArb, { minLength: 1, maxLength: 4 }),
        fc.uniqueArray(key, { maxLength: 4 }),
        (shapes, keys) => {
          const defs = shapes.map((s, i) => tool(`tool_${i}`, s.props, s.required));
          const args = Object.fromEntries(keys.map((k) => [k, "x"]));
          const text = `<|channel|>commentary <|constrain|>json<|message|>${JSON.stringify(args)}<|call|>`;
          const recovered = recoverToolCalls(text, defs).calls;
          const named = toolForArguments(args, defs);
          expect(recovered.map((c) => c.name)).toEqual(named === undefined ? [] : [named]);
        },
      ),
    );
  });
});
