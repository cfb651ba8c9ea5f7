import type { JsonSchema } from "./types.js";

/**
 * The `Object.prototype` members a tool parameter may be named after (`constructor`, `toString`,
 * `valueOf`, `hasOwnProperty`…): an argument object of an ordinary prototype seems to hold each of
 * them even when the model left it out. `__proto__` is not among them: a JSON object's `__proto__`
 * key reads as its prototype, so it cannot stand for a parameter in the same way.
 */
export const INHERITED_NAMES: ReadonlySet<string> = new Set(
  Object.getOwnPropertyNames(Object.prototype).filter((name) => name !== "__proto__"),
);

/** The prototypes `argumentsPrototype` made, by the names each leaves out (sorted, joined by a space). */
const prototypes = new Map<string, object>();
/** The same prototypes, for `isArgumentsPrototype` to know at once. */
const made = new WeakSet<object>();

/**
 * The prototype for an argument object at a place whose schema declares parameters named `names`:
 * a null-prototype object holding every `Object.prototype` member (as `Object.prototype` holds it,
 * not enumerable) but those names. A left-out parameter of such a name is then truly absent (`in`
 * false, no own key, reads `undefined`), assigning it makes an ordinary enumerable own property, and
 * `.hasOwnProperty()`, `.toString()` and the rest still work where they are not declared. An object
 * with this prototype is not `instanceof Object`.
 *
 * Names that are not in `INHERITED_NAMES` are ignored. The same set of names always gives the same
 * object (made once, then kept: at most one for each subset of `INHERITED_NAMES`). It cannot be
 * extended; its members can be reassigned, as `Object.prototype`'s can.
 */
export function argumentsPrototype(names: Iterable<string>): object {
  const left = [...new Set(names)].filter((name) => INHERITED_NAMES.has(name)).sort();
  const key = left.join(" ");
  let prototype = prototypes.get(key);
  if (prototype === undefined) {
    const members = Object.getOwnPropertyDescriptors(Object.prototype) as {
      [name: string]: PropertyDescriptor;
    };
    for (const name of left) delete members[name];
    prototype = Object.preventExtensions(Object.create(null, members)) as object;
    prototypes.set(key, prototype);
    made.add(prototype);
  }
  return prototype;
}

/**
 * Whether `prototype` is one `argumentsPrototype` gives: one it made, or one of the same make (from
 * another copy of this package, or built by hand the same way): an object with no prototype of its
 * own that holds `Object.prototype`'s `__proto__` accessor and otherwise only `Object.prototype`
 * members, each as `Object.prototype` holds it (the same function, the same enumerability). An
 * object of such a prototype is plain data, as one of `Object.prototype` is; a class's prototype,
 * `Object.prototype` itself and a bare `Object.create(null)` are not such prototypes. Never throws
 * (a Proxy whose traps throw answers `false`).
 */
