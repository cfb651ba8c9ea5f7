// Type test (compiled by `pnpm type-check`, never run): `defineTool`'s `input` must be a zod schema
// whose input is an object. `z.string()` compiled before (`Input extends z.ZodType`) and then threw
// `invalid-tool` at definition; now it is a compile error. Object schemas — strict, with defaults,
// with a transform after them — still compile with `execute`'s arguments inferred.
import { z } from "zod";
import { createToolset, defineTool } from "./index.js";

export const read = defineTool({
  name: "read",
  description: "Read a file",
  input: z.object({ path: z.string(), lines: z.number().default(10) }).strict(),
  execute: ({ path, lines }) => `${path.toUpperCase()}:${lines.toFixed(0)}`,
});

export const renamed = defineTool({
  name: "renamed",
  description: "Read a file under another field name",
  input: z.object({ file: z.string() }).transform(({ file }) => ({ path: file })),
  execute: ({ path }) => path.length,
});

export const toolset = createToolset([read, renamed]);

defineTool({
  name: "text",
  description: "Takes a bare string",
  // @ts-expect-error a string schema: a model's arguments are a JSON object.
  input: z.string(),
  execute: (text) => text,
});

defineTool({
  name: "list",
  description: "Takes an array",
  // @ts-expect-error an array schema is not an object schema either.
  input: z.array(z.string()),
  execute: (items) => items,
});
