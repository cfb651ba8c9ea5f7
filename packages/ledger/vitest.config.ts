import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    isolate: false,
    name: "ledger",
    setupFiles: [
      "../../test-support/property-setup.ts",
      "../../test-support/prototype-guard.ts",
      "../../test-support/worker-state-guard.ts",
    ],
    environment: "node",
    // A hang guard, not a measurement. The property tests fold and measure hundreds of generated
    // ledgers: one took 3.1 s of vitest's default 5 s on a loaded two-core machine (two CPU burners
    // beside the suite).
    testTimeout: 20_000,
  },
});
