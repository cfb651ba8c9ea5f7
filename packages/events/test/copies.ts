// Shared by the events tests; not published (package.json `files` holds only dist, src and llms.txt).
// Counting what a synchronous piece of code copies, instead of timing it: a count does not move with
// the machine's load, where a ratio of two timings moved 3 to 4 times on a loaded CI host.

type Patched = { target: object; key: PropertyKey; descriptor: PropertyDescriptor };

/** What `countCopies` counts, and their total. */
export interface Copies {
  total: number;
  /**
   * Array elements copied by `Array.prototype.slice`. (A `splice` or `shift` moving a tail is
   * counted by redis's `test/steps.ts`; the faults counted here copied with `slice`.)
   */
  elements: number;
  /** Characters of the strings `String.prototype.slice` / `substring` / `substr` handed back. */
  characters: number;
}

/**
 * Runs the synchronous `work` with the Array and String methods that copy counting what they copy
 * (see {@link Copies}), and answers the count. Only `work` runs while they count: nothing else can
 * run in the middle of synchronous code. Once the total passes `limit` it throws, naming the count:
 * a path that copies the whole collection per step fails at once rather than after the minutes of
 * quadratic work it was made to catch.
 */
export function countCopies(work: () => void, limit: number): Copies {
  const copies: Copies = { total: 0, elements: 0, characters: 0 };
  const take = (kind: "elements" | "characters", n: number) => {
    copies[kind] += n;
    copies.total += n;
    if (copies.total > limit) {
      throw new Error(
        `copied more than ${limit} (${JSON.stringify(copies)}): the work grows with the collection`,
      );
    }
  };
  const patched: Patched[] = [];
  const patch = (target: object, key: PropertyKey, wrap: (original: never) => unknown) => {
    const descriptor = Reflect.getOwnPropertyDescriptor(target, key) as PropertyDescriptor;
    patched.push({ target, key, descriptor });
    Object.defineProperty(target, key, { ...descriptor, value: wrap(descriptor.value as never) });
  };
  patch(
    Array.prototype,
    "slice",
    (original: (this: unknown[], ...args: unknown[]) => unknown[]) =>
      function (this: unknown[], ...args: unknown[]) {
        const copy = original.apply(this, args);
        take("elements", copy.length);
        return copy;
      },
  );
  for (const key of ["slice", "substring", "substr"]) {
    patch(
      String.prototype,
      key,
      (original: (this: string, ...args: unknown[]) => string) =>
        function (this: string, ...args: unknown[]) {
          const copy = original.apply(this, args);
          take("characters", copy.length);
          return copy;
        },
    );
  }
  try {
    work();
  } finally {
    for (const { target, key, descriptor } of patched.reverse())
      Object.defineProperty(target, key, descriptor);
  }
  return copies;
}
