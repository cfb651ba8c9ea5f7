/**
 * Counting the entries synchronous code walks instead of timing it: a count does not move with the
 * machine's load, where a ratio of two CPU timings moved 3–4× on a loaded 2-core CI host.
 *
 * What is counted: every entry a Map or Set hands out while it is iterated (`keys()`, `values()`,
 * `entries()`, a spread, `for…of`, `forEach`), every entry put into one (`Map.prototype.set`,
 * `Set.prototype.add`, which `new Set(iterable)` calls for each entry once either is replaced), and
 * the length of every array `filter`, `map` or `sort` is called on. Building a catalogue's lookups
 * puts every tool into a Map; testing a pattern against every tool filters or walks all of them;
 * sorting a server's tools sorts all of them — so a path that repeats that work per call counts the
 * catalogue's size per call.
 */

import { ownDescriptor, protoless } from "../protoless.js";

type Patched = { target: object; key: PropertyKey; descriptor: PropertyDescriptor };

/** What {@link countEntries} counted: every entry walked, and of those, the ones an array sort took. */
export interface Entries {
  total: number;
  /** The lengths of the arrays `Array.prototype.sort` was called on, summed. */
  sorted: number;
}

/**
 * Runs the synchronous `work` with those methods counting, and answers the count. Past `limit`
 * entries it throws, naming the count, so a path that walks the whole catalogue per call fails at
 * once rather than after the minutes its quadratic work would take. Every method is put back as it
 * was, whatever `work` does.
 */
export function countEntries(work: () => void, limit = Number.POSITIVE_INFINITY): Entries {
  const count: Entries = { total: 0, sorted: 0 };
  const take = (n: number) => {
    count.total += n;
    if (count.total > limit)
      throw new Error(`more than ${limit} entries walked: the work grows with the catalogue`);
  };
  // What each wrapped method counts, given the object it was called on: an iterator's entries as
  // they are handed out, one for an entry put in, an array's length, or (forEach) each callback.
  type Kind = "iterates" | "stores" | "walks" | "visits";
  const methods: [object, PropertyKey, Kind][] = [];
  for (const proto of [Map.prototype, Set.prototype]) {
    for (const key of ["entries", "keys", "values", Symbol.iterator]) methods.push([proto, key, "iterates"]);
    methods.push([proto, "forEach", "visits"]);
  }
  methods.push([Map.prototype, "set", "stores"], [Set.prototype, "add", "stores"]);
  for (const key of ["filter", "map", "sort"]) methods.push([Array.prototype, key, "walks"]);
  const saved: Patched[] = [];
  for (const [target, key, kind] of methods) {
    const descriptor = ownDescriptor(target, key);
    if (descriptor === undefined) continue;
    saved.push({ target, key, descriptor });
    const original = descriptor.value as (this: unknown, ...args: unknown[]) => unknown;
    const wrapped = function (this: unknown, ...args: unknown[]): unknown {
      if (kind === "stores") take(1);
      if (kind === "walks") {
        const length = (this as unknown[]).length;
        take(length);
        if (key === "sort") count.sorted += length;
      }
      if (kind === "visits") {
        const [callback, thisArg] = args as [(...a: unknown[]) => void, unknown];
        return original.call(this, (...a: unknown[]) => {
          take(1);
          callback.apply(thisArg, a);
        });
      }
      const answer = original.apply(this, args);
      if (kind !== "iterates") return answer;
      const inner = answer as Iterator<unknown>;
      return {
        next() {
          const step = inner.next();
          if (!step.done) take(1);
          return step;
        },
        [Symbol.iterator]() {
          return this;
        },
      };
    };
    Object.defineProperty(target, key, protoless({ ...descriptor, value: wrapped }));
  }
  try {
    work();
  } finally {
    for (const { target, key, descriptor } of saved.reverse()) Object.defineProperty(target, key, descriptor);
  }
  return count;
}
