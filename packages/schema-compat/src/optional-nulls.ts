import {
  charactersEveryMatchHolds,
  mayBacktrack,
  PATTERN_KEY_LIMIT,
  type PatternTest,
  patternTest,
} from "./backtracking.js";
import { protoless } from "./protoless.js";
import {
  type Asked,
  askedAt,
  fields,
  isObject,
  mayBeRenamed,
  mergedFrom,
  originsOf,
  own,
  renamedAt,
  resolvePointer,
  type SanitizeOptions,
  sanitizeSchema,
} from "./sanitize-schema.js";
import type { JsonSchema } from "./types.js";

type Raw = Record<string, unknown>;

/**
 * Schema readings one call may make before it gives the arguments back as they were. Each
 * (schema, key) is read once and remembered, so this bounds a hostile schema, not a long call.
 */
const VISIT_BUDGET = 1_000_000;
/** How deep unions inside unions (and the values under them) are followed. */
const MAX_DEPTH = 64;
/**
 * How deep `strip` follows the arguments (a list the model wrote as nested objects is as deep as
 * it is long); below it a value is handed on as written. Bounds the stack, not the work.
 */
const MAX_VALUE_DEPTH = 2_000;

class Exhausted extends Error {}

/**
 * What `strip` makes, for a reading tried, of a value more than `MAX_DEPTH` levels below the
 * object the outermost reading is tried for: `mayMeet` answers "may" for it, as it does past its
 * own depth. Each level of a long list tries a reading of the rest of it, one inside another:
 * followed to the end, a list a thousand deep runs out of stack.
 */
const BEYOND: Raw = Object.freeze({}) as Raw;

/** What one call has read of the original schema, so every node is flattened once. */
interface Walk {
  root: unknown;
  budget: number;
  flat: Map<unknown, Flat>;
  required: WeakMap<Raw, Set<unknown>>;
  nulls: Map<unknown, boolean>;
  /** Per schema: its union branches narrowed to those an object could meet, by which were kept. */
  narrowed: Map<unknown, Map<string, unknown>>;
  /** Per union branch an object cannot meet: what it stands as (see `standIn`). */
  standIns: Map<unknown, Raw>;
  /** Per union branch an object may be of but is not read by: what it stands as (see `standIn`). */
  passedOver: Map<unknown, Raw>;
  /** The property schemas of those stand-ins: a key's value is not read from them (see `defaultOf`). */
  passedProps: WeakSet<object>;
  /** Per schema and key: whether two branches of one of its unions name the key and leave it optional (see `leftOutByMany`). */
  leftOut: Map<unknown, Map<string, boolean>>;
  /** A number for each schema `narrowed` or `standIn` made, naming it in `narrowed`'s keys. */
  ids: Map<unknown, number>;
  /**
   * Per schema `narrowed` made: the branches of the original's unions (at any depth of its
   * unions) the object is not read by — cannot meet, or passed over for another (see `step`).
   */
  skips: Map<unknown, ReadonlySet<unknown>>;
  /** Patterns `mayMeet` compiled, or for one that may backtrack the characters it needs (undefined: not tested). */
  patterns: Map<string, PatternTest | undefined>;
  /** Per object of the arguments, sanitized schema and reading: the alternatives its keys are read by (see `step`). */
  holders: WeakMap<Raw, Map<unknown, Map<unknown, { all: Raw[]; kept: Raw[] }>>>;
  /** JSON text `mayMeet` parsed, with its kind (see `parsedText`). */
  texts: Map<string, { kind: number; value: unknown }>;
  /** Readings `mayMeet` may still make for the object being read (see `readingOf`). */
  checks: number;
  /** Per object of the arguments: the checks it has left of its own `CHECK_BUDGET`. */
  pools: WeakMap<object, number>;
  /** Per object of the arguments: what `narrowed` made of it, by schema (see `readingOf`). */
  readings: WeakMap<object, Map<unknown, unknown>>;
  /** Per object of the arguments: what `strip` made of it for a reading tried, by schema. */
  tried: WeakMap<object, Map<unknown, Raw>>;
  /** How many readings `narrowed` is trying, one inside another (see `takesWhole`). */
  trying: number;
  /** The depth of the object the outermost reading tried is for (see `BEYOND`). */
  tryBase: number;
  keys: Map<unknown, Map<string, KeyInfo>>;
  items: Map<unknown, Map<number, unknown>>;
  /** The sanitized form, read for renamed names (and, with `parse`, for JSON text to parse back). */
  restore?: Restore;
  /** Set by `restoreArguments`: parse JSON text back and hand renamed names back as the tool's own. */
  parse?: boolean;
}

/** What `restoreArguments` reads besides the original schema: the sanitized form, built on demand. */
interface Restore {
  options: SanitizeOptions;
  kinds: Map<unknown, number>;
  /** Per sanitized schema: the schema under each key (`ITEM` for an array's items). */
  steps: Map<unknown, Map<string | typeof ITEM, unknown>>;
  /** The same, for an object whose tag passes over some alternatives: by key and those kept. */
  taggedSteps: Map<unknown, Map<string | typeof ITEM, unknown>>;
  asks: Map<unknown, Ask>;
  /** Told of each place asked for as JSON text whose string is handed on as written (`onUnread`). */
  onUnread: ((path: string) => void) | undefined;
}

/**
 * Where a value sits, as a path into the sanitized schema; resolved only when a string there
 * might be JSON text, and then once (so sanitizing happens only for calls that need it).
 */
interface Place {
  parent: Place | undefined;
  step: string | typeof ITEM;
  /**
   * The object of the arguments the key is read from: a sanitized alternative whose tag (a
   * property of one `enum` or `const` value) it holds another value at is not read for the key
   * (see `step`).
   */
  holder?: Raw;
  /**
   * The original schema as read for `holder` (see `narrowed`): a sanitized alternative made from
   * a branch it is not read by is not read for the key (see `step`).
   */
  reading?: unknown;
  resolved: boolean;
  node: unknown;
}

const ITEM = Symbol("item");

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
    // The fields the schema holds (no prototype): none read through a polluted Object.prototype.
    const rest = fields(node, false);
    const { $ref, allOf } = rest;
    delete rest.$ref;
    delete rest.allOf;
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
      if (!typeAllows(part, "null")) return false;
      // OpenAPI's `nullable: true` adds null to the type beside it alone (`typeAllows`): an enum or
      // const beside it without null still refuses it (OpenAPI 3.0.3), as do the branches of a
      // union beside it none of which takes null — and with no type it adds nothing (the OAI's
      // clarification; ajv 8 refuses to compile it), as `sanitizeSchema` reads it.
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

/**
 * Whether an object `value` can meet no value of `branch`, whatever nulls are dropped from it
 * (see `mayMeet`). Only a sure mismatch excludes.
 */
function excludes(branch: unknown, value: Raw, walk: Walk): boolean {
  return !mayMeet(branch, value, walk, 0);
}

/** Schema readings `mayMeet` may make for one object before it answers "may" to everything. */
const CHECK_BUDGET = 10_000;

/**
 * False when `value` surely fails `schema`, whatever nulls in it are dropped: its kind is not one
 * the schema takes (a string where an object or an array is taken may be JSON text, and is not
 * counted); a scalar the schema's `const`, `enum`, `pattern` (one `mayBacktrack` passes, on at
 * most `PATTERN_KEY_LIMIT` characters; one it calls risky by the characters every match holds), bounds or lengths refuse; an object lacking a key the
 * schema requires, holding null at a required key that takes none, holding a value at a key the
 * schema closes off, or holding a property value that surely fails its own schema; an array of a
 * length its item counts refuse, or holding such an item; or a union none of whose branches it may
 * meet. A key holding null is otherwise passed over (it may be a field left out). Past
 * `MAX_DEPTH`, or past `CHECK_BUDGET` readings for the object being read, the answer is "may".
 *
 * `strict` reads a value `strip` has made, its nulls as it hands them on: each null, at a key or as
 * an array's item, is a value the schema must take — and, for `restoreArguments`, each string
 * where the schema takes none that is JSON text of a kind it takes (`strip` parsed what the reading
 * tried asked for as JSON text). False then means the tool surely refuses it.
 */
