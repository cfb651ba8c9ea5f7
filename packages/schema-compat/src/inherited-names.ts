import { backtracks, mayBacktrack, PATTERN_KEY_LIMIT, regexOf } from "./backtracking.js";
import { ownDescriptor } from "./protoless.js";
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
    // The standard members only (and the `__proto__` accessor): made while some code in the
    // process had set a field on Object.prototype, the copy of all its members took that field too
    // and kept it for good in this cache.
    const members = Object.create(null) as { [name: string]: PropertyDescriptor };
    for (const name of [...INHERITED_NAMES, "__proto__"]) {
      if (left.includes(name)) continue;
      const described = ownDescriptor(Object.prototype, name);
      if (described !== undefined) members[name] = described;
    }
    prototype = Object.preventExtensions(Object.create(null, members)) as object;
    prototypes.set(key, prototype);
    made.add(prototype);
  }
  return prototype;
}

/**
 * Whether `prototype` is one `argumentsPrototype` gives: one it made, or one of the same make (from
 * another copy of this package, in this realm or another, such as a `node:vm` context, or built by
 * hand the same way): an object with no prototype of its own that holds some realm's
 * `Object.prototype` `__proto__` accessor and otherwise only that `Object.prototype`'s members, each
 * as it holds them (the same function, the same enumerability). An object of such a prototype is
 * plain data, as one of `Object.prototype` is; a class's prototype, an `Object.prototype` itself and
 * a bare `Object.create(null)` are not such prototypes. Never throws (a Proxy whose traps throw
 * answers `false`).
 */
