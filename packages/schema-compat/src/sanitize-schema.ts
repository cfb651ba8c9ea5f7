import { mayBacktrack, PATTERN_KEY_LIMIT, patternTest } from "./backtracking.js";
import { STRICT_FORMATS, STRICT_MAX_DEPTH, TYPE_NAMES, type TypeName } from "./keywords.js";
import { anchorPattern, REPETITION_LIMIT } from "./pattern.js";
import { protoless } from "./protoless.js";
import type { JsonSchema } from "./types.js";

/** Options for {@link sanitizeSchema} and {@link relaxSchema}. */
export interface SanitizeOptions {
  /**
   * How many times one recursive `$ref` is expanded along a path before the value at that point is
   * asked for as JSON text instead. Default 2 (also for `NaN`); at most `MAX_NESTING`.
   */
  recursionLimit?: number | undefined;
  /**
   * How deep objects may nest (the root object is level 1) before a deeper object is asked for as
   * JSON text. Default 10, OpenAI's strict-mode limit (also for `NaN`).
   */
  maxDepth?: number | undefined;
  /**
   * Told, in a sentence for a log, when inlining `$ref`s would have made the schema larger than
   * `MAX_EXPANDED_CHARS` and references were expanded less (or asked for as JSON text) instead,
   * when the keywords beside a wide `anyOf` were kept once rather than copied into each branch,
   * when repeated parts past {@link MAX_EXPANDED_NODES} were asked for as JSON text, and when a
   * part admits no value (bounds, item counts or lengths that contradict, an empty enum, one of
   * another type or one no value of which meets the bounds, pattern or multipleOf beside it) and
   * was sent without the contradiction, written into its description.
   */
  onNotice?: ((notice: string) => void) | undefined;
}

type Raw = Record<string, unknown>;

interface Context {
  root: unknown;
  recursionLimit: number;
  maxDepth: number;
  /**
   * Schema nodes still allowed to be built more than once ({@link MAX_EXPANDED_NODES}); guards
   * against `$ref` fan-out, shared subschemas and copied `anyOf` keywords blowing up.
   */
  budget: number;
  /** Input objects converted so far: a second visit is repeated work, paid from `budget`. */
  seen: Set<object>;
  /** Repeated subtrees being converted along the current path: everything inside them is paid. */
  repeating: number;
  /** Places asked for as JSON text because `budget` ran out. */
  cut: number;
  /** Enum values the schema may still hold (OpenAI strict: 1,000 across the whole schema). */
  enumBudget: number;
  /** Input objects on the current path, so a cyclic JavaScript object cannot loop forever. */
  active: Set<object>;
  /** `$ref`s followed so far: none, and the schema cannot have grown by fan-out. */
  refsFollowed: number;
  /** Schemas being converted along the current path, whatever their kind (arrays of arrays too). */
  level: number;
  /** Sentences for `onNotice` about what this conversion could not keep as it was. */
  notices: string[];
  /** Whether `Object.prototype` holds names of its own beyond the standard ones ({@link isPolluted}). */
  polluted: boolean;
  /** The JSON pointer tokens of the place being converted (`properties`, `x`), for notices. */
  path: string[];
}

/**
 * The deepest a schema is read (64 nested schemas of any kind); deeper, the value at that point
 * is asked for as JSON text. Strict mode allows 10 levels of objects; only a hostile or generated
 * schema nests arrays or unions hundreds deep, and reading it all would exhaust the stack.
 */
export const MAX_NESTING = 64;

type RefCounts = ReadonlyMap<string, number>;

/**
 * How many schema nodes a conversion may build beyond reading its input once: what a `$ref`
 * inlined again, a subschema object shared by several places, or the keywords beside an `anyOf`
 * copied into its branches add. A schema read once is never cut, however large; past this many
 * repeated nodes, a repeated object, array or union is asked for as JSON text (a scalar leaf is
 * kept: it costs no more than the JSON text would) and `onNotice` is told.
 */
export const MAX_EXPANDED_NODES = 20_000;

/**
 * The largest magnitude an integer bound keeps as a keyword (10^15, fifteen digits). llama.cpp
 * (b9749) builds an integer range into a grammar of at most sixteen digits: a one-sided bound of
 * sixteen digits or more (`minimum: 1e16`, `maximum: -9007199254740991`) hangs or kills the server,
 * and one past 2^63 or written with an exponent is a 400. Past it, the bound goes into the
 * description; zod's `z.int()` limits (±`Number.MAX_SAFE_INTEGER`) say only "an integer" and go.
 */
export const INTEGER_BOUND_LIMIT = 1e15;

/** Enum values OpenAI strict mode takes across one schema. */
const ENUM_LIMIT = 1000;
/** Above this many string values, one enum's values may total at most {@link LARGE_ENUM_CHARS}. */
const LARGE_ENUM_COUNT = 250;
const LARGE_ENUM_CHARS = 15_000;
/** How much of an enum too large to keep is listed in the description. */
const ENUM_NOTE_CHARS = 1500;

/** Keywords that describe rather than constrain; they never split an `anyOf` into its branches. */
const ANNOTATIONS = new Set([
  "description",
  "title",
  "default",
  "examples",
  "$schema",
  "$id",
  "$comment",
  "$defs",
  "definitions",
  "$anchor",
  "readOnly",
  "writeOnly",
  "deprecated",
  "nullable",
  "anyOf",
  "oneOf",
]);

export const JSON_TEXT_NOTE = "Give this value as JSON text.";
export const ANY_NOTE = "Any JSON value; give an object or an array as JSON text.";

/**
 * What the sanitizer asked for at a place it could not shape: `"text"` — the value itself as
 * JSON text (an object too deep, a recursion past its limit) — or `"any"`: any value, an object
 * or an array as JSON text.
 */
export type Asked = "text" | "any";

/**
 * The sanitized schema objects the sanitizer made to ask for JSON text, and what each asks: kept
 * beside them rather than read back from their descriptions, where a tool's own words may say
 * the same. A copy the sanitizer makes of such an object (made nullable, described) is recorded
 * too.
 */
const ASKED = new WeakMap<object, Asked>();

/** What the sanitizer asked for at this sanitized schema object, if it asked for JSON text there. */
export function askedAt(node: unknown): Asked | undefined {
  return isObject(node) ? ASKED.get(node) : undefined;
}

function asking<T extends JsonSchema>(node: T, asked: Asked): T {
  ASKED.set(node, asked);
  return node;
}

/**
 * The sanitized object schemas whose property names the sanitizer rewrote, each with the names it
 * wrote and the schema's own (`"a\uFFFD"` → `"a\uD83D"`): a name holding half a surrogate pair
 * alone cannot be sent (llama.cpp refuses the whole request), so it is written with U+FFFD, and
 * `restoreArguments` hands the tool its own name back. A copy the sanitizer makes of such an
 * object is recorded too.
 */
const RENAMED = new WeakMap<object, ReadonlyMap<string, string>>();

/** The property names the sanitizer rewrote at this sanitized object schema: written → the schema's own. */
export function renamedAt(node: unknown): ReadonlyMap<string, string> | undefined {
  return isObject(node) ? RENAMED.get(node) : undefined;
}

/**
 * Where each alternative of a sanitized `anyOf` came from: the branches of the original schema's
 * unions it was made from, as chains (the outer union's branch first, then the branch of a union
 * inside it that a nested `anyOf` was flattened from). An alternative two branches made alike
 * (kept once) holds the chains of both. `restoreArguments` reads what an alternative asks for
 * (JSON text) only where the object is read by a branch of its chains: one variant's ask is not
 * another's (see its `step`). A copy the sanitizer makes of such an object is recorded too.
 */
const ORIGINS = new WeakMap<object, readonly (readonly unknown[])[]>();

/** Past this many chains, an alternative is read for every branch (as one made from none). */
const MAX_ORIGIN_CHAINS = 64;

/**
 * The chains of original union branches this sanitized alternative was made from (see `ORIGINS`);
 * `[[]]` — read for any branch — for one the sanitizer made from no branch (the `null` of a
 * nullable union, say).
 */
export function originsOf(node: unknown): readonly (readonly unknown[])[] {
  return (isObject(node) ? ORIGINS.get(node) : undefined) ?? [[]];
}

/** Records `chains` for `node`: `[[]]` (read for any branch) where they are too many to keep. */
function originate(node: JsonSchema, chains: readonly (readonly unknown[])[]): void {
  ORIGINS.set(node, chains.length > MAX_ORIGIN_CHAINS ? [[]] : chains);
}

/**
 * The alternatives a root union of objects was merged from (see `toRootObject`): the root a
 * strict declaration insists on is one object, so the model is asked for the fields of all of
 * them at once, each read for its own branch by `restoreArguments`.
 */
const MERGED = new WeakMap<object, readonly JsonSchema[]>();

/** The object alternatives the sanitizer merged into this root object schema, if it merged any. */
export function mergedFrom(node: unknown): readonly JsonSchema[] | undefined {
  return isObject(node) ? MERGED.get(node) : undefined;
}

/** `to`, a copy of `from`, asking what `from` asked and with the names `from` had rewritten. */
function carried<T extends JsonSchema>(from: JsonSchema, to: T): T {
  const asked = ASKED.get(from);
  if (asked !== undefined) ASKED.set(to, asked);
  const renamed = RENAMED.get(from);
  if (renamed !== undefined) RENAMED.set(to, renamed);
  const origins = ORIGINS.get(from);
  if (origins !== undefined) ORIGINS.set(to, origins);
  const merged = MERGED.get(from);
  if (merged !== undefined) MERGED.set(to, merged);
  return to;
}

/**
 * The property name llama.cpp cannot be sent: its schema walker takes a `$ref` key wherever it
 * stands as a reference, so a property of that name (its value a schema, an object) fails the whole
 * request with a 400 ("type must be string, but is object"), strict or relaxed. Sent as `$ref_`.
 */
const REF_KEY = "$ref";
const REF_WRITTEN = "$ref_";

/** Whether a property name can be sent as it is (neither half a surrogate pair alone nor `$ref`). */
function sendableName(key: string): boolean {
  return key.isWellFormed() && key !== REF_KEY;
}

/**
 * Whether a name the model wrote may be one the sanitizer rewrote (U+FFFD for half a surrogate
 * pair, `$ref_` for `$ref`): only such names are looked up in what it recorded.
 */
export function mayBeRenamed(key: string): boolean {
  return key.includes("\uFFFD") || key.startsWith(REF_WRITTEN);
}

/**
 * `properties` with every name holding half a surrogate pair alone written with U+FFFD, and a
 * `$ref` written `$ref_` (then `_2`, `_3`, … where that name is taken), in the same order; the
 * renames recorded on `out`.
 */
function wellFormedNames(properties: Raw): { properties: Raw; renamed?: Map<string, string> } {
  const keys = Object.keys(properties);
  if (keys.every(sendableName)) return { properties };
  const taken = new Set(keys.filter(sendableName));
  const next = new Map<string, number>();
  const renamed = new Map<string, string>();
  const out: Raw = {};
  for (const key of keys) {
    let name = key;
    if (!sendableName(key)) {
      const base = key === REF_KEY ? REF_WRITTEN : key.toWellFormed();
      name = base;
      for (let n = next.get(base) ?? 2; taken.has(name); n++) {
        name = `${base}_${n}`;
        next.set(base, n + 1);
      }
      taken.add(name);
      renamed.set(name, key);
    }
    setKey(out, name, properties[key]);
  }
  return { properties: out, renamed };
}