export function isArgumentsPrototype(prototype: unknown): boolean {
  if (typeof prototype !== "object" || prototype === null || prototype === Object.prototype) return false;
  if (made.has(prototype)) return true;
  try {
    if (Object.getPrototypeOf(prototype) !== null) return false;
    const keys = Reflect.ownKeys(prototype);
    if (!keys.includes("__proto__")) return false;
    for (const key of keys) {
      if (typeof key !== "string") return false;
      const mine = Object.getOwnPropertyDescriptor(prototype, key);
      const root = Object.getOwnPropertyDescriptor(Object.prototype, key);
      if (
        mine === undefined ||
        root === undefined ||
        mine.value !== root.value ||
        mine.get !== root.get ||
        mine.set !== root.set ||
        mine.enumerable !== root.enumerable
      )
        return false;
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `schema` (a tool's JSON Schema, at any depth, `$defs` included) declares a property named
 * after one of `INHERITED_NAMES`: whether the tool's arguments need `mapAlongSchema` at all. Reads
 * every object in it (the values of `default` or `examples` too, which can only answer `true`
 * where nothing is declared). A cycle is read once.
 */
export function declaresInheritedName(schema: unknown): boolean {
  const seen = new Set<object>();
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null || seen.has(node)) continue;
    seen.add(node);
    const properties = (node as { properties?: unknown }).properties;
    if (typeof properties === "object" && properties !== null && !Array.isArray(properties)) {
      for (const key of Object.keys(properties)) if (INHERITED_NAMES.has(key)) return true;
    }
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push(child);
  }
  return false;
}

/** What `mapAlongSchema` tells its `atObject` about the place of one object in the schema. */
export interface SchemaPlace {
  /** The names of `INHERITED_NAMES` the schema declares as properties here. */
  readonly inherited: ReadonlySet<string>;
  /**
   * `child`, the value the object holds under `key`, as the walk hands it on: the same value where
   * nothing below it changed, else a copy with what `atObject` made of the objects in it.
   */
  walk(child: unknown, key: string): unknown;
}

/** How deep `mapAlongSchema` follows a value; below it a value is handed on as it is. */
const ALONG_DEPTH = 512;

/**
 * `value` (a tool's arguments) as `atObject` remakes it, object by object, along `schema` (the
 * tool's JSON Schema). `atObject` is called at every object (not an array) at a place the schema
 * reads, with the inherited names the place declares and a `walk` that hands on a child under a
 * key; what it returns stands for that object (the object itself when it changes nothing). A place's
 * schema is the node there with what its local `$ref` (`#`, `#/…`) names and its `allOf`, `anyOf`
 * and `oneOf` branches, each followed further; only its own keywords are read. A child is at the
 * place of its key's `properties` entry, else of `additionalProperties`; an array's items at the
 * place of `items` and, by index, of `prefixItems`. An array holding a remade item is handed on as a
 * copy, so nothing is written into; arrays are walked by index (any length), nothing the schema does
 * not declare is followed, and nothing below 512 levels. `atObject` decides what an object may be
 * (it is handed any object, a class instance too).
 */
export function mapAlongSchema(
  value: unknown,
  schema: unknown,
  atObject: (object: object, place: SchemaPlace) => unknown,
): unknown {
  const walk = (value: unknown, nodes: readonly JsonSchema[], depth: number): unknown => {
    if (typeof value !== "object" || value === null || nodes.length === 0 || depth > ALONG_DEPTH)
      return value;
    if (Array.isArray(value)) {
      const items: JsonSchema[] = [];
      let longestPrefix = 0;
      for (const node of nodes) {
        const prefix = own(node, "prefixItems");
        if (Array.isArray(prefix)) longestPrefix = Math.max(longestPrefix, prefix.length);
        schemaNodes(schema, own(node, "items"), items);
      }
      let out: unknown[] | undefined;
      for (let at = 0; at < value.length; at++) {
        let itemNodes: readonly JsonSchema[] = items;
        if (at < longestPrefix) {
          const these = [...items];
          for (const node of nodes) {
            const prefix = own(node, "prefixItems");
            if (Array.isArray(prefix) && at < prefix.length) schemaNodes(schema, prefix[at], these);
          }
          itemNodes = these;
        }
        const item = value[at];
        const walked = walk(item, itemNodes.filter(holdsMore), depth + 1);
        if (walked !== item) {
          out ??= value.slice();
          out[at] = walked;
        }
      }
      return out ?? value;
    }
    const inherited = new Set<string>();
    for (const node of nodes) {
      const properties = own(node, "properties");
      if (typeof properties !== "object" || properties === null) continue;
      for (const key of Object.keys(properties)) if (INHERITED_NAMES.has(key)) inherited.add(key);
    }
    return atObject(value, {
      inherited,
      walk(child: unknown, key: string): unknown {
        if (typeof child !== "object" || child === null) return child;
        const reached: JsonSchema[] = [];
        for (const node of nodes) {
          const declared = own(own(node, "properties"), key);
          if (declared !== undefined) schemaNodes(schema, declared, reached);
          else schemaNodes(schema, own(node, "additionalProperties"), reached);
        }
        return walk(child, reached.filter(holdsMore), depth + 1);
      },
    });
  };
  return walk(value, schemaNodes(schema, schema, []), 0);
}

/** `node[keyword]` when `node` holds it as its own (a schema's `properties` never lends `constructor`). */
function own(node: unknown, keyword: string): unknown {
  return typeof node === "object" && node !== null && Object.hasOwn(node, keyword)
    ? (node as JsonSchema)[keyword]
    : undefined;
}

/**
 * Whether a schema node can say anything of an object or array below it (`properties`,
 * `additionalProperties`, `items`, `prefixItems`): a value read by no such node is handed on as it
 * is, so the walk does not go into it.
 */
function holdsMore(node: JsonSchema): boolean {
  return (
    own(node, "properties") !== undefined ||
    own(node, "additionalProperties") !== undefined ||
    own(node, "items") !== undefined ||
    own(node, "prefixItems") !== undefined
  );
}

/** The schema objects `node` stands for (into `into`): itself, what its `$ref` names, and its `allOf`/`anyOf`/`oneOf` branches. */
function schemaNodes(root: unknown, node: unknown, into: JsonSchema[]): JsonSchema[] {
  const seen = new Set<object>();
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next !== "object" || next === null || Array.isArray(next) || seen.has(next)) continue;
    seen.add(next);
    into.push(next as JsonSchema);
    const ref = own(next, "$ref");
    if (typeof ref === "string" && (ref === "#" || ref.startsWith("#/"))) {
      let target: unknown = root;
      for (const part of ref.slice(2).split("/")) {
        if (part === "") continue;
        target = own(target, part.replaceAll("~1", "/").replaceAll("~0", "~"));
      }
      stack.push(target);
    }
    for (const keyword of ["allOf", "anyOf", "oneOf"]) {
      const branches = own(next, keyword);
      if (Array.isArray(branches)) for (const branch of branches) stack.push(branch);
    }
  }
  return into;
}
