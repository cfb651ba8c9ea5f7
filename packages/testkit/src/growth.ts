// The global clock, typed here: some packages compile without the DOM's or Node's types.
const clock = (globalThis as unknown as { performance: { now(): number } }).performance;

/**
 * The best of three timings of each of `runs`, taken in turn so that a busy neighbour slows them
 * alike. Compare them with each other, never with a bound in milliseconds: a loaded machine (six
 * agents on two cores, CI) slows every run, where a fixed bound failed.
 */
export async function bestTimes(runs: ReadonlyArray<() => unknown>): Promise<number[]> {
  for (const run of runs) await run(); // the first call compiles the code under test
  const best = runs.map(() => Number.POSITIVE_INFINITY);
  for (let round = 0; round < 3; round++) {
    for (const [i, run] of runs.entries()) {
      const started = clock.now();
      await run();
      best[i] = Math.min(best[i] as number, clock.now() - started);
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
