import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// One run over every package: each package's vitest.config.ts is a project here.
export default defineConfig({
  test: {
    // A package's vitest.isolated.config.ts, where it has one, is a second project of its own:
    // the files there replace a module with `vi.mock` and need a fresh module graph each.
    projects: ["packages/*", "apps/*", "packages/*/vitest.isolated.config.ts", "test-support"],
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
    // A file that replaces a module with `vi.mock` keeps isolation in a package's
    // vitest.isolated.config.ts (see the projects above), and tools-mcp keeps it for all its files
    // (they start and end real MCP servers' process trees).
    // A test file here must therefore leave no module state behind it: no module-level singletons
    // it changes without restoring, no environment variables left set, no module it loaded afresh
    // under a changed environment left in the registry (`vi.resetModules()` after it).
    // Two setup files in every project check this: test-support/prototype-guard.ts after every test
    // (Object.prototype), test-support/worker-state-guard.ts after every file (process.env, the
    // built-ins and their prototypes, fake timers, process listeners, the working directory), and
    // the project test-support tests what they check (test-support/guards.test.ts).
  },
});