export function isObject(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** How deep a prototype chain is followed for a schema's fields: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/**
 * `node[key]` where the node holds it itself, or a prototype of its own does (a class's getter),
 * never where only `Object.prototype` does. A schema is JSON from a tool author or an MCP server;
 * some code in the host's process setting `Object.prototype.description` (prototype pollution)
 * otherwise wrote that text into every node of every schema, and `Object.prototype.$ref` read every
 * schema as a reference to nothing.
 */
export function own(node: object, key: string): unknown {
  if (Object.hasOwn(node, key)) return (node as Raw)[key];
  let at = Object.getPrototypeOf(node) as object | null;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    if (Object.hasOwn(at, key)) return (node as Raw)[key];
    at = Object.getPrototypeOf(at) as object | null;
  }
  return undefined;
}

/** The names `Object.prototype` holds in a process no code has added to (ECMAScript's and Annex B's). */
const STANDARD_NAMES: ReadonlySet<string> = new Set([
  "constructor",
  "__defineGetter__",
  "__defineSetter__",
  "hasOwnProperty",
  "__lookupGetter__",
  "__lookupSetter__",
  "isPrototypeOf",
  "propertyIsEnumerable",
  "toString",
  "valueOf",
  "__proto__",
  "toLocaleString",
]);

/**
 * Whether `Object.prototype` holds a name beyond {@link STANDARD_NAMES} (prototype pollution, or a
 * library's addition): then every schema object is read through {@link fields}, and otherwise as
 * it is, which reads the same fields and costs nothing extra (copying each node cost about 5%).
 */
function isPolluted(): boolean {
  const names = Object.getOwnPropertyNames(Object.prototype);
  return names.length !== STANDARD_NAMES.size || names.some((name) => !STANDARD_NAMES.has(name));
}

/**
 * The prototype of what {@link fields} makes: an empty object with no prototype of its own, so a
 * read of a field the copy lacks ends there (an object made with `Object.create(null)` itself is
 * slower to read from).
 */
const NO_FIELDS: object = Object.freeze(Object.create(null));

/**
 * A schema object's fields in an object with no prototype, read once: its own enumerable fields,
 * and those a prototype of its own holds (below `Object.prototype`: a class's getter), so nothing
 * read from it afterwards can come from a polluted `Object.prototype`.
 */
export function fields(node: Raw, all = true): Raw {
  const out = Object.create(NO_FIELDS) as Raw;
  const keys = Object.keys(node);
  for (const key of keys) out[key] = node[key];
  const names = all ? Object.getOwnPropertyNames(node) : keys;
  if (names.length !== keys.length) {
    // Its own fields that are not among its keys: read as the schema's, and still not among its keys.
    for (const name of names) {
      if (!Object.hasOwn(out, name))
        Object.defineProperty(
          out,
          name,
          protoless({ value: node[name], writable: true, configurable: true }),
        );
    }
  }
  let at = Object.getPrototypeOf(node) as object | null;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    for (const name of Object.getOwnPropertyNames(at)) {
      if (name !== "constructor" && !Object.hasOwn(out, name)) out[name] = node[name];
    }
    at = Object.getPrototypeOf(at) as object | null;
  }
  return out;
}

/** Sets an own enumerable key, safe for `__proto__` and friends. */
export function setKey(target: Raw, key: string, value: unknown): void {
  Object.defineProperty(
    target,
    key,
    protoless({ value, enumerable: true, writable: true, configurable: true }),
  );
}

function finite(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

function count(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** Resolves a local JSON pointer (`#`, `#/$defs/x`, `#/definitions/x`, any `#/a/b`) in the root. */
export function resolvePointer(root: unknown, ref: string): unknown {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    let token: string;
    try {
      token = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    } catch {
      return undefined;
    }
    if (Array.isArray(node)) {
      node = /^\d+$/.test(token) ? node[Number(token)] : undefined;
    } else if (isObject(node) && Object.hasOwn(node, token)) {
      node = node[token];
    } else {
      return undefined;
    }
  }
  return node;
}

/** Whether a value is a string holding half a surrogate pair alone (a cut emoji). */
export function hasLoneSurrogate(value: unknown): boolean {
  return typeof value === "string" && !value.isWellFormed();
}

/**
 * `text` with each lone surrogate written U+FFFD: a request holding one, even escaped, is refused
 * whole by a server reading UTF-8 (llama.cpp answers a 500 before it reads the tools).
 */
export function wellFormed(text: string): string {
  return text.toWellFormed();
}

/** Joins a description and the notes about what was moved out of the schema. */
function describe(base: unknown, notes: readonly string[]): string | undefined {
  const text = typeof base === "string" && base.trim() !== "" ? wellFormed(base) : undefined;
  if (notes.length === 0) return text;
  const joined = wellFormed(notes.join(" "));
  if (!text) return joined;
  return `${text}${/[.!?:]\s*$/.test(text) ? "" : "."} ${joined}`;
}

function baseDescription(schema: Raw): string | undefined {
  const description = own(schema, "description");
  if (typeof description === "string" && description.trim() !== "") return wellFormed(description);
  const title = own(schema, "title");
  if (typeof title === "string" && title.trim() !== "") return wellFormed(title);
  return undefined;
}

function withDescription(schema: JsonSchema, description: string | undefined): JsonSchema {
  if (description === undefined) return schema;
  return carried(schema, { ...schema, description });
}

/** A value the strict subset cannot shape (too deep, recursive): asked for as JSON text. */
function jsonText(description: string | undefined): JsonSchema {
  return asking({ type: "string", description: describe(description, [JSON_TEXT_NOTE]) }, "text");
}

/** A schema that accepts any JSON value, in the only form the strict subset has for it. */
function anyValue(description: string | undefined): JsonSchema {
  return asking(
    {
      anyOf: [{ type: "string" }, { type: "number" }, { type: "boolean" }, { type: "null" }],
      description: describe(description, [ANY_NOTE]),
    },
    "any",
  );
}

/** Adds `null` to what a sanitized schema accepts, in the form the strict subset uses. */
export function makeNullable(schema: JsonSchema): JsonSchema {
  const anyOf = own(schema, "anyOf");
  if (Array.isArray(anyOf)) {
    const branches = anyOf as JsonSchema[];
    if (branches.some((b) => own(b, "type") === "null")) return schema;
    return carried(schema, { ...schema, anyOf: [...branches, { type: "null" }] });
  }
  const type = own(schema, "type");
  if (type === "null") return schema;
  const values = own(schema, "enum");
  if (typeof type === "string") {
    const out: JsonSchema = carried(schema, { ...schema, type: [type, "null"] });
    if (Array.isArray(values) && !values.includes(null)) out.enum = [...values, null];
    return out;
  }
  if (Array.isArray(type) && !type.includes("null")) {
    const out: JsonSchema = carried(schema, { ...schema, type: [...type, "null"] });
    if (Array.isArray(values) && !values.includes(null)) out.enum = [...values, null];
    return out;
  }
  return schema;
}

/**
 * Collects the subschemas an `allOf` combines (following `$ref`s) into one flat list, in order;
 * true when a local `$ref` among them was past the recursion limit (and not followed).
 * A `$ref` followed here counts toward the recursion limit like any other, so
 * `allOf: [{ $ref: "#" }]` cannot expand forever. Walked with a stack of its own, not the call
 * stack: an `allOf` nested tens of thousands deep is still one conjunction.
 */
function flattenAllOf(
  schema: Raw,
  ctx: Context,
  counts: Map<string, number>,
  seen: Set<unknown>,
  out: Raw[],
): boolean {
  let cut = false;
  const stack: Raw[] = [schema];
  while (stack.length > 0) {
    const { allOf, ...rest } = fields(stack.pop() as Raw);
    out.push(rest);
    if (!Array.isArray(allOf)) continue;
    const children: Raw[] = [];
    for (const entry of allOf) {
      if (seen.has(entry)) continue;
      seen.add(entry);
      let sub: unknown = entry;
      for (let hops = 0; isObject(sub) && typeof own(sub, "$ref") === "string" && hops < 16; hops++) {
        const { $ref, ...siblings } = fields(sub);
        const ref = $ref as string;
        const target = resolvePointer(ctx.root, ref);
        const times = counts.get(ref) ?? 0;
        if (isObject(target) && times >= ctx.recursionLimit) cut = true;
        if (!isObject(target) || times >= ctx.recursionLimit) {
          sub = siblings;
          break;
        }
        counts.set(ref, times + 1);
        sub = withReferenced(target, siblings);
      }
      if (isObject(sub)) children.push(sub);
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as Raw);
  }
  return cut;
}

/**
 * What a `$ref` beside other keywords means: both apply (the referenced schema's properties and
 * requirements together with the siblings'), and where both say the same annotation — a
 * description, a default — the siblings' wins.
 */
function withReferenced(target: Raw, siblings: Raw): Raw {
  if (Object.keys(siblings).length === 0) return fields(target);
  const merged = mergeParts([target, siblings]);
  const targetAllOf = own(target, "allOf");
  for (const [key, value] of Object.entries(siblings)) {
    if (key === "properties" || key === "required" || key === "type" || key === "nullable") continue;
    if (key === "allOf" && Array.isArray(value) && Array.isArray(targetAllOf)) {
      merged.allOf = [...targetAllOf, ...value];
    } else {
      setKey(merged, key, value);
    }
  }
  return merged;
}

function typesOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.filter((t): t is string => typeof t === "string");
  return [];
}

/**
 * A part's `type` as OpenAPI 3.0's `nullable: true` beside it widens it: `"null"` added to a
 * `type` the part itself holds, and nothing else. Without a `type` the keyword has no effect — the
 * OAI's clarification of 3.0.3 ("adds null to the allowed types specified by the type keyword,
 * only if type is explicitly defined within the same Schema Object"); ajv 8 refuses to compile
 * such a schema ("nullable" cannot be used without "type") — so `{ nullable: true, anyOf: [string,
 * number] }` (zod's openapi-3.0 `.nullable()` of a union) takes no null, nor does
 * `{ nullable: true, allOf: [{ $ref }] }`. Read per part, before an `allOf`'s types are
 * intersected: `{ type: "object", nullable: true, allOf: [{ $ref: "#/…/Pet" }] }` takes no null
 * where `Pet`'s own type refuses it (its part still holds), as ajv reads it.
 */
function widenedType(part: Raw): unknown {
  const type = part.type;
  if (own(part, "nullable") !== true || type === undefined) return type;
  const named = typesOf(type);
  return named.includes("null") ? type : [...named, "null"];
}

/** `schema` with its OpenAPI `nullable` read into its `type` (see `widenedType`) and dropped. */
function withoutNullable(schema: Raw): Raw {
  if (!Object.hasOwn(schema, "nullable")) return schema;
  const { nullable: _read, ...rest } = fields(schema);
  if (schema.type !== undefined) rest.type = widenedType(schema);
  return rest;
}

/**
 * Merges what `allOf` requires of one value into a single schema (the first part wins ties). A
 * property several parts describe takes all their schemas (`allOf`). Linear in the parts.
 */
