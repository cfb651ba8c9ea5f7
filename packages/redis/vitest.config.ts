import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "redis", environment: "node" },
});
