// Type test (compiled by `pnpm type-check`; never run): Zed's `context_servers` document, Roo Code's
// `disabledTools` and the `workspaceFolder` option, typed as the runtime reads them. Before, the Zed
// document was no McpJsonDocument (its `satisfies` line failed), `disabledTools: "echo"` compiled and
// `workspaceFolder` was no option (the `@ts-expect-error` lines were unused, the option line failed).
import { type McpJsonDocument, type McpServerConfig, mcpServers, readMcpJson } from "./index.js";

const zed = {
  context_servers: {
    local: { command: "some-command", args: ["arg-1"], env: {}, source: "custom", enabled: true },
    remote: { url: "https://example.test/mcp", headers: { Authorization: "Bearer t" } },
  },
} satisfies McpJsonDocument;
export const zedConfigs: McpServerConfig[] = mcpServers(zed, { workspaceFolder: "/srv/app" });
export const fromFile: Promise<McpServerConfig[]> = readMcpJson(".vscode/mcp.json", {
  env: {},
  workspaceFolder: undefined,
});

const roo = {
  mcpServers: { local: { command: "node", disabledTools: ["write"], alwaysAllow: ["read"] } },
} satisfies McpJsonDocument;
export const rooConfigs: McpServerConfig[] = mcpServers(roo);

// @ts-expect-error: `disabledTools` is a list of tool names.
mcpServers({ mcpServers: { roo: { command: "node", disabledTools: "write" } } });
// @ts-expect-error: a document holds one of `mcpServers`, `servers` and `context_servers`.
export const two: McpJsonDocument = { mcpServers: {}, context_servers: {} };