function mergeParts(parts: readonly Raw[]): Raw {
  // No prototype: nothing read from it can come from a polluted `Object.prototype`.
  const merged = Object.create(NO_FIELDS) as Raw;
  const properties = new Map<string, unknown[]>();
  let required: Set<unknown> | undefined;
  for (const part of parts) {
    for (const [key, value] of Object.entries(part)) {
      if (key === "properties" && isObject(value)) {
        for (const [name, sub] of Object.entries(value)) {
          const subs = properties.get(name);
          if (subs) subs.push(sub);
          else properties.set(name, [sub]);
        }
      } else if (key === "required" && Array.isArray(value)) {
        required ??= new Set();
        for (const name of value) required.add(name);
      } else if (key === "nullable") {
        // Read into the part's own type (see `widenedType`), never carried to the merged schema.
      } else if (key === "type" && merged.type !== undefined) {
        const before = typesOf(merged.type);
        const mine = typesOf(widenedType(part));
        const both = before.filter((t) => mine.includes(t) || (t === "integer" && mine.includes("number")));
        if (both.length > 0) merged.type = both;
      } else if (key === "type") {
        setKey(merged, key, widenedType(part));
      } else if (!Object.hasOwn(merged, key)) {
        setKey(merged, key, value);
      }
    }
  }
  if (properties.size > 0 || parts.some((p) => isObject(own(p, "properties")))) {
    const props: Raw = {};
    for (const [name, subs] of properties) setKey(props, name, subs.length === 1 ? subs[0] : { allOf: subs });
    merged.properties = props;
  }
  if (required) merged.required = [...required];
  return merged;
}

/**
 * Whether `value` is, or holds at any depth, a number JSON cannot carry: NaN or ±Infinity, which
 * `JSON.stringify` would write as `null`, or a BigInt, which it throws for. Iterative; a cycle is
 * read once.
 */
function holdsNonFinite(value: unknown): boolean {
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "bigint") return true;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return true;
    } else if (typeof v === "object" && v !== null && !seen.has(v)) {
      seen.add(v);
      for (const item of Array.isArray(v) ? v : Object.values(v)) stack.push(item);
    }
  }
  return false;
}

function isScalar(value: unknown): value is string | number | boolean | null {
  return value === null || typeof value === "string" || typeof value === "boolean" || finite(value);
}

function typeOfValue(value: string | number | boolean | null): TypeName {
  if (value === null) return "null";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value as "string" | "boolean";
}

function valueFits(value: unknown, type: TypeName): boolean {
  switch (type) {
    case "null":
      return value === null;
    case "string":
      return typeof value === "string";
    case "boolean":
      return typeof value === "boolean";
    case "number":
      return finite(value);
    case "integer":
      return finite(value) && Number.isInteger(value);
    default:
      return false;
  }
}

function inferTypes(schema: Raw): TypeName[] {
  const has = (...keys: string[]) => keys.some((k) => Object.hasOwn(schema, k));
  if (has("properties", "additionalProperties", "required", "patternProperties", "minProperties"))
    return ["object"];
  if (has("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains")) return ["array"];
  if (has("pattern", "format", "minLength", "maxLength")) return ["string"];
  if (has("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")) return ["number"];
  return [];
}

/**
 * The schema for a union of sanitized branches: the branch itself when there is one, `T` made
 * nullable for `T` or null (pydantic's `Optional[T]`), else `anyOf`.
 */
function unionSchema(union: readonly JsonSchema[]): JsonSchema {
  if (union.length === 1) return union[0] as JsonSchema;
  const typed = union.filter((b) => own(b, "type") !== "null");
  if (union.length === 2 && typed.length === 1 && typeof own(typed[0] as JsonSchema, "type") === "string") {
    return makeNullable(typed[0] as JsonSchema);
  }
  return { anyOf: [...union] };
}

/**
 * Flattens nested `anyOf`s and drops repeated branches. Where each came from goes with it (see
 * `ORIGINS`): a branch flattened from a nested `anyOf` holds that union's chains before its own,
 * and a branch kept once for two alike holds the chains of both.
 */
function unionOf(schemas: readonly JsonSchema[]): JsonSchema[] {
  const out: JsonSchema[] = [];
  const kept = new Map<string, JsonSchema>();
  const push = (schema: JsonSchema, chains?: readonly (readonly unknown[])[]) => {
    const key = JSON.stringify(schema);
    const first = kept.get(key);
    if (first === undefined) {
      kept.set(key, schema);
      out.push(schema);
      if (chains !== undefined) originate(schema, chains);
    } else if (first !== schema) {
      originate(first, [...originsOf(first), ...(chains ?? originsOf(schema))]);
    }
  };
  for (const schema of schemas) {
    const keysOf = Object.keys(schema);
    const anyOf = own(schema, "anyOf");
    if (Array.isArray(anyOf) && keysOf.every((k) => k === "anyOf" || k === "description")) {
      const outer = originsOf(schema);
      for (const branch of anyOf as JsonSchema[]) {
        const inner = originsOf(branch);
        push(
          branch,
          outer.flatMap((o) => inner.map((i) => [...o, ...i])),
        );
      }
    } else {
      push(schema);
    }
  }
  return out;
}

/**
 * True for a schema no value satisfies: `false`, or `{ not: {} }` / `{ not: true }` (what
 * zod-to-json-schema writes for `undefined`, as the first branch of every optional union).
 */
function isNever(schema: unknown): boolean {
  if (schema === false) return true;
  if (!isObject(schema) || !Object.hasOwn(schema, "not")) return false;
  const not = schema.not;
  const matchesAll = not === true || (isObject(not) && Object.keys(not).every((k) => ANNOTATIONS.has(k)));
  return matchesAll && Object.keys(schema).every((k) => k === "not" || ANNOTATIONS.has(k));
}

const NEVER_NOTE = "Not used; always null.";

const SCALAR_TYPES: readonly string[] = ["string", "number", "integer", "boolean", "null"];

/**
 * A schema whose conversion builds no subschema: not an object, or one whose types are all
 * scalar and that has no `$ref`, `allOf`, `anyOf` or `oneOf`. Kept past {@link MAX_EXPANDED_NODES}:
 * asked for as JSON text instead, it would be no smaller, and a second pass would read it again.
 */
function isLeaf(input: unknown): boolean {
  if (!isObject(input)) return true;
  if (["$ref", "allOf", "anyOf", "oneOf"].some((k) => Object.hasOwn(input, k))) return false;
  const types = typesOf(own(input, "type"));
  return types.length > 0 && types.every((t) => SCALAR_TYPES.includes(t));
}

/** `{ type: "string" }` with at most a description: a leaf, kept at any depth (so a second pass changes nothing). */
function isPlainString(input: unknown): boolean {
  return (
    isObject(input) &&
    own(input, "type") === "string" &&
    Object.keys(input).every(
      (k) => k === "type" || (k === "description" && typeof own(input, "description") === "string"),
    )
  );
}

function convert(input: unknown, ctx: Context, depth: number, refs: RefCounts): JsonSchema {
  const repeat = isObject(input) && ctx.seen.has(input);
  if (repeat || ctx.repeating > 0) {
    ctx.budget -= 1;
    if (ctx.budget < 0 && !isLeaf(input)) {
      ctx.cut++;
      return jsonText(isObject(input) ? baseDescription(input) : undefined);
    }
  }
  if (ctx.level >= MAX_NESTING && !isPlainString(input)) {
    return jsonText(isObject(input) ? baseDescription(input) : undefined);
  }
  if (isNever(input)) return { type: "null", description: NEVER_NOTE };
  if (!isObject(input)) return anyValue(undefined);
  if (ctx.active.has(input)) return jsonText(baseDescription(input));
  ctx.seen.add(input);
  ctx.active.add(input);
  ctx.level++;
  if (repeat) ctx.repeating++;
  try {
    return convertObject(input, ctx, depth, refs);
  } finally {
    if (repeat) ctx.repeating--;
    ctx.level--;
    ctx.active.delete(input);
  }
}