function mayMeet(schema: unknown, value: unknown, walk: Walk, depth: number, strict = false): boolean {
  if (depth > MAX_DEPTH || value === BEYOND || --walk.checks < 0) return true;
  const { parts, never } = flatten(schema, walk);
  if (never) return false;
  const kind = kindOf(value);
  const kinds = kindsOf(schema, walk, walk.restore as Restore, 0);
  // A string where the schema takes no string may be JSON text (for `dropOptionalNulls`, always).
  // For `restoreArguments`, text that does not parse to a kind the schema takes is handed on as
  // written by any reading, and is "may" as before; text that does is read by what it parses to.
  // Read strictly, the string is what `strip` left as written: the reading tried (each parses by
  // its own alternatives' asks) did not ask for it, and the tool is handed the string.
  if ((kinds & kind) === 0) {
    if (kind !== STRING || !mayBeText(value as string, kinds)) return false;
    if (!walk.parse) return true;
    const text = parsedText(value as string, walk);
    if ((text.kind & kinds) === 0) return true;
    if (strict) return false;
    // Not yet parsed (`excludes`): text of a kind the schema takes is parsed where it is asked for
    // and refused where it is not, so a branch that surely refuses the value it parses to is not
    // tried — a reading tried parses and reads the whole object, for each branch in turn.
    return mayMeet(schema, text.value, walk, depth + 1);
  }
  // A string where the schema also takes an object or an array may be JSON text: its own keywords say nothing of it.
  if (kind === STRING && (kinds & (OBJECT | ARRAY)) !== 0) return true;
  return parts.every((part) => {
    if (Object.hasOwn(part, "const") && kind !== OBJECT && kind !== ARRAY && part.const !== value)
      return false;
    if (Array.isArray(part.enum) && kind !== OBJECT && kind !== ARRAY && !part.enum.includes(value))
      return false;
    if (typeof value === "number" && !numberMeets(part, value)) return false;
    if (typeof value === "string" && !stringMeets(part, value, walk)) return false;
    if (kind === OBJECT && !objectMayMeet(part, value as Raw, walk, depth, strict)) return false;
    if (kind === ARRAY && !arrayMayMeet(part, value as unknown[], walk, depth, strict)) return false;
    return unionsOf(part).every((branches) =>
      branches.some((b) => mayMeet(b, value, walk, depth + 1, strict)),
    );
  });
}

/**
 * Whether a string may be JSON text the schema (of `kinds`) asked for in its place: an object's or
 * an array's, or `null` where it also takes null (the whole value asked for as JSON text).
 */
function mayBeText(value: string, kinds: number): boolean {
  const text = value.trim();
  return (
    (text.startsWith("{") && (kinds & OBJECT) !== 0) ||
    (text.startsWith("[") && (kinds & ARRAY) !== 0) ||
    (text === "null" && (kinds & NULL) !== 0 && (kinds & (OBJECT | ARRAY)) !== 0)
  );
}

/**
 * What JSON `text` parses to as `parseBack` would hand it on, and its kind (0 where it is left as
 * text: it does not parse, or holds a number JavaScript would hand on as another); parsed once per
 * call, and counted against the object's checks.
 */
function parsedText(text: string, walk: Walk): { kind: number; value: unknown } {
  const known = walk.texts.get(text);
  if (known !== undefined) return known;
  walk.checks--;
  let parsed: { kind: number; value: unknown } = { kind: 0, value: undefined };
  try {
    if (!changesNumber(text)) {
      const value: unknown = JSON.parse(text);
      parsed = { kind: kindOf(value), value };
    }
  } catch {
    // Left as text.
  }
  walk.texts.set(text, parsed);
  return parsed;
}

function numberMeets(part: Raw, value: number): boolean {
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum } = part;
  if (typeof minimum === "number" && value < minimum) return false;
  if (typeof maximum === "number" && value > maximum) return false;
  if (typeof exclusiveMinimum === "number" && value <= exclusiveMinimum) return false;
  if (typeof exclusiveMaximum === "number" && value >= exclusiveMaximum) return false;
  return true;
}

function stringMeets(part: Raw, value: string, walk: Walk): boolean {
  const { minLength, maxLength, pattern } = part;
  if (typeof minLength === "number" && value.length < minLength) return false;
  if (typeof maxLength === "number" && value.length > maxLength) return false;
  if (typeof pattern === "string" && value.length <= PATTERN_KEY_LIMIT) {
    const compiled = patternOf(pattern, walk);
    if (compiled !== undefined && !compiled.test(value)) return false;
  }
  return true;
}

function objectMayMeet(part: Raw, value: Raw, walk: Walk, depth: number, strict: boolean): boolean {
  if (!typeAllows(part, "object")) return false;
  const props = isObject(part.properties) ? part.properties : undefined;
  // A name the sanitizer rewrote (U+FFFD for half a surrogate pair, `$ref_` for `$ref`) is not the schema's own.
  const renamed = Object.keys(value).some((key) => mayBeRenamed(key));
  if (!renamed) {
    for (const key of requiredOf(part, walk)) {
      if (typeof key === "string" && !Object.hasOwn(value, key)) return false;
    }
  }
  const extra = part.additionalProperties;
  for (const key of Object.keys(value)) {
    const inner = value[key];
    if (inner === null && strict) {
      // A null `strip` kept reaches the tool: the part must take it at that key.
      if (props && Object.hasOwn(props, key)) {
        if (!acceptsNull(props[key], walk, 0)) return false;
      } else if (
        !renamed &&
        (extra === false || (isObject(extra) && !acceptsNull(extra, walk, 0))) &&
        !isObject(part.patternProperties)
      )
        return false;
      continue;
    }
    if (inner === null) {
      // A null at a key the part requires is never dropped: a part that cannot take it there is not met.
      if (
        props &&
        Object.hasOwn(props, key) &&
        requiredOf(part, walk).has(key) &&
        !acceptsNull(props[key], walk, 0)
      )
        return false;
      continue;
    }
    if (props && Object.hasOwn(props, key)) {
      if (!mayMeet(props[key], inner, walk, depth + 1, strict)) return false;
    } else if (
      !renamed &&
      (extra === false || (isObject(extra) && !mayMeet(extra, inner, walk, depth + 1, strict)))
    ) {
      // patternProperties may also speak of the key: only a schema without them is read here.
      if (!isObject(part.patternProperties)) return false;
    }
  }
  return true;
}

function arrayMayMeet(part: Raw, value: unknown[], walk: Walk, depth: number, strict: boolean): boolean {
  if (!typeAllows(part, "array")) return false;
  const { prefixItems, items, minItems, maxItems } = part;
  if (typeof minItems === "number" && value.length < minItems) return false;
  if (typeof maxItems === "number" && value.length > maxItems) return false;
  const tuple = Array.isArray(prefixItems) ? prefixItems : Array.isArray(items) ? items : undefined;
  return value.every((item, i) => {
    const schema = tuple ? (i < tuple.length ? tuple[i] : undefined) : items;
    // `strip` never drops an array's null: read strictly, the item schema must take it.
    if (item === null) return !strict || schema === undefined || acceptsNull(schema, walk, 0);
    return schema === undefined || mayMeet(schema, item, walk, depth + 1, strict);
  });
}

/**
 * A schema's `pattern` compiled as JSON Schema reads it (ECMAScript, with the `u` flag) and as a
 * host's expression without the flag reads it (`patternTest`: a string either takes may meet it),
 * once per call; undefined for one that compiles in neither. One that may backtrack is not run on a model's text
 * (a host's pattern could take minutes): a string lacking a character every match holds
 * (`charactersEveryMatchHolds`: zod's email pattern, `@`) surely fails it, and any other may meet
 * it. Without that, `{ c: "a", a: null }` under a union of `{ c: email | null, a: string | null }`
 * and `{ c: /^[a-z]+$/, a: {} = {} }` was read by the first — its null kept, as that `a` takes
 * one — and zod refused the call (seed -98302 of tools' round-trip model, at 10×).
 */
function patternOf(pattern: string, walk: Walk): PatternTest | undefined {
  if (walk.patterns.has(pattern)) return walk.patterns.get(pattern);
  let compiled: PatternTest | undefined;
  if (!mayBacktrack(pattern)) compiled = patternTest(pattern);
  else {
    const held = charactersEveryMatchHolds(pattern);
    if (held.length > 0) compiled = { test: (value) => held.every((c) => value.includes(c)) };
  }
  walk.patterns.set(pattern, compiled);
  return compiled;
}

