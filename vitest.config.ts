import { defineConfig } from "vitest/config";

// One run over every package: each package's vitest.config.ts is a project here.
export default defineConfig({
  test: {
    projects: ["packages/*", "apps/*"],
    passWithNoTests: true,
    pool: "forks",
  },
});