function convertObject(input: Raw, ctx: Context, depth: number, refs: RefCounts): JsonSchema {
  // Every field read below is one the schema holds: where Object.prototype holds more than its own
  // names, the schema's fields are read into a copy that cannot read through to it.
  let schema: Raw = ctx.polluted ? fields(input) : input;
  let counts = refs;
  for (let hops = 0; typeof schema.$ref === "string" && hops < 32; hops++) {
    const { $ref, ...rest } = schema;
    const ref = $ref as string;
    const seen = counts.get(ref) ?? 0;
    const target = resolvePointer(ctx.root, ref);
    if (seen >= ctx.recursionLimit) {
      return jsonText(baseDescription(rest) ?? (isObject(target) ? baseDescription(target) : undefined));
    }
    const next = new Map(counts);
    next.set(ref, seen + 1);
    counts = next;
    ctx.refsFollowed++;
    if (target === undefined) {
      // A reference to nothing in this schema (a typo, a remote URL, which is never fetched) reads
      // as the keywords beside it, any value where there are none: said, not guessed at.
      ctx.notices.push(
        `A schema's $ref at ${placeOf(ctx)} (${JSON.stringify(shortText(ref, 120))}) names nothing in this schema (only local references such as #/$defs/Name are read): it is read as the keywords beside it, any value where there are none.`,
      );
    }
    schema = isObject(target) ? withReferenced(target, rest) : fields(rest);
  }
  if (typeof schema.$ref === "string") {
    const { $ref: _dropped, ...rest } = schema;
    schema = fields(rest);
  }
  if (Array.isArray(schema.allOf)) {
    const parts: Raw[] = [];
    const next = new Map(counts);
    // A reference past the recursion limit, as a bare `$ref` past it is: the value as JSON text
    // (dropped, the conjunction would read as any value, and the model could give no object there).
    if (flattenAllOf(schema, ctx, next, new Set([schema]), parts)) return jsonText(baseDescription(schema));
    counts = next;
    schema = mergeParts(parts);
  }
  schema = withoutNullable(schema);

  const notes: string[] = [];
  // A number JSON cannot carry (Infinity, what `1e309` parses to; NaN) would be written `null`, and
  // a BigInt would throw while writing it (and the whole schema read as nothing).
  if (Object.hasOwn(schema, "default") && schema.default !== undefined && !holdsNonFinite(schema.default)) {
    notes.push(`Default: ${cutJson(schema.default)}.`);
  }
  const base = baseDescription(schema);

  const branches = Array.isArray(schema.anyOf)
    ? schema.anyOf
    : Array.isArray(schema.oneOf)
      ? schema.oneOf
      : [];
  if (branches.length > 0) return convertUnion(schema, branches, base, notes, ctx, depth, counts);

  const named = typesOf(schema.type);
  let types = [...new Set(named)].filter((t): t is TypeName => (TYPE_NAMES as readonly string[]).includes(t));
  if (
    (types.length !== named.length && named.some((t) => !(TYPE_NAMES as readonly string[]).includes(t))) ||
    (named.length === 0 && schema.type !== undefined)
  ) {
    // `type: "int"`, `type: ["str"]`, `type: 5`: read as no type (inferred from the other keywords, else any value).
    const unknown = named.filter((t) => !(TYPE_NAMES as readonly string[]).includes(t));
    ctx.notices.push(
      `A schema's type at ${placeOf(ctx)} (${unknown.length > 0 ? unknown.map((t) => JSON.stringify(shortText(t, 40))).join(", ") : valueText(schema.type)}) is no JSON Schema type (string, number, integer, boolean, object, array, null): ${types.length > 0 ? `it is read as ${types.join(" or ")}` : "the type is inferred from the other keywords, any value where they say none"}.`,
    );
  }
  let enumValues: Array<string | number | boolean | null> | undefined;
  const givenEnum: unknown = Object.hasOwn(schema, "const") ? [schema.const] : schema.enum;
  if (givenEnum !== undefined && !Array.isArray(givenEnum))
    ctx.notices.push(
      `A schema's enum at ${placeOf(ctx)} is ${valueText(givenEnum)}, not a list of values: it is read as none.`,
    );
  // A value holding a number JSON cannot carry (`1e309` parsed to Infinity, a host's NaN or BigInt)
  // is no value the model can send, and written out it reads as `null` (a BigInt throws, and the
  // whole schema was read as nothing): it is left out, onNotice told.
  const rawEnum = Array.isArray(givenEnum) ? givenEnum.filter((v) => !holdsNonFinite(v)) : givenEnum;
  if (Array.isArray(givenEnum) && Array.isArray(rawEnum) && rawEnum.length < givenEnum.length) {
    ctx.notices.push(
      `A schema's ${Object.hasOwn(schema, "const") ? "const" : "enum"} holds a number JSON cannot carry (Infinity, -Infinity, NaN or a BigInt; JSON text such as 1e309 parses to Infinity): ${givenEnum.length - rawEnum.length === 1 ? "that value is" : `${givenEnum.length - rawEnum.length} values are`} left out, as no model can send ${givenEnum.length - rawEnum.length === 1 ? "it" : "them"}.`,
    );
  }
  if (Array.isArray(rawEnum) && rawEnum.length > 0) {
    const scalars = rawEnum.filter(isScalar);
    enumValues = [...new Set(scalars)];
    if (scalars.length < rawEnum.length) {
      const others = rawEnum.filter((v) => !isScalar(v));
      notes.push(
        Object.hasOwn(schema, "const")
          ? `Must be exactly ${cutJson(others[0])}.`
          : `Also allowed: ${listedValues(others)}.`,
      );
      if (types.length === 0) {
        for (const v of others) {
          const type = Array.isArray(v) ? "array" : "object";
          if (!types.includes(type)) types.push(type);
        }
      }
    }
    if (types.length === 0) types = [...new Set(enumValues.map(typeOfValue))];
    if (enumValues.length === 0) enumValues = undefined;
  } else if (Array.isArray(rawEnum)) {
    // `enum: []` admits no value; sent, it is a grammar of nothing (llama.cpp answers a 500).
    notes.push(EMPTY_ENUM_NOTE);
    ctx.notices.push(
      `${EMPTY_ENUM_NOTE.slice(0, -1)}; the schema is sent without it (the model reads it), as no server can answer a schema nothing satisfies.`,
    );
  }
  if (types.length === 0) types = inferTypes(schema);
  // A `type` naming null beside an enum (or const) without it — `{ type: ["string", "null"],
  // enum: ["a"] }` — takes no null: a validator holds to both, and the enum refuses it. Kept, the
  // null was sent as `enum: ["a", null]`, the model shown "a or null" wrote null for a required
  // field, and the call was refused.
  const enumRefusesNull = Array.isArray(rawEnum) && rawEnum.length > 0 && !rawEnum.includes(null);
  if (enumRefusesNull && types.includes("null") && types.some((t) => t !== "null")) {
    types = types.filter((t) => t !== "null");
  }
  // OpenAPI 3.0's `nullable: true` was read into the type beside it (`withoutNullable`), and to
  // nothing else: "Other Schema Object constraints retain their defined behavior, and therefore may
  // disallow the use of null" (3.0.3), so `{ type: "string", enum: ["a"], nullable: true }` takes
  // no null (ajv refuses it too), as a type naming null beside that enum takes none (above) —
  // OpenAPI's way to take one is to list null in the enum. Sent as `enum: ["a", null]`, a model
  // wrote null for a required field and an OpenAPI validator refused the call. zod writes its
  // `.nullable()` enum that way for OpenAPI 3.0 and would take null; sent without it, every value
  // the model can write is still one zod takes.
  if (types.includes("number")) types = types.filter((t) => t !== "integer");
  if (types.length === 0) return anyValue(describe(base, notes));

  const hasNull = types.includes("null");
  const nonNull = types.filter((t) => t !== "null");
  if (enumValues) {
    const fitting = enumValues.filter((v) => types.some((t) => valueFits(v, t)));
    if (fitting.length === 0) {
      // `{ type: "string", enum: [1, 2] }`: no value is both. Sent as the type alone, with the
      // values in words, so the request can be answered and the model still reads them.
      const listed = listedValues(enumValues);
      const words = Object.hasOwn(schema, "const") ? `Must be exactly ${listed}.` : `One of: ${listed}.`;
      notes.push(words);
      ctx.notices.push(
        `A schema's ${Object.hasOwn(schema, "const") ? "const" : "enum"} holds no value of its type ` +
          `(${types.join(" or ")}): ${words} The type is sent without it and the values written into its description, as no server can answer a schema nothing satisfies.`,
      );
    }
    enumValues = fitting.length > 0 ? fitting : undefined;
  }
  if (enumValues) {
    // The enum beside bounds, a pattern or a multipleOf: only the values meeting them are valid.
    // A grammar server follows the enum alone (llama.cpp lets the model write `1` for
    // `{ enum: [1, 2], minimum: 5 }`), so the values that fail are left out of it.
    const meets = besideTester(schema);
    const sent = sentPatternTester(schema);
    const meeting = enumValues.filter((v) => v === null || (meets(v) && sent(v)));
    if (meeting.length === 0) {
      // None meets them: no value is valid. The enum and what it contradicts are left out and
      // written into the description, as bounds no value meets are.
      const listed = listedValues(enumValues);
      const words = [Object.hasOwn(schema, "const") ? `Must be exactly ${listed}.` : `One of: ${listed}.`];
      const left = fields(schema);
      for (const [key, word] of besideWords(schema)) {
        if (key !== "minLength" && key !== "maxLength") {
          delete left[key];
          notes.push(word);
        }
        words.push(word);
      }
      notes.unshift(words[0] as string);
      ctx.notices.push(
        `A schema's ${Object.hasOwn(schema, "const") ? "const" : "enum"} holds no value its bounds, pattern or ` +
          `multipleOf admit (${words.join(" ")}); they are left out of the schema and written into its description, as no server can answer a schema nothing satisfies.`,
      );
      schema = left;
      enumValues = undefined;
    } else enumValues = meeting;
  }

  if (nonNull.length === 0) return withDescription({ type: "null" }, describe(base, notes));

  const built: JsonSchema[] = [];
  for (const type of nonNull) {
    const values = enumValues?.filter((v) => valueFits(v, type));
    if (enumValues && (!values || values.length === 0)) continue;
    built.push(buildType(type, schema, values, ctx, depth, counts, notes));
  }
  if (built.length === 0) return withDescription({ type: "null" }, describe(base, notes));
  if (built.length === 1) {
    const single = built[0] as JsonSchema;
    const result = hasNull ? makeNullable(single) : single;
    return withDescription(result, describe(base, notes));
  }
  const merged = unionSchema(unionOf(hasNull ? [...built, { type: "null" }] : built));
  const description = describe(base, notes);
  return withDescription(
    merged,
    Array.isArray(own(merged, "anyOf"))
      ? description
      : (description ?? (own(merged, "description") as string | undefined)),
  );
}

function convertUnion(
  schema: Raw,
  branches: readonly unknown[],
  base: string | undefined,
  notes: string[],
  ctx: Context,
  depth: number,
  refs: RefCounts,
): JsonSchema {
  const constraints: Raw = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!ANNOTATIONS.has(key) && key !== "allOf" && key !== "$ref") setKey(constraints, key, value);
  }
  const shared = Object.keys(constraints).length > 0;
  // A branch nothing satisfies adds nothing to a union (zod's optional: `anyOf: [{ not: {} }, T]`).
  const possible = branches.filter((branch) => !isNever(branch));
  if (possible.length > 0 && possible.length < branches.length) {
    return convertUnion(schema, possible, base, notes, ctx, depth, refs);
  }
  const copies = shared && branches.length > 1 ? rawSize(constraints) * branches.length : 0;
  if (copies > MAX_EXPANDED_CHARS) {
    // Copied into every branch, the keywords beside the union would multiply the schema (100
    // properties beside "one of them is required", 100 times): kept once, the rule in words.
    ctx.notices.push(
      `The keywords beside an anyOf of ${branches.length} alternatives would have been copied into each ` +
        `(about ${copies} characters); they are kept once and the alternatives described in words instead.`,
    );
    const alone = convert(constraints, ctx, depth, refs);
    const said = own(alone, "description");
    const its = typeof said === "string" ? [said] : [];
    return withDescription(alone, describe(base, [...notes, ...its, alternativesNote(branches)]));
  }
  const word = Array.isArray(schema.anyOf) ? "anyOf" : "oneOf";
  const converted = branches.map((branch, i) => {
    const made = at(ctx, [word, String(i)], () =>
      convert(shared && isObject(branch) ? { allOf: [constraints, branch] } : branch, ctx, depth, refs),
    );
    // Made from this branch (and, within it, from the chains it already holds).
    originate(
      made,
      originsOf(made).map((chain) => [branch, ...chain]),
    );
    return made;
  });
  // An alternative that takes any value is flattened into this union: its note ("give an object or
  // an array as JSON text") moves to the union, or the model is never told an object may go there.
  const anyAlternative = converted.some((b) => ASKED.get(b) === "any");
  const told = anyAlternative && !(base ?? "").includes(ANY_NOTE) && !notes.includes(ANY_NOTE);
  const unionNotes = told ? [...notes, ANY_NOTE] : notes;
  const asked = (node: JsonSchema) => (anyAlternative ? asking(node, "any") : node);
  // A `nullable: true` beside the union with no `type` has no effect (see `widenedType`): before,
  // a null branch was added, a model wrote null for a required field, and an OpenAPI validator
  // refused it (ajv 8 does not compile the schema at all). Beside a `type`, it widened that type,
  // a constraint each branch now holds.
  const union = unionOf(converted);
  // A union that comes down to one schema takes the union's own description in place of the
  // branch's; where that branch is a value asked for as JSON text (an object past `maxDepth` or a
  // recursion past its limit, made nullable by `.nullable()` or `Optional[T]`), its note goes with
  // it, or the model is asked for a string and never told it is the value's JSON text.
  const textNotes = (only: JsonSchema) =>
    ASKED.get(only) === "text" &&
    !(base ?? "").includes(JSON_TEXT_NOTE) &&
    !unionNotes.includes(JSON_TEXT_NOTE)
      ? [...unionNotes, JSON_TEXT_NOTE]
      : unionNotes;
  if (union.length === 1) {
    const only = union[0] as JsonSchema;
    return asked(
      withDescription(
        only,
        describe(base, textNotes(only)) ?? (own(only, "description") as string | undefined),
      ),
    );
  }
  // One type or null (pydantic's Optional[T]) is that type made nullable: `type: [T, "null"]`.
  // What the null branch's own description tells the model (when to write null, what it means)
  // follows as "Null: …", or it would go with the branch.
  const merged = unionSchema(union);
  if (!Array.isArray(own(merged, "anyOf"))) {
    const said = describe(base, textNotes(merged)) ?? (own(merged, "description") as string | undefined);
    return asked(withDescription(merged, describe(said, nullNotes(union, said))));
  }
  return asked(withDescription(merged, describe(base, unionNotes)));
}

