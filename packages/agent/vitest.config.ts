import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    isolate: false,
    name: "agent",
    setupFiles: [
      "../../test-support/property-setup.ts",
      "../../test-support/prototype-guard.ts",
      "../../test-support/worker-state-guard.ts",
    ],
    environment: "node",
    // A hang guard, not a measurement. Session tests wait on real timers (an answer given 1.5 s after
    // its question, a lock seen unchanged for 2 s) and a testkit server: one took 2.6 s of vitest's
    // default 5 s on a loaded two-core machine (two CPU burners beside the suite).
    testTimeout: 20_000,
  },
});
