import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "schema-compat", environment: "node" },
});
