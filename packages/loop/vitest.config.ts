import { configDefaults, defineProject } from "vitest/config";

// A worker imports the package's modules once for all its files (`isolate: false`; the root
// vitest.config.ts says what that asks of a test file). A file that replaces a module with
// `vi.mock` cannot share a worker, as the module may already be loaded real: such files are named
// *.isolated.test.ts and run in vitest.isolated.config.ts, each in a fresh module graph.
export default defineProject({
  test: {
    name: "loop",
    setupFiles: [
      "../../test-support/property-setup.ts",
      "../../test-support/prototype-guard.ts",
      "../../test-support/worker-state-guard.ts",
    ],
    environment: "node",
    isolate: false,
    exclude: [...configDefaults.exclude, "**/*.isolated.test.ts"],
    // A hang guard, not a measurement. Property tests that run the loop against a testkit server once
    // per case took up to 2.8 s of vitest's default 5 s on a loaded two-core machine (two CPU burners
    // beside the suite).
    testTimeout: 20_000,
  },
});
