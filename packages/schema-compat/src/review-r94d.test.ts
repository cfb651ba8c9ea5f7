/**
 * Round 94 (d): a host composing its own loop from the READMEs, declaring a tool with zod.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { SchemaCompatError } from "./errors.js";
import { relaxTools, sanitizeTools } from "./sanitize-tools.js";

const City = z.object({ city: z.string(), units: z.enum(["metric", "imperial"]).optional() });

describe("a validator object handed over as a tool's parameters", () => {
  it("is refused by name, never declared as a tool that takes no arguments", () => {
    // `FunctionToolLike.parameters` is `unknown`, so this compiles with no cast. Before, the zod
    // object read as a schema with no keyword: the tool went out as
    // {"type":"object","properties":{},"required":[],"additionalProperties":false}, onNotice told
    // nothing, and the model could only ever call it with {}.
    const tools = [
      { type: "function" as const, function: { name: "noop", parameters: { type: "object" } } },
      { type: "function" as const, function: { name: "get_weather", parameters: City } },
    ];
    for (const run of [() => sanitizeTools(tools), () => relaxTools(tools)]) {
      expect(run).toThrow(SchemaCompatError);
      expect(run).toThrow(
        /index 1 .*zod schema object \(Standard Schema\), not JSON Schema.*z\.toJSONSchema\(schema\)/,
      );
    }
  });

  it("names any Standard Schema vendor, and an older zod's schema", () => {
    const valibotLike = { "~standard": { version: 1, vendor: "valibot", validate: () => ({ value: {} }) } };
    class OldZodObject {
      _def = { typeName: "ZodObject" };
      safeParse(value: unknown) {
        return { success: true, data: value };
      }
    }
    expect(() =>
      sanitizeTools([{ type: "function", function: { name: "a", parameters: valibotLike } }]),
    ).toThrow("a valibot schema object (Standard Schema)");
    expect(() =>
      sanitizeTools([{ type: "function", function: { name: "b", parameters: new OldZodObject() } }]),
    ).toThrow("a zod schema object, not JSON Schema");
  });

  it("takes the same tool converted to JSON Schema, its fields intact", () => {
    const [tool] = sanitizeTools([
      { type: "function", function: { name: "get_weather", parameters: z.toJSONSchema(City) } },
    ]);
    const parameters = tool?.type === "function" ? tool.function.parameters : undefined;
    expect(Object.keys(parameters?.properties ?? {})).toEqual(["city", "units"]);
    // A JSON Schema that merely has a property named like a validator's member is still a schema.
    const [plain] = sanitizeTools([
      {
        type: "function",
        function: {
          name: "p",
          parameters: { type: "object", properties: { safeParse: { type: "string" }, _def: {} } },
        },
      },
    ]);
    expect(plain?.type === "function" && Object.keys(plain.function.parameters.properties ?? {})).toEqual([
      "safeParse",
      "_def",
    ]);
  });
});
