// r102f: a tool error quotes what the model wrote — an unknown tool's name, a key no schema
// declares (zod's "Unrecognized key"), a record's key in an argument path — and that text went
// into the tool result raw: a terminal escape, a line break, a NUL from a key, and a right-to-left
// override from a name (JSON.stringify escapes C0 controls only). Each is now written `\uXXXX`,
// and a long one cut with its length said, as `@loopwright/tools-mcp`'s call errors do.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { propertyRuns } from "../../../test-support/properties.js";
import { createToolset, defineTool, type ToolInputError } from "./index.js";

/** C0 and C1 controls, DEL, line and paragraph separators, bidirectional marks, overrides and isolates. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

const strict = defineTool({
  name: "read_file",
  description: "Reads a file.",
  input: z.object({ path: z.string() }).strict(),
  execute: ({ path }) => path,
});
const counts = defineTool({
  name: "count",
  description: "Counts words.",
  input: z.object({ words: z.record(z.string(), z.number()) }),
  execute: ({ words }) => Object.keys(words).length,
});
const set = createToolset([strict, counts]);

async function refusal(call: { name: string; args: Record<string, unknown> }): Promise<ToolInputError> {
  try {
    await set.dispatch({ id: "c1", ...call });
  } catch (error) {
    return error as ToolInputError;
  }
  throw new Error("the call was run");
}

/** Every text of a refusal the model or a terminal reads: its message, each issue's path and message. */
function texts(error: ToolInputError): string[] {
  return [error.message, ...error.issues.flatMap(({ path, message }) => [path, message])];
}

/** A key or name drawn with the characters that matter here mixed in among ordinary ones. */
const hostile = fc.string({
  unit: fc.oneof(
    fc.constantFrom(
      "\u001b",
      "\n",
      "\r",
      "\u0000",
      "\u0007",
      "\u007f",
      "\u0085",
      "\u202e",
      "\u2066",
      "\u2028",
      "\u200f",
    ),
    fc.constantFrom("\ud83d", "\ude00", "a", "_", '"', "\\"),
    fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
  ),
  minLength: 1,
  maxLength: 90,
});

describe("a tool error echoing what the model wrote", () => {
  it("writes a terminal escape, a line break and a NUL in an unrecognised key as \\u escapes", async () => {
    const error = await refusal({ name: "read_file", args: { path: "a", "\u001b[2J\nx\u0000": 1 } });
    expect(error.code).toBe("invalid-arguments");
    expect(error.message).toContain('Unrecognized key: "\\u001b[2J\\u000ax\\u0000"');
    expect(error.issues).toEqual([{ path: "", message: 'Unrecognized key: "\\u001b[2J\\u000ax\\u0000"' }]);
  });

  it("shows a right-to-left override in a made-up tool name as \\u202e, not as reversed text", async () => {
    const error = await refusal({ name: "read\u202egnp.exe\u2066", args: {} });
    expect(error.code).toBe("unknown-tool");
    expect(error.message).toContain('There is no tool named "read\\u202egnp.exe\\u2066";');
    expect(error.tool).toBe("read\u202egnp.exe\u2066");
  });

  it("escapes a record key in an argument path", async () => {
    const error = await refusal({ name: "count", args: { words: { "\u001b]0;pwned\u0007\u202e": "x" } } });
    expect(error.issues[0]?.path).toBe("words.\\u001b]0;pwned\\u0007\\u202e");
  });

  it("escapes a key on the way to a __proto__ key in the path a refusal names", async () => {
    const args = JSON.parse('{"path":"a","\\u001b[8m\\u202e":{"__proto__":1}}') as Record<string, unknown>;
    const error = await refusal({ name: "read_file", args });
    expect(error.issues[0]?.path).toBe("\\u001b[8m\\u202e.__proto__");
    expect(error.message).toContain("(at \\u001b[8m\\u202e.__proto__)");
  });

  it("cuts a 10 MB unrecognised key to its first 60 characters and says how long it was", async () => {
    const key = `\u001b${"k".repeat(10_000_000)}`;
    const error = await refusal({ name: "read_file", args: { path: "a", [key]: 1 } });
    expect(error.issues[0]?.message).toBe(
      `Unrecognized key: "\\u001b${"k".repeat(59)}… (10000001 characters)"`,
    );
    expect(error.message.length).toBeLessThan(500);
  });

  it("writes an unknown tool's name as a JSON string, its quotes and backslashes escaped", async () => {
    // r102f wrote the escaped name between bare quotes, so a name holding `"` read as ending early.
    const error = await refusal({ name: 'a"; the tools are: rm\\\n', args: {} });
    expect(error.message).toContain('There is no tool named "a\\"; the tools are: rm\\\\\\n";');
  });

  it("names every unrecognised key of several, each escaped", async () => {
    const error = await refusal({ name: "read_file", args: { path: "a", "x\n": 1, "y\u202e": 2 } });
    expect(error.issues[0]?.message).toBe('Unrecognized keys: "x\\u000a", "y\\u202e"');
  });

  it("never carries a control or bidirectional character, or half a surrogate pair, whatever the key or name (fast-check)", async () => {
    await fc.assert(
      fc.asyncProperty(hostile, hostile, async (key, name) => {
        const errors = [
          await refusal({ name: "read_file", args: { path: "a", [key]: 1 } }),
          await refusal({ name: "count", args: { words: { [key]: "x" } } }),
          await refusal({ name, args: {} }),
        ];
        for (const error of errors) {
          for (const text of texts(error)) {
            expect(text).not.toMatch(UNSAFE);
            expect(text.isWellFormed()).toBe(true);
            expect(text.length).toBeLessThan(2_000);
          }
        }
      }),
      propertyRuns(200, { examples: [["\u001b[31m\n\u0000", "x\u202ey"]] }),
    );
  });
});
