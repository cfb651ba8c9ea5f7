// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run), from a strict host of the agent:
// - `ToolRegistry.register`'s `replace` takes `undefined` as absent (as the code reads it), so a
//   host forwards its own optional flag (TS2379 before);
// - a session's `mcpServers` given as a `.mcp.json` document is checked entry by entry: a misspelt
//   field does not compile (the `@ts-expect-error` was unused before: the document was `unknown`),
//   and its types (`McpJsonDocument`, `McpServerEntry`) are named from this package (TS2305 before).
import {
  type AgentTool,
  createSession,
  type McpJsonDocument,
  type McpServerEntry,
  type ToolRegistry,
} from "./index.js";

export function add(registry: ToolRegistry, tool: AgentTool, replace?: boolean): void {
  registry.register(tool, { replace });
}

// The document and entry types are named from the agent, with no @loopwright/tools-mcp of the host's own.
const files: McpServerEntry = { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem"] };
const document: McpJsonDocument = { mcpServers: { files } };

export async function open(): Promise<void> {
  const session = await createSession({
    config: { baseUrl: "http://127.0.0.1:8080/v1", model: "m" },
    mcpServers: document,
  });
  await session.close();
  await createSession({
    config: { baseUrl: "http://127.0.0.1:8080/v1", model: "m" },
    // @ts-expect-error: `args` is a list of strings (a field other clients write, `disabled`, goes in).
    mcpServers: { mcpServers: { files: { command: "npx", args: "-y", disabled: false } } },
  });
}
