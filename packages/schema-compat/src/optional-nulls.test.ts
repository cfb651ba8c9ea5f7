import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { dropOptionalNulls } from "./optional-nulls.js";
import { sanitizeSchema } from "./sanitize-schema.js";

const here = dirname(fileURLToPath(import.meta.url));
const filesystem = JSON.parse(
  readFileSync(join(here, "../test-fixtures/server-filesystem.tools.json"), "utf8"),
) as {
  tools: Array<{ name: string; inputSchema: Record<string, unknown> }>;
};
const schemaOf = (name: string) => filesystem.tools.find((t) => t.name === name)?.inputSchema;

describe("dropOptionalNulls", () => {
  it("turns a strict-mode call back into what the MCP server expects", () => {
    const readFile = schemaOf("read_file");
    // What a model answering the sanitized schema writes for "no head, no tail".
    const strictArgs = { path: "notes.md", tail: null, head: null };
    expect(sanitizeSchema(readFile).required).toEqual(["path", "tail", "head"]);
    expect(dropOptionalNulls(strictArgs, readFile)).toEqual({ path: "notes.md" });
    expect(strictArgs).toEqual({ path: "notes.md", tail: null, head: null });
  });

  it("reaches nested objects through items and $ref, and keeps nulls the schema allows", () => {
    const schema = {
      type: "object",
      $defs: {
        edit: {
          type: "object",
          properties: { old: { type: "string" }, note: { type: "string" } },
          required: ["old"],
        },
      },
      properties: {
        edits: { type: "array", items: { $ref: "#/$defs/edit" } },
        reason: { type: ["string", "null"] },
        must: { type: "string" },
      },
      required: ["must"],
    };
    const args = { edits: [{ old: "a", note: null }], reason: null, must: null, extra: null };
    expect(dropOptionalNulls(args, schema)).toEqual({
      edits: [{ old: "a" }],
      reason: null,
      must: null,
      extra: null,
    });
  });

  it("never throws, whatever the arguments and schema", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (args, schema) => {
        dropOptionalNulls(args, schema);
      }),
    );
  });
});
