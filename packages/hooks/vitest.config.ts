import { defineProject } from "vitest/config";

export default defineProject({
  test: { isolate: false, name: "hooks", environment: "node" },
});
