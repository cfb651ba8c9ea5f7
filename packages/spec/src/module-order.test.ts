import { execFile } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

// The secret reader's modules import one another in a circle (find-spec-secrets.ts and its parts).
// A module-level constant that reads another module's constant is then only set when the modules
// happen to load in a good order. This loads each module first, alone, in a fresh Node process (as
// a user or a test importing it directly would), since a test runner's module graph is shared and
// hides it (r59: importing shell-words.ts first threw "Cannot access 'SSH_VALUED' before
// initialization").
const dir = fileURLToPath(new URL(".", import.meta.url));
const modules = readdirSync(dir).filter(
  (file) => file.endsWith(".ts") && !file.endsWith(".test.ts") && file !== "types.ts",
);
const run = promisify(execFile);

describe("each of spec's modules loads when it is imported first", { timeout: 60_000 }, () => {
  it.each(modules)("%s", async (file) => {
    const url = pathToFileURL(`${dir}${file}`).href;
    const { stdout } = await run(process.execPath, [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      `const m = await import(${JSON.stringify(url)}); console.log(Object.keys(m).length);`,
    ]);
    expect(Number(stdout.trim())).toBeGreaterThan(0);
  });
});
