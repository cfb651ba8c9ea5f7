import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "loop", environment: "node" },
});
