// The clocks, typed here: some packages compile without the DOM's or Node's types.
const host = globalThis as unknown as {
  performance: { now(): number };
  process?: { cpuUsage?: () => { user: number; system: number } };
};
const cpuUsage = typeof host.process?.cpuUsage === "function" ? host.process.cpuUsage : undefined;

/**
 * Milliseconds of CPU the process has spent (user and system, every thread), where Node's
 * `process.cpuUsage` exists; the wall clock elsewhere. The clock {@link bestTimes} reads, for a
 * helper timing work its own way (read it before and after, and compare two such timings). A neighbour that takes the CPU away between
 * two lines of the work under test does not count: on a loaded machine a short run fitted in one
 * scheduler slice while a long one paid for every neighbour, and wall-clock ratios of linear work
 * read 16 to 90 there.
 */
export function cpuTimeMs(): number {
  if (!cpuUsage) return host.performance.now();
  const used = cpuUsage();
  return (used.user + used.system) / 1000;
}

/**
 * The best of three timings (ms) of each of `runs`, taken in turn after one warm-up call each (the
 * first call compiles the code under test). Under Node a timing is the CPU time the process spent
 * on the run, not the time that passed: a busy neighbour does not enter it, but neither does work
 * done in another process (a spawned child, a server outside this one), so time what runs here.
 * Compare the timings with each other, never with a bound in milliseconds: a loaded machine (CI)
 * slows every run, where a fixed bound failed.
 */
export async function bestTimes(runs: ReadonlyArray<() => unknown>): Promise<number[]> {
  for (const run of runs) await run(); // the first call compiles the code under test
  const best = runs.map(() => Number.POSITIVE_INFINITY);
  for (let round = 0; round < 3; round++) {
    for (const [i, run] of runs.entries()) {
      const started = cpuTimeMs();
      await run();
      best[i] = Math.min(best[i] as number, cpuTimeMs() - started);
    }
  }
  return best;
}

/**
 * How many times longer `work` takes on `factor` times the input (8 unless told), from
 * {@link bestTimes}. Linear work answers about `factor`, quadratic about its square (64). Pick `n`
 * so that the small size takes some milliseconds: below that, timer resolution and a stray pause
 * dominate.
 */
export async function growth(work: (n: number) => unknown, n: number, factor = 8): Promise<number> {
  const [small, large] = await bestTimes([() => work(n), () => work(n * factor)]);
  return (large as number) / (small as number);
}
