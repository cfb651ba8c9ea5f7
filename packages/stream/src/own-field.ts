/** How deep a prototype chain is followed: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/**
 * `value[key]` where `value` or a prototype of its own holds it (a class's getter), never where only
 * `Object.prototype` does: a polluted `Object.prototype.resume` or `.implicitOpen` made every fence
 * table (the defaults too) refused, and so every streamed turn; an inherited `onThinking` string
 * was called as a reader's callback.
 */
export function held(value: object, key: string): unknown {
  let at: object | null = value;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    if (Object.hasOwn(at, key)) return (value as Record<string, unknown>)[key];
    at = Object.getPrototypeOf(at) as object | null;
  }
  return undefined;
}
