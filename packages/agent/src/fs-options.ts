/**
 * The options this package hands Node's `fs`, each with every field Node reads written out and no
 * prototype. Node reads an options object's fields wherever they are found: with a field set on
 * `Object.prototype` (prototype pollution), `{ flag: "wx" }` read a polluted `.flush`, `.mode` or
 * `.encoding` and every session's file lock failed to be made ("options.flush must be of type
 * boolean"), as `{ recursive: true }` read `.mode` and the session folder was not made. `.signal`
 * is read too, of the options Node makes from a string such as `"utf8"`: these name none. Frozen.
 */
function fsOptions<T extends object>(fields: T): Readonly<T> {
  return Object.freeze(Object.assign(Object.create(null) as T, fields));
}

/** Creates a file that must not exist yet (a lock, a gate), as UTF-8 text. */
export const CREATE_NEW = fsOptions({ encoding: "utf8", mode: 0o666, flag: "wx", flush: false } as const);
/** Writes a file whole, replacing what it held, as UTF-8 text. */
export const REPLACE = fsOptions({ encoding: "utf8", mode: 0o666, flag: "w", flush: false } as const);
/** Appends to a file, made where missing, as UTF-8 text. */
export const APPEND = fsOptions({ encoding: "utf8", mode: 0o666, flag: "a", flush: false } as const);
/** Reads a file as UTF-8 text. */
export const READ_UTF8 = fsOptions({ encoding: "utf8", flag: "r" } as const);
/** Reads a file as Latin-1 text (`/proc`'s files). */
export const READ_LATIN1 = fsOptions({ encoding: "latin1", flag: "r" } as const);
/** Makes a folder and its parents. */
export const MAKE_DIRS = fsOptions({ recursive: true, mode: 0o777 } as const);
