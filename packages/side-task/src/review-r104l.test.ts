// r104a taught testkit's countWork to count the elements `unshift` moves, and found side-task's
// fitStretch keeping a stretch's newest blocks by putting each at the front of the list kept so
// far: every block kept moved all those before it, quadratic in the blocks that fit (2,000 and
// 16,000 blocks counted 58.5 times the work for 8 times the blocks).
import { countWork } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { fitStretch } from "./summary-budget.js";

/** A question too long to show whole, then `n` short entries that all fit beside its cut. */
const stretch = (n: number) => {
  const blocks = [`[user]\n${"q".repeat(200_000)}`];
  for (let i = 0; i < n; i++) blocks.push(`[assistant]\nstep ${i}`);
  const room = blocks.slice(1).join("\n\n").length + 20_000;
  return { blocks, room };
};

describe("a stretch holding many short entries that fit", () => {
  it("is fitted in work that grows with the entries, not with their square", async () => {
    // Counted, not timed: 2,000 and 16,000 entries. Measured 30,058 and 118,726 steps (3.95: the
    // 200,000-character question's cut is a fixed share); with each kept entry put at the front of
    // those kept before it, 2.0 M and 78.8 M (38.8).
    const count = async (n: number) => {
      const { blocks, room } = stretch(n);
      return (await countWork(() => fitStretch(blocks, room))).total;
    };
    const [few, many] = [await count(2_000), await count(16_000)];
    expect(many / few).toBeLessThan(16);
  });

  it("still shows every entry that fits, oldest first, after the question's cut", () => {
    const { blocks, room } = stretch(50);
    const fitted = fitStretch(blocks, room);
    expect(fitted.length).toBeLessThanOrEqual(room);
    const steps = [...fitted.matchAll(/step (\d+)/g)].map((m) => Number(m[1]));
    expect(steps).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(fitted.startsWith("[user]\nqqq")).toBe(true);
  });
});