/** One union of a schema's parts, as `narrowed` reads it for an object. */
interface Union {
  at: number;
  word: "anyOf" | "oneOf";
  branches: unknown[];
  /** What each branch is read as: itself, narrowed, or a stand-in. */
  read: unknown[];
  /** The branches the object may be of, by index, in schema order. */
  live: number[];
}

/**
 * `schema` as read for the object `value`: each branch of its unions that `value` cannot meet (see
 * `excludes`) stands as a branch naming the same properties, none of which takes null — so a null
 * is kept or dropped by the branches the object may be of (a discriminated union's `{ kind:
 * "file", path: null }` is read by the "file" variant, where `path` is optional, not by a "dir"
 * variant where it is nullable), and a null for a field only another alternative names is still
 * dropped. A branch kept is read the same way (a union inside it, as in a nullable discriminated
 * union's `anyOf: [{ oneOf }, null]`). Where every branch is left out, the union is read whole.
 *
 * Where the object may still be of several branches, it is read by one: the first, in schema
 * order, among those naming the keys it holds values at (see `written`), that takes what `strip`
 * makes of the object read by that branch (the others standing in, their values read as before
 * but no null of theirs kept), as far as `mayMeet` can tell — each null is then kept or dropped by
 * one branch, never kept because one branch takes it here and another there, which neither would
 * take together. Where none of those takes it, the other branches it may be of are tried the same
 * way, in order (`excludes` reads a string asked for as JSON text as "may": only the reading tried
 * parses it). Where none surely takes it (or the object's checks run out), the union is read by
 * all the branches it may be of, as before. Made once per schema and set of branches kept.
 * `at` is where `strip` reads the object (its depth and place), for the readings it tries.
 */
function narrowed(
  schema: unknown,
  value: Raw,
  walk: Walk,
  at: At,
  depth = 0,
  seen: Map<unknown, unknown> = new Map(),
): unknown {
  if (depth > MAX_DEPTH) return schema;
  // A branch met again in this reading (the unions of a recursive `$ref` nest the same branches
  // under each other, twice as many a level down) is read as it was the first time: without this
  // the walk doubles with each level of the object, past any budget.
  if (seen.has(schema)) return seen.get(schema);
  const read = narrowedOnce(schema, value, walk, at, depth, seen);
  seen.set(schema, read);
  return read;
}

function narrowedOnce(
  schema: unknown,
  value: Raw,
  walk: Walk,
  at: At,
  depth: number,
  seen: Map<unknown, unknown>,
): unknown {
  const { parts } = flatten(schema, walk);
  // The usual object schema holds no union: read as it is, at the cost of one remembered flatten.
  if (!parts.some((part) => Array.isArray(part.anyOf) || Array.isArray(part.oneOf))) return schema;
  const unions: Union[] = [];
  parts.forEach((part, index) => {
    for (const word of ["anyOf", "oneOf"] as const) {
      const branches = part[word];
      if (!Array.isArray(branches)) continue;
      const live: number[] = [];
      const read = branches.map((branch, i) => {
        if (excludes(branch, value, walk)) return standIn(branch, walk);
        live.push(i);
        return narrowed(branch, value, walk, at, depth + 1, seen);
      });
      // Every branch left out: the union is read whole.
      unions.push({ at: index, word, branches, read: live.length > 0 ? read : branches, live });
    }
  });
  for (const union of unions) {
    if (union.live.length < 2) continue;
    const before = union.read;
    const live = new Set(union.live);
    const naming = written(union, value, walk);
    // Then the other branches it may be of, in order: a branch a null was written for may not
    // take the object once the JSON text in it is parsed (`excludes` cannot read text), and a
    // branch that does is read by — as it is when the value was written as an object, not text —
    // rather than the union read whole, keeping a null for one branch beside a value only
    // another takes.
    const order = walk.checks < 0 ? [] : [...naming, ...union.live.filter((i) => !naming.includes(i))];
    for (const i of order) {
      // Each reading tried makes a schema as wide as the union: counted, so a wide union of many
      // branches an object may be of costs the object its checks, not the union's width squared.
      walk.checks -= before.length;
      if (walk.checks < 0) break;
      union.read = before.map((branch, j) =>
        j === i || !live.has(j) ? branch : standIn(union.branches[j], walk, true),
      );
      if (takesWhole(union.branches[i], assembled(schema, parts, unions, walk), schema, value, walk, at))
        break;
      union.read = before;
    }
    // Checks run out: "may" answers chose nothing, so this union and those after it are read whole.
    if (walk.checks < 0) {
      union.read = before;
      break;
    }
  }
  return assembled(schema, parts, unions, walk);
}

/** Where `strip` reads an object: its depth, and its place in the sanitized schema. */
interface At {
  depth: number;
  place: Place | undefined;
}

/** Thrown when the checks run out while `strip` makes a reading tried (see `takesWhole`). */
class ChecksOut extends Error {}

/**
 * Whether `branch` takes what `strip` makes of the object `value` read as `reading` (its nulls as
 * they would be handed on: see `mayMeet`'s `strict`). Everything `strip` does for a reading tried
 * counts against the object's checks: out of them, the answer is no (and `walk.checks` says why).
 */
function takesWhole(
  branch: unknown,
  reading: unknown,
  original: unknown,
  value: Raw,
  walk: Walk,
  at: At,
): boolean {
  if (walk.trying === 0) walk.tryBase = at.depth;
  walk.trying++;
  try {
    return mayMeet(branch, stripObject(value, reading, original, walk, at.depth, at.place), walk, 0, true);
  } catch (error) {
    if (error instanceof ChecksOut) return false;
    throw error;
  } finally {
    walk.trying--;
  }
}

/**
 * The branches of `union` the object may be of that name each key it holds a value at that one of
 * them names (a null only where one of them takes it): the branches it was written for. A branch that leaves such a key
 * unnamed would take the object too (an open object takes any key), but a tool reading by it —
 * zod's `z.union` tries its branches in order and keeps only the keys of the one that takes the
 * value — drops what the model wrote there. Each key costs the object a check per branch.
 */
function written(union: Union, value: Raw, walk: Walk): number[] {
  let fit = union.live;
  for (const key of Object.keys(value)) {
    walk.checks -= union.live.length;
    if (walk.checks < 0) return [];
    const infos = new Map(union.live.map((i) => [i, keyInfo(union.branches[i], key, walk, 0)]));
    // A null counts as written where a branch names the key and takes null there: it may be that
    // branch's value, not only a field left out.
    const counts = [...infos.values()].some((info) => info.described && (value[key] !== null || info.nullOk));
    if (!counts) continue;
    const naming = fit.filter((i) => infos.get(i)?.described);
    if (naming.length === 0) return [];
    fit = naming;
  }
  return fit;
}

/**
 * `schema` with each of its unions read as `unions` say, made once per schema and reading (the
 * schema itself where no branch is read otherwise).
 */
function assembled(schema: unknown, parts: Raw[], unions: Union[], walk: Walk): unknown {
  let key = "";
  const narrowedParts = parts.slice();
  for (const { at, word, branches, read } of unions) {
    if (read.every((branch, i) => branch === branches[i])) continue;
    const copy = narrowedParts[at] === parts[at] ? { ...parts[at] } : (narrowedParts[at] as Raw);
    copy[word] = read;
    narrowedParts[at] = copy;
    key += `${at}${word}:${read.map((branch, i) => (branch === branches[i] ? "=" : idOf(branch, walk))).join(",")};`;
  }
  if (key === "") return schema;
  let byKey = walk.narrowed.get(schema);
  const known = byKey?.get(key);
  if (known !== undefined) return known;
  const made = { allOf: narrowedParts };
  // The branches the object is not read by: each standing in, and those a branch read narrowed passes over.
  const skipped = new Set<unknown>();
  for (const { branches, read } of unions) {
    read.forEach((branch, i) => {
      if (branch === branches[i]) return;
      const original = branches[i];
      if (branch === walk.standIns.get(original) || branch === walk.passedOver.get(original))
        skipped.add(original);
      else for (const inner of walk.skips.get(branch) ?? []) skipped.add(inner);
    });
  }
  if (skipped.size > 0) walk.skips.set(made, skipped);
  if (!byKey) {
    byKey = new Map();
    walk.narrowed.set(schema, byKey);
  }
  byKey.set(key, made);
  return made;
}

