/** How deep a prototype chain {@link setting} follows: a Proxy's trap can make one endless. */
export const MAX_CHAIN = 64;

/**
 * `given[name]` where `given` holds it itself, or a prototype of its own does (a class's getter or
 * method); `undefined` for anything that is not an object, and where only `Object.prototype` holds
 * it: a field some code set on a polluted `Object.prototype` (`maxTurns = 1`, which gave every
 * session one tool turn) is nobody's option. Throws what `given` throws when read. As
 * `@loopwright/ledger` reads its options.
 */
export function setting(given: unknown, name: string): unknown {
  if ((typeof given !== "object" && typeof given !== "function") || given === null) return undefined;
  let at: object | null = given;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    if (Object.hasOwn(at, name)) return (given as Record<string, unknown>)[name];
    at = Object.getPrototypeOf(at) as object | null;
  }
  return undefined;
}

/**
 * The fields `names` of `given` as {@link setting} reads them, each once, into an object with no
 * prototype (a field left out, or `undefined`, is absent from it). Throws what `given` throws when read.
 */
export function ownFields<T extends object>(given: T, names: readonly string[]): T {
  const copy = Object.create(null) as Record<string, unknown>;
  for (const name of names) {
    const value = setting(given, name);
    if (value !== undefined) copy[name] = value;
  }
  return copy as T;
}
