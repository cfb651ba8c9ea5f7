// Counting the work a synchronous piece of code does, instead of timing it: a count does not move
// with the machine's load, where a bound in milliseconds (or a ratio of two short timings) failed
// on a loaded CI runner now and then.

import { Hash } from "node:crypto";

type Patched = { target: object; key: PropertyKey; descriptor: PropertyDescriptor };

/** What `countSteps` counts: the steps it saw, by kind, and their total. */
export interface Steps {
  total: number;
  /** Entries handed out by a Map's or Set's iteration (`for…of`, `keys()`, `forEach`, a spread). */
  visited: number;
  /** Lookups and removals on a Map or Set: `get`, `has`, `delete`. */
  looked: number;
  /** Array elements an `Array.prototype.splice` / `shift` moved or removed (the tail after the cut, and the cut). */
  moved: number;
  /** Array elements an `Array.prototype.filter` passed over: a pass over an array, each. */
  scanned: number;
}

/**
 * Runs the synchronous `work` with Map, Set and Array methods counting the steps they take (see
 * {@link Steps}), and answers the count. Only `work` runs while they count: nothing else can run
 * in the middle of synchronous code. Once more than `limit` steps were taken it throws, naming the
 * count: a path that costs as much as the whole collection per call fails at once rather than after
 * minutes of the quadratic work it was made to catch.
 */
export function countSteps(work: () => void, limit: number): Steps {
  const steps: Steps = { total: 0, visited: 0, looked: 0, moved: 0, scanned: 0 };
  const take = (kind: "visited" | "looked" | "moved" | "scanned", n: number) => {
    steps[kind] += n;
    steps.total += n;
    if (steps.total > limit) {
      throw new Error(
        `more than ${limit} steps (${JSON.stringify(steps)}): the work grows with the collection`,
      );
    }
  };
  const patched: Patched[] = [];
  // Only a method the prototype holds is wrapped (a Set has no `get`), and each is put back as it
  // was: restoring one it never held would leave a field on the prototype for every later file in
  // the worker (it left Set.prototype.get, undefined, until r99).
  const patch = (target: object, key: PropertyKey, wrap: (original: never) => unknown) => {
    const descriptor = Reflect.getOwnPropertyDescriptor(target, key);
    if (descriptor === undefined) return;
    patched.push({ target, key, descriptor });
    Object.defineProperty(target, key, { ...descriptor, value: wrap(descriptor.value as never) });
  };
  const counted = <T>(iterator: Iterator<T>): IterableIterator<T> => ({
    next() {
      const step = iterator.next();
      if (!step.done) take("visited", 1);
      return step;
    },
    [Symbol.iterator]() {
      return this;
    },
  });
  for (const proto of [Map.prototype, Set.prototype]) {
    for (const key of ["entries", "keys", "values", Symbol.iterator] as PropertyKey[]) {
      patch(
        proto,
        key,
        (original: (this: object) => Iterator<unknown>) =>
          function (this: object) {
            return counted(original.call(this));
          },
      );
    }
    patch(
      proto,
      "forEach",
      (original: (this: object, f: (...args: unknown[]) => void, thisArg?: unknown) => void) =>
        function (this: object, f: (...args: unknown[]) => void, thisArg?: unknown) {
          original.call(this, (...args: unknown[]) => {
            take("visited", 1);
            f.apply(thisArg, args);
          });
        },
    );
    for (const key of ["get", "has", "delete"]) {
      patch(
        proto,
        key,
        (original: (this: object, item: unknown) => unknown) =>
          function (this: object, item: unknown) {
            take("looked", 1);
            return original.call(this, item);
          },
      );
    }
  }
  patch(
    Array.prototype,
    "splice",
    (original: (this: unknown[], ...args: unknown[]) => unknown[]) =>
      function (this: unknown[], ...args: unknown[]) {
        const length = this.length;
        const start = Number(args[0] ?? 0);
        const from = start < 0 ? Math.max(0, length + start) : Math.min(start, length);
        take("moved", length - from);
        return original.apply(this, args);
      },
  );
  patch(
    Array.prototype,
    "shift",
    (original: (this: unknown[]) => unknown) =>
      function (this: unknown[]) {
        take("moved", this.length);
        return original.call(this);
      },
  );
  patch(
    Array.prototype,
    "filter",
    (original: (this: unknown[], ...args: unknown[]) => unknown[]) =>
      function (this: unknown[], ...args: unknown[]) {
        take("scanned", this.length);
        return original.apply(this, args);
      },
  );
  try {
    work();
  } finally {
    for (const { target, key, descriptor } of patched.reverse())
      Object.defineProperty(target, key, descriptor);
  }
  return steps;
}

/**
 * Runs `work` with every hash digest taken in this process counted (`createHash(…).digest()`, the
 * route latch store's digest of a server's base URL), and answers how many were taken until it
 * settled. Unlike `countSteps` the work may wait on Redis: nothing else in a test's worker digests
 * meanwhile, and a digest per server held per key read is millions against a bound in the hundreds.
 */
export async function countDigests(work: () => Promise<unknown>): Promise<number> {
  const descriptor = Reflect.getOwnPropertyDescriptor(Hash.prototype, "digest") as PropertyDescriptor;
  const original = descriptor.value as (this: Hash, ...args: unknown[]) => unknown;
  let digests = 0;
  Object.defineProperty(Hash.prototype, "digest", {
    ...descriptor,
    value(this: Hash, ...args: unknown[]) {
      digests++;
      return original.apply(this, args);
    },
  });
  try {
    await work();
  } finally {
    Object.defineProperty(Hash.prototype, "digest", descriptor);
  }
  return digests;
}
