// Counting the work code does, instead of timing it: a count does not move with the machine's load,
// where a ratio of two CPU timings moved 3 to 4 times on a loaded 2-core CI host (a short run fits
// one scheduler slice, a long one pays for every neighbour's cache misses).

import { ownDescriptor, protoless } from "./protoless.js";

/** What {@link countWork} counted, by kind, and their total. */
export interface Work {
  total: number;
  /**
   * Array elements walked: handed out by an array's iteration (`for…of`, a spread, `values()`,
   * `entries()`, `keys()`), passed to the callback of `map`, `filter`, `forEach`, `some`, `every`,
   * `find`, `findIndex`, `findLast`, `findLastIndex`, `reduce`, `reduceRight` or `flatMap`, and the
   * length of the array `indexOf`, `lastIndexOf`, `includes`, `join` or `sort` is called on.
   */
  elements: number;
  /**
   * Array elements copied (the length of what `slice`, `concat`, `flat`, `toSorted`, `toReversed`,
   * `toSpliced` and `with` hand back) or moved (the tail a `splice` moves, the elements a `shift` or
   * `unshift` moves along).
   */
  copied: number;
  /** Entries a Map or Set hands out while it is iterated (`for…of`, a spread, `keys()`, `forEach`…). */
  entries: number;
  /** Lookups and changes on a Map or Set: `get`, `has`, `set`, `add`, `delete`. */
  lookups: number;
  /** Regular expressions built from a pattern at run time (`new RegExp(…)`, `RegExp(…)`; a literal is not counted). */
  built: number;
  /** Runs of a regular expression (`RegExp.prototype.exec`, which `test`, `match`, `replace`, `split` and `matchAll` call while it is counted). */
  matches: number;
}

type Kind = Exclude<keyof Work, "total">;
/** A method as it is wrapped: called with any `this` and arguments. */
type Method = (this: never, ...args: unknown[]) => unknown;
type Patched = { target: object; key: PropertyKey; descriptor: PropertyDescriptor };

const ITERATORS: PropertyKey[] = ["entries", "keys", "values", Symbol.iterator];
const CALLBACK_WALKS = [
  "map",
  "filter",
  "forEach",
  "some",
  "every",
  "find",
  "findIndex",
  "findLast",
  "findLastIndex",
  "flatMap",
  "reduce",
  "reduceRight",
];
const LENGTH_WALKS = ["indexOf", "lastIndexOf", "includes", "join", "sort"];

/**
 * Runs `work` with the Array, Map, Set and RegExp methods above counting what they walk, copy and
 * look up (see {@link Work}), and answers the count once `work` settles. Code that repeats a pass
 * over a whole collection per item counts the collection's size per item, where code that keeps an
 * index counts a constant: compare the counts of two sizes, or of two inputs of the same size, as a
 * timing ratio would be compared — the count is the same on a loaded machine as on an idle one.
 *
 * `work` may wait (a request to a loopback server in this process): everything the process runs
 * meanwhile is counted too, the same for both inputs compared, so compare differences or ratios
 * well apart from that. Only JavaScript calling these methods is counted: Node's own modules call
 * their saved copies. Past `limit` (none unless told) a counted method throws, naming the count,
 * so a quadratic path fails at once rather than after the minutes it takes: give a limit only to
 * synchronous work — thrown inside a server's handler it can leave a request unanswered. Every
 * method is put back as it was, whatever `work` does.
 *
 * What it cannot see counts nothing, so a quadratic path made only of such work counts 0 for both
 * sizes and reads as no growth: an indexed `for` loop (`a[i]`), string methods (`indexOf`,
 * `slice`, `includes`, `split` by a string, `+` in a loop), object spreads and `Object.keys`,
 * `values`, `entries`, `assign`, `JSON.stringify` and `parse`, `Buffer.concat`, typed arrays, and
 * the backtracking inside one regular expression run (a run counts 1, however long it takes).
 * Assert that the small size counted something (`expect(small.total).toBeGreaterThan(0)`) and time
 * such work with {@link growth} instead.
 */
