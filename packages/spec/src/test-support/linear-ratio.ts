// Test-only: not in the build nor in the package ("!src/test-support").

/**
 * How one reading of `long` (8 times `short`) compares with eight readings of `short`: near 1 when
 * `read` is linear in its text, near 8 when quadratic. Interleaved, best of five (after a warm-up),
 * so a busy machine slows both sides alike; a ratio of 8n against one reading of n drifted past its
 * bound under load (the small side is too short to time). A ratio of the same run, never a time.
 */
export function eightAgainstOne(read: (value: string) => void, short: string, long: string): number {
  const timed = (value: string, times: number) => {
    const start = performance.now();
    for (let i = 0; i < times; i += 1) read(value);
    return performance.now() - start;
  };
  timed(short, 2);
  let eightShort = Number.POSITIVE_INFINITY;
  let oneLong = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round += 1) {
    eightShort = Math.min(eightShort, timed(short, 8));
    oneLong = Math.min(oneLong, timed(long, 1));
  }
  return oneLong / eightShort;
}
