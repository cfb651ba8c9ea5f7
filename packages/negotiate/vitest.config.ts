import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    isolate: false,
    name: "negotiate",
    setupFiles: [
      "../../test-support/property-setup.ts",
      "../../test-support/prototype-guard.ts",
      "../../test-support/worker-state-guard.ts",
    ],
    environment: "node",
  },
});
