// r96a: the round-trip model's seeds -848646852 and 1240037890 (numRuns 3000), told as a user
// meets them (the shrunk cases themselves are `examples` of the model's property). In both, the
// shallow declaration (recursionLimit 1, maxDepth 2) asks for a union variant's nested object as
// JSON text; the model answers in the shape of a variant that turns out not to take the parsed
// text, writing null for a field only that variant names and takes null at. restoreArguments read
// the union whole and kept a null the variant that does take the value refuses, so dispatch
// refused a call whose value zod takes. Now the call is read by the variant that takes it.
import { restoreArguments } from "@loopwright/schema-compat";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createToolset, defineTool } from "./index.js";

const shallow = { recursionLimit: 1, maxDepth: 2 };

/**
 * What `execute` is handed for the model's JSON, written against `sanitizeSchema(parameters,
 * options)` (every property listed, JSON text where asked), restored as the loop restores it.
 */
async function executed(
  input: z.ZodObject,
  json: string,
  options: { recursionLimit?: number; maxDepth?: number } = shallow,
): Promise<unknown> {
  let got: unknown;
  const tool = defineTool({
    name: "t",
    description: "The tool under test.",
    input,
    execute: (args) => {
      got = args;
      return "done";
    },
  });
  const original = tool.declaration.function.parameters;
  const args = restoreArguments(JSON.parse(json), original, options);
  await createToolset([tool]).dispatch({ id: "c", name: "t", args });
  return got;
}

describe("a call under a shallow declaration, a union variant's object written as JSON text", () => {
  it("seed -848646852: a property named constructor, the first variant's fields written null", async () => {
    const input = z.object({
      a: z.union([
        z.object({
          constructor: z.strictObject({}),
          b: z
            .discriminatedUnion("kind", [
              z.object({ kind: z.literal("k0") }),
              z.object({ kind: z.literal("k1") }),
            ])
            .optional()
            .nullable(),
          a: z.string().nullable().optional(),
        }),
        z.object({
          a: z.string().optional(),
          constructor: z.union([z.object({}), z.object({ a: z.string() })]),
        }),
      ]),
      e: z.string(),
      d: z.union([z.object({}), z.object({})]),
    });
    // The value the model meant, { a: { constructor: { a: "" } }, e: "", d: {} }, is one zod takes
    // (by the second variant); before, dispatch refused "a.constructor: Unrecognized key".
    const got = await executed(
      input,
      '{"a":{"constructor":"{\\"a\\":\\"\\"}","b":null,"a":null},"e":"","d":"{}"}',
    );
    expect(got).toEqual(input.parse({ a: { constructor: { a: "" } }, e: "", d: {} }));
  });

  it("seed 1240037890: a list item of a union whose variants share field names, the first's written null", async () => {
    const input = z.object({
      a: z.array(
        z.union([
          // The seed's b was the model's recursive tree; any object requiring a field is refused as {}.
          z.object({
            a: z.string().nullable().optional(),
            d: z.string().nullable(),
            b: z.object({ name: z.string() }),
          }),
          z.object({
            a: z.record(z.string(), z.string()).optional(),
            b: z.union([z.object({}), z.object({})]),
          }),
        ]),
      ),
    });
    // The value meant, { a: [{ b: {} }] }, is the second variant's; before, "a[0]: Invalid input".
    const got = await executed(input, '{"a":[{"a":null,"d":null,"b":"{}"}]}');
    expect(got).toEqual(input.parse({ a: [{ b: {} }] }));
  });
});

describe("a discriminated union: one variant takes any value where another takes a map", () => {
  it("seed 1286858130: the string the model wrote for the any-value variant reaches execute as a string", async () => {
    const input = z.object({
      item: z.discriminatedUnion("kind", [
        z.object({ kind: z.literal("note"), body: z.unknown() }),
        z.object({ kind: z.literal("map"), body: z.record(z.string(), z.string()) }),
      ]),
    });
    // The strict declaration asks for the map as JSON text; "0" under "note" is a string. Before,
    // execute got the number 0 — read as the map variant's JSON text.
    for (const body of ["0", "null"]) {
      const got = await executed(input, JSON.stringify({ item: { kind: "note", body } }), {});
      expect(got).toEqual({ item: { kind: "note", body } });
    }
  });
});
