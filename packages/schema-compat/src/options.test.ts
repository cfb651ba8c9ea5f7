import { describe, expect, it } from "vitest";
import { checkStrictSchema } from "./check-strict.js";
import { relaxSchema, sanitizeSchema } from "./sanitize-schema.js";
import { relaxTools, sanitizeTools } from "./sanitize-tools.js";

const schema = {
  type: "object",
  properties: { path: { type: "string" }, mode: { enum: ["r", "w"] } },
  required: ["path"],
};

/** Three definitions each naming the next eight times: inlining them passes the size cap (a notice). */
const fanOut = {
  type: "object",
  properties: { root: { $ref: "#/$defs/a" } },
  $defs: Object.fromEntries(
    ["a", "b", "c"].map((name, i) => [
      name,
      {
        type: "object",
        properties: Object.fromEntries(
          Array.from({ length: 8 }, (_, k) => [`p${k}`, { $ref: `#/$defs/${"abc"[(i + 1) % 3]}` }]),
        ),
      },
    ]),
  ),
};

describe("schema-compat's options, however the host passes them", () => {
  it("reads null options as none instead of answering an empty schema", () => {
    expect(sanitizeSchema(schema, null as never)).toEqual(sanitizeSchema(schema));
    expect(relaxSchema(schema, null as never)).toEqual(relaxSchema(schema));
    expect(checkStrictSchema(schema, null as never)).toEqual(checkStrictSchema(schema));
    const tools = [{ type: "function" as const, function: { name: "read file", parameters: schema } }];
    expect(sanitizeTools(tools, null as never)).toEqual(sanitizeTools(tools));
    expect(relaxTools(tools, null as never)).toEqual(relaxTools(tools));
  });

  it("keeps the sanitized schema when onNotice throws or is not a function", () => {
    const quiet = sanitizeSchema(fanOut);
    expect(Object.keys(quiet.properties as object)).toEqual(["root"]);
    const throwing = sanitizeSchema(fanOut, {
      onNotice: () => {
        throw new Error("logger down");
      },
    });
    expect(throwing).toEqual(quiet);
    expect(sanitizeSchema(fanOut, { onNotice: "log" as never })).toEqual(quiet);
  });

  it("keeps the tools when onRename is not a function", () => {
    const tools = [{ type: "function" as const, function: { name: "read file", parameters: schema } }];
    expect(sanitizeTools(tools, { onRename: "log" as never })).toEqual(sanitizeTools(tools));
  });
});