/**
 * The note a union's null branch's own description makes once the union is merged into
 * `type: [T, "null"]`: `Null: <description>` (closed with a period where it ends without one),
 * none where the branch has no description (or one only naming null: `None`), or where the
 * description sent already holds it.
 */
function nullNotes(union: readonly JsonSchema[], said: string | undefined): string[] {
  const branch = union.find((b) => own(b, "type") === "null");
  const text = branch === undefined ? undefined : own(branch, "description");
  // A title only naming null (a Python `None`) tells the model nothing the type does not.
  if (typeof text !== "string" || /^\s*(?:null|none)?\.?\s*$/i.test(text)) return [];
  const trimmed = wellFormed(text.trim());
  if ((said ?? "").includes(trimmed)) return [];
  return [`Null: ${trimmed}${/[.!?]$/.test(trimmed) ? "" : "."}`];
}

/** The JSON text length of a raw schema part, or 0 for one JSON cannot write. */
function rawSize(value: unknown): number {
  try {
    return JSON.stringify(value)?.length ?? 0;
  } catch {
    return 0;
  }
}

/**
 * A value's JSON text for a description, cut after `ENUM_NOTE_CHARS` characters ("… (N characters
 * in all)"): a default, const or enum object of megabytes would otherwise be sent whole with every
 * request.
 */
function cutJson(value: unknown): string {
  const text = JSON.stringify(value) ?? "null";
  return text.length <= ENUM_NOTE_CHARS
    ? text
    : `${text.slice(0, ENUM_NOTE_CHARS)}… (${text.length} characters in all)`;
}

/** Values in words, as many as `ENUM_NOTE_CHARS` holds, then "… (N values in all)". */
function listedValues(values: readonly unknown[]): string {
  let listed = "";
  let shown = 0;
  for (const value of values) {
    const text = JSON.stringify(value) ?? "null";
    if (listed.length + text.length + 2 > ENUM_NOTE_CHARS) break;
    listed += listed === "" ? text : `, ${text}`;
    shown++;
  }
  if (shown === values.length) return listed;
  if (shown === 0) return `${cutJson(values[0])}, … (${values.length} values in all)`;
  return `${listed}, … (${values.length} values in all)`;
}

/** A union's alternatives in words, as much of them as reads well. */
function alternativesNote(branches: readonly unknown[]): string {
  let listed = "";
  let shown = 0;
  for (const branch of branches) {
    let text: string;
    try {
      text = JSON.stringify(branch) ?? "null";
    } catch {
      break;
    }
    if (listed.length + text.length + 2 > ENUM_NOTE_CHARS) break;
    listed += listed === "" ? text : `, ${text}`;
    shown++;
  }
  const rest = shown === branches.length ? "" : `${shown === 0 ? "" : ", "}…`;
  return `Must also match one of ${branches.length} alternatives: ${listed}${rest}.`;
}

/**
 * Whether an enum fits what strict mode takes (1,000 values across the schema; a string enum of
 * more than 250 values at most 15,000 characters). One that does not is listed in the description
 * instead (as much as reads well) and the value is left unconstrained beyond its type.
 */
function keepEnum(
  values: ReadonlyArray<string | number | boolean | null>,
  ctx: Context,
  notes: string[],
): boolean {
  // Counted with the null that makeNullable may add, so a second pass decides the same way.
  const cost = values.length + (values.includes(null) ? 0 : 1);
  const chars = values.reduce<number>((n, v) => n + (typeof v === "string" ? v.length : 0), 0);
  const tooLarge = values.length > LARGE_ENUM_COUNT && chars > LARGE_ENUM_CHARS;
  // A value holding half a surrogate pair cannot be sent as a keyword (llama.cpp refuses the whole
  // request); in the description JSON.stringify writes it as an escape, which any server reads.
  if (!tooLarge && cost <= ctx.enumBudget && !values.some(hasLoneSurrogate)) {
    ctx.enumBudget -= cost;
    return true;
  }
  let listed = "";
  let shown = 0;
  for (const value of values) {
    const text = JSON.stringify(value);
    if (listed.length + text.length + 2 > ENUM_NOTE_CHARS) break;
    listed += listed === "" ? text : `, ${text}`;
    shown++;
  }
  notes.push(
    shown === values.length
      ? `One of: ${listed}.`
      : `One of ${values.length} values, among them: ${listed}, …`,
  );
  return false;
}

/**
 * `build()`, with `tokens` on the path notices name while it runs. Not taken off where it throws:
 * a throw ends the whole conversion, and its context with it.
 */
function at<T>(ctx: Context, tokens: readonly string[], build: () => T): T {
  for (const token of tokens) ctx.path.push(token);
  const built = build();
  for (let i = 0; i < tokens.length; i++) ctx.path.pop();
  return built;
}

