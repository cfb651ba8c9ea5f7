/**
 * `pnpm fuzz`: every invariant in properties.ts for 100,000 cases each, then every shape in
 * ladder.ts from 8 KiB to 1 MiB. `pnpm fuzz:ci` (`--ci`): 2,000 cases each and the ladder to
 * 128 KiB, under about a minute and a half on two cores. Seeded (`--seed N`, default 22, printed),
 * so a failure reproduces; fast-check shrinks it to the smallest failing case.
 *
 *   tsx fuzz/run.ts [--ci] [--cases N] [--max-kib N] [--seed N] [--only text] [--no-ladder]
 */
import fc from "fast-check";
import { climb, SHAPES } from "./ladder.js";
import { TARGETS } from "./properties.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const option = (name: string): string | undefined => {
  const at = argv.indexOf(`--${name}`);
  return at >= 0 ? argv[at + 1] : undefined;
};
const ci = flag("ci");
const cases = Number(option("cases") ?? (ci ? 2_000 : 100_000));
const maxSize = Number(option("max-kib") ?? (ci ? 128 : 1024)) * 1024;
const seed = Number(option("seed") ?? 22);
const only = option("only");
/** The longest one generated case may take. Generous: the machine running this may be shared. */
const CASE_LIMIT_MS = Number(option("case-ms") ?? 1000);

let failed = 0;
const started = performance.now();
console.log(`fuzz: ${cases} cases per property, seed ${seed}, ladder to ${maxSize / 1024} KiB`);

for (const target of TARGETS) {
  if (only && !target.name.includes(only)) continue;
  const start = performance.now();
  const result = fc.check(target.property(CASE_LIMIT_MS), { numRuns: cases, seed, endOnFailure: false });
  const ms = (performance.now() - start).toFixed(0);
  if (result.failed) {
    failed++;
    console.log(`FAIL ${target.name} (${ms} ms)\n${fc.defaultReportMessage(result)}`);
  } else {
    console.log(`ok   ${target.name}: ${result.numRuns} cases (${ms} ms)`);
  }
}

if (!flag("no-ladder")) {
  for (const shape of SHAPES) {
    if (only && !shape.name.includes(only)) continue;
    const result = climb(shape, maxSize);
    const rungs = result.rungs.map((r) => `${r.size / 1024}K ${r.ms.toFixed(1)}ms`).join(", ");
    if (result.failure) {
      failed++;
      console.log(`FAIL ${shape.name}: ${result.failure}\n     ${rungs}`);
    } else {
      console.log(`ok   ${shape.name}: ${rungs}`);
    }
  }
}

console.log(
  `fuzz: ${failed === 0 ? "all held" : `${failed} failed`} in ${((performance.now() - started) / 1000).toFixed(1)} s`,
);
process.exitCode = failed === 0 ? 0 : 1;
