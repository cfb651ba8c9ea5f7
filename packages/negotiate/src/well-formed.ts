/**
 * Half a surrogate pair without its other half (a host that cut a pasted text, a file or a tool's
 * output by UTF-16 units, inside an emoji) is no character: `JSON.stringify` writes it as an escape
 * (`"\ud83d"`) that llama.cpp's JSON reader (and serde_json's) refuses with a 500, on that request
 * and on every later one that carries the same transcript. These write each one U+FFFD, on a copy.
 */
import { protoless } from "./protoless.js";

/** Whether `value`, as JSON would write it, holds a lone surrogate in a string or a key. Any depth, any cycle. */
function holdsLoneHalf(value: unknown): boolean {
  const seen = new Set<object>();
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "string") {
      if (!item.isWellFormed()) return true;
      continue;
    }
    if (typeof item !== "object" || item === null || seen.has(item)) continue;
    seen.add(item);
    if (Array.isArray(item)) {
      for (const entry of item) stack.push(entry);
      continue;
    }
    for (const [key, entry] of Object.entries(item)) {
      if (!key.isWellFormed()) return true;
      stack.push(entry);
    }
  }
  return false;
}

/** Whether `value` is a plain array or object, which JSON writes member by member. */
function isPlain(value: object): boolean {
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A copy of `value` with every string and key well formed. What is not a plain array or object (a
 * Date, a host's own class with `toJSON`) stays itself, sent as its JSON says. Iterative, so any
 * depth; an object reached twice is copied once (a cycle stays a cycle, as JSON refuses it).
 */
function wellFormedCopy(value: unknown): unknown {
  const copies = new Map<object, unknown[] | Record<string, unknown>>();
  const pending: object[] = [];
  const copyOf = (item: unknown): unknown => {
    if (typeof item === "string") return item.toWellFormed();
    if (typeof item !== "object" || item === null || !isPlain(item)) return item;
    let copy = copies.get(item);
    if (!copy) {
      copy = Array.isArray(item) ? [] : {};
      copies.set(item, copy);
      pending.push(item);
    }
    return copy;
  };
  const root = copyOf(value);
  while (pending.length > 0) {
    const item = pending.pop() as object;
    const copy = copies.get(item) as unknown[] | Record<string, unknown>;
    if (Array.isArray(item)) {
      for (const entry of item) (copy as unknown[]).push(copyOf(entry));
      continue;
    }
    for (const [key, entry] of Object.entries(item)) {
      // defineProperty: a `__proto__` key the host's message holds stays a field, as JSON writes it.
      Object.defineProperty(
        copy,
        key.toWellFormed(),
        protoless({
          value: copyOf(entry),
          enumerable: true,
          writable: true,
          configurable: true,
        }),
      );
    }
  }
  return root;
}

/**
 * `items` with each one that holds a lone surrogate replaced by a copy where it is U+FFFD; the
 * others are the same objects. The array is a new one only when something was replaced.
 */
export function wellFormedItems<T>(items: readonly T[]): readonly T[] {
  let out: T[] | undefined;
  items.forEach((item, at) => {
    if (!holdsLoneHalf(item)) return;
    out ??= [...items];
    out[at] = wellFormedCopy(item) as T;
  });
  return out ?? items;
}