/** A number for a schema `narrowed` or `standIn` made, naming it in `narrowed`'s keys. */
function idOf(made: unknown, walk: Walk): number {
  let id = walk.ids.get(made);
  if (id === undefined) {
    id = walk.ids.size;
    walk.ids.set(made, id);
  }
  return id;
}

/** Every kind of value but null: a property of a branch passed over takes no null. */
const NOT_NULL = ["object", "array", "string", "number", "integer", "boolean"];

/**
 * What a union branch stands as when the object is not read by it: an object naming its
 * properties, each taking no null — and so none of its nulls kept. A branch the object cannot meet
 * names each as taking no value (`false`); one it may meet but is not read by (`passed`, see
 * `narrowed`) names each with its own schema beside "not null", so a value there (JSON text asked
 * for by that branch, say) is still read as before: only the nulls are that of the branch read by.
 */
function standIn(branch: unknown, walk: Walk, passed = false): Raw {
  const cache = passed ? walk.passedOver : walk.standIns;
  let made = cache.get(branch);
  if (made === undefined) {
    const subs = new Map<string, unknown[]>();
    for (const part of flatten(branch, walk).parts) {
      if (!isObject(part.properties)) continue;
      for (const name of Object.keys(part.properties)) {
        const list = subs.get(name) ?? [];
        list.push(part.properties[name]);
        subs.set(name, list);
      }
    }
    const properties: Raw = {};
    for (const [name, list] of subs) {
      const sub = passed ? { allOf: list, type: NOT_NULL } : false;
      if (passed) walk.passedProps.add(sub as Raw);
      Object.defineProperty(
        properties,
        name,
        protoless({
          value: sub,
          enumerable: true,
          writable: true,
          configurable: true,
        }),
      );
    }
    made = { type: "object", properties };
    cache.set(branch, made);
  }
  return made;
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

function strip(value: unknown, schema: unknown, walk: Walk, depth: number, place?: Place): unknown {
  if (schema === undefined || depth > MAX_VALUE_DEPTH) return value;
  if (typeof value === "string")
    return place && walk.parse ? parseBack(value, schema, walk, depth, place) : value;
  if (walk.trying > 0) {
    if (depth - walk.tryBase > MAX_DEPTH) return BEYOND;
    // Making a reading tried: each value counts, against the checks of the object it is for.
    walk.checks -= Array.isArray(value) ? value.length + 1 : 1;
    if (walk.checks < 0) throw new ChecksOut();
  }
  if (Array.isArray(value)) {
    const tuple = flatten(schema, walk).parts.some(
      (p) => Array.isArray(p.prefixItems) || Array.isArray(p.items),
    );
    // Schema depth starts over: how deep the arguments go is `MAX_VALUE_DEPTH`'s to bound.
    const shared = tuple ? undefined : itemSchema(schema, 0, walk, 0);
    const items = place ? below(place, ITEM) : undefined;
    return value.map((item, i) =>
      strip(item, tuple ? itemSchema(schema, i, walk, 0) : shared, walk, depth + 1, items),
    );
  }
  if (!isObject(value)) return value;
  if (walk.trying === 0) {
    return stripObject(value, readingOf(schema, value, walk, { depth, place }), schema, walk, depth, place);
  }
  // For a reading tried, an object inside is made once per schema (each level of a long list
  // tries a reading of the rest of it: made again each time, the list costs its length squared).
  let bySchema = walk.tried.get(value);
  const known = bySchema?.get(schema);
  if (known !== undefined) return known;
  const made = stripObject(
    value,
    readingOf(schema, value, walk, { depth, place }),
    schema,
    walk,
    depth,
    place,
  );
  if (!bySchema) {
    bySchema = new Map();
    walk.tried.set(value, bySchema);
  }
  bySchema.set(schema, made);
  return made;
}

/**
 * `narrowed` for an object of the arguments: read by the branches of its unions it may meet (a
 * discriminated union's variant, by its tag), made once per object and schema, and paid for from
 * the object's own `CHECK_BUDGET` — not from that of the object a reading is tried for, nor its
 * children's from its own: a list the model wrote as objects nested a thousand deep is read at
 * each level as at the first, and a call costs at most a budget per object it holds.
 */
function readingOf(schema: unknown, value: Raw, walk: Walk, at: At): unknown {
  let bySchema = walk.readings.get(value);
  if (bySchema?.has(schema)) return bySchema.get(schema);
  const outer = walk.checks;
  walk.checks = walk.pools.get(value) ?? CHECK_BUDGET;
  try {
    const read = narrowed(schema, value, walk, at);
    if (!bySchema) {
      bySchema = new Map();
      walk.readings.set(value, bySchema);
    }
    bySchema.set(schema, read);
    return read;
  } finally {
    walk.pools.set(value, walk.checks);
    walk.checks = outer;
  }
}

/**
 * The value a null written for a key left out stands for: the `default` the key's schema (as read
 * for the object: its parts, `$ref`s and `allOf`s, or every branch of a union still reading it,
 * alike) gives, where the schema names that value in a `const` or an `enum` — a tag's form — and
 * may take it (see `mayMeet`). A defaulted discriminated union's tag is one: zod picks the variant
 * by the tag, and refuses an object with it left out where two variants' tags have defaults; a
 * value of a literal or an enum parses to itself, so where zod would fill the default in, the tool
 * gets the same value. Other defaults are left to the tool: zod hands a default on unparsed, so a
 * `.trim()` or `.toLowerCase()` field, or one whose default its own bounds refuse, takes a written
 * default otherwise than a key left out.
 */
function defaultOf(schema: unknown, walk: Walk, depth = 0): unknown {
  if (schema === undefined || depth > MAX_DEPTH) return undefined;
  const { parts, never } = flatten(schema, walk);
  if (never) return undefined;
  const found = new Set<unknown>();
  for (const part of parts) if (Object.hasOwn(part, "default")) found.add(part.default);
  if (found.size === 0) {
    // Every branch of one union naming the same default (the key read by several variants; a
    // variant passed over stands as a branch no value meets, and reads nothing).
    for (const part of parts) {
      for (const branches of unionsOf(part)) {
        const live = branches.filter((b) => readsKey(b, walk));
        const each = new Set(live.map((b) => defaultOf(b, walk, depth + 1)));
        if (each.size === 1) found.add([...each][0]);
      }
    }
    found.delete(undefined);
  }
  if (found.size !== 1) return undefined;
  const [value] = found;
  if (!carried(value)) return undefined;
  return names(schema, value, walk, depth) && mayMeet(schema, value, walk, 0) ? value : undefined;
}

/**
 * Whether a union branch of a key's schema, as read for the object, reads the key: not one no value
 * meets (a variant the object cannot be of) nor one standing for a variant the object may be of but
 * is not read by (see `standIn`). Where a variant passed over was asked too, `{ kind: null, x: "s" }`
 * under two variants whose tags default to "a" and "b", both open, read by the first, found two
 * defaults and wrote none, and zod refused the object (it cannot pick a variant without its tag).
 */
function readsKey(branch: unknown, walk: Walk): boolean {
  return !flatten(branch, walk).never && !(isObject(branch) && walk.passedProps.has(branch));
}

/**
 * The one value a key's schema, as read for the object, can take where it names its values (a
 * tag's form): every part naming values in a `const` or an `enum` (null aside) names that one
 * alone, or a union's branches still reading the key (see `readsKey`) do together; undefined where
 * none names values, several remain, or the schema refuses it (see `mayMeet`).
 */
function tagOf(schema: unknown, walk: Walk): unknown {
  const values = namedValues(schema, walk, 0);
  if (values === undefined || values.size !== 1) return undefined;
  const [value] = values;
  if (!carried(value)) return undefined;
  return mayMeet(schema, value, walk, 0) ? value : undefined;
}

/**
 * Whether a value named for a key may be handed on in a null's place: a string, a boolean or a
 * finite number — not null, an object or an array (see `defaultOf`), nor a number JSON cannot
 * carry. A host's schema built in code may name NaN or Infinity (`z.literal(Number.POSITIVE_INFINITY)`
 * with a default, `enum: [NaN]`, which `includes` finds): handed on, the tool's arguments held a
 * value written as `null` once sent as JSON (to an MCP server), which the model never wrote.
 */
function carried(value: unknown): boolean {
  return typeof value === "string" || typeof value === "boolean" || Number.isFinite(value);
}

/** The values a schema names (null aside) in its parts' `const`s and `enum`s and its unions' branches, intersected; undefined where it names none. */
function namedValues(schema: unknown, walk: Walk, depth: number): Set<unknown> | undefined {
  if (depth > MAX_DEPTH) return undefined;
  const { parts, never } = flatten(schema, walk);
  if (never) return new Set();
  let known: Set<unknown> | undefined;
  const meet = (named: Set<unknown>) => {
    known = known === undefined ? named : new Set([...known].filter((v) => named.has(v)));
  };
  for (const part of parts) {
    if (Object.hasOwn(part, "const")) meet(new Set([part.const]));
    else if (Array.isArray(part.enum)) meet(new Set(part.enum));
    for (const branches of unionsOf(part)) {
      const each = branches.filter((b) => readsKey(b, walk)).map((b) => namedValues(b, walk, depth + 1));
      if (each.length > 0 && each.every((v) => v !== undefined))
        meet(new Set(each.flatMap((v) => [...(v as Set<unknown>)])));
    }
  }
  known?.delete(null);
  return known;
}

/**
 * Whether `key` is a tag two or more branches of one union of `schema` (at any depth of its unions)
 * leave optional: two of the branches taking it left out name values for it in a `const` or an
 * `enum`, none in common (`kind: "file"` and `kind: "dir"`). zod's `discriminatedUnion` refuses an
 * object with such a tag left out (a missing tag may stand for one variant only), and a JSON Schema
 * `oneOf` of such variants may take it as both and refuse it. A field the variants share without
 * telling them apart — a literal only one names, or two naming the same value — is no tag, and is
 * left out as written: zod takes it so (before this was asked, `{ kind: "k1", c: null }` under
 * variants whose optional `c` was a string in one and `"v1"` in the other gave `c: "v1"`, a value
 * the model never wrote: seed 100301 of tools' round-trip model at 5×).
 */
function leftOutByMany(schema: unknown, key: string, walk: Walk, depth = 0): boolean {
  if (depth > MAX_DEPTH) return false;
  return remembered(walk.leftOut, schema, key, walk, () =>
    flatten(schema, walk).parts.some((part) =>
      unionsOf(part).some((branches) => {
        const objects = branches.filter((b) => admits(b, "object", walk));
        const tags: Set<unknown>[] = [];
        for (const b of objects) {
          const info = keyInfo(b, key, walk, 0);
          if (!info.described || !info.absentOk) continue;
          const values = info.sub === undefined ? undefined : namedValues(info.sub, walk, 0);
          if (values !== undefined && values.size > 0) tags.push(values);
        }
        const apart = tags.some((one, i) =>
          tags.slice(i + 1).some((other) => [...one].every((v) => !other.has(v))),
        );
        return apart || objects.some((b) => leftOutByMany(b, key, walk, depth + 1));
      }),
    ),
  );
}

/** Whether a part of `schema`, or a branch of one of its unions, lists `value` in a `const` or an `enum`. */
function names(schema: unknown, value: unknown, walk: Walk, depth: number): boolean {
  if (depth > MAX_DEPTH) return false;
  const { parts } = flatten(schema, walk);
  return parts.some(
    (part) =>
      (Object.hasOwn(part, "const") && part.const === value) ||
      (Array.isArray(part.enum) && part.enum.includes(value)) ||
      unionsOf(part).some((branches) => branches.some((b) => names(b, value, walk, depth + 1))),
  );
}

/**
 * `strip` of an object, by the schema as read for it (see `narrowed`); `original`, the schema it
 * was read from (its unions whole).
 */
function stripObject(
  value: Raw,
  schema: unknown,
  original: unknown,
  walk: Walk,
  depth: number,
  place: Place | undefined,
): Raw {
  const out: Raw = {};
  for (const [key, inner] of Object.entries(value)) {
    let name = key;
    let read = key;
    let info = keyInfo(schema, key, walk, 0);
    if (!info.described && place && mayBeRenamed(key)) {
      // A name the sanitizer wrote with U+FFFD for one holding half a surrogate pair alone: read
      // as the schema's own (unless the model also wrote that one); `restoreArguments` also hands
      // the tool that name back, `dropOptionalNulls` keeps the name as the model wrote it.
      const own = ownName(place, key, walk);
      if (own !== undefined && !Object.hasOwn(value, own)) {
        if (walk.parse) name = own;
        read = own;
        info = keyInfo(schema, own, walk, 0);
      }
    }
    let fill: unknown;
    if (inner === null && info.described && !info.nullOk && info.absentOk) {
      // The model's way of leaving the key out: the tool gets the schema's default in its place
      // where one is known (see `defaultOf`). A tag with no default that two variants leave
      // optional cannot be left out (zod's `discriminatedUnion` refuses the object: a missing tag
      // may stand for one variant only; a `oneOf` of open variants may take it as both): the tool
      // gets the one value the variant the object is read by names for it. Otherwise the key is
      // left out.
      fill = defaultOf(info.sub, walk);
      if (fill === undefined && leftOutByMany(original, read, walk)) fill = tagOf(info.sub, walk);
      if (fill === undefined) continue;
    }
    Object.defineProperty(
      out,
      name,
      protoless({
        value:
          fill !== undefined
            ? fill
            : strip(inner, info.sub, walk, depth + 1, place ? below(place, key, value, schema) : undefined),
        enumerable: true,
        writable: true,
        configurable: true,
      }),
    );
  }
  return out;
}

// JSON kinds, as bits: which kinds of value the original schema takes at a place.
const OBJECT = 1;
const ARRAY = 2;
const STRING = 4;
const NUMBER = 8;
const BOOLEAN = 16;
const NULL = 32;
const ANY = 63;
const KIND_OF_TYPE: Record<string, number> = {
  object: OBJECT,
  array: ARRAY,
  string: STRING,
  number: NUMBER,
  integer: NUMBER,
  boolean: BOOLEAN,
  null: NULL,
};

function kindOf(value: unknown): number {
  if (value === null) return NULL;
  if (Array.isArray(value)) return ARRAY;
  switch (typeof value) {
    case "object":
      return OBJECT;
    case "string":
      return STRING;
    case "number":
      return NUMBER;
    case "boolean":
      return BOOLEAN;
    default:
      return 0;
  }
}

/** The kinds of value the original schema takes: every part's, and some branch's of each union. */
function kindsOf(schema: unknown, walk: Walk, restore: Restore, depth: number): number {
  const known = restore.kinds.get(schema);
  if (known !== undefined) return known;
  if (--walk.budget < 0) throw new Exhausted();
  if (depth > MAX_DEPTH) return ANY;
  // A union that reaches itself again (`anyOf: [{ $ref: "#" }]`) reads as any kind meanwhile.
  restore.kinds.set(schema, ANY);
  const { parts, never } = flatten(schema, walk);
  let kinds = never ? 0 : ANY;
  for (const part of parts) {
    const t = part.type;
    let own = ANY;
    if (typeof t === "string") own = KIND_OF_TYPE[t] ?? 0;
    else if (Array.isArray(t)) own = t.reduce((k: number, name) => k | (KIND_OF_TYPE[String(name)] ?? 0), 0);
    if (t !== undefined && part.nullable === true) own |= NULL;
    if (Object.hasOwn(part, "const")) own &= kindOf(part.const);
    else if (Array.isArray(part.enum)) own &= part.enum.reduce((k: number, v) => k | kindOf(v), 0);
    for (const group of unionsOf(part)) {
      own &= group.reduce((k: number, b) => k | kindsOf(b, walk, restore, depth + 1), 0);
    }
    kinds &= own;
  }
  restore.kinds.set(schema, kinds);
  return kinds;
}

function below(place: Place, step: string | typeof ITEM, holder?: Raw, reading?: unknown): Place {
  return holder === undefined
    ? { parent: place, step, resolved: false, node: undefined }
    : { parent: place, step, resolved: false, node: undefined, holder, reading };
}

/**
 * The sanitized form of each original schema object `restoreArguments` has read, per
 * `recursionLimit` and `maxDepth`: a run of a thousand calls to one tool sanitizes its schema once.
 * Keyed by the object, so a schema changed in place after its first call keeps its first reading.
 */
const SANITIZED = new WeakMap<object, Map<string, JsonSchema>>();

/** `sanitizeSchema(original, options)`, remembered per original schema object. */
function sanitizedOnce(original: unknown, options: SanitizeOptions): JsonSchema {
  if (typeof original !== "object" || original === null) return sanitizeSchema(original, options);
  // What sanitizeSchema reads of the options: a number each, anything else the default.
  const key = [options.recursionLimit, options.maxDepth]
    .map((n) => (typeof n === "number" ? String(n) : "default"))
    .join("|");
  let byOptions = SANITIZED.get(original);
  const known = byOptions?.get(key);
  if (known) return known;
  const fresh = sanitizeSchema(original, options);
  if (!byOptions) {
    byOptions = new Map();
    SANITIZED.set(original, byOptions);
  }
  byOptions.set(key, fresh);
  return fresh;
}

/** The sanitized schema at a place (undefined where it describes none). */
function resolve(place: Place, walk: Walk, restore: Restore): unknown {
  if (place.resolved) return place.node;
  place.node = place.parent
    ? step(resolve(place.parent, walk, restore), place.step, walk, restore, place.holder, place.reading)
    : sanitizedOnce(walk.root, restore.options);
  place.resolved = true;
  return place.node;
}

/**
 * The schema's own name for a property the sanitizer renamed `key` at this place (it held half a
 * surrogate pair alone), read from what the sanitizer recorded; undefined where it renamed none.
 */
function ownName(place: Place, key: string, walk: Walk): string | undefined {
  const restore = walk.restore as Restore;
  for (const alt of alternatives(resolve(place, walk, restore), [], 0)) {
    const own = renamedAt(alt)?.get(key);
    if (own !== undefined) return own;
  }
  return undefined;
}

/** A sanitized schema's alternatives: itself, or the branches of its (nested) `anyOf`s. */
function alternatives(node: unknown, out: Raw[], depth: number): Raw[] {
  if (!isObject(node) || depth > MAX_DEPTH) return out;
  const anyOf = own(node, "anyOf");
  if (Array.isArray(anyOf)) for (const branch of anyOf) alternatives(branch, out, depth + 1);
  else out.push(node);
  return out;
}

/**
 * The sanitized schema for a key (or the items) of a value the sanitized `node` describes. With
 * `holder`, the object the key is read from, an alternative of `node` whose tag (a property of one
 * `enum` or `const` value) the object holds another scalar at — or null, where that tag takes none —
 * is passed over, and so is one the object does not fit as written (see `writtenFor`), then one
 * made only from branches of the original's unions that `reading` (the original as read for the
 * object, see `narrowed`) does not read it by — it cannot meet them, or is read by another — each
 * unless that leaves none (see `readFor`): what one variant asks for at the key — JSON
 * text for an object there, say — is not what the variant the object is read by asks for (a string
 * "0" written where that variant takes any value is the string, not JSON text of 0). A reading
 * tried for one branch is read with that branch's asks alone. A root union the sanitizer merged
 * into one object (see `mergedFrom`) is read by its alternatives where the object is not read by
 * all of them.
 */
function step(
  node: unknown,
  key: string | typeof ITEM,
  walk: Walk,
  restore: Restore,
  holder?: Raw,
  reading?: unknown,
): unknown {
  if (node === undefined) return undefined;
  const { all, kept } =
    key === ITEM || holder === undefined
      ? { all: alternatives(node, [], 0), kept: undefined }
      : holderAlternatives(node, holder, reading, walk);
  const tagged = kept !== undefined && kept.length > 0 && kept.length < all.length;
  const cache = tagged ? restore.taggedSteps : restore.steps;
  const at = tagged ? `${String(key)}\u0000${kept.map((alt) => all.indexOf(alt)).join(",")}` : key;
  let byKey = cache.get(node);
  if (byKey?.has(at)) return byKey.get(at);
  if (--walk.budget < 0) throw new Exhausted();
  const subs: unknown[] = [];
  for (const alt of tagged ? (kept as Raw[]) : all) {
    const items = own(alt, "items");
    const properties = own(alt, "properties");
    if (key === ITEM) {
      if (isObject(items)) subs.push(items);
    } else if (isObject(properties) && Object.hasOwn(properties, key)) {
      subs.push(properties[key]);
    }
  }
  const sub = combined("anyOf", subs);
  if (!byKey) {
    byKey = new Map();
    cache.set(node, byKey);
  }
  byKey.set(at, sub);
  return sub;
}

/**
 * `node`'s alternatives, and those the keys of the object `holder` (read as `reading`) are read by
 * (see `readFor`): made once per object, schema and reading, for all its keys.
 */
function holderAlternatives(
  node: unknown,
  holder: Raw,
  reading: unknown,
  walk: Walk,
): { all: Raw[]; kept: Raw[] } {
  let byNode = walk.holders.get(holder);
  if (byNode === undefined) {
    byNode = new Map();
    walk.holders.set(holder, byNode);
  }
  let byReading = byNode.get(node);
  if (byReading === undefined) {
    byReading = new Map();
    byNode.set(node, byReading);
  }
  const known = byReading.get(reading);
  if (known !== undefined) return known;
  let all = alternatives(node, [], 0);
  const skip = walk.skips.get(reading);
  const merged = skip !== undefined && all.length === 1 ? mergedFrom(all[0]) : undefined;
  if (merged?.some((alt) => skippedBy(alt, skip as ReadonlySet<unknown>))) all = [...merged];
  let kept = all.length > 1 ? readFor(all, holder, skip) : all;
  // A merged root none of whose alternatives is passed over: read as merged.
  if (merged !== undefined && kept.length === all.length) {
    all = alternatives(node, [], 0);
    kept = all;
  }
  const made = { all, kept };
  byReading.set(reading, made);
  return made;
}

/**
 * The alternatives a key of `holder` is read by: narrowed in turn to those whose tag it does not
 * refuse (see `tagRefuses`), those it was written for (see `writtenFor`), and those made from a
 * branch its reading reads it by (see `skippedBy`) — each step taken only where it leaves some. The
 * model wrote the object for an alternative it fits, whatever branch of the original then reads
 * it: JSON text it wrote for one that asks for text there is that text, even where the branch
 * reading it (another, whose own alternative asks for an array there) asked for none.
 */
function readFor(all: Raw[], holder: Raw, skip: ReadonlySet<unknown> | undefined): Raw[] {
  let kept = all;
  const steps: ((alt: Raw) => boolean)[] = [
    (alt) => !tagRefuses(alt, holder),
    (alt) => writtenFor(alt, holder),
    (alt) => skip === undefined || !skippedBy(alt, skip),
  ];
  for (const keep of steps) {
    const next = kept.filter(keep);
    if (next.length > 0) kept = next;
  }
  return kept;
}

/**
 * Whether the object `holder`, as the model wrote it, fits the sanitized alternative `alt`: one
 * taking an object, every key it requires present, every key holding a value one it lists (where it closes off others),
 * and each value of a kind its schema there takes. A null at a key it does not list is passed over
 * (a merged root's "null for the others").
 */
function writtenFor(alt: Raw, holder: Raw): boolean {
  // The `null` of a nullable union, or an object asked for as JSON text: no object is written for it.
  if ((sanitizedKinds(alt, 0) & OBJECT) === 0) return false;
  const properties = own(alt, "properties");
  if (!isObject(properties)) return true;
  const closed = own(alt, "additionalProperties") === false;
  for (const name of Object.keys(holder)) {
    const value = holder[name];
    if (!Object.hasOwn(properties, name)) {
      if (closed && value !== null) return false;
      continue;
    }
    const schema = properties[name];
    if (isObject(schema) && (sanitizedKinds(schema, 0) & kindOf(value)) === 0) return false;
  }
  const required = own(alt, "required");
  if (Array.isArray(required)) {
    for (const name of required) if (typeof name === "string" && !Object.hasOwn(holder, name)) return false;
  }
  return true;
}

/** The kinds a sanitized schema's `type`s (and its `anyOf`'s) name; any kind where it names none. */
function sanitizedKinds(schema: Raw, depth: number): number {
  const anyOf = own(schema, "anyOf");
  if (Array.isArray(anyOf)) {
    if (depth > MAX_DEPTH) return ANY;
    return anyOf.reduce((k: number, b) => k | (isObject(b) ? sanitizedKinds(b, depth + 1) : ANY), 0);
  }
  const type = own(schema, "type");
  if (typeof type === "string") return KIND_OF_TYPE[type] ?? ANY;
  if (Array.isArray(type)) return type.reduce((k: number, t) => k | (KIND_OF_TYPE[String(t)] ?? ANY), 0);
  return ANY;
}

/**
 * Whether a sanitized alternative was made only from branches of the original's unions in `skip`:
 * every chain it was made from (see `originsOf`) holds one. One made from no branch is never.
 */
function skippedBy(alt: Raw, skip: ReadonlySet<unknown>): boolean {
  return originsOf(alt).every((chain) => chain.some((branch) => skip.has(branch)));
}

/**
 * Whether the object `holder` holds, at a property `alt` gives one `enum` or `const` value, another
 * scalar — or null, where `alt` requires the property and takes no null there: a tag with a default
 * (or optional) is declared as its value or null, and a model leaving it out writes null, which the
 * other variants' tags refuse as surely as another value.
 */
function tagRefuses(alt: Raw, holder: Raw): boolean {
  const properties = own(alt, "properties");
  if (!isObject(properties)) return false;
  const required = own(alt, "required");
  for (const name of Object.keys(properties)) {
    if (!Object.hasOwn(holder, name)) continue;
    const value = holder[name];
    const schema = properties[name];
    if (typeof value === "object" && value !== null) continue;
    if (!isObject(schema)) continue;
    const values = own(schema, "enum");
    const single = Array.isArray(values) && values.length === 1 ? { value: values[0] } : undefined;
    const tag = Object.hasOwn(schema, "const") ? { value: own(schema, "const") } : single;
    if (tag === undefined || tag.value === value) continue;
    if (value !== null || (Array.isArray(required) && required.includes(name) && !takesNull(schema)))
      return true;
  }
  return false;
}

/**
 * Whether a sanitized tag schema (an `enum` or `const`, perhaps with its type) takes null.
 *
 * Read shallowly, and rightly so: not `acceptsNull`, which flattens `$ref`s through `walk.root` —
 * the ORIGINAL schema — while a tag is read from the SANITIZED one `resolve` makes of it
 * (`sanitizedOnce(walk.root)`), a document with no `$defs` to resolve against. Nor does it need
 * to: the sanitized schema holds no `$ref` (each is inlined, or past the recursion limit asked for
 * as JSON text), no `allOf` (merged), no `oneOf` or `nullable`, and a tag given as a const or null
 * (`anyOf: [{ const: "map" }, { type: "null" }]`) is one enum, `enum: ["map", null]` — two values,
 * so no single-value tag — while a tag given through a `$ref` is its inlined `enum: ["map"]`. A
 * tag schema `tagRefuses` finds is therefore one node, read here whole (see review-r98c's tests).
 */
function takesNull(schema: Raw): boolean {
  const type = own(schema, "type");
  return (
    type === "null" ||
    (Array.isArray(type) && type.includes("null")) ||
    (Object.hasOwn(schema, "const") && own(schema, "const") === null) ||
    (Array.isArray(own(schema, "enum")) && (own(schema, "enum") as unknown[]).includes(null))
  );
}

/**
 * What the sanitized schema asked a string here to be: `"text"` when the value itself is JSON
 * text (too deep, recursive), `"any"` when it is any value with an object or array as JSON text.
 * Read from what the sanitizer recorded when it made the place, never from its description.
 */
type Ask = Asked | undefined;

function asks(node: unknown, restore: Restore, depth: number): Ask {
  if (!isObject(node) || depth > MAX_DEPTH) return undefined;
  const known = restore.asks.get(node);
  if (known !== undefined || restore.asks.has(node)) return known;
  let ask: Ask = askedAt(node);
  if (ask !== "text") {
    const anyOf = own(node, "anyOf");
    if (Array.isArray(anyOf)) {
      for (const branch of anyOf) {
        const inner = asks(branch, restore, depth + 1);
        if (inner === "text") {
          ask = inner;
          break;
        }
        ask ??= inner;
      }
    }
  }
  restore.asks.set(node, ask);
  return ask;
}

/**
 * A string where the sanitized schema asked for JSON text and the original takes an object or an
 * array: parsed, when it parses to a kind the original takes there (then read like any value,
 * its optional nulls dropped); otherwise left for the tool to refuse in its own words.
 */
function parseBack(value: string, schema: unknown, walk: Walk, depth: number, place: Place): unknown {
  const restore = walk.restore as Restore;
  const kinds = kindsOf(schema, walk, restore, 0);
  if ((kinds & (OBJECT | ARRAY)) === 0) return value;
  const ask = asks(resolve(place, walk, restore), restore, 0);
  if (ask === undefined) return value;
  // Handed on as written: `onUnread` is told where the original takes no string there (the tool
  // would be handed a value its own schema refuses).
  const unread = () => {
    // Not for a reading only tried: told once, when the value is handed on.
    if ((kinds & STRING) === 0 && kinds !== ANY && walk.trying === 0) restore.onUnread?.(pathOf(place));
    return value;
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return unread();
  }
  // A number the text holds that JavaScript would hand on as another: left as text, for the tool
  // to refuse in its own words, rather than parsed into a number the model never wrote.
  if (changesNumber(value)) return unread();
  const kind = kindOf(parsed);
  if (ask === "any" && (kind & (OBJECT | ARRAY)) === 0) return unread();
  if ((kinds & kind) === 0) return unread();
  return strip(parsed, schema, walk, depth);
}

/**
 * Options of {@link restoreArguments}: the `recursionLimit` and `maxDepth` the schema was sanitized
 * with, and `onUnread`, told (with the place, `doc.items[]`) of each value asked for as JSON text
 * that is handed on as the model wrote it where the original schema takes no string — text that
 * does not parse, or parses to a kind the original does not take there — so a caller can answer
 * the call instead of handing a tool a value its own schema refuses.
 */
export interface RestoreOptions extends SanitizeOptions {
  onUnread?: ((path: string) => void) | undefined;
}

/**
 * Undoes what strict mode made of optional parameters: `sanitizeSchema` makes an optional property
 * required-but-nullable, so a model leaves it out by writing `null` — which the tool itself (say
 * an MCP server validating with zod) refuses. Given the arguments and the tool's ORIGINAL schema,
 * drops every `null` the original schema did not allow for a property it did not require, at any
 * depth reached through `properties`, `items` (tuples by position), local `$ref`s (with the
 * keywords beside them), `allOf`, and the branches of `anyOf`/`oneOf` — where a null is dropped
 * when no branch naming the property takes it (the fields of the other alternatives of a root
 * union, say), among the branches the object may be of (a discriminated union's variant is read
 * by its tag). Where it may be of several, it is read by the first (naming the keys it holds
 * values at) that takes it with that branch's nulls kept and the others dropped (failing those,
 * the first other branch that does), so no null is kept for one branch beside another null kept
 * for another. A property name `sanitizeSchema` wrote with U+FFFD (the schema's own held half a
 * surrogate pair alone) is read as the schema's own name, as {@link restoreArguments} reads it,
 * and kept as the model wrote it (`restoreArguments` hands the tool its own name back).
 *
 * Returns new arguments; never mutates its input and never throws. Values the original schema
 * allows to be null, required properties, and keys it does not describe are left as they are;
 * arguments or a schema JSON cannot hold, or a schema past a million readings, come back as
 * they were.
 */
export function dropOptionalNulls<T>(args: T, originalSchema: unknown): T {
  try {
    const walk = newWalk(originalSchema);
    walk.restore = newRestore(undefined);
    const root: Place = { parent: undefined, step: ITEM, resolved: false, node: undefined };
    return strip(args, originalSchema, walk, 0, root) as T;
  } catch {
    // Arguments or a schema no JSON holds (a throwing getter, a revoked Proxy), or one too large
    // to read: left as they were.
    return args;
  }
}

/** A JSON number token, from where one starts. */
const NUMBER_TOKEN = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * True when the JSON `text` (one that parses) holds a number JavaScript would hand on as another:
 * one too large or too small for a double (read as Infinity, or a nonzero read as 0), or an
 * integer whose double is another integer (`12345678901234567891` read as `…567000`). Each number
 * token outside the text's strings is weighed by itself, so digits written elsewhere (in a string,
 * or as another number) excuse nothing. A decimal longer than a double keeps reads as its nearest
 * double, as every JSON reader's does, and is not counted. Linear in the text; only called for
 * JSON text being parsed back.
 */
