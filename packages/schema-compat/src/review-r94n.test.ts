/**
 * Round 94 (n): a list the model wrote as objects nested deep under a recursive union. Each object
 * read its union by a reading tried of the rest of the list, and the first object paid for every
 * reading tried below it: from 40 levels on, the checks ran out and the nulls below about depth 7
 * were kept (33 at 40 levels, every one at 100) — the tool then got nulls its schema refuses.
 */
import { countWork } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { Chain, chain } from "../test-support/recursive-chain.js";
import { dropOptionalNulls, restoreArguments } from "./optional-nulls.js";

/** The depths (0 the outermost) of the nodes still holding a null. */
function nullsKept(value: unknown): number[] {
  const depths: number[] = [];
  let node = value as Record<string, unknown> | undefined;
  for (let depth = 0; node; depth++, node = node.next as Record<string, unknown> | undefined) {
    if (Object.values(node).includes(null)) depths.push(depth);
  }
  return depths;
}

describe("a list written as objects nested under a recursive union", () => {
  it.each([40, 200, 1_000])(
    "drops every null left out at %i levels",
    (length) => {
      for (const read of [dropOptionalNulls, restoreArguments]) {
        const args = chain(length, true);
        const out = read(args, Chain);
        expect(nullsKept(out)).toEqual([]);
        expect(out).toEqual(chain(length, false));
        // Never mutated: the model's arguments still hold every null.
        expect(nullsKept(args)).toHaveLength(length + 1);
      }
    },
    120_000,
  );

  it("costs about sixteen times the work at sixteen times the length, not its square", async () => {
    // Counted, not timed (testkit countWork: array elements walked, Map and Set lookups, regular
    // expression runs): a ratio of two timings moved 3 to 4 times on a loaded CI host, a count does
    // not. Past the 64 levels a reading tried follows (MAX_DEPTH), each level costs the same: 100
    // levels against 1,600 read about 18 (1.3 and 23.6 million). Each level reading the rest of the
    // list once more would read about 256 (some 14,000 a level below each: about 70 million at 100
    // levels, which did not finish in 8 minutes counted). Counting stops at 64 times the small
    // count, so a fault growing only past 100 levels fails in seconds (dropOptionalNulls never
    // throws: it hands the arguments back, the count over the bound).
    const work = async (n: number, limit?: number) => {
      const args = chain(n, true);
      return (await countWork(() => dropOptionalNulls(args, Chain), limit)).total;
    };
    const small = await work(100);
    const large = await work(1_600, 64 * small);
    expect(large / small).toBeLessThan(64);
    expect(nullsKept(dropOptionalNulls(chain(1_600, true), Chain))).toEqual([]);
  }, 300_000);
});
