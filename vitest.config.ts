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
    // Most projects set `isolate: false` in their own config: a worker imports a package's modules
    // once for all its files instead of once a file. Measured on two cores, the whole suite took
    // 416 s and 492 s of CPU that way, against 571 s and 695 s of CPU with every file isolated.
    // loop and testkit keep isolation (files there replace a module with `vi.mock`), and so does
    // tools-mcp (it runs its files one at a time, which vitest will not mix with shared workers).
    // A test file here must therefore leave no module state behind it: no module-level singletons
    // it changes without restoring, no environment variables left set.
  },
});
