import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "tools-mcp", environment: "node" },
});
