import { defineProject } from "vitest/config";

// The files that replace a module with `vi.mock` (vitest.config.ts runs the rest with shared
// workers): each runs in a fresh module graph.
export default defineProject({
  test: {
    name: "loop-isolated",
    setupFiles: [
      "../../test-support/property-setup.ts",
      "../../test-support/prototype-guard.ts",
      "../../test-support/worker-state-guard.ts",
    ],
    environment: "node",
    include: ["src/**/*.isolated.test.ts"],
  },
});
