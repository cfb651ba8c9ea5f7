import { defineProject } from "vitest/config";

// The setup files' own checks (guards.ts), tested on leaks made on purpose (guards.test.ts). The
// project loads the setup files as every other does: a test here that leaves anything behind fails
// as theirs would.
export default defineProject({
  test: {
    isolate: false,
    name: "test-support",
    include: ["*.test.ts"],
    setupFiles: ["./property-setup.ts", "./prototype-guard.ts", "./worker-state-guard.ts"],
    environment: "node",
  },
});
