import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    isolate: false,
    name: "hooks",
    setupFiles: [
      "../../test-support/property-setup.ts",
      "../../test-support/prototype-guard.ts",
      "../../test-support/worker-state-guard.ts",
    ],
    environment: "node",
    // A hang guard, not a measurement. The cap tests gather 20,000 hooks' outcomes: one took 2.2 s of
    // vitest's default 5 s on a loaded two-core machine (two CPU burners beside the suite).
    testTimeout: 20_000,
  },
});