/** The JSON pointer of the place being converted (`#/properties/x`), as a notice names it. */
function placeOf(ctx: Context): string {
  return `#${ctx.path.map((token) => `/${shortText(token, 80).replace(/~/g, "~0").replace(/\//g, "~1")}`).join("")}`;
}

/** The numeric keywords each type reads. */
const NUMERIC_KEYWORDS: Readonly<Record<string, readonly string[]>> = {
  number: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  integer: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  string: ["minLength", "maxLength"],
  array: ["minItems", "maxItems"],
};

/** The keywords that count something (a whole number of 0 or more), with the words for what they count. */
const COUNTED: Readonly<Record<string, string>> = {
  minLength: "character",
  maxLength: "character",
  minItems: "item",
  maxItems: "item",
};

/** The keywords that bound from below: a value of -Infinity (or a count of 0 or less) bounds nothing. */
const LOWER = new Set(["minimum", "exclusiveMinimum", "minLength", "minItems"]);

/** A keyword's value as a notice names it. */
function valueText(value: unknown): string {
  if (typeof value === "bigint") return `the BigInt ${value}n`;
  if (typeof value === "string") return `the string ${JSON.stringify(shortText(value, 40))}`;
  if (typeof value === "number")
    return Number.isFinite(value) || Number.isNaN(value)
      ? String(value)
      : `${value} (what JSON text such as ${value > 0 ? "" : "-"}1e309 parses to)`;
  if (value === null) return "null";
  return Array.isArray(value) ? "an array" : typeof value === "object" ? "an object" : String(value);
}

/** What a keyword's value says as a number: a BigInt's, a numeric string's, ±Infinity; else NaN. */
function numericOf(value: unknown): number {
  if (typeof value === "number") return value;
  if (typeof value === "bigint") return Number(value);
  if (typeof value === "string" && value.trim() !== "") return Number(value);
  return Number.NaN;
}

/**
 * `schema` with each numeric keyword its types read (bounds, `multipleOf`, lengths, item counts)
 * that is not a number JSON can carry in its range made one or left out, `onNotice` told where
 * (`#/properties/x`) and what: a BigInt an exact number holds is that number; a fractional count
 * the whole one it means (`minLength: 2.5` → 3); anything else (`1e309` parsed to Infinity, NaN,
 * a string such as `"5"`, a negative count, a `multipleOf` of 0) is left out, and where it still
 * says something the model can read (`"5"`, Infinity on the side that bounds) written into the
 * description. Before, each was dropped silently: the value left unbounded and nobody told.
 */
function readableNumbers(schema: Raw, type: string, ctx: Context, notes: string[]): Raw {
  let out = schema;
  for (const key of NUMERIC_KEYWORDS[type] ?? [])
    if (key in out) out = readableNumber(schema, out, key, ctx, notes);
  return out;
}

/** Tells `onNotice` of a `pattern` or `format` that is not a string (read as none, any string). */
function unreadableText(schema: Raw, key: "pattern" | "format", ctx: Context): void {
  ctx.notices.push(
    `A schema's ${key} at ${placeOf(ctx)} is ${valueText(schema[key])}, not a string: it is read as none, so any string is taken there.`,
  );
}

/** Whether a value given for a count (`minLength`, `maxItems`) is there and not a whole number of 0 or more. */
function unreadableCount(value: unknown): boolean {
  return value !== undefined && count(value) === undefined;
}

/**
 * Whether a number's bounds and `multipleOf` are each absent or a number JSON can carry (an
 * exclusive bound also `true`/`false`, draft 4's form; `multipleOf` above 0): the builder reads
 * them as they are, and {@link readableNumbers} is not needed.
 */
function boundsReadable(schema: Raw): boolean {
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf } = schema;
  return (
    (minimum === undefined || finite(minimum)) &&
    (maximum === undefined || finite(maximum)) &&
    (exclusiveMinimum === undefined || finite(exclusiveMinimum) || typeof exclusiveMinimum === "boolean") &&
    (exclusiveMaximum === undefined || finite(exclusiveMaximum) || typeof exclusiveMaximum === "boolean") &&
    (multipleOf === undefined || (finite(multipleOf) && multipleOf > 0))
  );
}

/** `out` (`schema`, or the copy made of it) with `key` set to `value`, or taken out for `undefined`. */
function changed(schema: Raw, out: Raw, key: string, value: unknown): Raw {
  const copy = out === schema ? fields(schema) : out;
  if (value === undefined) delete copy[key];
  else copy[key] = value;
  return copy;
}

/** {@link readableNumbers} for one keyword `out` holds. */
function readableNumber(schema: Raw, given: Raw, key: string, ctx: Context, notes: string[]): Raw {
  let out = given;
  // A data field is read without a getter's call; a getter (its own or a class's) is called once,
  // into a copy the sanitizer reads from then on.
  const value: unknown = out[key];
  if (value === undefined) return out;
  const counted = Object.hasOwn(COUNTED, key);
  if (key.startsWith("exclusive") && typeof value === "boolean") return out; // draft 4's form
  if (counted ? count(value) !== undefined : finite(value) && (key !== "multipleOf" || value > 0)) return out;
  const n = numericOf(value);
  const kind = counted
    ? "a whole number of 0 or more"
    : key === "multipleOf"
      ? "a number above 0"
      : "a number JSON can carry";
  const said = `A schema's ${key} at ${placeOf(ctx)} is ${valueText(value)}, not ${kind}`;
  if (
    typeof value === "bigint" &&
    Number.isSafeInteger(n) &&
    (counted ? n >= 0 : key !== "multipleOf" || n > 0)
  ) {
    out = changed(schema, out, key, n);
    ctx.notices.push(`${said}: read as ${n}.`);
    return out;
  }
  if (counted && typeof value === "number" && Number.isFinite(value) && value >= 0) {
    const whole = LOWER.has(key) ? Math.ceil(value) : Math.floor(value);
    out = changed(schema, out, key, whole);
    ctx.notices.push(`${said}: read as ${whole}, the whole count it means.`);
    return out;
  }
  out = changed(schema, out, key, undefined);
  const bounds =
    !Number.isNaN(n) &&
    (key === "multipleOf"
      ? Number.isFinite(n) && n > 0
      : LOWER.has(key)
        ? n !== -Number.POSITIVE_INFINITY && !(counted && n <= 0)
        : n !== Number.POSITIVE_INFINITY);
  if (!bounds) {
    ctx.notices.push(`${said}: it is left out, as it bounds nothing a model can send.`);
    return out;
  }
  const counts = COUNTED[key];
  notes.push(
    counts === undefined
      ? (BOUND_NOTES[key] as (v: unknown) => string)(n)
      : `${LOWER.has(key) ? "At least" : "At most"} ${n} ${counts}${n === 1 ? "" : "s"}.`,
  );
  ctx.notices.push(`${said}: it is left out of the schema and written into its description.`);
  return out;
}

function buildType(
  type: Exclude<TypeName, "null">,
  schema: Raw,
  values: Array<string | number | boolean | null> | undefined,
  ctx: Context,
  depth: number,
  refs: RefCounts,
  notes: string[],
): JsonSchema {
  switch (type) {
    case "object":
      return buildObject(schema, ctx, depth, refs, notes);
    case "array":
      return buildArray(schema, ctx, depth, refs, notes);
    case "string": {
      const out: JsonSchema = { type };
      if (values && keepEnum(values, ctx, notes)) out.enum = values;
      if (typeof schema.pattern === "string") {
        const anchored = anchorPattern(schema.pattern);
        if (anchored === undefined) notes.push(`Must match the regular expression ${schema.pattern}.`);
        else if (anchored !== "") out.pattern = anchored;
      } else if (schema.pattern !== undefined) unreadableText(schema, "pattern", ctx);
      if (typeof schema.format === "string") {
        if (STRICT_FORMATS.includes(schema.format)) out.format = schema.format;
        else notes.push(`Format: ${schema.format}.`);
      } else if (schema.format !== undefined) unreadableText(schema, "format", ctx);
      let minGiven = schema.minLength;
      let maxGiven = schema.maxLength;
      if (unreadableCount(minGiven) || unreadableCount(maxGiven)) {
        const read = readableNumbers(schema, type, ctx, notes);
        minGiven = read.minLength;
        maxGiven = read.maxLength;
      }
      const minLength = count(minGiven);
      const maxLength = count(maxGiven);
      if (minLength !== undefined && maxLength !== undefined && minLength > maxLength)
        // Always words (below), so never sent; told because no string satisfies them.
        ctx.notices.push(
          `A string's lengths admit no value (at least ${minLength}, at most ${maxLength} characters); they are written into its description only, as always.`,
        );
      if (minLength !== undefined && minLength > 0)
        notes.push(`At least ${minLength} character${minLength === 1 ? "" : "s"}.`);
      if (maxLength !== undefined) notes.push(`At most ${maxLength} characters.`);
      return out;
    }
    case "number":
    case "integer": {
      const out: JsonSchema = { type };
      if (values && keepEnum(values, ctx, notes)) out.enum = values;
      const read = boundsReadable(schema) ? schema : readableNumbers(schema, type, ctx, notes);
      const { given, bounds } = boundsOf(type, read);
      if (admitsNone(type, bounds)) {
        // No number lies between them: a grammar built from them admits no value, and llama.cpp
        // (b9749) then never answers a call to the tool (nor, its slot spinning, anything after).
        // Sent without them, the value can be written; the model still reads them.
        const words = Object.entries(given)
          .filter(([, value]) => finite(value))
          .map(([key, value]) => (BOUND_NOTES[key] as (v: unknown) => string)(value));
        notes.push(...words);
        ctx.notices.push(
          `${type === "integer" ? "An integer" : "A number"}'s bounds admit no value (${words.join(" ")}); ` +
            "they are left out of the schema and written into its description, as no server can answer a schema nothing satisfies.",
        );
        if (finite(read.multipleOf) && read.multipleOf > 0) out.multipleOf = read.multipleOf;
        return out;
      }
      for (const [key, value] of Object.entries(bounds)) {
        if (!finite(value)) continue;
        if (type === "number" || Math.abs(value) < INTEGER_BOUND_LIMIT) setKey(out, key, value);
        else if (
          !(key === "minimum" && value === -Number.MAX_SAFE_INTEGER) &&
          !(key === "maximum" && value === Number.MAX_SAFE_INTEGER)
        )
          notes.push((BOUND_NOTES[key] as (v: unknown) => string)(value));
      }
      if (finite(read.multipleOf) && read.multipleOf > 0) out.multipleOf = read.multipleOf;
      return out;
    }
    case "boolean": {
      const out: JsonSchema = { type };
      if (values && keepEnum(values, ctx, notes)) out.enum = values;
      return out;
    }
  }
}

/**
 * Whether a string value can be written under `schema.pattern` as it is sent (`anchorPattern`'s
 * form, where `.` and a negated class leave out the quote and the backslash a grammar server cannot
 * write raw): a value the given pattern admits may not be one the sent pattern does (`"\\"` under
 * `^.*$`). Kept in the enum, it made a second sanitizing drop the enum a first one had kept (not
 * idempotent: a property test found it). True for a non-string, where no pattern is sent, and as
 * `besideTester` counts a risky pattern or a long value.
 */
function sentPatternTester(schema: Raw): (value: string | number | boolean) => boolean {
  if (typeof schema.pattern !== "string" || mayBacktrack(schema.pattern)) return () => true;
  const anchored = anchorPattern(schema.pattern);
  if (anchored === undefined || anchored === "" || mayBacktrack(anchored)) return () => true;
  const sentPattern = patternTest(anchored);
  if (sentPattern === undefined) return () => true;
  return (value) => typeof value !== "string" || value.length > PATTERN_KEY_LIMIT || sentPattern.test(value);
}

/**
 * Whether an enum value meets the keywords beside it that constrain its kind: a number's bounds
 * (draft 4's boolean exclusives too) and `multipleOf`, a string's lengths (in code points) and
 * `pattern` (read as JSON Schema reads it; an invalid one, one `mayBacktrack` calls risky, and a
 * value over `PATTERN_KEY_LIMIT` characters count as met, never run; `withPattern: false` reads
 * no pattern). In doubt, met.
 */
export function besideTester(schema: Raw, withPattern = true): (value: string | number | boolean) => boolean {
  let { minimum, maximum, exclusiveMinimum, exclusiveMaximum } = schema;
  if (exclusiveMinimum === true && finite(minimum)) [exclusiveMinimum, minimum] = [minimum, undefined];
  if (exclusiveMaximum === true && finite(maximum)) [exclusiveMaximum, maximum] = [maximum, undefined];
  const step = finite(schema.multipleOf) && schema.multipleOf > 0 ? schema.multipleOf : undefined;
  const minLength = count(schema.minLength);
  const maxLength = count(schema.maxLength);
  // Read in either grammar it compiles in (`patternTest`): a value either takes is met.
  const pattern =
    withPattern && typeof schema.pattern === "string" && !mayBacktrack(schema.pattern)
      ? patternTest(schema.pattern)
      : undefined;
  return (value) => {
    if (typeof value === "number") {
      if (finite(minimum) && value < minimum) return false;
      if (finite(maximum) && value > maximum) return false;
      if (finite(exclusiveMinimum) && value <= exclusiveMinimum) return false;
      if (finite(exclusiveMaximum) && value >= exclusiveMaximum) return false;
      if (step !== undefined) {
        // A decimal step (0.1) meets its multiples only approximately: near enough counts.
        const q = value / step;
        if (Number.isFinite(q) && Math.abs(q - Math.round(q)) > 1e-9 * Math.max(1, Math.abs(q))) return false;
      }
      return true;
    }
    if (typeof value === "string") {
      if (minLength !== undefined || maxLength !== undefined) {
        let length = 0;
        for (const _ of value) length++;
        if (minLength !== undefined && length < minLength) return false;
        if (maxLength !== undefined && length > maxLength) return false;
      }
      if (pattern && value.length <= PATTERN_KEY_LIMIT && !pattern.test(value)) return false;
    }
    return true;
  };
}

/** The constraining keywords beside an enum, each with its words (`At least 5.`). */
function besideWords(schema: Raw): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const key of ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]) {
    const value = schema[key];
    if (finite(value)) out.push([key, (BOUND_NOTES[key] as (v: unknown) => string)(value)]);
    else if (value === true && key.startsWith("exclusive")) {
      const bound = schema[key === "exclusiveMinimum" ? "minimum" : "maximum"];
      if (finite(bound)) out.push([key, `Not ${bound} itself.`]);
    }
  }
  if (typeof schema.pattern === "string")
    out.push(["pattern", (BOUND_NOTES.pattern as (v: unknown) => string)(schema.pattern)]);
  const minLength = count(schema.minLength);
  const maxLength = count(schema.maxLength);
  if (minLength !== undefined && minLength > 0)
    out.push(["minLength", `At least ${minLength} character${minLength === 1 ? "" : "s"}.`]);
  if (maxLength !== undefined) out.push(["maxLength", `At most ${maxLength} characters.`]);
  return out;
}

/**
 * A number's or integer's four bounds as written (`given`: draft 4's boolean `exclusiveMinimum` /
 * `exclusiveMaximum` read as the bound beside it) and as they hold (`bounds`: an integer's moved to
 * the whole numbers they admit), for the sanitizer and for `boundsAdmitNone` alike.
 */
function boundsOf(
  type: "number" | "integer",
  schema: Raw,
): { given: Record<string, unknown>; bounds: Record<string, unknown> } {
  let { minimum, maximum, exclusiveMinimum, exclusiveMaximum } = schema;
  // Draft 4 spelled exclusive bounds as booleans beside minimum and maximum.
  if (exclusiveMinimum === true && finite(minimum)) [exclusiveMinimum, minimum] = [minimum, undefined];
  if (exclusiveMaximum === true && finite(maximum)) [exclusiveMaximum, maximum] = [maximum, undefined];
  const given = { minimum, maximum, exclusiveMinimum, exclusiveMaximum };
  if (type === "integer")
    [minimum, maximum, exclusiveMinimum, exclusiveMaximum] = wholeBounds(
      minimum,
      maximum,
      exclusiveMinimum,
      exclusiveMaximum,
    );
  return { given, bounds: { minimum, maximum, exclusiveMinimum, exclusiveMaximum } };
}

/**
 * Whether a number or integer schema's bounds (draft 4's boolean exclusives read, an integer's
 * fractional bound as the whole one it means) admit no value of its type.
 */
export function boundsAdmitNone(type: "number" | "integer", schema: Raw): boolean {
  return admitsNone(type, boundsOf(type, schema).bounds);
}

/**
 * Whether no number of the type lies within the bounds (an integer's already whole, as
 * {@link wholeBounds} makes them): `minimum: 5, maximum: 3`, `exclusiveMinimum: 3,
 * exclusiveMaximum: 3`, an integer strictly between 3 and 4.
 */
function admitsNone(
  type: "number" | "integer",
  { minimum, maximum, exclusiveMinimum, exclusiveMaximum }: Record<string, unknown>,
): boolean {
  let low = -Infinity;
  let lowOpen = false;
  let high = Infinity;
  let highOpen = false;
  if (finite(minimum)) low = minimum;
  if (finite(exclusiveMinimum) && exclusiveMinimum >= low) [low, lowOpen] = [exclusiveMinimum, true];
  if (finite(maximum)) high = maximum;
  if (finite(exclusiveMaximum) && exclusiveMaximum <= high) [high, highOpen] = [exclusiveMaximum, true];
  if (type === "integer") {
    // Whole bounds here: an open one shuts out that integer alone.
    const first = lowOpen ? low + 1 : low;
    const last = highOpen ? high - 1 : high;
    return first > last;
  }
  return low > high || (low === high && (lowOpen || highOpen));
}

/**
 * An integer's bounds as whole numbers, with the same integers inside: a fractional `minimum` up
 * (`1.5` → `2`), a fractional `maximum` down, a fractional exclusive bound the inclusive whole one
 * it means (`exclusiveMinimum: -0.5` → `minimum: 0`, the larger of the two where both are given).
 * llama.cpp reads an integer's bound as a whole number cut toward zero, so `minimum: 1.5` let the
 * model write `1`, and `exclusiveMinimum: -0.5` kept it from writing `0`.
 */
