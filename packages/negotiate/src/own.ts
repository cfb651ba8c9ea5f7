/**
 * Reading what a host gave (the options of `negotiate`, `buildBody`, `backoffMs`, a capability
 * store, a `ContextOverflow`) and what a server sent (an error body, a snapshot) as it was written:
 * a field counts where the object holds it itself, or a prototype of its own does (a class's
 * getter, an `Error`'s `message`), never where only `Object.prototype` does. Some code in the host's
 * process setting `Object.prototype.maxAttempts = true` (prototype pollution) otherwise refused
 * every `negotiate` call, `.maxEndpoints` every capability store, `.order` every `buildBody` call
 * given options.
 */

/** How deep a prototype chain {@link own} follows: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/**
 * `value[name]` where `value` (or a prototype of its own, below `Object.prototype`) holds it;
 * `undefined` for anything that is not an object or a function, and for a field only
 * `Object.prototype` holds. Throws what `value` throws when read.
 */
export function own(value: unknown, name: string): unknown {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return undefined;
  for (let at: object | null = value, depth = 0; at !== null && depth < MAX_CHAIN; depth++) {
    if (at === Object.prototype) return undefined;
    if (Object.hasOwn(at, name)) return (value as Record<string, unknown>)[name];
    at = Object.getPrototypeOf(at) as object | null;
  }
  return undefined;
}

/**
 * An options object's fields `names`, each read once with {@link own}, in an object with no
 * prototype; a field absent (or `undefined`) is left out. `null` and `undefined` are no options;
 * anything else that is not an object is handed back as it is, for the check that refuses it.
 */
export function ownOptions<T>(given: T | null | undefined, names: readonly (keyof T & string)[]): T {
  if (given === null || given === undefined) return Object.create(null) as T;
  if (typeof given !== "object") return given;
  const read = Object.create(null) as Record<string, unknown>;
  for (const name of names) {
    const value = own(given, name);
    if (value !== undefined) read[name] = value;
  }
  return read as T;
}
