import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// One run over every package: each package's vitest.config.ts is a project here.
export default defineConfig({
  test: {
    projects: ["packages/*", "apps/*"],
    passWithNoTests: true,
    pool: "forks",
    // Vitest's own default is one worker fewer than the cores, which on a two-core CI machine is a
    // single file at a time. Much of the suite waits on sockets, child processes (MCP servers,
    // redis, Chromium) and timers rather than computing, so one worker per core halves the wall
    // time (measured on two cores: 209 s with one worker, 128 s with two).
    maxWorkers: Math.max(2, availableParallelism()),
  },
});
