import { types } from "node:util";
import { ownDescriptor } from "./protoless.js";

/**
 * The keywords whose value is a number a BigInt can stand for exactly: `sanitizeSchema` writes
 * `minimum: 5n` as `minimum: 5` (and a BigInt no number holds exactly into the description), so the
 * meaning is kept and such a BigInt is no fault.
 */
const NUMERIC_KEYWORDS: ReadonlySet<string> = new Set([
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "minContains",
  "maxContains",
]);

/**
 * What `item`, read under `key` (`undefined` for an array's item or the root), is that a tool's
 * schema cannot hold as given, or `undefined` where it is JSON (or is read as JSON would read it).
 */
function faultOf(item: unknown, key: string | undefined): string | undefined {
  switch (typeof item) {
    case "bigint":
      return key !== undefined && NUMERIC_KEYWORDS.has(key) ? undefined : "a BigInt";
    case "number":
      // ±Infinity is what JSON text such as `1e309` parses to, from an MCP server as much as a host:
      // sanitizeSchema reads it (a bound of Infinity is no bound; in an enum it is left out, told).
      // NaN no JSON text parses to.
      return Number.isNaN(item) ? "NaN" : undefined;
    case "function":
      return "a function";
    case "symbol":
      return "a symbol";
    case "object":
      if (item === null) return undefined;
      // Read as a plain object, a Map or a Set holds no keys: `properties` as a Map was sent as
      // `properties: {}`, a tool taking no arguments.
      if (types.isMap(item)) return "a Map";
      if (types.isSet(item)) return "a Set";
      return undefined;
    default:
      return undefined;
  }
}

/** How deep a prototype chain {@link gettersOf} follows: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/**
 * The names of the getters a prototype of `item`'s own holds (below `Object.prototype`: a class's
 * `get properties()`), which `sanitizeSchema` reads as the schema's fields, not among `own`;
 * `undefined` for a plain object, the case of nearly every schema, at the cost of one prototype
 * read. A method (a data field on the prototype) is left out: `sanitizeSchema` reads no keyword
 * from one, and a class's methods are no fault of its schema.
 */
function gettersOf(item: object, own: readonly string[]): string[] | undefined {
  let at = Object.getPrototypeOf(item) as object | null;
  if (at === Object.prototype || at === null) return undefined;
  const names: string[] = [];
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    for (const name of Object.getOwnPropertyNames(at)) {
      if (typeof ownDescriptor(at, name)?.get !== "function") continue;
      if (!own.includes(name) && !names.includes(name)) names.push(name);
    }
    at = Object.getPrototypeOf(at) as object | null;
  }
  return names;
}

/** The names of `item`'s fields as `sanitizeSchema` reads them: its own keys, then its class's getters. */
function namesOf(item: object): string[] {
  const own = Object.keys(item);
  const getters = gettersOf(item, own);
  return getters === undefined || getters.length === 0 ? own : [...own, ...getters];
}

/**
 * Whether `schema` holds, at any depth, what {@link nonJsonIn} finds: the same walk with no path
 * and nothing allocated per member (parallel stacks of the values and the keys they were read
 * under), the pass every tool takes. An object reached twice (a shared subschema, a cycle) is read
 * once. A member that throws when read throws here, for {@link firstNonJson} to name.
 */
function holdsNonJson(schema: unknown): boolean {
  const seen = new Set<object>();
  const items: unknown[] = [schema];
  const keys: (string | undefined)[] = [undefined];
  while (items.length > 0) {
    const item = items.pop();
    const key = keys.pop();
    if (faultOf(item, key) !== undefined) return true;
    if (typeof item !== "object" || item === null || seen.has(item)) continue;
    seen.add(item);
    if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) {
        items.push(item[i]);
        keys.push(undefined);
      }
    } else {
      const names = namesOf(item);
      for (let i = names.length - 1; i >= 0; i--) {
        const name = names[i] as string;
        items.push((item as Record<string, unknown>)[name]);
        keys.push(name);
      }
    }
  }
  return false;
}

