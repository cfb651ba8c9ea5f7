// The README's example is the first thing a user runs: it is run here, against the built package
// (imported by its own name) and the real server-everything, and what it prints must match the
// comments written under it.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");

describe("the README example", () => {
  it("runs and prints what its comments say", () => {
    const code = /```js\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
    expect(code).toContain('from "@loopwright/tools-mcp"');
    const run = spawnSync(process.execPath, ["--input-type=module", "-e", code], {
      cwd: packageDir,
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(run.status).toBe(0);
    const expected = [...code.matchAll(/console\.log\([^\n]*\n\s*\/\/ ([^\n]+)/g)].map((m) => m[1] ?? "");
    expect(expected.length).toBe(3);
    expect(run.stdout.trim().split("\n")).toEqual(expected);
  });
});