function changesNumber(text: string): boolean {
  if (!/\d{16}|[eE][+-]?\d{3}/.test(text)) return false;
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // A string: skipped to just past its closing quote.
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 92) i++;
        else if (d === 34) break;
      }
      i++;
    } else if (c === 45 || (c >= 48 && c <= 57)) {
      NUMBER_TOKEN.lastIndex = i;
      const token = NUMBER_TOKEN.exec(text)?.[0] ?? text[i];
      if (changes(token as string)) return true;
      i += (token as string).length;
    } else i++;
  }
  return false;
}

/** True when the number token `token` is read as another number (see {@link changesNumber}). */
function changes(token: string): boolean {
  // 15 digits or fewer with an exponent under 100 always read back as written.
  if (!/\d{16}|[eE][+-]?\d{3}/.test(token)) return false;
  const value = Number(token);
  if (!Number.isFinite(value)) return true;
  if (value === 0) return /[1-9]/.test(token.replace(/[eE].*$/, ""));
  // An integer is handed on as JavaScript writes its double back: the same number, or another.
  return /^-?\d+$/.test(token) && scientific(token) !== scientific(String(value));
}

/** `-1.2345e+21`, `123000`: a numeral's value as `sign digits*10^power`, trailing zeros folded in. */
function scientific(numeral: string): string {
  const [, sign = "", whole = "", fraction = "", power = "0"] =
    /^(-?)(\d+)(?:\.(\d+))?(?:e\+?(-?\d+))?$/.exec(numeral) ?? [numeral];
  const digits = `${whole}${fraction}`.replace(/^0+/, "");
  const significant = digits.replace(/0+$/, "");
  const exponent = Number(power) - fraction.length + (digits.length - significant.length);
  return `${sign}${significant}*10^${exponent}`;
}

