import { protoless } from "./protoless.js";

/**
 * `text` with each lone surrogate written U+FFFD. A request carrying one is refused by llama.cpp's
 * JSON reader (and serde_json's), and hook context stored beside its question would fail every turn.
 */
export function wellFormed(text: string): string {
  return text.toWellFormed();
}

/** `text` cut to at most `chars` UTF-16 units, never between the two halves of a surrogate pair. */
export function cutTo(text: string, chars: number): string {
  if (text.length <= chars) return text;
  let end = Math.max(0, chars);
  const last = text.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end);
}

/** `text` on one line: each run of control characters and line or paragraph separators one space. */
export function oneLine(text: string): string {
  return text.replace(/[\p{Cc}\u2028\u2029]+/gu, " ");
}

/** Whether `value` is an array or an object of the plain kind JSON writes (its prototype Object's or none). */
function plain(value: object): boolean {
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * `value` with every string in it — in arrays and plain objects, their keys too — written
 * well-formed ({@link wellFormed}). The value itself where nothing in it holds a lone surrogate, else
 * a copy of each array and object on the way to one (the rest shared). Anything else (a class
 * instance, a Map) is handed on as it is, and so is the whole value where reading it throws (a
 * getter, a revoked Proxy) or it nests too deep to walk.
 */
export function wellFormedDeep<T>(value: T): T {
  try {
    return clean(value, new Map(), false) as T;
  } catch {
    return value;
  }
}

/**
 * A copy of `value` of its own, written well-formed as {@link wellFormedDeep} writes it: each array
 * and plain object in it copied (an object reached twice copied once, a cycle kept a cycle), each
 * string well-formed, anything else (a class instance, a Map, a function) shared. One pass, linear
 * in what it holds. `value` itself where reading it throws or it nests too deep to walk.
 */
export function ownCopy<T>(value: T): T {
  try {
    return clean(value, new Map(), true) as T;
  } catch {
    return value;
  }
}

/** A list longer than this is walked by the places it holds. */
const SPARSE_FROM = 1_000_000;

/** `value` written well-formed; with `always`, every array and plain object in it copied too. */
function clean(value: unknown, seen: Map<object, unknown>, always: boolean): unknown {
  if (typeof value === "string") return value.isWellFormed() ? value : value.toWellFormed();
  if (typeof value !== "object" || value === null || !plain(value)) return value;
  const known = seen.get(value);
  if (known !== undefined) return known;
  let copy: unknown[] | Record<string, unknown> | undefined;
  if (Array.isArray(value)) {
    // A sparse list (`list.length = 2 ** 32 - 1`) by the places it holds, not by its every hole.
    const places = value.length <= SPARSE_FROM ? undefined : Object.keys(value).map(Number);
    const count = places?.length ?? value.length;
    // Copied before it is walked, so a cycle back to it comes back as the copy.
    if (always) copy = places ? sparseCopy(value, places) : value.slice();
    // A cycle back to this value while it is walked comes back as it is (or as its copy).
    seen.set(value, copy ?? value);
    for (let at = 0; at < count; at++) {
      const i = places ? (places[at] as number) : at;
      const item: unknown = value[i];
      const written = clean(item, seen, always);
      if (written !== item || always) {
        // A sparse list copied by its places too (slice walks every hole: minutes for 2^32 - 1).
        copy ??= places ? sparseCopy(value, places) : value.slice();
        (copy as unknown[])[i] = written;
      }
    }
  } else {
    const keys = Object.keys(value);
    if (always) copy = Object.getPrototypeOf(value) === null ? Object.create(null) : {};
    seen.set(value, copy ?? value);
    for (const [place, key] of keys.entries()) {
      const item: unknown = (value as Record<string, unknown>)[key];
      const written = clean(item, seen, always);
      const name = key.isWellFormed() ? key : key.toWellFormed();
      if (copy === undefined && (written !== item || name !== key)) {
        copy = Object.getPrototypeOf(value) === null ? Object.create(null) : {};
        for (const earlier of keys.slice(0, place)) {
          define(copy as Record<string, unknown>, earlier, (value as Record<string, unknown>)[earlier]);
        }
      }
      if (copy !== undefined) define(copy as Record<string, unknown>, name, written);
    }
  }
  const result = copy ?? value;
  seen.set(value, result);
  return result;
}

/** Sets a field by definition, so a `"__proto__"` key stays a field and never becomes the prototype. */
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(
    target,
    key,
    protoless({ value, enumerable: true, writable: true, configurable: true }),
  );
}

/** A copy of the sparse list `list` holding what it holds at `places`, its holes left holes. */
function sparseCopy(list: readonly unknown[], places: readonly number[]): unknown[] {
  const copy = new Array<unknown>(list.length);
  for (const place of places) copy[place] = list[place];
  return copy;
}
