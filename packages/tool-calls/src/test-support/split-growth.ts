import { bestTimes } from "@loopwright/testkit";

/**
 * How many times longer one reading of `make(8 * n)` takes than eight readings of `make(n)` (eight
 * separate copies): about 1 where the cost is linear in the text, about 8 where it is quadratic.
 * Both sides read the same amount of text, so they take about as long and a loaded machine slows
 * them alike. testkit's `growth` compares a run with one eight times as long: with six agents on
 * two cores the short run fits in a scheduler's time slice where the long one pays the load, and
 * linear work measured 16 to 70 there. Even so a busy neighbour can land on one side only: the
 * lowest of up to five measurements is returned, stopping at the first under 2 (a quadratic cost
 * measures about 8 every time). `n`: the units that make about `bytes` (32 KB unless told) of
 * `make`'s text.
 */
export async function splitGrowth(
  work: (text: string) => unknown,
  make: (n: number) => string,
  bytes = 32_000,
): Promise<number> {
  const n = Math.ceil(bytes / (make(2).length - make(1).length));
  const parts = Array.from({ length: 8 }, () => make(n));
  const whole = make(8 * n);
  let lowest = Number.POSITIVE_INFINITY;
  for (let attempt = 0; attempt < 5 && lowest >= 2; attempt++) {
    const [split, one] = await bestTimes([
      () => {
        for (const part of parts) work(part);
      },
      () => work(whole),
    ]);
    lowest = Math.min(lowest, (one as number) / (split as number));
  }
  return lowest;
}