function newWalk(root: unknown): Walk {
  return {
    root,
    budget: VISIT_BUDGET,
    flat: new Map(),
    required: new WeakMap(),
    nulls: new Map(),
    narrowed: new Map(),
    standIns: new Map(),
    passedOver: new Map(),
    passedProps: new WeakSet(),
    leftOut: new Map(),
    ids: new Map(),
    skips: new Map(),
    patterns: new Map(),
    texts: new Map(),
    holders: new WeakMap(),
    checks: CHECK_BUDGET,
    pools: new WeakMap(),
    readings: new WeakMap(),
    tried: new WeakMap(),
    trying: 0,
    tryBase: 0,
    keys: new Map(),
    items: new Map(),
  };
}

function newRestore(options: SanitizeOptions | null | undefined): Restore {
  return {
    options: isObject(options)
      ? {
          recursionLimit: own(options, "recursionLimit") as number | undefined,
          maxDepth: own(options, "maxDepth") as number | undefined,
        }
      : {},
    kinds: new Map(),
    steps: new Map(),
    taggedSteps: new Map(),
    asks: new Map(),
    onUnread:
      isObject(options) && typeof own(options, "onUnread") === "function"
        ? (own(options, "onUnread") as (path: string) => void)
        : undefined,
  };
}

/** Where a place is, for a message: its keys joined with dots, an array's items as `[]`. */
function pathOf(place: Place): string {
  const steps: string[] = [];
  for (let at: Place | undefined = place; at?.parent !== undefined; at = at.parent)
    steps.push(at.step === ITEM ? "[]" : at.step);
  return steps.reverse().join(".").replaceAll(".[]", "[]");
}

