import { defineProject } from "vitest/config";

// The tests start real MCP servers (node processes) on a shared machine: give them time.
export default defineProject({
  test: { name: "tools-mcp", environment: "node", testTimeout: 30_000, hookTimeout: 30_000 },
});
