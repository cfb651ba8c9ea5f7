import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "tool-loading", environment: "node" },
});