/**
 * Turns a call a model wrote against the sanitized schema back into what the tool's ORIGINAL
 * schema takes: everything {@link dropOptionalNulls} does, and where `sanitizeSchema` asked for a
 * value as JSON text (an object nested past `maxDepth`, a recursive `$ref` past `recursionLimit`,
 * a schema past `MAX_NESTING`, an object of keys the schema does not list, a value with no type)
 * and the original takes an object or an array there, a string that parses as JSON of a kind the original takes there is parsed back. A string
 * that does not parse, or parses to a kind the original does not take there, is left as it was
 * (the tool's own validation names it). A property name `sanitizeSchema` wrote with U+FFFD (the
 * schema's own held half a surrogate pair alone) is handed back as the schema's own name.
 *
 * `options` are the `recursionLimit` and `maxDepth` the schema was sanitized with (the defaults
 * when omitted; `onNotice` is not called). The places asked for as JSON text are read from the
 * record `sanitizeSchema` keeps of them, never from descriptions. Linear in the arguments; the
 * sanitized form is made only when a string sits where JSON text may have been asked for, once per
 * schema object and options (a schema changed in place keeps its first reading). JSON text holding
 * a number JavaScript would hand on as another is left as text. Returns new arguments; never
 * mutates its input and never throws: arguments or a schema JSON cannot hold, or a schema past a
 * million readings, come back as they were.
 */
