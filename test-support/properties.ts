// One switch for every property test in the repository (fast-check): how many runs, from which
// seed. Every project's vitest config loads ./property-setup.ts, which sets fast-check's global
// parameters for the properties that name no run count; a property that names one passes it
// through `propertyRuns(n)` below, as a run's own `numRuns` overrides fast-check's global one.
//
//   LOOPWRIGHT_PROPERTY_SCALE=<n>   multiplies every property's run count (default 1: the counts
//                                   the tests name). A fraction runs fewer; never fewer than one.
//   LOOPWRIGHT_PROPERTY_SEED=<int>  the seed of every property in the run, in place of the seed a
//                                   test names and of fast-check's random one (a 32-bit integer,
//                                   as fast-check prints it). Absent: each property keeps its own
//                                   seed, or fast-check draws one.
//   LOOPWRIGHT_PROPERTY_PATH=<path> with the seed, replays one failure's shrunk case. It applies to
//                                   every property the run reaches: pick the one test with `-t`.
//
// A test that runs a property and names its own timeout names it as `propertyTimeout(ms)`, which
// the scale raises too.
//
// A failing property prints its seed and path (`{ seed: -1601569035, path: "8:1:1" }`); the same
// test run again with LOOPWRIGHT_PROPERTY_SEED and LOOPWRIGHT_PROPERTY_PATH set to them replays it,
// at any scale. `pnpm stress` (scripts/stress.mjs) runs the whole suite at ten times the runs under
// a seed it prints.
//
// The values come from the environment once, when a test file first imports this module: an
// invalid one fails every test file with an error that names the variable.

import type { Parameters } from "fast-check";

/** The run counts' multiplier: LOOPWRIGHT_PROPERTY_SCALE, or 1. */
export const PROPERTY_SCALE = readScale(process.env.LOOPWRIGHT_PROPERTY_SCALE);

/** The seed every property takes: LOOPWRIGHT_PROPERTY_SEED, or `undefined` (each its own). */
export const PROPERTY_SEED = readSeed(process.env.LOOPWRIGHT_PROPERTY_SEED);

/** The shrink path to replay with PROPERTY_SEED: LOOPWRIGHT_PROPERTY_PATH, or `undefined`. */
export const PROPERTY_PATH = readPath(process.env.LOOPWRIGHT_PROPERTY_PATH, PROPERTY_SEED);

/** A property's run count under the scale: `numRuns` times PROPERTY_SCALE, rounded, at least 1. */
export function scaledRuns(numRuns: number): number {
  return PROPERTY_SCALE === 1 ? numRuns : Math.max(1, Math.round(numRuns * PROPERTY_SCALE));
}

/**
 * The timeout of a test (or a describe's) that runs a property and names its own timeout:
 * `it(title, fn, propertyTimeout(60_000))`. `ms` times LOOPWRIGHT_PROPERTY_SCALE when that is above
 * 1, as the runs take that much longer; `ms` itself otherwise. A test that names no timeout takes
 * its project's, which `pnpm stress` raises with vitest's `--testTimeout`.
 */
export function propertyTimeout(ms: number): number {
  return PROPERTY_SCALE > 1 ? Math.round(ms * PROPERTY_SCALE) : ms;
}

/**
 * The parameters of one `fc.assert` / `fc.check` that names its run count: `propertyRuns(60)` in
 * place of `{ numRuns: 60 }`, `propertyRuns(500, { seed: 7, examples })` in place of
 * `{ numRuns: 500, seed: 7, examples }`. Returns `params` with `numRuns` scaled by
 * LOOPWRIGHT_PROPERTY_SCALE, `seed` replaced by LOOPWRIGHT_PROPERTY_SEED when that is set (and
 * `path` by LOOPWRIGHT_PROPERTY_PATH when both are). With none of them set it returns
 * `{ ...params, numRuns }`: the run the test names.
 */
export function propertyRuns<Ts>(numRuns: number, params?: Parameters<Ts>): Parameters<Ts> {
  const out: Parameters<Ts> = { ...params, numRuns: scaledRuns(numRuns) };
  if (PROPERTY_SEED !== undefined) {
    out.seed = PROPERTY_SEED;
    if (PROPERTY_PATH !== undefined) out.path = PROPERTY_PATH;
  }
  return out;
}

function readScale(text: string | undefined): number {
  if (text === undefined || text.trim() === "") return 1;
  const scale = Number(text);
  if (!Number.isFinite(scale) || scale <= 0) {
    throw new Error(`LOOPWRIGHT_PROPERTY_SCALE must be a number above 0 (got ${JSON.stringify(text)})`);
  }
  return scale;
}

function readSeed(text: string | undefined): number | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  const seed = Number(text);
  if (!Number.isInteger(seed) || seed < -0x80000000 || seed > 0x7fffffff) {
    throw new Error(
      `LOOPWRIGHT_PROPERTY_SEED must be a 32-bit integer, as fast-check prints a seed (got ${JSON.stringify(text)})`,
    );
  }
  return seed;
}

function readPath(text: string | undefined, seed: number | undefined): string | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  if (seed === undefined) {
    throw new Error(
      "LOOPWRIGHT_PROPERTY_PATH replays a failure only with its seed: set LOOPWRIGHT_PROPERTY_SEED too",
    );
  }
  if (!/^\d+(:\d+)*$/.test(text.trim())) {
    throw new Error(
      `LOOPWRIGHT_PROPERTY_PATH must be a path as fast-check prints it, such as 8:1:1 (got ${JSON.stringify(text)})`,
    );
  }
  return text.trim();
}
