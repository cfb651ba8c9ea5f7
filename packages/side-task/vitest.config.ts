import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "side-task", environment: "node" },
});