export function isArgumentsPrototype(prototype: unknown): boolean {
  if (typeof prototype !== "object" || prototype === null || prototype === Object.prototype) return false;
  if (made.has(prototype)) return true;
  try {
    if (Object.getPrototypeOf(prototype) !== null) return false;
    // The realm the accessor is from: its getter is a function of that realm, whose prototype's
    // prototype is that realm's `Object.prototype`.
    const getter = ownDescriptor(prototype, "__proto__")?.get;
    if (typeof getter !== "function") return false;
    const root = Object.getPrototypeOf(Object.getPrototypeOf(getter)) as unknown;
    if (root === prototype || !isObjectPrototype(root)) return false;
    for (const key of Reflect.ownKeys(prototype)) {
      if (typeof key !== "string") return false;
      const mine = ownDescriptor(prototype, key);
      const theirs = ownDescriptor(root, key);
      if (
        mine === undefined ||
        theirs === undefined ||
        mine.value !== theirs.value ||
        mine.get !== theirs.get ||
        mine.set !== theirs.set ||
        mine.enumerable !== theirs.enumerable
      )
        return false;
    }
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `prototype` is some realm's `Object.prototype`: this one, or another realm's (a
 * `node:vm` context's, an iframe's), known by its own `constructor` being that realm's built-in
 * `Object`, whose `prototype` (which cannot be changed) is `prototype`. A class's prototype (one
 * extending `null` too) is not one. Never throws.
 */
function isObjectPrototype(prototype: unknown): prototype is object {
  if (prototype === Object.prototype) return true;
  if (typeof prototype !== "object" || prototype === null) return false;
  try {
    if (Object.getPrototypeOf(prototype) !== null) return false;
    const builtIn = ownDescriptor(prototype, "constructor")?.value as unknown;
    if (typeof builtIn !== "function") return false;
    const described = ownDescriptor(builtIn, "prototype");
    return (
      described !== undefined &&
      described.value === prototype &&
      described.writable === false &&
      described.configurable === false &&
      builtIn.name === "Object" &&
      NATIVE_OBJECT.test(Function.prototype.toString.call(builtIn))
    );
  } catch {
    return false;
  }
}

/** How a realm's built-in `Object` reads as text. */
const NATIVE_OBJECT = /^function Object\(\) \{\s*\[native code\]\s*\}$/;

/**
 * Whether an object whose prototype is `prototype` is plain data rather than a class instance: no
 * prototype (`Object.create(null)`), some realm's `Object.prototype` (this one, or a `node:vm`
 * context's: an object made there, or parsed by its `JSON`), or a prototype `isArgumentsPrototype`
 * recognises (arguments `@loopwright/tools` and `@loopwright/agent` hand a tool declaring
 * `constructor`, `toString`…). False for a class's prototype (one extending `null` too), an array's,
 * an error's and any other built-in's. Never throws.
 */
export function isPlainPrototype(prototype: unknown): boolean {
  return prototype === null || isObjectPrototype(prototype) || isArgumentsPrototype(prototype);
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
    const properties = own(node, "properties");
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
 * schema is the node there with what its local `$ref` (`#`, `#/…`: `$defs`, `definitions`) names
 * and the schemas that apply to the same value beside it: its `allOf`, `anyOf` and `oneOf`
 * branches, its `if`, `then` and `else` (all three, whichever would hold), and its
 * `dependentSchemas` (and draft-07 `dependencies`) schemas, each followed further; only its own
 * keywords are read. A child is at the place of its key's `properties` entry and of every
 * `patternProperties` entry whose pattern matches the key (all of them, as JSON Schema applies
 * them; a pattern that is no valid regular expression, with the `u` flag or without, matches
 * nothing), else of `additionalProperties`, and where none of the place's schemas says anything of
 * the key, of `unevaluatedProperties`. The patterns are the host's and the keys the model's, so a
 * pattern is tested only where its answer can change what the walk hands on (see
 * `PATTERN_KEY_LIMIT`: a key past 256 characters is not tested, nor is a pattern that may
 * backtrack, `^([a-z]+)*$`, as `backtrackingPatterns` finds them; either is taken both ways, the
 * entry followed and `additionalProperties` too): a schema there that declares no inherited name,
 * nor leads to one, is left
 * out of the place (`atObject` is not called below it for that schema alone: it could only hand its
 * objects on as they are). An array's item is at the place, by index, of `prefixItems` (or a
 * draft-07 `items` list), past them of `items` (or draft-07 `additionalItems`), and of `contains`;
 * where none says anything of it, of `unevaluatedItems`. An array holding a remade item is handed
 * on as a copy, so nothing is written into; arrays are walked by index (any length), nothing the
 * schema does not declare is followed, and nothing below 512 levels; a schema reached twice at one
 * place counts once. `atObject` decides what an object may be (it is handed any object, a class
 * instance too).
 */
export function mapAlongSchema(
  value: unknown,
  schema: unknown,
  atObject: (object: object, place: SchemaPlace) => unknown,
): unknown {
  /**
   * Each `patternProperties` pattern read, as its regular expression (`null`: not a valid one), or
   * `RISKY` for one that may backtrack (`mayBacktrack`), which is never run.
   */
  const patterns = new Map<string, RegExp | null | typeof RISKY>();
  /**
   * Whether `pattern` matches `key`: `true`, `false`, or `undefined` for a key longer than
   * `PATTERN_KEY_LIMIT` or a pattern that may backtrack, which is not tested (the caller then takes
   * both ways: see `walk`).
   */
  const matches = (pattern: string, key: string): boolean | undefined => {
    if (key.length > PATTERN_KEY_LIMIT) return undefined;
    let regex = patterns.get(pattern);
    if (regex === undefined) {
      // Read in the grammar it compiles under (as `mayBacktrack` does): `u`, else no flag.
      const unicode = regexOf(pattern, "u");
      regex = backtracks(pattern, unicode !== null) ? RISKY : (unicode ?? regexOf(pattern, ""));
      patterns.set(pattern, regex);
    }
    if (regex === RISKY) return undefined;
    return regex?.test(key) === true;
  };
  /** Whether a schema node (or what it leads to) declares an inherited name, by node. */
  const leadsTo = new Map<object, boolean>();
  const matters = (node: unknown): boolean => {
    if (typeof node !== "object" || node === null) return false;
    let answer = leadsTo.get(node);
    if (answer === undefined) {
      answer = leadsToInheritedName(node, schema);
      leadsTo.set(node, answer);
    }
    return answer;
  };
  const walk = (value: unknown, nodes: readonly JsonSchema[], depth: number): unknown => {
    if (typeof value !== "object" || value === null || nodes.length === 0 || depth > ALONG_DEPTH)
      return value;
    if (Array.isArray(value)) {
      let longestTuple = 0;
      for (const node of nodes) longestTuple = Math.max(longestTuple, tupleOf(node)?.length ?? 0);
      let past: readonly JsonSchema[] | undefined;
      let out: unknown[] | undefined;
      for (let at = 0; at < value.length; at++) {
        let itemNodes: readonly JsonSchema[];
        if (at < longestTuple) itemNodes = itemPlace(schema, nodes, at);
        else itemNodes = past ??= itemPlace(schema, nodes, at);
        const item = value[at];
        const walked = walk(item, itemNodes, depth + 1);
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
        const reached = new Reached(schema);
        // A pattern is tested only where what it decides can matter (see `leadsToInheritedName`):
        // an entry that declares no inherited name, below it or where it leads, is not followed, and
        // its pattern is tested only where it decides whether an `additionalProperties` (or an
        // `unevaluatedProperties`) that does is followed. A key past `PATTERN_KEY_LIMIT`, or a
        // pattern that may backtrack (`mayBacktrack`), is taken both ways: the entry is followed
        // and it does not count as matching.
        let said = false;
        /** The nodes whose say on the key rests on their patterns for entries that do not matter. */
        const open: JsonSchema[] = [];
        const otherMatch = (node: JsonSchema): boolean => {
          const patterned = own(node, "patternProperties");
          if (typeof patterned !== "object" || patterned === null || Array.isArray(patterned)) return false;
          for (const [pattern, entry] of Object.entries(patterned))
            if (!matters(entry) && matches(pattern, key) === true) return true;
          return false;
        };
        for (const node of nodes) {
          let matched = false;
          const declared = own(own(node, "properties"), key);
          if (declared !== undefined) {
            reached.add(declared);
            matched = true;
          }
          const patterned = own(node, "patternProperties");
          if (typeof patterned === "object" && patterned !== null && !Array.isArray(patterned)) {
            for (const [pattern, entry] of Object.entries(patterned)) {
              if (!matters(entry)) continue;
              const match = matches(pattern, key);
              if (match !== false) reached.add(entry);
              if (match === true) matched = true;
            }
          }
          const additional = own(node, "additionalProperties");
          if (additional !== undefined) {
            if (!matched && matters(additional) && !otherMatch(node)) reached.add(additional);
            said = true;
          } else if (matched) said = true;
          else open.push(node);
        }
        if (!said && nodes.some((node) => matters(own(node, "unevaluatedProperties")))) {
          said = open.some(otherMatch);
          if (!said) for (const node of nodes) reached.add(own(node, "unevaluatedProperties"));
        }
        return walk(child, reached.holding(), depth + 1);
      },
    });
  };
  return walk(value, new Reached(schema).add(schema).all(), 0);
}

