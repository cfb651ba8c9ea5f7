// Review round r67: defects found by a hostile read of the package, each test failing on the code
// before its fix.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { propertyRuns } from "../../../test-support/properties.js";
import { createToolset, defineTool, MAX_ARGUMENT_DEPTH, ToolInputError } from "./index.js";

async function refusal(work: () => unknown): Promise<ToolInputError> {
  try {
    await work();
  } catch (error) {
    if (ToolInputError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("it was not refused");
}

describe("R67T-1: a __proto__ key the model wrote is refused, not dropped before execute", () => {
  const seen: unknown[] = [];
  const store = defineTool({
    name: "store",
    description: "Stores named values.",
    input: z.object({
      values: z.record(z.string(), z.string()),
      extra: z.looseObject({ tag: z.string() }).optional(),
    }),
    execute: (args) => {
      seen.push(args);
      return "stored";
    },
  });
  const toolset = createToolset([store]);

  it.each([
    ['{"values":{"__proto__":"kept?","a":"1"}}', "values.__proto__"],
    ['{"values":{"a":"1"},"extra":{"tag":"t","__proto__":{"admin":true}}}', "extra.__proto__"],
    ['{"__proto__":{"values":{}},"values":{}}', "__proto__"],
  ])("%s", async (text, path) => {
    seen.length = 0;
    const args = JSON.parse(text) as Record<string, unknown>;
    const error = await refusal(() => toolset.dispatch({ id: "c1", name: "store", args }));
    expect(error.code).toBe("invalid-arguments");
    expect(error.issues).toEqual([{ path, message: expect.stringContaining("__proto__") }]);
    expect(error.message).toContain(`(at ${path})`);
    expect(seen).toEqual([]);
    expect(() => store.parse(args)).toThrow(ToolInputError);
  });

  it("names the place inside a list, and passes arguments without such a key as before", async () => {
    const list = defineTool({
      name: "tags",
      description: "Tags.",
      input: z.object({ items: z.array(z.record(z.string(), z.number())) }),
      execute: (args) => args.items.length,
    });
    const set = createToolset([list]);
    const error = await refusal(() =>
      set.dispatch({ id: "c1", name: "tags", args: JSON.parse('{"items":[{"a":1},{"__proto__":2}]}') }),
    );
    expect(error.issues[0]?.path).toBe("items[1].__proto__");
    await expect(
      set.dispatch({ id: "c2", name: "tags", args: { items: [{ a: 1 }, { proto: 2 }] } }),
    ).resolves.toBe(2);
  });

  it("for any JSON a model could write: refused exactly when a __proto__ key is in it, and execute never sees one dropped (fast-check)", async () => {
    const anything = defineTool({
      name: "anything",
      description: "Takes a map of anything.",
      input: z.object({ data: z.record(z.string(), z.json()) }),
      execute: (args) => args,
    });
    const set = createToolset([anything]);
    const key = fc.oneof(fc.constantFrom("__proto__", "constructor", "a"), fc.string({ maxLength: 4 }));
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        fc.integer(),
        fc.string({ maxLength: 4 }),
        tie("object"),
        fc.array(tie("value"), { maxLength: 3 }),
      ),
      object: fc
        .array(fc.tuple(key, tie("value")), { maxLength: 3 })
        .map((pairs) => `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(",")}}`)
        .map((text) => JSON.parse(text) as unknown),
    }));
    await fc.assert(
      fc.asyncProperty(json.object, async (data) => {
        const text = JSON.stringify({ data });
        const holds = /"__proto__":/.test(text);
        const args = JSON.parse(text) as Record<string, unknown>;
        const outcome = await set.dispatch({ id: "c", name: "anything", args }).then(
          (value) => ({ ran: true as const, value }),
          (error: unknown) => ({ ran: false as const, error }),
        );
        expect(outcome.ran).toBe(!holds);
        if (outcome.ran) expect(JSON.stringify(outcome.value)).toBe(text);
        else expect(outcome.error).toMatchObject({ code: "invalid-arguments" });
      }),
      propertyRuns(200),
    );
  }, 20_000);
});

describe("R67T-2: parse refuses arguments nested deeper than MAX_ARGUMENT_DEPTH, as dispatch does, not a stack overflow", () => {
  interface Tree {
    name: string;
    children?: Tree[];
  }
  const Tree: z.ZodType<Tree> = z.object({
    name: z.string(),
    get children() {
      return z.array(Tree).optional();
    },
  });
  const plant = defineTool({
    name: "plant",
    description: "Plants a tree.",
    input: z.object({ tree: Tree }),
    execute: () => "planted",
  });

  it("20 000 levels: a ToolInputError from parse, the same one dispatch gives", async () => {
    let tree: Tree = { name: "leaf" };
    for (let level = 0; level < 20_000; level++) tree = { name: "node", children: [tree] };
    let thrown: unknown;
    try {
      plant.parse({ tree });
    } catch (error) {
      thrown = error;
    }
    expect(ToolInputError.isInstance(thrown)).toBe(true);
    expect(thrown).toMatchObject({ code: "invalid-arguments", tool: "plant" });
    expect(String((thrown as Error).message)).toContain(`nested deeper than ${MAX_ARGUMENT_DEPTH} levels`);
    const dispatched = await refusal(() =>
      createToolset([plant]).dispatch({ id: "c", name: "plant", args: { tree } }),
    );
    expect(dispatched.message).toBe((thrown as Error).message);
  });

  it("while a tree within the depth parses", () => {
    let tree: Tree = { name: "leaf" };
    for (let level = 0; level < 100; level++) tree = { name: "node", children: [tree] };
    expect(plant.parse({ tree })).toEqual({ tree });
  });
});

describe("a key the model wrote holding a lone surrogate (r67, the lead's)", () => {
  it("is named in the refusal written U+FFFD: its message and paths are text a strict JSON reader takes", async () => {
    const strict = defineTool({
      name: "strict",
      description: "Takes one field.",
      input: z.strictObject({ a: z.object({ n: z.number() }) }),
      execute: () => "ran",
    });
    const error = await refusal(() =>
      createToolset([strict]).dispatch({ id: "c1", name: "strict", args: { a: { n: "x" }, "k\uD800": 1 } }),
    );
    const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
    expect(error.message).not.toMatch(lone);
    expect(error.message).toContain("k\uFFFD");
    expect(JSON.stringify(error.issues)).not.toMatch(/\\ud8/i);
  });
});
