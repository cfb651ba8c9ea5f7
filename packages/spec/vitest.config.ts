import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    isolate: false,
    name: "spec",
    setupFiles: [
      "../../test-support/property-setup.ts",
      "../../test-support/prototype-guard.ts",
      "../../test-support/worker-state-guard.ts",
    ],
    environment: "node",
    // A hang guard, not a measurement (the fuzz ladder judges speed): the property tests read
    // thousands of generated lines each, which took over vitest's 5 s on a loaded two-core machine.
    testTimeout: 20_000,
  },
});
