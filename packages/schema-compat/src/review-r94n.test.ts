/**
 * Round 94 (n): a list the model wrote as objects nested deep under a recursive union. Each object
 * read its union by a reading tried of the rest of the list, and the first object paid for every
 * reading tried below it: from 40 levels on, the checks ran out and the nulls below about depth 7
 * were kept (33 at 40 levels, every one at 100) — the tool then got nulls its schema refuses.
 */
import { growth } from "@loopwright/testkit";
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

  it("costs about eight times as much at eight times the length", async () => {
    // Before, a long list either ran out of checks (nulls kept) or, each level read the rest of it
    // once more, would cost its length squared: 400 levels against 50 then read about 64.
    const ratio = await growth((n) => dropOptionalNulls(chain(n, true), Chain), 50, 8);
    expect(ratio).toBeLessThan(30);
    expect(nullsKept(dropOptionalNulls(chain(400, true), Chain))).toEqual([]);
  }, 120_000);
});
