// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run). Two things a strict host writes:
// - a `.mcp.json` document in code (`{ mcpServers: { name: entry } }`) is checked entry by entry, as
//   the list form always was: before, the document's `mcpServers` was `unknown`, so an `args` that
//   is no list compiled and was found only when the pool started (the `@ts-expect-error` line was
//   unused before the fix);
// - `callTool`'s options take `undefined` for an absent field, so a host forwards its own optional
//   signal and timeout (TS2379 before).
import { createMcpPool, type McpJsonDocument, type McpPool, mcpServers } from "./index.js";

const document = {
  mcpServers: {
    files: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "."] },
    remote: { type: "http", url: "https://example.test/mcp", headers: { Authorization: "Bearer x" } },
    off: { command: "node", enabled: false },
  },
} satisfies McpJsonDocument;
export const pool: McpPool = createMcpPool(document);
export const configs = mcpServers(document, { env: process.env });

// What `JSON.parse` answers (`any`) still goes in as it is.
export const parsed: McpPool = createMcpPool(JSON.parse('{"mcpServers":{}}'));

// A field the package does not read (`comand` misspelt, or another client's `disabled`) goes in
// as at run time, where the pool then finds no command: see review-r92b.test-d.ts.
// @ts-expect-error: `args` is a list of strings.
mcpServers({ mcpServers: { files: { command: "npx", args: "-y server" } } });

export function call(name: string, signal?: AbortSignal, timeoutMs?: number) {
  return pool.callTool(name, { path: "." }, { signal, timeoutMs });
}
