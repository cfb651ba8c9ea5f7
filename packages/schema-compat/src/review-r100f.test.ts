// r100f: a tool whose parameters hold what JSON cannot (a Map of properties, a BigInt default, NaN,
// a function) is refused by sanitizeTools, naming the tool and the place, rather than sent rewritten.
import { describe, expect, it } from "vitest";
import { SchemaCompatError, sanitizeTools } from "./index.js";

function tool(parameters: unknown, name = "pick") {
  return { type: "function" as const, function: { name, parameters } };
}

/** The SchemaCompatError sanitizeTools throws for `tools`, or fails. */
function refusal(tools: unknown[]): SchemaCompatError {
  try {
    sanitizeTools(tools as never);
  } catch (error) {
    expect(SchemaCompatError.isInstance(error)).toBe(true);
    return error as SchemaCompatError;
  }
  throw new Error("sanitizeTools took the tools");
}

describe("a tool's parameters holding what JSON cannot", () => {
  it("refuses a Map of properties, which was sent as properties: {} (a tool taking no arguments)", () => {
    const properties = new Map([["path", { type: "string" }]]);
    const error = refusal([
      tool({ type: "object" }, "ok"),
      tool({ type: "object", properties, required: ["path"] }),
    ]);
    expect(error.code).toBe("invalid-tools");
    expect(error.message).toBe(
      'sanitizeTools: the function tool "pick" (index 1 of the tool array) holds a Map in function.parameters at ' +
        "#/properties, which JSON writes as {} (none of its entries would reach the model): give a plain object or an array.",
    );
  });

  it("refuses a BigInt default, which was dropped unsaid, naming where it is", () => {
    const error = refusal([
      tool({ type: "object", properties: { "a/b": { type: "integer", default: 10n } }, required: ["a/b"] }),
    ]);
    expect(error.message).toContain("holds a BigInt in function.parameters at #/properties/a~1b/default");
  });

  it("refuses a BigInt in an enum, a Set, NaN, a function and a symbol, each by its place", () => {
    const cases: [unknown, string][] = [
      [{ type: "integer", enum: [1, 10n] }, "a BigInt in function.parameters at #/properties/x/enum/1"],
      [
        { type: "array", items: new Set([{ type: "string" }]) },
        "a Set in function.parameters at #/properties/x/items",
      ],
      [{ type: "number", minimum: Number.NaN }, "NaN in function.parameters at #/properties/x/minimum"],
      [{ type: "string", default: () => "a" }, "a function in function.parameters at #/properties/x/default"],
      [{ type: "string", const: Symbol("a") }, "a symbol in function.parameters at #/properties/x/const"],
    ];
    for (const [x, said] of cases) {
      expect(refusal([tool({ type: "object", properties: { x } })]).message).toContain(said);
    }
  });

  it("still reads a BigInt bound as its number, Infinity as no bound, a class's getters and a cycle", () => {
    class Field {
      get type() {
        return "string";
      }
    }
    const cyclic: Record<string, unknown> = { type: "object" };
    cyclic.properties = { self: cyclic };
    const sent = sanitizeTools([
      tool({
        type: "object",
        properties: {
          n: { type: "integer", minimum: 5n },
          m: { type: "number", maximum: Number.POSITIVE_INFINITY },
          f: new Field(),
          c: cyclic,
        },
        required: ["n", "m", "f", "c"],
      }),
    ]);
    const properties = (
      (sent[0] as { function: { parameters: unknown } }).function.parameters as {
        properties: Record<string, unknown>;
      }
    ).properties;
    expect(properties.n).toEqual({ type: "integer", minimum: 5 });
    expect(properties.m).toEqual({ type: "number" });
    expect(properties.f).toEqual({ type: "string" });
    expect(properties.c).toMatchObject({ type: "object" });
  });
});
