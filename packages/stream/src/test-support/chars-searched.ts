// Counting the characters a string search looks at, instead of timing it: testkit's countWork
// counts array, Map, Set and RegExp work, not a search of a string, and fences.ts reads its text
// with `indexOf`. A count is the same on a loaded machine as on an idle one, where the ratio of two
// CPU timings moved 3 to 4 times on a loaded 2-core CI host.

import { protoless } from "../protoless.js";

type Search = (this: string, needle: string, from?: number) => number;

/**
 * Runs `work` (synchronous) with `String.prototype.indexOf` counting the characters each search
 * passes over: from where it starts to the end of what it found, or to the end of the string when
 * the needle is not there. Code that searches the rest of a text again for every marker it reads
 * counts the square of the text's length; code that remembers where each marker is, a few times
 * its length. Answers the count; `indexOf` is put back whatever `work` does.
 */
export function charsSearched(work: () => void): number {
  const original = String.prototype.indexOf as Search;
  let chars = 0;
  Object.defineProperty(
    String.prototype,
    "indexOf",
    protoless({
      configurable: true,
      writable: true,
      value: function indexOf(this: string, needle: string, from?: number): number {
        const at = Reflect.apply(original, this, [needle, from]) as number;
        const start = Math.min(Math.max(Math.trunc(Number(from ?? 0)) || 0, 0), this.length);
        chars += (at === -1 ? this.length : at + String(needle).length) - start;
        return at;
      },
    }),
  );
  try {
    work();
  } finally {
    Object.defineProperty(
      String.prototype,
      "indexOf",
      protoless({ configurable: true, writable: true, value: original }),
    );
  }
  return chars;
}
