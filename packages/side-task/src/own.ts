import { ownDescriptor, protoless } from "./protoless.js";

/**
 * Reading what a host gave (options, task settings, an endpoint, a catalogue's servers and tools)
 * as the host wrote it: a field counts where the object holds it itself, or a prototype of its own
 * does (a class's getter), never where only `Object.prototype` does. Some code in the host's
 * process setting `Object.prototype.maxTokens = 1` (prototype pollution) otherwise cut every side
 * task's reply to one token, `Object.prototype.extraBody` put its fields on every request, and
 * `Object.prototype.endpoint` sent every task named without an endpoint to another server.
 */

/** How deep a prototype chain is followed: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/** Whether `value` is an object whose fields are read as a host's settings (not an array, not null). */
function isFields(value: unknown): value is object {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * `value`'s fields in an object with no prototype: its own enumerable data fields, read once; its
 * own getters, and every field a prototype of its own holds (below `Object.prototype`: a class's
 * getter or method, `Object.create(defaults)`'s defaults), as getters that ask `value` each time
 * they are read (not among the view's keys, as they are not among the object's) — a method so read is bound to `value`, so its `this` (and a class's `#private`
 * fields) are the host's object's, not the view's. A field only a polluted `Object.prototype` holds
 * reads as `undefined` there. Anything that is not such an object (an array, `null`, a string) is
 * handed back as it is, for the checks that refuse it to name it.
 */
export function ownView<T>(value: T): T {
  if (!isFields(value) || Object.getPrototypeOf(value) === null) return value;
  const view = Object.create(null) as Record<string, unknown>;
  const source = value as Record<string, unknown>;
  const asked = (name: string): PropertyDescriptor =>
    protoless({
      get: () => source[name],
      enumerable: true,
      configurable: true,
    });
  // A method, bound once per function it is found to be (a getter may hand back another).
  const bound = new Map<string, { method: unknown; bound: unknown }>();
  const inherited = (name: string): PropertyDescriptor =>
    protoless({
      get: () => {
        const found = source[name];
        if (typeof found !== "function") return found;
        const known = bound.get(name);
        if (known?.method === found) return known.bound;
        const made = (found as (...args: unknown[]) => unknown).bind(value);
        bound.set(name, { method: found, bound: made });
        return made;
      },
      // As on the host's object: not among its keys (a spread or Object.keys of it has none of them).
      enumerable: false,
      configurable: true,
    });
  for (const name of Object.keys(value)) {
    const described = ownDescriptor(value, name);
    if (described?.get) Object.defineProperty(view, name, asked(name));
    else view[name] = source[name];
  }
  let at = Object.getPrototypeOf(value) as object | null;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    for (const name of Object.getOwnPropertyNames(at)) {
      if (name in view || name === "constructor") continue;
      Object.defineProperty(view, name, inherited(name));
    }
    at = Object.getPrototypeOf(at) as object | null;
  }
  return view as T;
}

/** `value[name]` where `value` (or a prototype of its own) holds it, else `undefined`. */
export function ownField(value: unknown, name: string): unknown {
  if (!isFields(value)) return undefined;
  return (ownView(value) as Record<string, unknown>)[name];
}

/**
 * A copy of `value` (a server's JSON, such as a reply's `usage`) holding only the fields each object
 * holds itself, every object on no prototype, `depth` levels down (deeper objects left out). The
 * usage reader (`@loopwright/stream`'s `readUsage`) reads its fields through the chain, so a polluted
 * `Object.prototype.cached_tokens = 1` counted a cached token in every side task's usage.
 */
export function ownData(value: unknown, depth = 4): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (depth <= 0) return undefined;
  if (Array.isArray(value)) return value.map((item: unknown) => ownData(item, depth - 1));
  const copy = Object.create(null) as Record<string, unknown>;
  for (const name of Object.keys(value))
    copy[name] = ownData((value as Record<string, unknown>)[name], depth - 1);
  return copy;
}
