import { bestTimes } from "@loopwright/testkit";
import { assembleContext } from "../index.js";

/**
 * How many times longer assembleContext takes on a run of `<` with `first` after each, then of
 * `</` with `second` after each, than on plain text of the same length (each `<` let go at its next
 * character), timed in turn in the same run. A ratio, not a bound in ms, which a loaded machine
 * breaks; and against the same length rather than 8x the input, where the larger text leaves the
 * CPU's cache and reads superlinear on linear code. Linear: about 4. A lookahead that scans on past
 * each `<` (quadratic): tens of thousands.
 */
export async function tagCost(first: string, second: string, size = 16_000): Promise<number> {
  const hostile = `<${first}`.repeat(size) + `</${second}`.repeat(size);
  const plain = "<a".repeat(size) + "</b".repeat(size);
  const [slow, baseline] = await bestTimes([
    () => assembleContext([{ id: "m", context: hostile }], 1_000_000),
    () => assembleContext([{ id: "m", context: plain }], 1_000_000),
  ]);
  return (slow as number) / (baseline as number);
}
