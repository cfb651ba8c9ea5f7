import { defineProject } from "vitest/config";

// The tests start real MCP servers (node processes) on a shared machine: give them time. Its files
// run side by side with the suite's other files, each in its own module graph. (They ran one at a
// time until 2026-12-05: vitest then runs the project after every other, alone, on one of the two
// workers — 145 s of the CI run with a core idle; two at a time took 92 s of a loaded machine.)
export default defineProject({
  test: {
    name: "tools-mcp",
    setupFiles: [
      "../../test-support/property-setup.ts",
      "../../test-support/prototype-guard.ts",
      "../../test-support/worker-state-guard.ts",
    ],
    environment: "node",
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
