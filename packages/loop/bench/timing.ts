/**
 * The fastest time, in ms, of each of `runs`, timed one call at a time in interleaved rounds (each
 * warmed first), so a noisy neighbour on a shared machine moves every side of a ratio alike.
 */
export function fastest(runs: (() => unknown)[], rounds = 20, perRound = 5): number[] {
  const best = runs.map(() => Number.POSITIVE_INFINITY);
  for (const run of runs) for (let i = 0; i < 3; i++) run();
  for (let round = 0; round < rounds; round++) {
    runs.forEach((run, k) => {
      for (let i = 0; i < perRound; i++) {
        const started = performance.now();
        run();
        best[k] = Math.min(best[k] as number, performance.now() - started);
      }
    });
  }
  return best;
}
