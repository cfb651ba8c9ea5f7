import { configDefaults, defineProject } from "vitest/config";

// A worker imports the package's modules once for all its files (`isolate: false`; the root
// vitest.config.ts says what that asks of a test file). A file that replaces a module with
// `vi.mock` cannot share a worker, as the module may already be loaded real: such files are named
// *.isolated.test.ts and run in vitest.isolated.config.ts, each in a fresh module graph.
export default defineProject({
  test: {
    name: "loop",
    environment: "node",
    isolate: false,
    exclude: [...configDefaults.exclude, "**/*.isolated.test.ts"],
  },
});
