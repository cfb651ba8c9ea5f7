// Type test (compiled by `pnpm type-check`, never run): `defineTool<Args>` takes an interface as
// `Args` (the constraint is `object`; it was `Record<string, unknown>`, which an interface does not
// satisfy — TS2344 "Index signature for type 'string' is missing"), and the tool it returns is an
// `AgentTool` an `Agent` takes.
import { Agent, type AgentTool, defineTool } from "./index.js";

interface ReadArgs {
  path: string;
  lines?: number;
}

export const read = defineTool<ReadArgs>({
  name: "read",
  description: "Read a file",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  execute: ({ path, lines }) => `${path}:${lines ?? 0}`,
});

export const typed: AgentTool<ReadArgs> = {
  name: "read",
  description: "Read a file",
  parameters: { type: "object" },
  execute: (args) => args.path.length,
};

export const tools: AgentTool[] = [read];

export function agent(): Agent {
  return new Agent({ config: { baseUrl: "http://127.0.0.1:8080/v1", model: "m" }, tools: [read] });
}

// A primitive is still refused: the arguments are always an object.
// @ts-expect-error `string` is not an object type.
defineTool<string>({ name: "x", description: "x", parameters: {}, execute: (s) => s });

// With no `Args`, the arguments are still `Record<string, unknown>` (not `{}`): any field reads as `unknown`.
export const untyped = defineTool({
  name: "pay",
  description: "Pays an invoice",
  parameters: { type: "object", properties: { invoice: { type: "number" } } },
  execute: ({ invoice }) => String(invoice),
});
