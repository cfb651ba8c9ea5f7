// `pnpm stress`: the whole suite with every property test run ten times as often, under one seed it
// prints, so that a round of harder property testing is one command anyone can repeat.
//   pnpm stress [vitest arguments…]           e.g. pnpm stress --project hooks --project ledger
//   LOOPWRIGHT_PROPERTY_SCALE=3 pnpm stress   another multiple (test-support/properties.ts)
//   LOOPWRIGHT_PROPERTY_SEED=<seed> pnpm stress   the run a printed seed started, again
// Builds the packages first (as `pnpm test` does; the script in package.json), then runs vitest with
// the scale, the seed and a test timeout raised in proportion: vitest's default one for the tests
// that name none is the projects' 20 s, times the scale (five minutes at ten). A test that names its
// own timeout keeps it, so a slow model test may time out at a high scale without any fault: the
// report says "Test timed out", where a property's failure says "Property failed" with its seed and
// path. Every property in the run takes the printed seed (its own fixed seed aside): a failure is
// replayed with the same seed, its path and `-t` naming the test:
//   LOOPWRIGHT_PROPERTY_SEED=<seed> LOOPWRIGHT_PROPERTY_PATH=<path> pnpm exec vitest run --project <p> <file> -t <name>
import { spawnSync } from "node:child_process";
import { randomInt } from "node:crypto";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;

/** The per-project timeout most heavy projects name (ledger, hooks, loop, spec…), before scaling. */
const BASE_TEST_TIMEOUT_MS = 20_000;

const scaleText = process.env.LOOPWRIGHT_PROPERTY_SCALE?.trim() || "10";
const scale = Number(scaleText);
if (!Number.isFinite(scale) || scale <= 0) {
  console.error(
    `stress: LOOPWRIGHT_PROPERTY_SCALE must be a number above 0 (got ${JSON.stringify(scaleText)})`,
  );
  process.exit(2);
}
const seedText = process.env.LOOPWRIGHT_PROPERTY_SEED?.trim() || String(randomInt(-0x80000000, 0x80000000));
const testTimeout = Math.round(BASE_TEST_TIMEOUT_MS * Math.max(1, scale));
const args = process.argv.slice(2);

const again = `LOOPWRIGHT_PROPERTY_SCALE=${scaleText} LOOPWRIGHT_PROPERTY_SEED=${seedText} pnpm stress${
  args.length > 0 ? ` ${args.join(" ")}` : ""
}`;
console.log(`stress: every property at ${scale}× its runs, seed ${seedText}, test timeout ${testTimeout} ms`);
console.log(`stress: the same run again: ${again}`);
const run = spawnSync(
  join(root, "node_modules/.bin/vitest"),
  ["run", `--testTimeout=${testTimeout}`, ...args],
  {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, LOOPWRIGHT_PROPERTY_SCALE: scaleText, LOOPWRIGHT_PROPERTY_SEED: seedText },
  },
);
if (run.error) console.error(`stress: could not start vitest: ${run.error.message}`);
// The seed again, below vitest's report, where a failure's reader is.
console.log(`stress: seed ${seedText} at ${scale}× its runs; the same run again: ${again}`);
process.exit(run.status ?? 1);