/** A JSON Pointer's reference token for `key` (`~` as `~0`, `/` as `~1`). */
function token(key: string | number): string {
  return typeof key === "number" ? String(key) : key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** What a thrown value says, never throwing itself (a hostile error's getters may). */
function thrownText(error: unknown): string {
  try {
    return error instanceof Error ? `${String(error.name)}: ${String(error.message)}` : typeof error;
  } catch {
    return "an unreadable error";
  }
}

/** How many characters of what a getter threw a refusal quotes. */
const THROWN_CHARS = 200;

/**
 * {@link holdsNonJson}'s walk, writing each member's JSON Pointer; run only once that walk found
 * something or threw. A member that throws when read (a getter, a Proxy's trap, a revoked Proxy)
 * is named by its place, with what it threw.
 */
function firstNonJson(schema: unknown): { path: string; what: string } | undefined {
  const seen = new Set<object>();
  const stack: Array<{ item: unknown; key: string | undefined; path: string }> = [
    { item: schema, key: undefined, path: "#" },
  ];
  let at = "#";
  const unreadable = (thrown: unknown) => {
    const text = thrownText(thrown);
    return {
      path: at,
      what: `a field that throws when read (${text.length <= THROWN_CHARS ? text : `${text.slice(0, THROWN_CHARS)}…`})`,
    };
  };
  while (stack.length > 0) {
    const { item, key, path } = stack.pop() as { item: unknown; key: string | undefined; path: string };
    const what = faultOf(item, key);
    if (what !== undefined) return { path, what };
    if (typeof item !== "object" || item === null || seen.has(item)) continue;
    seen.add(item);
    at = path;
    try {
      if (Array.isArray(item)) {
        for (let i = item.length - 1; i >= 0; i--) {
          at = `${path}/${i}`;
          stack.push({ item: item[i], key: undefined, path: at });
        }
      } else {
        const names = namesOf(item);
        for (let i = names.length - 1; i >= 0; i--) {
          const name = names[i] as string;
          at = `${path}/${token(name)}`;
          stack.push({ item: (item as Record<string, unknown>)[name], key: name, path: at });
        }
      }
    } catch (thrown) {
      return unreadable(thrown);
    }
  }
  return undefined;
}

/**
 * The first place in a tool's schema (a JSON Pointer such as `#/properties/n/default`) holding
 * what `sanitizeSchema` would otherwise rewrite away, unsaid or told only, because JSON cannot hold
 * it: a `Map` or a `Set` (read as an object with no keys: a Map of `properties` made the tool take
 * no arguments), a BigInt anywhere but a numeric keyword (`default: 10n` was dropped, `enum: [1,
 * 10n]` lost a value), `NaN`, a function or a symbol — with what it is; and a field that throws when
 * read (a getter, a Proxy's trap, a revoked Proxy: `sanitizeSchema` sent the whole schema as an
 * object with no properties, told only), with what it threw; `undefined` where there is none.
 * ±Infinity and a cycle (read as a recursive `$ref` is) are read as before. A class's instance is
 * read as `sanitizeSchema` reads it, through its own fields and its class's getters: what a getter
 * answers is checked like any value (a `get properties()` answering a Map is refused as a Map).
 * Iterative, so any depth; paths are written only once something is found.
 */
export function nonJsonIn(schema: unknown): { path: string; what: string } | undefined {
  try {
    if (!holdsNonJson(schema)) return undefined;
  } catch {
    // Something threw as it was read: the walk that writes paths reads it again, and names it.
  }
  return firstNonJson(schema);
}

/** Why a fault {@link nonJsonIn} names cannot be sent as given, for a message. */
export function nonJsonWhy(what: string): string {
  switch (what) {
    case "a Map":
    case "a Set":
      return "which JSON writes as {} (none of its entries would reach the model): give a plain object or an array";
    case "a BigInt":
      return "which JSON cannot write (it would be dropped, and the model never told of it): give a number";
    case "NaN":
      return "which JSON writes as null: give a number, or leave the keyword out";
    default:
      return what.startsWith("a field that throws")
        ? "so the schema cannot be read: sanitizeSchema would send it as an object with no properties, a tool the model could call only with {}"
        : "which JSON leaves out (the model would never see it)";
  }
}
