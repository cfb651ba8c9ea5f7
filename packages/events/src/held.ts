/** How deep a prototype chain {@link held} follows: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/**
 * Whether `value` holds `field` itself or through a prototype of its own (a class's getter, as
 * `AbortSignal.prototype` holds `aborted`), short of `Object.prototype`: a field some code set on a
 * polluted `Object.prototype` (`stopped = true`, which made every run "stopped"; `aborted = true`,
 * which finished every watcher at once) is no event's or signal's. Throws what a Proxy's trap throws.
 */
export function held(value: object, field: string): boolean {
  let at: object | null = value;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    if (Object.hasOwn(at, field)) return true;
    at = Object.getPrototypeOf(at) as object | null;
  }
  return false;
}
