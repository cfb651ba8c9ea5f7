// Type test (compiled by `pnpm type-check` through tsconfig.exact.json, which sets
// `exactOptionalPropertyTypes`; never run): server entries and pool options take `undefined` for
// an absent field, so a host can forward its own optional values. TS2375/TS2379 errors before.
import { createMcpPool, type McpPool, type McpServerConfig } from "./index.js";

export function pool(cwd?: string, timeoutMs?: number): McpPool {
  const server: McpServerConfig = {
    name: "files",
    type: "stdio",
    command: "node",
    args: ["server.js"],
    cwd,
    env: process.env.FILES_TOKEN === undefined ? undefined : { FILES_TOKEN: process.env.FILES_TOKEN },
  };
  return createMcpPool([server], { timeoutMs, onToolsChanged: undefined });
}