export async function countWork(work: () => unknown, limit = Number.POSITIVE_INFINITY): Promise<Work> {
  const count: Work = { total: 0, elements: 0, copied: 0, entries: 0, lookups: 0, built: 0, matches: 0 };
  // Off while the methods are wrapped and put back: the loops doing it walk arrays too.
  let counting = false;
  const take = (kind: Kind, n: number) => {
    if (!counting) return;
    count[kind] += n;
    count.total += n;
    if (count.total > limit) {
      throw new Error(`more than ${limit} steps (${JSON.stringify(count)}): the work grows with the input`);
    }
  };
  const saved: Patched[] = [];
  // Only a method the prototype holds is wrapped, and each is put back by its own descriptor.
  const patch = (target: object, key: PropertyKey, wrap: (original: Method) => Method) => {
    const descriptor = ownDescriptor(target, key);
    if (descriptor === undefined || typeof descriptor.value !== "function") return;
    saved.push({ target, key, descriptor });
    Object.defineProperty(target, key, protoless({ ...descriptor, value: wrap(descriptor.value as Method) }));
  };
  // The counting iterator stands on the original's prototype (an array's iterator's, a Map's), so
  // it is what code expects of one: undici, loaded lazily in the middle of counted work, takes the
  // prototype of the prototype of `[][Symbol.iterator]()` as every iterator's, and a plain object's
  // (null above Object.prototype) left every Headers iterator of the process not iterable.
  const counted = (kind: Kind, inner: Iterator<unknown>): Iterator<unknown> => {
    const iterator = Object.create(Object.getPrototypeOf(inner) as object) as Iterator<unknown>;
    Object.defineProperty(
      iterator,
      "next",
      protoless({
        configurable: true,
        writable: true,
        value() {
          const step = inner.next();
          if (!step.done) take(kind, 1);
          return step;
        },
      }),
    );
    return iterator;
  };
  const iterating = (kind: Kind) => (original: Method) =>
    function (this: unknown, ...args: unknown[]) {
      return counted(kind, Reflect.apply(original, this, args) as Iterator<unknown>);
    };
  const calling = (kind: Kind) => (original: Method) =>
    function (this: unknown, ...args: unknown[]) {
      const callback = args[0];
      // No spread here: an array's spread is itself counted while this runs.
      if (typeof callback === "function") {
        args[0] = function (this: unknown, ...given: unknown[]) {
          take(kind, 1);
          return Reflect.apply(callback, this, given);
        };
      }
      return Reflect.apply(original, this, args);
    };
  for (const key of ITERATORS) patch(Array.prototype, key, iterating("elements"));
  // reduce's callback takes the accumulator first; counted the same way, one per element.
  for (const key of CALLBACK_WALKS) patch(Array.prototype, key, calling("elements"));
  for (const key of LENGTH_WALKS) {
    patch(
      Array.prototype,
      key,
      (original) =>
        function (this: unknown[], ...args: unknown[]) {
          take("elements", this.length);
          return Reflect.apply(original, this, args);
        },
    );
  }
  for (const key of ["slice", "concat", "flat", "toSorted", "toReversed", "toSpliced", "with"]) {
    patch(
      Array.prototype,
      key,
      (original) =>
        function (this: unknown[], ...args: unknown[]) {
          const copy = Reflect.apply(original, this, args) as unknown[];
          take("copied", copy.length);
          return copy;
        },
    );
  }
  patch(
    Array.prototype,
    "splice",
    (original) =>
      function (this: unknown[], ...args: unknown[]) {
        const start = Math.trunc(Number(args[0] ?? 0)) || 0;
        const from = start < 0 ? Math.max(0, this.length + start) : Math.min(start, this.length);
        take("copied", this.length - from);
        return Reflect.apply(original, this, args);
      },
  );
  patch(
    Array.prototype,
    "shift",
    (original) =>
      function (this: unknown[]) {
        take("copied", this.length);
        return Reflect.apply(original, this, []);
      },
  );
  // Every element already there moves along to make room at the front: `unshift` in a loop is a
  // copy per item, as `shift` in one is.
  patch(
    Array.prototype,
    "unshift",
    (original) =>
      function (this: unknown[], ...args: unknown[]) {
        take("copied", this.length);
        return Reflect.apply(original, this, args);
      },
  );
  for (const proto of [Map.prototype, Set.prototype]) {
    for (const key of ITERATORS) patch(proto, key, iterating("entries"));
    patch(proto, "forEach", calling("entries"));
    for (const key of ["get", "has", "set", "add", "delete"]) {
      patch(
        proto,
        key,
        (original) =>
          function (this: unknown, ...args: unknown[]) {
            take("lookups", 1);
            return Reflect.apply(original, this, args);
          },
      );
    }
  }
  patch(
    RegExp.prototype,
    "exec",
    (original) =>
      function (this: RegExp, text: unknown) {
        take("matches", 1);
        return Reflect.apply(original, this, [text]);
      },
  );
  // The global RegExp, as code names it when it builds one: a Proxy counting each build. A literal
  // and Node's own modules (their saved copy) never reach it; `instanceof RegExp` answers as before.
  const regExp = ownDescriptor(globalThis, "RegExp");
  if (regExp !== undefined) {
    saved.push({ target: globalThis, key: "RegExp", descriptor: regExp });
    const native = regExp.value as Method & (new (...args: unknown[]) => object);
    const building = new Proxy(
      native,
      protoless({
        construct(target: Method, args: unknown[], newTarget: Method) {
          take("built", 1);
          return Reflect.construct(target, args, newTarget) as object;
        },
        apply(target: Method, self: unknown, args: unknown[]) {
          take("built", 1);
          return Reflect.apply(target, self, args) as unknown;
        },
      }),
    );
    Object.defineProperty(globalThis, "RegExp", protoless({ ...regExp, value: building }));
  }
  try {
    counting = true;
    await work();
  } finally {
    counting = false;
    // An index, not `for…of`: the array's iteration is one of the methods being put back.
    for (let i = saved.length - 1; i >= 0; i--) {
      const { target, key, descriptor } = saved[i] as Patched;
      Object.defineProperty(target, key, descriptor);
    }
  }
  return count;
}
