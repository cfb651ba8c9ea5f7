import { defineProject } from "vitest/config";

export default defineProject({
  test: {
    isolate: false,
    name: "events",
    setupFiles: ["../../test-support/property-setup.ts"],
    environment: "node",
  },
});