function wholeBounds(
  minimum: unknown,
  maximum: unknown,
  exclusiveMinimum: unknown,
  exclusiveMaximum: unknown,
): [unknown, unknown, unknown, unknown] {
  // `+ 0` writes -0 (Math.ceil(-0.5)) as 0.
  let low = finite(minimum) ? Math.ceil(minimum) + 0 : minimum;
  let high = finite(maximum) ? Math.floor(maximum) + 0 : maximum;
  let exclusiveLow = exclusiveMinimum;
  let exclusiveHigh = exclusiveMaximum;
  if (finite(exclusiveMinimum) && !Number.isInteger(exclusiveMinimum)) {
    const whole = Math.ceil(exclusiveMinimum) + 0;
    low = finite(low) ? Math.max(low, whole) : whole;
    exclusiveLow = undefined;
  }
  if (finite(exclusiveMaximum) && !Number.isInteger(exclusiveMaximum)) {
    const whole = Math.floor(exclusiveMaximum) + 0;
    high = finite(high) ? Math.min(high, whole) : whole;
    exclusiveHigh = undefined;
  }
  return [low, high, exclusiveLow, exclusiveHigh];
}

function buildObject(schema: Raw, ctx: Context, depth: number, refs: RefCounts, notes: string[]): JsonSchema {
  if (depth + 1 > ctx.maxDepth) {
    notes.push(JSON_TEXT_NOTE);
    return asking({ type: "string" }, "text");
  }
  const source = isObject(schema.properties) ? schema.properties : {};
  if (schema.properties !== undefined && !isObject(schema.properties))
    ctx.notices.push(
      `A schema's properties at ${placeOf(ctx)} is ${valueText(schema.properties)}, not an object of property schemas: it is read as none.`,
    );
  const required = new Set(
    Array.isArray(schema.required) ? schema.required.filter((k) => typeof k === "string") : [],
  );
  const properties: Raw = {};
  for (const [key, sub] of Object.entries(source)) {
    ctx.path.push("properties", key);
    const converted = convert(sub, ctx, depth + 1, refs);
    // pop, not `length -= 2`: setting an array's length is a slow call in V8 (it cost ~5% here).
    ctx.path.pop();
    ctx.path.pop();
    setKey(properties, key, required.has(key) ? converted : makeNullable(converted));
  }
  // A required name no property describes: every value the schema takes has it, so it stays a
  // parameter (of the schema other keys take, or any value) rather than one strict mode refuses.
  if (schema.additionalProperties !== false) {
    for (const key of required) {
      if (Object.hasOwn(properties, key)) continue;
      // Paid when repeated; never dropped: a required name left out is one the tool never gets.
      if (ctx.repeating > 0) ctx.budget -= 1;
      const extra = schema.additionalProperties;
      setKey(
        properties,
        key,
        isObject(extra)
          ? at(ctx, ["additionalProperties"], () => convert(extra, ctx, depth + 1, refs))
          : anyValue(undefined),
      );
    }
  }
  const keys = Object.keys(properties);
  // An object of keys the schema does not list (GitHub's free-form `type: "object"`, a dict, a
  // `const` object): closed with no properties it could only be {}, and what the model meant would
  // never reach the tool. Below the root it is asked for as JSON text, which restoreArguments
  // parses back; the root is the arguments object itself.
  if (depth > 0 && keys.length === 0 && takesOtherKeys(schema)) {
    notes.push(JSON_TEXT_NOTE);
    return asking({ type: "string" }, "text");
  }
  // The root cannot be asked for as JSON text: a root map (`additionalProperties: { type: "string" }`,
  // `patternProperties`) closed with no properties takes only {}, and the tool none of its keys.
  // Said where the schema says outright that it takes other keys (a bare `type: "object"` is most
  // often a tool with no parameters).
  if (depth === 0 && keys.length === 0 && takesOtherKeys(schema) && saysOtherKeys(schema)) {
    ctx.notices.push(
      "The root object takes only keys it does not name (additionalProperties or patternProperties), which strict mode cannot send: it is sent closed with no properties, so the model can give the tool only {}. Name the keys in properties, or put the map under a property (which is then asked for as JSON text).",
    );
  }
  const named = wellFormedNames(properties);
  const out = {
    type: "object",
    properties: named.properties,
    required: Object.keys(named.properties),
    additionalProperties: false,
  };
  if (named.renamed) RENAMED.set(out, named.renamed);
  return out;
}

/** Whether an object schema says outright that it takes keys it does not list (a schema or `true`, or a pattern). */
function saysOtherKeys(schema: Raw): boolean {
  const extra = schema.additionalProperties;
  return (
    extra === true ||
    (isObject(extra) && !isNever(extra)) ||
    (isObject(schema.patternProperties) && Object.keys(schema.patternProperties).length > 0)
  );
}

/** Whether an object schema takes keys it does not list in `properties`. */
function takesOtherKeys(schema: Raw): boolean {
  // `additionalProperties: { not: {} }` closes an object as `false` does.
  if (!isNever(schema.additionalProperties)) return schema.maxProperties !== 0;
  return isObject(schema.patternProperties) && Object.keys(schema.patternProperties).length > 0;
}

function buildArray(schema: Raw, ctx: Context, depth: number, refs: RefCounts, notes: string[]): JsonSchema {
  const tuple = Array.isArray(schema.prefixItems)
    ? schema.prefixItems
    : Array.isArray(schema.items)
      ? schema.items
      : undefined;
  let items: JsonSchema;
  let minGiven = schema.minItems;
  let maxGiven = schema.maxItems;
  if (unreadableCount(minGiven) || unreadableCount(maxGiven)) {
    const read = readableNumbers(schema, "array", ctx, notes);
    minGiven = read.minItems;
    maxGiven = read.maxItems;
  }
  let minItems = count(minGiven);
  let maxItems = count(maxGiven);
  if (tuple) {
    const word = Array.isArray(schema.prefixItems) ? "prefixItems" : "items";
    const elements = tuple.map((el, i) => at(ctx, [word, String(i)], () => convert(el, ctx, depth, refs)));
    const union = unionOf(elements);
    items = union.length === 0 ? anyValue(undefined) : unionSchema(union);
    if (elements.length > 0) {
      const label = (s: JsonSchema) => {
        const type = own(s, "type");
        return typeof type === "string" ? type : Array.isArray(type) ? type.join(" or ") : "value";
      };
      notes.push(`Items in this order: ${elements.map(label).join(", ")}.`);
      const closed = schema.items === false || schema.additionalItems === false;
      if (closed && maxItems === undefined) maxItems = elements.length;
    }
  } else if (isObject(schema.items)) {
    const given = schema.items;
    items = at(ctx, ["items"], () => convert(given, ctx, depth, refs));
  } else {
    if (schema.items !== undefined && typeof schema.items !== "boolean")
      ctx.notices.push(
        `A schema's items at ${placeOf(ctx)} is ${valueText(schema.items)}, not a schema: the items are read as any value.`,
      );
    items = anyValue(undefined);
  }
  const out: JsonSchema = { type: "array", items };
  if (minItems !== undefined && maxItems !== undefined && minItems > maxItems) {
    // No array has that many items: sent, the pair admits no value and a grammar built from it
    // none either. Left out and told, so the model still reads it and the host can find the tool.
    const words = `At least ${minItems} item${minItems === 1 ? "" : "s"}. At most ${maxItems} item${maxItems === 1 ? "" : "s"}.`;
    notes.push(words);
    ctx.notices.push(
      `An array's item counts admit no value (${words}); they are left out of the schema and written into its description, as no server can answer a schema nothing satisfies.`,
    );
    minItems = undefined;
    maxItems = undefined;
  }
  if (minItems !== undefined && minItems > 0) {
    if (minItems <= REPETITION_LIMIT) out.minItems = minItems;
    else notes.push(`At least ${minItems} items.`);
  }
  if (maxItems !== undefined) {
    if (maxItems <= REPETITION_LIMIT) out.maxItems = maxItems;
    else notes.push(`At most ${maxItems} items.`);
  }
  if (schema.uniqueItems === true) notes.push("Items must be unique.");
  return out;
}

/** Turns whatever the conversion produced into the object root strict mode insists on. */
function toRootObject(schema: JsonSchema, original: unknown): JsonSchema {
  const said = own(schema, "description");
  const description = typeof said === "string" ? said : undefined;
  const type = own(schema, "type");
  if (type === "object") return schema;
  if (Array.isArray(type) && type.includes("object")) return carried(schema, { ...schema, type: "object" });
  const anyOf = own(schema, "anyOf");
  if (Array.isArray(anyOf)) {
    // A tool's arguments are an object: the union's other alternatives (a string, null) never apply.
    const isObjectType = (t: unknown) => t === "object" || (Array.isArray(t) && t.includes("object"));
    const branches = (anyOf as JsonSchema[])
      .filter((b) => isObjectType(own(b, "type")))
      .map((b) => (own(b, "type") === "object" ? b : carried<JsonSchema>(b, { ...b, type: "object" })));
    if (branches.length === 1) {
      const only = branches[0] as JsonSchema;
      return withDescription(only, description ?? (own(only, "description") as string | undefined));
    }
    if (branches.length > 0) {
      const names: string[] = [];
      for (const branch of branches) {
        for (const key of Object.keys(own(branch, "properties") as Raw))
          if (!names.includes(key)) names.push(key);
      }
      const properties: Raw = {};
      for (const name of names) {
        const variants: JsonSchema[] = [];
        let everywhere = true;
        for (const branch of branches) {
          const props = own(branch, "properties") as Raw;
          if (Object.hasOwn(props, name)) variants.push(props[name] as JsonSchema);
          else everywhere = false;
        }
        const union = unionOf(variants);
        const merged = unionSchema(union);
        setKey(properties, name, everywhere ? merged : makeNullable(merged));
      }
      // The names the alternatives had rewritten (the first alternative's where two wrote one name).
      const renamed = new Map<string, string>();
      for (const branch of branches) {
        for (const [written, own] of RENAMED.get(branch) ?? [])
          if (!renamed.has(written)) renamed.set(written, own);
      }
      // In the properties' own order (an index-like key such as "0" sorts first), as a second pass reads it.
      const merged = {
        type: "object",
        properties,
        required: Object.keys(properties),
        additionalProperties: false,
      };
      if (renamed.size > 0) RENAMED.set(merged, renamed);
      MERGED.set(merged, branches);
      return withDescription(
        merged,
        describe(description, ["Give the fields of one of the alternatives; null for the others."]),
      );
    }
  }
  return withDescription(
    { type: "object", properties: {}, required: [], additionalProperties: false },
    isObject(original) ? baseDescription(original) : undefined,
  );
}