export function restoreArguments<T>(args: T, originalSchema: unknown, options?: RestoreOptions | null): T {
  try {
    const walk = newWalk(originalSchema);
    walk.restore = newRestore(options);
    walk.parse = true;
    const root: Place = { parent: undefined, step: ITEM, resolved: false, node: undefined };
    return strip(args, originalSchema, walk, 0, root) as T;
  } catch {
    // Arguments or a schema no JSON holds (a throwing getter, a revoked Proxy), or one too large
    // to read: left as they were.
    return args;
  }
}

/**
 * True when the tool's ORIGINAL schema takes a string at `path` of its arguments (keys, and
 * array indexes, from the root object): read through `properties`, `additionalProperties`,
 * `items` (tuples by position), local `$ref`s, `allOf`, and the branches of `anyOf`/`oneOf`, as
 * {@link restoreArguments} reads it. A place whose schema names `string` among its types (alone,
 * with `null`, or beside a number: an id either way) is one; a place it leaves untyped, or does
 * not describe, is not. Made for `parseToolArguments`' `takesString` (from
 * `@loopwright/tool-calls`): a number JavaScript cannot hold, written unquoted where the tool takes
 * a string, then reaches it as the model's exact digits. A key in `path` is the one the model
 * wrote: a property name `sanitizeSchema` wrote with U+FFFD reads as the schema's own. Never throws
 * (false for a schema JSON cannot hold, or one past a million readings).
 */
export function takesStringAt(originalSchema: unknown, path: readonly (string | number)[]): boolean {
  const kinds = kindsAt(originalSchema, path);
  return (kinds & STRING) !== 0 && kinds !== ANY;
}

/**
 * True when the tool's ORIGINAL schema takes a string at `path` of its arguments and no number or
 * integer there — read as {@link takesStringAt} reads it (`{ type: "string" }`, with `null`, an
 * `enum` or `const` of strings; not `["string", "integer"]`, not a place left untyped). Made for
 * `parseToolArguments`' `takesOnlyString` (from `@loopwright/tool-calls`): any number token the
 * model writes there (`02134`, `1.10`, `1e3`, `+5`) then reaches the tool as the text written.
 * Never throws (false for a schema JSON cannot hold, or one past a million readings).
 */
export function takesOnlyStringAt(originalSchema: unknown, path: readonly (string | number)[]): boolean {
  const kinds = kindsAt(originalSchema, path);
  return (kinds & STRING) !== 0 && (kinds & NUMBER) === 0;
}

/** The kinds the ORIGINAL schema takes at `path` (0 where it says nothing, or cannot be read). */
function kindsAt(originalSchema: unknown, path: readonly (string | number)[]): number {
  try {
    if (!Array.isArray(path) || path.length === 0) return 0;
    const walk = newWalk(originalSchema);
    walk.restore = newRestore(undefined);
    let node: unknown = originalSchema;
    let place: Place = { parent: undefined, step: ITEM, resolved: false, node: undefined };
    for (let depth = 0; depth < path.length && node !== undefined; depth++) {
      const at = path[depth];
      if (typeof at === "number") {
        node = itemSchema(node, at, walk, depth);
        place = below(place, ITEM);
        continue;
      }
      const key = String(at);
      let info = keyInfo(node, key, walk, depth);
      if (!info.described && mayBeRenamed(key)) {
        // A name the sanitizer wrote with U+FFFD (the model's arguments are read before restoreArguments).
        const own = ownName(place, key, walk);
        if (own !== undefined) info = keyInfo(node, own, walk, depth);
      }
      node = info.sub;
      place = below(place, key);
    }
    if (node === undefined) return 0;
    return kindsOf(node, walk, walk.restore, 0);
  } catch {
    return 0;
  }
}
