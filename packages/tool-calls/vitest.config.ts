import { defineProject } from "vitest/config";

export default defineProject({
  test: { isolate: false, name: "tool-calls", environment: "node" },
});
