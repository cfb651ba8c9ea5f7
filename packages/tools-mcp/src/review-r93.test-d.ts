// Type test (compiled by `pnpm type-check`; never run): the documents other clients write, typed as
// the runtime reads them. VS Code's `servers` document was no McpJsonDocument before (its
// `satisfies` line failed), and `disabled`, `httpUrl`, `serverUrl`, `includeTools`, `excludeTools`
// were untyped, so `includeTools: "echo"` compiled (the `@ts-expect-error` line was unused).
import {
  createMcpPool,
  type McpJsonDocument,
  type McpPool,
  type McpServerConfig,
  mcpServers,
} from "./index.js";

const vscode = {
  inputs: [{ type: "promptString", id: "token", password: true }],
  servers: {
    files: { type: "stdio", command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem"] },
  },
} satisfies McpJsonDocument;
export const vscodePool: McpPool = createMcpPool(vscode);

const others = {
  mcpServers: {
    cline: { command: "node", args: ["server.js"], disabled: true, autoApprove: ["read"], timeout: 60 },
    gemini: {
      httpUrl: "https://example.test/mcp",
      trust: false,
      includeTools: ["read"],
      excludeTools: ["write"],
    },
    windsurf: { serverUrl: "https://example.test/mcp" },
  },
} satisfies McpJsonDocument;
export const otherConfigs: McpServerConfig[] = mcpServers(others);
export const filtered: string[] | undefined = otherConfigs[0]?.includeTools;

// @ts-expect-error: `includeTools` is a list of tool names.
mcpServers({ mcpServers: { gemini: { httpUrl: "https://example.test/mcp", includeTools: "read" } } });
// @ts-expect-error: a document holds `mcpServers` or `servers`, not both.
export const both: McpJsonDocument = { mcpServers: {}, servers: {} };