/** What `mapAlongSchema` remembers of a pattern `mayBacktrack` calls risky: it is never run. */
const RISKY = Symbol("risky");

/**
 * Whether `node`, or any schema it holds or leads to by a local `$ref` of `root`, declares a
 * property named after one of `INHERITED_NAMES` (as `declaresInheritedName` reads, following `$ref`
 * too): whether anything the walk does below `node` can hand on something other than the value
 * itself. A cycle is read once.
 */
function leadsToInheritedName(node: object, root: unknown): boolean {
  const seen = new Set<object>();
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next !== "object" || next === null || seen.has(next)) continue;
    seen.add(next);
    const properties = own(next, "properties");
    if (typeof properties === "object" && properties !== null && !Array.isArray(properties)) {
      for (const key of Object.keys(properties)) if (INHERITED_NAMES.has(key)) return true;
    }
    const ref = own(next, "$ref");
    if (typeof ref === "string" && (ref === "#" || ref.startsWith("#/"))) stack.push(resolveRef(root, ref));
    for (const child of Array.isArray(next) ? next : Object.values(next)) stack.push(child);
  }
  return false;
}

/** A `patternProperties` pattern `backtrackingPatterns` found. */
export interface BacktrackingPattern {
  /** Where the `patternProperties` holding it is, as a JSON Pointer fragment (`#/properties/map`). */
  readonly path: string;
  /** The pattern, as the schema writes it. */
  readonly pattern: string;
}

/** The schema keywords whose value is one schema. */
const SCHEMA_ONE = [
  "additionalProperties",
  "unevaluatedProperties",
  "items",
  "additionalItems",
  "contains",
  "unevaluatedItems",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
  "contentSchema",
];
/** The schema keywords whose value is a list of schemas. */
const SCHEMA_LISTS = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/** The schema keywords whose value is a map of schemas. */
const SCHEMA_MAPS = [
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas",
  "dependencies",
];

/** `part` as a JSON Pointer writes it (`~` as `~0`, `/` as `~1`). */
const pointerPart = (part: string) => part.replaceAll("~", "~0").replaceAll("/", "~1");

/**
 * Why a tool whose `schema` has `backtrackingPatterns` is refused, for a `defineTool` message:
 * the first pattern, its schema path and how many more there are, and how to write it instead
 * (`has a patternProperties pattern "^([a-z]+)*$" at #/… that can backtrack …`). `undefined` where
 * `backtrackingPatterns(schema)` is empty. The one text `defineTool` in `@loopwright/tools` and
 * `@loopwright/agent` put after the tool's name.
 */
