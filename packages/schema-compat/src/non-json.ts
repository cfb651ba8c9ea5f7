import { types } from "node:util";

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

/**
 * Whether `schema` holds, at any depth, what {@link nonJsonIn} finds: the same walk with no path
 * and nothing allocated per member (parallel stacks of the values and the keys they were read
 * under), the pass every tool takes. An object reached twice (a shared subschema, a cycle) is read
 * once. A member that throws when read ends the walk with `false`: `sanitizeSchema` reads such a
 * schema, and says where it threw.
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
      const names = Object.keys(item);
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

/** {@link holdsNonJson}'s walk, writing each member's JSON Pointer; run only once that walk found something. */
function firstNonJson(schema: unknown): { path: string; what: string } | undefined {
  const seen = new Set<object>();
  const stack: Array<{ item: unknown; key: string | undefined; path: string }> = [
    { item: schema, key: undefined, path: "#" },
  ];
  while (stack.length > 0) {
    const { item, key, path } = stack.pop() as { item: unknown; key: string | undefined; path: string };
    const what = faultOf(item, key);
    if (what !== undefined) return { path, what };
    if (typeof item !== "object" || item === null || seen.has(item)) continue;
    seen.add(item);
    if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) {
        stack.push({ item: item[i], key: undefined, path: `${path}/${i}` });
      }
    } else {
      const names = Object.keys(item);
      for (let i = names.length - 1; i >= 0; i--) {
        const name = names[i] as string;
        stack.push({
          item: (item as Record<string, unknown>)[name],
          key: name,
          path: `${path}/${token(name)}`,
        });
      }
    }
  }
  return undefined;
}

/**
 * The first place in a tool's schema (a JSON Pointer such as `#/properties/n/default`) holding
 * what `sanitizeSchema` would otherwise rewrite away, unsaid or told only, because JSON cannot hold
 * it: a `Map` or a `Set` (read as an object with no keys: a Map of `properties` made the tool take
 * no arguments), a BigInt anywhere but a numeric keyword (`default: 10n` was dropped, `enum: [1,
 * 10n]` lost a value), `NaN`, a function or a symbol — with what it is; `undefined` where there is
 * none. ±Infinity, a class's instance (read through its getters) and a cycle (read as a recursive
 * `$ref` is) are read as before. Iterative, so any depth; paths are written only once something is
 * found. A member that throws when read is left to `sanitizeSchema`, which tells where.
 */
export function nonJsonIn(schema: unknown): { path: string; what: string } | undefined {
  try {
    return holdsNonJson(schema) ? firstNonJson(schema) : undefined;
  } catch {
    return undefined;
  }
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
      return "which JSON leaves out (the model would never see it)";
  }
}
