/**
 * Reading what a host gave (the options, their config, a step plan) as the host wrote it: a field
 * counts where the object holds it itself, or a prototype of its own does (a class's getter), never
 * where only `Object.prototype` does. Some code in the host's process setting
 * `Object.prototype.maxToolIterations = 0` (prototype pollution) otherwise ends every run before its
 * first tool, `Object.prototype.stop = true` stops every run whose `beforeStep` plans anything, and
 * `Object.prototype.system` puts its text on every request.
 */
import { ownDescriptor, protoless } from "./protoless.js";

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

/** Sets `name` on a view to `value`, a plain field from then on (where it was a getter too). */
function settle(view: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(
    view,
    name,
    protoless({ value, enumerable: true, writable: true, configurable: true }),
  );
}

/**
 * The options of a run as the loop reads them: `ownView` of the options, of their `config`, and of
 * the config's `tasks` and each task there (a side task's model and endpoint), each read once at
 * the start of a run (their getters asked each time the loop reads them).
 */
export function ownOptions<T>(options: T): T {
  if (!isFields(options)) return options;
  const view = ownView(options) as Record<string, unknown>;
  if (isFields(view.config)) {
    const config = ownView(view.config) as Record<string, unknown>;
    if (isFields(config.tasks)) {
      const tasks = ownView(config.tasks) as Record<string, unknown>;
      for (const name of Object.keys(tasks)) settle(tasks, name, ownView(tasks[name]));
      settle(config, "tasks", tasks);
    }
    settle(view, "config", config);
  }
  return view as T;
}

/**
 * `value[name]` where `value` holds it itself, else `undefined`: for plain data a package built (a
 * turn the stream read back, its usage, the loop's own records), whose optional fields left out
 * would otherwise be read through `Object.prototype` (a polluted `rawContent` read as every
 * turn's text, `uncached` as every turn's count).
 */
export function ownField<T extends object, K extends keyof T>(value: T, name: K): T[K] | undefined {
  return Object.hasOwn(value, name) ? value[name] : undefined;
}

/**
 * Whether `value` holds `key` itself or a prototype of its own does (a class's getter): `key in
 * value` without what only a polluted `Object.prototype` holds (an inherited `answer` made every
 * routed call an answer the loop gave, unrun). Narrows a union by its members that have `key`, as
 * `in` does.
 */
export function hasOwnKey<T extends object, K extends string>(
  value: T,
  key: K,
): value is Extract<T, Record<K, unknown>> {
  let at: object | null = value;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    if (Object.hasOwn(at, key)) return true;
    at = Object.getPrototypeOf(at) as object | null;
  }
  return false;
}