export function backtrackingRefusal(schema: unknown): string | undefined {
  const [risky, ...more] = backtrackingPatterns(schema);
  if (risky === undefined) return undefined;
  return (
    `has a patternProperties pattern ${JSON.stringify(risky.pattern)} at ${risky.path}` +
    `${more.length > 0 ? ` (and ${more.length} more)` : ""} that can backtrack exponentially on a key ` +
    "the model chooses, where a parameter named after an Object.prototype member (constructor, toString…) " +
    "depends on it. Write it without a quantified group holding a quantifier or an alternation, a " +
    "back-reference or a quantified lookaround (e.g. ^[a-z]+$ for ^([a-z]+)*$)."
  );
}

/**
 * The `patternProperties` patterns of `schema` (a tool's JSON Schema) that `mapAlongSchema` would
 * have to run on a model's key and that may backtrack (`^([a-z]+)*$`, `(a|ab)*`, `^a*a*a*$`, a
 * back-reference): the ones whose entry declares an inherited name (`constructor`, `toString`…)
 * there or where it leads, or that decide whether an `additionalProperties` or an
 * `unevaluatedProperties` that does applies. `mapAlongSchema` never runs them and takes such a key
 * both ways (so an object under a key the pattern would not match may still lose inherited
 * members it declared elsewhere): `defineTool` in `@loopwright/tools` and `@loopwright/agent`
 * refuse a tool that has one, naming where. Empty for a schema that declares no inherited name.
 * Reads only schema positions (not `default`, `examples`, `const` or `enum` values), and a cycle once.
 */
export function backtrackingPatterns(schema: unknown): BacktrackingPattern[] {
  if (!declaresInheritedName(schema)) return [];
  const found: BacktrackingPattern[] = [];
  const leads = (node: unknown) =>
    typeof node === "object" && node !== null && leadsToInheritedName(node, schema);
  // Which unevaluatedProperties apply beside a node is a matter of the place; any that declares one counts.
  let unevaluated = false;
  const seen = new Set<object>();
  const stack: { node: unknown; path: string }[] = [{ node: schema, path: "#" }];
  const nodes: { node: object; path: string }[] = [];
  while (stack.length > 0) {
    const { node, path } = stack.pop() as { node: unknown; path: string };
    if (typeof node !== "object" || node === null || Array.isArray(node) || seen.has(node)) continue;
    seen.add(node);
    nodes.push({ node, path });
    if (leads(own(node, "unevaluatedProperties"))) unevaluated = true;
    const ref = own(node, "$ref");
    if (typeof ref === "string" && (ref === "#" || ref.startsWith("#/")))
      stack.push({ node: resolveRef(schema, ref), path: ref });
    for (const keyword of SCHEMA_ONE) stack.push({ node: own(node, keyword), path: `${path}/${keyword}` });
    for (const keyword of SCHEMA_LISTS) {
      const list = own(node, keyword);
      if (Array.isArray(list))
        for (const [at, entry] of list.entries())
          stack.push({ node: entry, path: `${path}/${keyword}/${at}` });
    }
    for (const keyword of SCHEMA_MAPS) {
      const map = own(node, keyword);
      if (typeof map !== "object" || map === null || Array.isArray(map)) continue;
      for (const [key, entry] of Object.entries(map))
        stack.push({ node: entry, path: `${path}/${keyword}/${pointerPart(key)}` });
    }
  }
  for (const { node, path } of nodes) {
    const patterned = own(node, "patternProperties");
    if (typeof patterned !== "object" || patterned === null || Array.isArray(patterned)) continue;
    const additional = own(node, "additionalProperties");
    const deciding = additional === undefined ? unevaluated : leads(additional);
    for (const [pattern, entry] of Object.entries(patterned)) {
      if ((deciding || leads(entry)) && mayBacktrack(pattern)) found.push({ path, pattern });
    }
  }
  return found;
}

/** What a local `$ref` (`#`, `#/…`) of `root` names (`undefined` where nothing). */
function resolveRef(root: unknown, ref: string): unknown {
  let target: unknown = root;
  for (const part of ref.slice(2).split("/")) {
    if (part === "") continue;
    target = own(target, part.replaceAll("~1", "/").replaceAll("~0", "~"));
  }
  return target;
}

