// Type test (compiled by `pnpm type-check` through tsconfig.exact.json; never run). A `.mcp.json`
// document written in code as Cline, Roo Code, Gemini CLI or Cursor write theirs — fields this
// package does not read (`disabled`, `autoApprove`, `timeout`, `trust`, `description`) beside the
// ones it does. `mcpServers` and `createMcpPool` took these at run time, and at the type level while
// a document's `mcpServers` was `unknown`; once `McpJsonDocument` typed each entry as a closed
// `McpServerEntry`, each call below failed to compile (TS2353, "'disabled' does not exist in type
// 'McpServerEntry'"), a host's working code broken by a minor release.
import {
  createMcpPool,
  type McpJsonDocument,
  type McpPool,
  type McpServerEntry,
  mcpServers,
} from "./index.js";

export const cline = mcpServers({
  mcpServers: {
    github: { command: "npx", args: ["-y", "server-github"], disabled: false, autoApprove: ["list_issues"] },
    remote: { type: "sse", url: "https://example.test/sse", timeout: 60 },
  },
});
export const gemini: McpPool = createMcpPool({
  mcpServers: { files: { command: "node", cwd: "/srv", env: { A: "1" }, trust: true, description: "files" } },
});
export const cursor = {
  mcpServers: { api: { type: "http", url: "https://example.test/mcp", headers: { A: "b" }, oauth: {} } },
} satisfies McpJsonDocument;

// The fields the package reads stay typed, extra fields or not.
// @ts-expect-error: `args` is a list of strings.
mcpServers({ mcpServers: { files: { command: "npx", args: "-y server", disabled: false } } });
// @ts-expect-error: `env` values are strings.
createMcpPool({ mcpServers: { files: { command: "npx", env: { TOKEN: 42 } } } });

// An entry held as a `McpServerEntry` (an interface: no index signature) still goes in.
const held: McpServerEntry = { command: "npx", args: ["-y", "server"] };
export const fromHeld = mcpServers({ mcpServers: { held } });
