import { defineProject } from "vitest/config";

// The tests start real MCP servers (node processes) on a shared machine: give them time, and run
// this package's files one at a time so its servers do not starve the rest of the suite.
export default defineProject({
  test: {
    name: "tools-mcp",
    environment: "node",
    testTimeout: 30_000,
    hookTimeout: 30_000,
    fileParallelism: false,
  },
});
