import { protoless } from "./protoless.js";

/**
 * `event` (the bus's own copy, as `withSeq` made it) frozen, with every plain object and array in it
 * replaced by a frozen copy, so what `watch` and `history` hand out cannot be written: a watcher that
 * set a field of an event (a display that rewrote `text`, a metric that zeroed `usage.prompt`) changed
 * it for every other watcher and in `history`, and wrote into the objects the emitter still held.
 *
 * Plain means an array, or an object whose prototype is `Object.prototype` or none: what an event is
 * made of. Anything else (a `Date`, a `Map`, a class instance) is kept as it is, not copied and not
 * frozen. Each object is copied once however often it is referred to, so shared parts stay shared and
 * a cycle is copied as a cycle; the walk keeps its own list rather than recursing, so a deep one
 * cannot overflow the stack. A field whose getter throws while read is left out of the copy, and a
 * value that cannot even be told apart (a revoked Proxy) is kept as it is. Costs one pass over the
 * event's data, once, at `emit`.
 */
export function freezeStored<T extends object>(event: T): T {
  // Most events (a delta's text, a turn's step) hold no object at all: frozen as they are.
  if (!holdsObject(event)) return Object.freeze(event);
  const copies = new Map<object, object>();
  const pending: [source: object, target: object][] = [];
  const copyOf = (value: unknown): unknown => {
    if (typeof value !== "object" || value === null) return value;
    const known = copies.get(value);
    if (known !== undefined) return known;
    let target: object;
    try {
      if (Array.isArray(value)) target = [];
      else {
        const proto: unknown = Object.getPrototypeOf(value);
        if (proto !== Object.prototype && proto !== null) return value;
        target = proto === null ? Object.create(null) : {};
      }
    } catch {
      return value;
    }
    copies.set(value, target);
    pending.push([value, target]);
    return target;
  };
  // The top level is the bus's own copy already: its fields are replaced in place.
  copies.set(event, event);
  pending.push([event, event]);
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [source, target] = next;
    fill(source, target, copyOf);
    Object.freeze(target);
  }
  return event;
}

/** Sets each own enumerable field of `source` on `target` as `copyOf` gives it (an array's length too). */
function fill(source: object, target: object, copyOf: (value: unknown) => unknown): void {
  let keys: (string | symbol)[];
  try {
    keys = Object.keys(source);
    const symbols = Object.getOwnPropertySymbols(source);
    for (const symbol of symbols) {
      if (Object.prototype.propertyIsEnumerable.call(source, symbol)) keys.push(symbol);
    }
  } catch {
    return;
  }
  if (Array.isArray(target) && source !== target) {
    // Its length first: a sparse list stays sparse, its holes costing nothing.
    try {
      target.length = (source as unknown[]).length;
    } catch {
      // A length that cannot be read: the fields held are still copied.
    }
  }
  const fields = target as Record<string | symbol, unknown>;
  for (const key of keys) {
    let value: unknown;
    try {
      value = (source as Record<string | symbol, unknown>)[key];
    } catch {
      continue;
    }
    if (key === "__proto__") {
      // Defined, not assigned: a `__proto__` key stays a field, never the copy's prototype.
      Object.defineProperty(
        target,
        key,
        protoless({
          value: copyOf(value),
          enumerable: true,
          writable: true,
          configurable: true,
        }),
      );
    } else {
      fields[key] = copyOf(value);
    }
  }
}

/** Whether one of `event`'s own fields holds an object (or cannot be read, which the full walk handles). */
function holdsObject(event: object): boolean {
  try {
    for (const key of Reflect.ownKeys(event)) {
      const value: unknown = (event as Record<string | symbol, unknown>)[key];
      if (typeof value === "object" && value !== null) return true;
    }
    return false;
  } catch {
    return true;
  }
}
