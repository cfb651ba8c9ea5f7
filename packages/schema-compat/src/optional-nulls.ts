import { isObject, resolvePointer } from "./sanitize-schema.js";

type Raw = Record<string, unknown>;

/**
 * Schema readings one call may make before it gives the arguments back as they were. Each
 * (schema, key) is read once and remembered, so this bounds a hostile schema, not a long call.
 */
const VISIT_BUDGET = 1_000_000;
/** How deep unions inside unions (and the values under them) are followed. */
const MAX_DEPTH = 64;

class Exhausted extends Error {}

/** What one call has read of the original schema, so every node is flattened once. */
interface Walk {
  root: unknown;
  budget: number;
  flat: Map<unknown, Flat>;
  required: WeakMap<Raw, Set<unknown>>;
  nulls: Map<unknown, boolean>;
  keys: Map<unknown, Map<string, KeyInfo>>;
  items: Map<unknown, Map<number, unknown>>;
}

/** A schema as the conjunction it is: its parts, `$ref`s and `allOf`s followed. */
interface Flat {
  parts: Raw[];
  /** Some part no value satisfies (`false`, `not: {}`). */
  never: boolean;
}

function isNever(schema: unknown): boolean {
  if (schema === false) return true;
  if (!isObject(schema) || !Object.hasOwn(schema, "not")) return false;
  const not = schema.not;
  return not === true || (isObject(not) && Object.keys(not).length === 0);
}

/**
 * Reads a schema as the list of parts a value must meet together: a `$ref` and the keywords
 * beside it both apply, as does every entry of an `allOf`, however deep. Iterative, and each
 * schema object is read once per call.
 */
function flatten(schema: unknown, walk: Walk): Flat {
  const known = walk.flat.get(schema);
  if (known) return known;
  const flat: Flat = { parts: [], never: false };
  const seen = new Set<unknown>();
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (--walk.budget < 0) throw new Exhausted();
    if (isNever(node)) flat.never = true;
    if (!isObject(node) || seen.has(node)) continue;
    seen.add(node);
    const { $ref, allOf, ...rest } = node;
    flat.parts.push(rest);
    if (Array.isArray(allOf)) for (let i = allOf.length - 1; i >= 0; i--) stack.push(allOf[i]);
    if (typeof $ref === "string") stack.push(resolvePointer(walk.root, $ref));
  }
  walk.flat.set(schema, flat);
  return flat;
}

function unionsOf(part: Raw): unknown[][] {
  const out: unknown[][] = [];
  if (Array.isArray(part.anyOf)) out.push(part.anyOf);
  if (Array.isArray(part.oneOf)) out.push(part.oneOf);
  return out;
}

function typeAllows(part: Raw, type: "null" | "object" | "array"): boolean {
  const t = part.type;
  if (t === undefined) return true;
  if (type === "null" && part.nullable === true) return true;
  return t === type || (Array.isArray(t) && t.includes(type));
}

/** Whether the schema can take `null`: every part takes it, and some branch of each union. */
function acceptsNull(schema: unknown, walk: Walk, depth: number): boolean {
  const known = walk.nulls.get(schema);
  if (known !== undefined) return known;
  if (--walk.budget < 0) throw new Exhausted();
  if (depth > MAX_DEPTH) return true;
  const { parts, never } = flatten(schema, walk);
  const answer =
    !never &&
    parts.every((part) => {
      if (part.nullable === true) return true;
      if (!typeAllows(part, "null")) return false;
      if (Array.isArray(part.enum) && !part.enum.includes(null)) return false;
      if (Object.hasOwn(part, "const") && part.const !== null) return false;
      return unionsOf(part).every((branches) => branches.some((b) => acceptsNull(b, walk, depth + 1)));
    });
  walk.nulls.set(schema, answer);
  return answer;
}

/** Whether a value of this kind can meet the schema at all (a union branch for strings cannot take an object). */
function admits(schema: unknown, type: "object" | "array", walk: Walk): boolean {
  const { parts, never } = flatten(schema, walk);
  return !never && parts.every((part) => typeAllows(part, type));
}

function requiredOf(part: Raw, walk: Walk): Set<unknown> {
  let set = walk.required.get(part);
  if (!set) {
    set = new Set(Array.isArray(part.required) ? part.required : []);
    walk.required.set(part, set);
  }
  return set;
}

/** What a schema says about one key of an object value. */
interface KeyInfo {
  /** Some part or branch names the key in `properties`. */
  described: boolean;
  /** The schema can take the key set to `null`. */
  nullOk: boolean;
  /** The schema can take the key left out. */
  absentOk: boolean;
  /** The schema the key's value is read against, if any. */
  sub: unknown;
}

function combined(kind: "allOf" | "anyOf", subs: unknown[]): unknown {
  if (subs.length === 0) return undefined;
  return subs.length === 1 ? subs[0] : { [kind]: subs };
}

/** Reads `key` of `schema` once per call (each reading counted against the budget), then remembers it. */
function remembered<K, V>(
  cache: Map<unknown, Map<K, V>>,
  schema: unknown,
  key: K,
  walk: Walk,
  read: () => V,
): V {
  let byKey = cache.get(schema);
  if (byKey?.has(key)) return byKey.get(key) as V;
  if (--walk.budget < 0) throw new Exhausted();
  const value = read();
  if (!byKey) {
    byKey = new Map();
    cache.set(schema, byKey);
  }
  byKey.set(key, value);
  return value;
}

/** What a schema nested past {@link MAX_DEPTH} is read as (never remembered: it is not the schema's answer). */
const UNREAD: KeyInfo = { described: false, nullOk: true, absentOk: true, sub: undefined };

