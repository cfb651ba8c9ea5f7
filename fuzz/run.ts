/**
 * `pnpm fuzz`: every invariant in properties.ts for 100,000 cases each, then every shape in
 * ladder.ts from 8 KiB to 1 MiB. `pnpm fuzz:ci` (`--ci`): 2,000 cases each and the ladder to
 * 128 KiB, where a shape whose rung took over 100 ms (`--rung-budget-ms`) stops climbing once it
 * has four rungs (8 to 64 KiB): the slow shapes (spec's command-line readers, about 7 µs a byte)
 * took over half the short form's time on their 128 KiB rungs alone. Each rung is the best of its
 * warm-up and `--reps` timings (2 in the short form, else 3); a fit over the limit is timed again
 * with more. Seeded (`--seed N`, default 22, printed), so a failure reproduces; fast-check shrinks
 * it to the smallest failing case.
 *
 *   tsx fuzz/run.ts [--ci] [--cases N] [--max-kib N] [--rung-budget-ms N] [--reps N] [--seed N] [--only text]
 *     [--no-ladder] [--shard K/N]
 *
 * A property with a `share` (a costly one) runs that share of the cases.
 *
 * `--shard K/N` runs every Nth invariant and shape, starting at the Kth (the ladder's self-check in
 * shard 1 only): N processes, one a core, run the whole of it between them. Side by side they slow
 * each other's rungs, so .ci/run runs one process.
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
// `FUZZ_CASES` sets it too (a widened run: `FUZZ_CASES=20000 pnpm fuzz:ci`); `--cases` wins.
const cases = Number(option("cases") ?? process.env.FUZZ_CASES ?? (ci ? 2_000 : 100_000));
const maxSize = Number(option("max-kib") ?? (ci ? 128 : 1024)) * 1024;
const rungBudgetMs = Number(option("rung-budget-ms") ?? (ci ? 100 : Number.POSITIVE_INFINITY));
if (!(rungBudgetMs > 0)) {
  console.error(
    `fuzz: --rung-budget-ms takes a number of milliseconds over 0, not ${option("rung-budget-ms")}`,
  );
  process.exit(2);
}
/** Timings a rung takes besides its warm-up (the best of all kept): two in the short form, else three. */
const reps = Number(option("reps") ?? (ci ? 2 : 3));
if (!Number.isInteger(reps) || reps < 1) {
  console.error(`fuzz: --reps takes a whole number of timings of 1 or more, not ${option("reps")}`);
  process.exit(2);
}
const seed = Number(option("seed") ?? 22);
const only = option("only");
const shard = readShard(option("shard"));
/** The longest one generated case may take. Generous: the machine running this may be shared. */
const CASE_LIMIT_MS = Number(option("case-ms") ?? 1000);

/** `K/N` as the shard to run, or the whole run; anything else is refused before anything runs. */
function readShard(text: string | undefined): { index: number; count: number } {
  if (text === undefined) return { index: 0, count: 1 };
  const match = /^(\d+)\/(\d+)$/.exec(text);
  const k = Number(match?.[1]);
  const n = Number(match?.[2]);
  if (!match || n < 1 || k < 1 || k > n) {
    console.error(`fuzz: --shard takes K/N with 1 <= K <= N (as 1/2), not ${JSON.stringify(text)}`);
    process.exit(2);
  }
  return { index: k - 1, count: n };
}
/** Whether the item at `at` (of the invariants, or of the shapes) is this shard's. */
const mine = (at: number) => at % shard.count === shard.index;

let failed = 0;
const started = performance.now();
const part = shard.count > 1 ? `, shard ${shard.index + 1} of ${shard.count}` : "";
const budget = Number.isFinite(rungBudgetMs)
  ? ` (a shape stops past 64 KiB once a rung takes ${rungBudgetMs} ms)`
  : "";
console.log(
  `fuzz: ${cases} cases per property, seed ${seed}, ladder to ${maxSize / 1024} KiB${budget}${part}`,
);

for (const [at, target] of TARGETS.entries()) {
  if (!mine(at) || (only && !target.name.includes(only))) continue;
  const start = performance.now();
  const numRuns = Math.max(1, Math.round(cases * (target.share ?? 1)));
  const result = fc.check(target.property(CASE_LIMIT_MS), { numRuns, seed, endOnFailure: false });
  const ms = (performance.now() - start).toFixed(0);
  if (result.failed) {
    failed++;
    console.log(`FAIL ${target.name} (${ms} ms)\n${fc.defaultReportMessage(result)}`);
  } else {
    console.log(`ok   ${target.name}: ${result.numRuns} cases (${ms} ms)`);
  }
}

/**
 * The ladder's own check, before it judges anything: a quadratic shape must fail it, and a linear
 * shape with one step in it (the time jumps once between two rungs, as a collection or a table
 * resize does, then grows linearly again) must pass it.
 */
function selfCheck(): string | undefined {
  const spin = (ops: number) => {
    let x = 0;
    for (let i = 0; i < ops; i++) x = (x * 31 + i) | 0;
    return x;
  };
  // Operations a byte for the ladder's top rung to take about 5 ms on this machine.
  spin(1e6);
  const start = performance.now();
  spin(1e7);
  const perByte = Math.max(1, Math.round((5 / (performance.now() - start)) * (1e7 / maxSize)));
  // The quadratic shape's small rungs sit under the ladder's noise floor, where growth is not
  // judged: it climbs to 64 KiB at least, whatever --max-kib says (at 16 KiB it passed unjudged and
  // the self-check failed a run whose own shapes all held).
  const quadratic = climb(
    { name: "quadratic", build: (n) => n, run: (n) => spin(((n as number) / 64) ** 2) },
    Math.max(maxSize, 64 * 1024),
  );
  if (!quadratic.failure) return "a quadratic shape passed the ladder";
  // Six times the work a byte past the ladder's top: the step the CI run of 2026-12-02 met (128K
  // 3.8 ms, 256K 25 ms, 512K 53 ms) in a parser linear on either side of it. Then four times past
  // the first rung climbed beyond the top, as the CI run of 2026-12-03 met (256K 7.9 ms, 512K 34
  // ms; 57 ms at 1 MiB).
  for (const [from, factor] of [
    [maxSize, 6],
    [maxSize * 2, 4],
  ] as const) {
    const step = (n: number) => spin(n * perByte * (n > from ? factor : 1));
    const stepped = climb({ name: "one step", build: (n) => n, run: (n) => step(n as number) }, maxSize);
    if (stepped.failure) {
      return `a linear shape with one step past ${from / 1024} KiB failed the ladder: ${stepped.failure}`;
    }
  }
  return undefined;
}

if (!flag("no-ladder")) {
  const broken = shard.index === 0 ? selfCheck() : undefined;
  if (broken) {
    failed++;
    console.log(`FAIL the ladder's self-check: ${broken}`);
  } else if (shard.index === 0) {
    console.log(
      "ok   the ladder's self-check: a quadratic shape fails it, a linear one with a step passes (two places)",
    );
  }
  for (const [at, shape] of SHAPES.entries()) {
    if (!mine(at) || (only && !shape.name.includes(only))) continue;
    const result = climb(shape, maxSize, reps, rungBudgetMs);
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
