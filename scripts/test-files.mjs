// The test files under a folder, for the scripts that read every test (check-tests,
// check-property-runs): node_modules, dist and dot-folders left out.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/** Every file under `dir` whose name `pattern` matches (`*.test.ts`, `*.test.tsx` by default), recursively. */
export function testFiles(dir, pattern = /\.test\.tsx?$/) {
  const out = [];
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name === "dist" || name.startsWith(".")) continue;
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...testFiles(full, pattern));
    else if (pattern.test(name)) out.push(full);
  }
  return out;
}