function keyInfo(schema: unknown, key: string, walk: Walk, depth: number): KeyInfo {
  if (depth > MAX_DEPTH) return UNREAD;
  return remembered(walk.keys, schema, key, walk, () => readKey(schema, key, walk, depth));
}

function readKey(schema: unknown, key: string, walk: Walk, depth: number): KeyInfo {
  const { parts, never } = flatten(schema, walk);
  if (never) return UNREAD;
  const infos: KeyInfo[] = [];
  for (const part of parts) {
    const props = isObject(part.properties) ? part.properties : undefined;
    const extra = part.additionalProperties;
    if (props && Object.hasOwn(props, key)) {
      infos.push({
        described: true,
        nullOk: acceptsNull(props[key], walk, 0),
        absentOk: !requiredOf(part, walk).has(key),
        sub: props[key],
      });
    } else {
      infos.push({
        described: false,
        nullOk: extra !== false && (!isObject(extra) || acceptsNull(extra, walk, 0)),
        absentOk: !requiredOf(part, walk).has(key),
        sub: isObject(extra) ? extra : undefined,
      });
    }
    for (const group of unionsOf(part)) {
      const branches = group
        .filter((b) => admits(b, "object", walk))
        .map((b) => keyInfo(b, key, walk, depth + 1));
      if (branches.length === 0) continue;
      // A union takes what one branch takes; a null is kept when a branch that names the key takes it.
      const naming = branches.filter((b) => b.described);
      infos.push({
        described: naming.length > 0,
        nullOk: (naming.length > 0 ? naming : branches).some((b) => b.nullOk),
        absentOk: branches.some((b) => b.absentOk),
        sub: combined(
          "anyOf",
          naming.map((b) => b.sub).filter((s) => s !== undefined),
        ),
      });
    }
  }
  const naming = infos.filter((i) => i.described);
  return {
    described: naming.length > 0,
    nullOk: (naming.length > 0 ? naming : infos).every((i) => i.nullOk),
    absentOk: infos.every((i) => i.absentOk),
    sub: combined(
      "allOf",
      (naming.length > 0 ? naming : infos).map((i) => i.sub).filter((s) => s !== undefined),
    ),
  };
}

/** The schema the item at `index` of an array value is read against (tuples by position). */
function itemSchema(schema: unknown, index: number, walk: Walk, depth: number): unknown {
  if (depth > MAX_DEPTH) return undefined;
  return remembered(walk.items, schema, index, walk, () => readItem(schema, index, walk, depth));
}

function readItem(schema: unknown, index: number, walk: Walk, depth: number): unknown {
  const { parts, never } = flatten(schema, walk);
  if (never) return undefined;
  const subs: unknown[] = [];
  for (const part of parts) {
    const { prefixItems, items, additionalItems } = part;
    if (Array.isArray(prefixItems)) subs.push(index < prefixItems.length ? prefixItems[index] : items);
    else if (Array.isArray(items)) subs.push(index < items.length ? items[index] : additionalItems);
    else subs.push(items);
    for (const group of unionsOf(part)) {
      const branches = group
        .filter((b) => admits(b, "array", walk))
        .map((b) => itemSchema(b, index, walk, depth + 1))
        .filter((s) => s !== undefined);
      subs.push(combined("anyOf", branches));
    }
  }
  return combined(
    "allOf",
    subs.filter((s) => isObject(s) || s === false),
  );
}

function strip(value: unknown, schema: unknown, walk: Walk, depth: number): unknown {
  if (schema === undefined || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) {
    const tuple = flatten(schema, walk).parts.some(
      (p) => Array.isArray(p.prefixItems) || Array.isArray(p.items),
    );
    const shared = tuple ? undefined : itemSchema(schema, 0, walk, depth);
    return value.map((item, i) =>
      strip(item, tuple ? itemSchema(schema, i, walk, depth) : shared, walk, depth + 1),
    );
  }
  if (!isObject(value)) return value;
  const out: Raw = {};
  for (const [key, inner] of Object.entries(value)) {
    const info = keyInfo(schema, key, walk, depth);
    if (inner === null && info.described && !info.nullOk && info.absentOk) continue;
    Object.defineProperty(out, key, {
      value: strip(inner, info.sub, walk, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/**
 * Undoes what strict mode made of optional parameters: `sanitizeSchema` makes an optional property
 * required-but-nullable, so a model leaves it out by writing `null` — which the tool itself (say
 * an MCP server validating with zod) refuses. Given the arguments and the tool's ORIGINAL schema,
 * drops every `null` the original schema did not allow for a property it did not require, at any
 * depth reached through `properties`, `items` (tuples by position), local `$ref`s (with the
 * keywords beside them), `allOf`, and the branches of `anyOf`/`oneOf` — where a null is dropped
 * when no branch naming the property takes it (the fields of the other alternatives of a root
 * union, say).
 *
 * Returns new arguments; never mutates its input and never throws. Values the original schema
 * allows to be null, required properties, and keys it does not describe are left as they are;
 * arguments or a schema JSON cannot hold, or a schema past a million readings, come back as
 * they were.
 */
export function dropOptionalNulls<T>(args: T, originalSchema: unknown): T {
  try {
    const walk: Walk = {
      root: originalSchema,
      budget: VISIT_BUDGET,
      flat: new Map(),
      required: new WeakMap(),
      nulls: new Map(),
      keys: new Map(),
      items: new Map(),
    };
    return strip(args, originalSchema, walk, 0) as T;
  } catch {
    // Arguments or a schema no JSON holds (a throwing getter, a revoked Proxy), or one too large
    // to read: left as they were.
    return args;
  }
}
