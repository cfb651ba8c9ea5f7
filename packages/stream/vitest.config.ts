import { defineProject } from "vitest/config";

export default defineProject({
  test: { name: "stream", environment: "node" },
});
