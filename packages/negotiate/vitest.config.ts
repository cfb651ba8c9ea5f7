import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "negotiate", environment: "node" },
});