/**
 * Rewrites any JSON Schema into the subset OpenAI's strict mode and grammar-constrained servers
 * (llama.cpp, LM Studio, vLLM, Ollama) accept, keeping its meaning wherever the subset can.
 *
 * Reads any value and never throws: a value that is not a schema reads as "any object". Returns
 * a new object schema in which every object lists all its properties in `required` (the optional
 * ones made nullable), sets `additionalProperties: false` (below the root, an object with no
 * properties that takes other keys — a free-form object, a map — is asked for as JSON text), has
 * local `$ref`s inlined (recursion expanded `recursionLimit` times, then asked for as JSON text),
 * `allOf` merged, `oneOf` read as `anyOf`, and keywords outside the subset removed — their intent moved into `description` where
 * it helps the model. Inlined `$ref`s may grow it to at most `MAX_EXPANDED_CHARS` (64 KiB); past
 * that, recursive references are expanded fewer times, down to none (each then asked for as JSON
 * text), and `onNotice` is told. A schema is read whole once however large; what is built more
 * than once (a `$ref` inlined again, a shared subschema object, keywords copied into `anyOf`
 * branches) past `MAX_EXPANDED_NODES` nodes is asked for as JSON text where it is an object, an
 * array or a union, and `onNotice` is told. Schemas nested deeper than `MAX_NESTING` (64) are asked for as
 * JSON text from there; a value JSON cannot hold (a throwing getter, a revoked Proxy) reads as any
 * object, and `onNotice` is told where it threw and what. No text it writes holds half a surrogate pair alone: in a property name it is written
 * U+FFFD (then `_2`, `_3`, … where that name is taken), which `restoreArguments` maps back.
 * Idempotent; never throws; never mutates its input.
 */
export function sanitizeSchema(schema: unknown, options: SanitizeOptions = {}): JsonSchema {
  const given = ownOptions(options);
  try {
    return sanitizeBounded(schema, given);
  } catch (error) {
    // Only a value no JSON holds gets here: a throwing getter, a revoked Proxy. What cannot be
    // read is asked for as any object, as a non-schema is; at the root that is a tool taking no
    // arguments, so the host is told where and what threw.
    const where = unreadableAt(schema);
    tell(
      given,
      `This schema could not be read (${shortText(where?.path ?? "#", UNREADABLE_NOTE_CHARS)}: ` +
        `${shortText(thrownText(where ? where.error : error), UNREADABLE_NOTE_CHARS)}); it is sent as an object ` +
        "with no properties, so the model can call the tool only with {}.",
    );
    return toRootObject(anyValue(undefined), undefined);
  }
}

/**
 * The options as the host wrote them: a field only a polluted `Object.prototype` holds is not one
 * (`Object.prototype.onNotice`, `.maxDepth`); `onNotice` is called on the host's object.
 */
function ownOptions(options: unknown): SanitizeOptions {
  if (!isObject(options)) return {};
  const onNotice = own(options, "onNotice");
  return {
    recursionLimit: own(options, "recursionLimit") as number | undefined,
    maxDepth: own(options, "maxDepth") as number | undefined,
    onNotice:
      typeof onNotice === "function" ? (notice: string) => void onNotice.call(options, notice) : undefined,
  };
}

/** How many characters of a path or an error message a notice about an unreadable schema holds. */
const UNREADABLE_NOTE_CHARS = 200;

/** `text` cut after `max` characters ("…"), with no half surrogate pair left at the cut. */
function shortText(text: string, max: number): string {
  return text.length <= max ? wellFormed(text) : `${wellFormed(text.slice(0, max))}…`;
}

/** What a thrown value says, never throwing itself (a hostile error's getters may). */
function thrownText(error: unknown): string {
  try {
    if (error instanceof Error) return `${String(error.name)}: ${String(error.message)}`;
    return typeof error === "string" ? error : typeof error;
  } catch {
    return "an unreadable error";
  }
}

type Place = { node: unknown; path: string; depth: number };

/**
 * The JSON pointer of the first place in `value` that cannot be read (a throwing getter, a
 * revoked Proxy) and what it threw; undefined if none is found within a bounded walk.
 */
function unreadableAt(value: unknown): { path: string; error: unknown } | undefined {
  const seen = new Set<object>();
  const stack: Place[] = [{ node: value, path: "#", depth: 0 }];
  for (let visits = 0; stack.length > 0 && visits < MAX_EXPANDED_NODES; visits++) {
    const { node, path, depth } = stack.pop() as Place;
    if (typeof node !== "object" || node === null || seen.has(node)) continue;
    seen.add(node);
    let keys: string[];
    try {
      keys = Array.isArray(node) ? node.map((_, i) => String(i)) : Object.keys(node);
    } catch (error) {
      return { path, error };
    }
    const children: Place[] = [];
    for (const key of keys) {
      const at = `${path}/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
      let child: unknown;
      try {
        child = (node as Record<string, unknown>)[key];
      } catch (error) {
        return { path: at, error };
      }
      if (depth < MAX_NESTING * 4) children.push({ node: child, path: at, depth: depth + 1 });
    }
    stack.push(...children.reverse());
  }
  return undefined;
}

function sanitizeBounded(schema: unknown, options: SanitizeOptions): JsonSchema {
  // More expansions than schemas may nest gain nothing; NaN (or a non-number) reads as the default.
  const recursionLimit = Math.min(MAX_NESTING, Math.max(0, Math.floor(numberOr(options.recursionLimit, 2))));
  const first = convertRoot(schema, options, recursionLimit);
  const told = (notices: readonly string[]) => {
    for (const notice of new Set(notices)) tell(options, notice);
  };
  if (first.refsFollowed === 0) {
    told(first.notices);
    return first.schema;
  }
  let size = jsonSize(first.schema);
  if (size <= MAX_EXPANDED_CHARS) {
    told(first.notices);
    return first.schema;
  }
  // `$ref`s fanned out (each definition referring to the next several times): expand recursion
  // fewer times, down to none, where every reference is asked for as JSON text. The most
  // expansions that fit is found by halving (a few conversions even from a limit of 64).
  const before = size;
  // One fewer expansion is tried first (it usually fits), then none, then halving between.
  let limit = Math.max(0, recursionLimit - 1);
  let { schema: out, notices } = convertRoot(schema, options, limit);
  size = jsonSize(out);
  let low = 1;
  let high = limit - 1;
  if (size > MAX_EXPANDED_CHARS && limit > 0) {
    limit = 0;
    ({ schema: out, notices } = convertRoot(schema, options, 0));
    size = jsonSize(out);
  } else {
    high = -1;
  }
  while (low <= high && size <= MAX_EXPANDED_CHARS) {
    const mid = (low + high) >> 1;
    const tried = convertRoot(schema, options, mid);
    const triedSize = jsonSize(tried.schema);
    if (triedSize <= MAX_EXPANDED_CHARS) {
      ({ schema: out, notices } = tried);
      size = triedSize;
      limit = mid;
      low = mid + 1;
    } else {
      high = mid - 1;
    }
  }
  told(notices);
  tell(
    options,
    `Inlining this schema's $refs made it ${before} characters (over ${MAX_EXPANDED_CHARS}); ` +
      (limit === 0
        ? "every reference is asked for as JSON text instead"
        : `references are expanded ${limit} time${limit === 1 ? "" : "s"} instead of ${recursionLimit}`) +
      `, giving ${size} characters.`,
  );
  return out;
}

/**
 * The most characters a sanitized schema's inlined `$ref`s may grow it to (64 KiB) before
 * references are expanded less (and, at the last, asked for as JSON text). A few definitions that
 * each refer to the next several times would otherwise multiply into megabytes of tool schema.
 */
export const MAX_EXPANDED_CHARS = 64 * 1024;

/**
 * Tells the host's `onNotice`, if it is a function. A notice is for a log: a throwing or missing
 * logger never costs the caller the schema (which a throw here would turn into "any object").
 */
function tell(options: SanitizeOptions, notice: string): void {
  if (typeof options.onNotice !== "function") return;
  try {
    options.onNotice(notice);
  } catch {
    // The schema is the answer; the log line is lost.
  }
}

/** The option when it is a number (Infinity included), else the default. */
function numberOr(value: unknown, fallback: number): number {
  return typeof value === "number" && !Number.isNaN(value) ? value : fallback;
}

function jsonSize(schema: JsonSchema): number {
  return JSON.stringify(schema).length;
}

function convertRoot(
  schema: unknown,
  options: SanitizeOptions,
  recursionLimit: number,
): { schema: JsonSchema; refsFollowed: number; notices: string[] } {
  const ctx: Context = {
    root: schema,
    recursionLimit,
    maxDepth: Math.max(1, Math.floor(numberOr(options.maxDepth, STRICT_MAX_DEPTH))),
    budget: MAX_EXPANDED_NODES,
    seen: new Set(),
    repeating: 0,
    cut: 0,
    enumBudget: ENUM_LIMIT,
    active: new Set(),
    refsFollowed: 0,
    level: 0,
    notices: [],
    polluted: isPolluted(),
    path: [],
  };
  const out = toRootObject(convert(schema, ctx, 0, new Map()), schema);
  if (ctx.cut > 0) {
    ctx.notices.push(
      `Converting this schema repeated more than ${MAX_EXPANDED_NODES} schema nodes (MAX_EXPANDED_NODES: ` +
        `$refs inlined again, shared subschemas, keywords copied into anyOf branches); past that, ` +
        `${ctx.cut} repeated object${ctx.cut === 1 ? "" : "s"}, array${ctx.cut === 1 ? "" : "s"} or union${ctx.cut === 1 ? " is" : "s are"} asked for as JSON text instead.`,
    );
  }
  return { schema: out, refsFollowed: ctx.refsFollowed, notices: ctx.notices };
}

const EMPTY_ENUM_NOTE = "An empty enum: no value is valid here.";

// No prototype: a key of a schema's (`description`, `constructor`) never finds a note on Object.prototype.
const BOUND_NOTES: Record<string, (value: unknown) => string> = Object.assign(Object.create(null), {
  minimum: (v: unknown) => `At least ${v}.`,
  maximum: (v: unknown) => `At most ${v}.`,
  exclusiveMinimum: (v: unknown) => `More than ${v}.`,
  exclusiveMaximum: (v: unknown) => `Less than ${v}.`,
  multipleOf: (v: unknown) => `A multiple of ${v}.`,
  minItems: (v: unknown) => `At least ${v} items.`,
  maxItems: (v: unknown) => `At most ${v} items.`,
  pattern: (v: unknown) => `Must match the regular expression ${v}.`,
  format: (v: unknown) => `Format: ${v}.`,
});

function relaxNode(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  const notes: string[] = [];
  for (const [key, value] of Object.entries(schema)) {
    const note = BOUND_NOTES[key];
    if (note) notes.push(note(value));
    else if (key === "properties" && isObject(value)) {
      const props: Raw = {};
      for (const [name, sub] of Object.entries(value)) setKey(props, name, relaxNode(sub as JsonSchema));
      out.properties = props;
    } else if (key === "items" && isObject(value)) out.items = relaxNode(value);
    else if (key === "anyOf" && Array.isArray(value))
      out.anyOf = value.map((b) => relaxNode(b as JsonSchema));
    else if (key !== "description") setKey(out, key, value);
  }
  const description = describe(own(schema, "description"), notes);
  if (description !== undefined) out.description = description;
  return out;
}

/**
 * The lesser form of {@link sanitizeSchema} for a server that could not build a grammar from the
 * sanitized schema: the same structure (types, properties, required, items, enums, unions) with
 * every constraint a grammar builder can choke on — `pattern`, `format`, numeric bounds,
 * `multipleOf`, item counts — moved into `description`.
 *
 * Reads any value, never throws, never mutates its input. Its keywords are a subset of
 * sanitizeSchema's, and `relaxSchema(sanitizeSchema(x))` equals `relaxSchema(x)`.
 */
export function relaxSchema(schema: unknown, options: SanitizeOptions = {}): JsonSchema {
  return relaxNode(sanitizeSchema(schema, options));
}
