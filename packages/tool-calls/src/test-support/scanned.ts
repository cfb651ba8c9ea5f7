/**
 * Counting the characters synchronous code searches instead of timing it: a count does not move
 * with the machine's load, where a ratio of two CPU timings moved 3–4× on a loaded 2-core CI host.
 *
 * What is counted: for each search a string method or a regular expression makes, the characters
 * between where it started and where it stopped — `indexOf` and `includes` from their start to the
 * match (or the end), `lastIndexOf` from its start back to the match (or the beginning), and a
 * regular expression's `exec` (which `test`, `match`, `matchAll`, `replace`, `search` and `split`
 * call once it is replaced) from its `lastIndex` (0 unless global or sticky) to the end of its match
 * (or the end). A path that searches the whole text again for each marker in it counts the square
 * of the text's length; one that goes on from where it stopped counts about its length. A scan
 * written as a loop over characters is not counted: only what these methods search.
 */

type Patched = { target: object; key: string; original: unknown };

/**
 * Runs the synchronous `work` with those methods counting, and answers the characters they
 * searched. Past `limit` it throws, naming the count, so a path that searches the whole text per
 * marker fails at once rather than after the minutes its quadratic work would take. Every method is
 * put back as it was, whatever `work` does.
 */
export function countScanned(work: () => void, limit = Number.POSITIVE_INFINITY): number {
  let scanned = 0;
  const take = (n: number) => {
    scanned += Math.max(0, n);
    if (scanned > limit)
      throw new Error(`more than ${limit} characters searched: the work grows faster than the text`);
  };
  const patched: Patched[] = [];
  // Each is a method as the language defines it: writable, configurable, not enumerable.
  const define = (target: object, key: string, value: unknown) =>
    Object.defineProperty(target, key, {
      __proto__: null,
      value,
      writable: true,
      configurable: true,
      enumerable: false,
    } as PropertyDescriptor);
  const patch = (target: object, key: string, wrap: (original: never) => unknown) => {
    const original = (target as Record<string, unknown>)[key];
    patched.push({ target, key, original });
    define(target, key, wrap(original as never));
  };
  const indexOf = String.prototype.indexOf;
  const clamp = (position: unknown, length: number, absent: number) => {
    const n = position === undefined ? absent : Math.trunc(Number(position)) || 0;
    return Math.min(Math.max(n, 0), length);
  };
  try {
    patch(
      String.prototype,
      "indexOf",
      (original: (this: string, search: string, position?: number) => number) =>
        function (this: string, search: string, position?: number) {
          const found = original.call(this, search, position);
          const from = clamp(position, this.length, 0);
          take((found < 0 ? this.length : found + String(search).length) - from);
          return found;
        },
    );
    patch(
      String.prototype,
      "lastIndexOf",
      (original: (this: string, search: string, position?: number) => number) =>
        function (this: string, search: string, position?: number) {
          const found = original.call(this, search, position);
          const from = clamp(position, this.length, this.length);
          take(from + String(search).length - Math.max(found, 0));
          return found;
        },
    );
    patch(
      String.prototype,
      "includes",
      (original: (this: string, search: string, position?: number) => boolean) =>
        function (this: string, search: string, position?: number) {
          const found = indexOf.call(this, search, position);
          const from = clamp(position, this.length, 0);
          take((found < 0 ? this.length : found + String(search).length) - from);
          return original.call(this, search, position);
        },
    );
    patch(
      RegExp.prototype,
      "exec",
      (original: (this: RegExp, input: string) => RegExpExecArray | null) =>
        function (this: RegExp, input: string) {
          const text = String(input);
          const from = this.global || this.sticky ? this.lastIndex : 0;
          const match = original.call(this, text);
          take((match === null ? text.length : match.index + match[0].length) - from);
          return match;
        },
    );
    work();
  } finally {
    for (const { target, key, original } of patched.reverse()) define(target, key, original);
  }
  return scanned;
}