/** A node's items by position: its `prefixItems`, else its `items` when that is a list (draft-07). */
function tupleOf(node: JsonSchema): readonly unknown[] | undefined {
  const prefix = own(node, "prefixItems");
  if (Array.isArray(prefix)) return prefix;
  const items = own(node, "items");
  return Array.isArray(items) ? items : undefined;
}

/** The schemas an array's item at index `at` is at the place of, in an array at the place of `nodes`. */
function itemPlace(root: unknown, nodes: readonly JsonSchema[], at: number): readonly JsonSchema[] {
  const reached = new Reached(root);
  let said = false;
  for (const node of nodes) {
    const tuple = tupleOf(node);
    let rest: unknown;
    if (tuple !== undefined && at < tuple.length) rest = tuple[at];
    else if (Array.isArray(own(node, "items"))) rest = own(node, "additionalItems");
    else rest = own(node, "items");
    if (rest !== undefined) {
      reached.add(rest);
      said = true;
    }
    const contains = own(node, "contains");
    if (contains !== undefined) {
      reached.add(contains);
      said = true;
    }
  }
  if (!said) for (const node of nodes) reached.add(own(node, "unevaluatedItems"));
  return reached.holding();
}

/** `node[keyword]` when `node` holds it as its own (a schema's `properties` never lends `constructor`). */
function own(node: unknown, keyword: string): unknown {
  return typeof node === "object" && node !== null && Object.hasOwn(node, keyword)
    ? (node as JsonSchema)[keyword]
    : undefined;
}

/** The keywords by which a schema node says something of an object's or an array's members. */
const HOLDING_KEYWORDS = [
  "properties",
  "patternProperties",
  "additionalProperties",
  "unevaluatedProperties",
  "items",
  "prefixItems",
  "additionalItems",
  "contains",
  "unevaluatedItems",
];

/**
 * Whether a schema node can say anything of an object or array below it (`HOLDING_KEYWORDS`): a
 * value read by no such node is handed on as it is, so the walk does not go into it.
 */
function holdsMore(node: JsonSchema): boolean {
  return HOLDING_KEYWORDS.some((keyword) => own(node, keyword) !== undefined);
}

/** The keywords whose schema applies to the same value as the node holding them, beside it. */
const BESIDE_KEYWORDS = ["if", "then", "else"];
/** The keywords holding a list of such schemas. */
const BESIDE_LISTS = ["allOf", "anyOf", "oneOf"];
/** The keywords holding a map of such schemas, by property name (a draft-07 `dependencies` list is no schema). */
const BESIDE_MAPS = ["dependentSchemas", "dependencies"];

/**
 * The schema objects one place stands for, each once: every node added, what its local `$ref`
 * names, and the schemas beside it (`BESIDE_KEYWORDS`, `BESIDE_LISTS`, `BESIDE_MAPS`), followed
 * further. A schema reached from two nodes at the same place is read there once, so the place's
 * list never grows past the schema's own objects.
 */
class Reached {
  readonly #root: unknown;
  readonly #seen = new Set<object>();
  readonly #nodes: JsonSchema[] = [];

  constructor(root: unknown) {
    this.#root = root;
  }

  add(node: unknown): this {
    const stack: unknown[] = [node];
    while (stack.length > 0) {
      const next = stack.pop();
      if (typeof next !== "object" || next === null || Array.isArray(next) || this.#seen.has(next)) continue;
      this.#seen.add(next);
      this.#nodes.push(next as JsonSchema);
      const ref = own(next, "$ref");
      if (typeof ref === "string" && (ref === "#" || ref.startsWith("#/"))) {
        stack.push(resolveRef(this.#root, ref));
      }
      for (const keyword of BESIDE_KEYWORDS) stack.push(own(next, keyword));
      for (const keyword of BESIDE_LISTS) {
        const branches = own(next, keyword);
        if (Array.isArray(branches)) for (const branch of branches) stack.push(branch);
      }
      for (const keyword of BESIDE_MAPS) {
        const map = own(next, keyword);
        if (typeof map === "object" && map !== null && !Array.isArray(map))
          for (const entry of Object.values(map)) stack.push(entry);
      }
    }
    return this;
  }

  /** Every node reached. */
  all(): readonly JsonSchema[] {
    return this.#nodes;
  }

  /** The nodes reached that can say anything of a value's members (see `holdsMore`). */
  holding(): readonly JsonSchema[] {
    return this.#nodes.filter(holdsMore);
  }
}
