import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    isolate: false,
    name: "tool-calls",
    setupFiles: [
      "../../test-support/property-setup.ts",
      "../../test-support/prototype-guard.ts",
      "../../test-support/worker-state-guard.ts",
    ],
    environment: "node",
  },
});
