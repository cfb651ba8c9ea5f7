import { describe, expect, it } from "vitest";
import { countWork } from "./index.js";

describe("countWork", () => {
  it("counts a copy per item as the square of the items, and a kept index as the items", async () => {
    const copying = (n: number) => {
      let list: number[] = [];
      for (let i = 0; i < n; i++) list = [...list, i];
    };
    const keeping = (n: number) => {
      const seen = new Map<number, number>();
      for (let i = 0; i < n; i++) seen.set(i, i);
      for (let i = 0; i < n; i++) seen.get(i);
    };
    expect((await countWork(() => copying(100))).elements).toBe((99 * 100) / 2);
    expect(await countWork(() => keeping(100))).toMatchObject({ total: 200, lookups: 200, elements: 0 });
  });

  it("counts unshift in a loop as the square of the items, as shift in one is, and the copies toSorted, toReversed, toSpliced, with and flat make", async () => {
    // The newest-first list a budget builds by putting each older entry in front (side-task's
    // fitStretch, tools-mcp's lastBytes): each unshift moves every entry already kept.
    const frontFirst = (n: number) => {
      const kept: number[] = [];
      for (let i = 0; i < n; i++) kept.unshift(i);
    };
    expect(await countWork(() => frontFirst(100))).toMatchObject({ copied: (99 * 100) / 2 });
    const list = [3, 1, 2];
    const copies = await countWork(() => {
      list.toSorted();
      list.toReversed();
      list.toSpliced(0, 1);
      list.with(0, 9);
      [list, list].flat();
    });
    expect(copies.copied).toBe(3 + 3 + 2 + 3 + 6);
  });

  it("counts the callbacks of a walk that stops early, copies, and regular expression runs", async () => {
    const list = Array.from({ length: 100 }, (_, i) => i);
    const count = await countWork(() => {
      list.find((n) => n === 9);
      list.slice(0, 30);
      /x/.test("abc");
      "a-b".replace(/-/g, "+");
    });
    expect(count).toMatchObject({ elements: 10, copied: 30, matches: 3 });
  });

  it("counts the regular expressions built at run time, not a literal, and the built ones are RegExps as before", async () => {
    const native = RegExp;
    let built: unknown;
    // Patterns from values, as a pattern built at run time is (a literal pattern would be a literal).
    const [runs, single] = [String("a+"), String("b")];
    const count = await countWork(() => {
      built = new RegExp(runs, "g");
      RegExp(single);
      /c/.test("c");
    });
    expect(count.built).toBe(2);
    expect(built).toBeInstanceOf(native);
    expect(built instanceof RegExp).toBe(true);
    expect(RegExp).toBe(native);
  });

  it("throws past its limit, naming the count, and puts every method back however the work ends", async () => {
    const iterate = Array.prototype[Symbol.iterator];
    const get = Map.prototype.get;
    await expect(countWork(() => [...Array.from({ length: 50 }, () => 0)], 10)).rejects.toThrow(
      /^more than 10 steps \(\{"total":11,/,
    );
    expect(Array.prototype[Symbol.iterator]).toBe(iterate);
    expect(Map.prototype.get).toBe(get);
    expect(Object.hasOwn(Set.prototype, "get")).toBe(false);
  });

  it("hands out iterators on the original's prototype: one taken while counting is still iterable, and its prototype's is the engine's", async () => {
    // undici, loaded lazily, took the prototype's prototype of `[][Symbol.iterator]()` for its own
    // iterators: a plain object's left every Headers iterator of the process not iterable.
    const engine = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
    let taken: unknown;
    await countWork(() => {
      taken = Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()));
    });
    expect(taken).toBe(engine);
    const inner = await countWork(async () => {
      function* all(map: Map<string, number>) {
        yield* map.values();
      }
      expect([...all(new Map([["a", 1]]))]).toEqual([1]);
    });
    expect(inner.entries).toBeGreaterThan(0);
  });
});
