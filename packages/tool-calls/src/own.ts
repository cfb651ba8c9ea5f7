/**
 * Reading what a host gave (the options of a call) as the host wrote it: a field counts where the
 * object holds it itself, or a prototype of its own does (a class's getter), never where only
 * `Object.prototype` does. Some code in the host's process setting `Object.prototype.takesString =
 * "x"` (prototype pollution) otherwise failed every call's arguments as a bad option.
 */

/** How deep a prototype chain is followed: a Proxy's trap can make one endless. */
const CHAIN_LIMIT = 64;

/** `given[key]` where `given` or a prototype of its own holds `key`, else `undefined`. */
export function ownOption(given: object, key: string): unknown {
  for (let at: object | null = given, hops = 0; at && at !== Object.prototype && hops < CHAIN_LIMIT; hops++) {
    if (Object.hasOwn(at, key)) return (given as Record<string, unknown>)[key];
    at = Object.getPrototypeOf(at) as object | null;
  }
  return undefined;
}

/**
 * A descriptor for `Object.defineProperty` of a plain data field holding `value`, with no prototype:
 * a descriptor is read through its chain, so an ordinary literal took a polluted
 * `Object.prototype.get` (or `set`) as an accessor and threw.
 */
export function dataField(value: unknown): PropertyDescriptor {
  return {
    __proto__: null,
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  } as PropertyDescriptor;
}

/** `record[key]` where `record` holds `key` itself (JSON the model wrote), else `undefined`. */
export function ownKey(record: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
