import { defineProject } from "vitest/config";

// A worker imports the package's modules once for all its files (the root vitest.config.ts says
// what that asks of a test file): the files that set LOOPWRIGHT_FIXTURES undo it after each test.
export default defineProject({
  test: {
    isolate: false,
    name: "testkit",
    setupFiles: [
      "../../test-support/property-setup.ts",
      "../../test-support/prototype-guard.ts",
      "../../test-support/worker-state-guard.ts",
    ],
    environment: "node",
  },
});
