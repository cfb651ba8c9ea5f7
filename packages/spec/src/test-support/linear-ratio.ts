// Test-only: not in the build nor in the package ("!src/test-support").

import { cpuTimeMs } from "@loopwright/testkit";

/** How long, at the least, each timed side runs: below some milliseconds a scheduler slice or the timer's grain is the ratio. */
const LEAST_MS = 20;

/**
 * How one reading of `long` (`times` times `short`) compares with `times` readings of `short`: near
 * 1 when `read` is linear in its text, near `times` when quadratic. Interleaved, best of five (after
 * a warm-up), so a busy machine slows both sides alike; a ratio of 8n against one reading of n
 * drifted past its bound under load (the small side is too short to time). A ratio of the same run,
 * never a time. Each side is read as many times over as makes the short readings last 20 ms of CPU
 * (where Node's `process.cpuUsage` exists): a side of microseconds on the wall clock, as both were
 * here once, read a stray pause or a neighbour's slice as the ratio on a loaded CI host.
 */
export function timesAgainstOne(
  read: (value: string) => void,
  short: string,
  long: string,
  times: number,
): number {
  const timed = (value: string, count: number) => {
    const start = cpuTimeMs();
    for (let i = 0; i < count; i += 1) read(value);
    return cpuTimeMs() - start;
  };
  timed(short, 2);
  // Rounds: how many times over each side is read, doubled until the short side lasts LEAST_MS.
  let rounds = 1;
  while (rounds < 1 << 20 && timed(short, times * rounds) < LEAST_MS) rounds *= 2;
  let manyShort = Number.POSITIVE_INFINITY;
  let oneLong = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round += 1) {
    manyShort = Math.min(manyShort, timed(short, times * rounds));
    oneLong = Math.min(oneLong, timed(long, rounds));
  }
  return oneLong / manyShort;
}

/** {@link timesAgainstOne} for a `long` of 8 times `short`: near 1 when linear, near 8 when quadratic. */
export function eightAgainstOne(read: (value: string) => void, short: string, long: string): number {
  return timesAgainstOne(read, short, long, 8);
}
