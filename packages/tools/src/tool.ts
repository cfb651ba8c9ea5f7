import {
  argumentsPrototype,
  backtrackingRefusal,
  declaresInheritedName,
  isPlainPrototype,
  mapAlongSchema,
} from "@loopwright/schema-compat";
import { z } from "zod";
import { type ArgumentIssue, ToolInputError } from "./errors.js";
import { ownDescriptor, ownDescriptors, protoless } from "./protoless.js";
import { type FlagRefusal, flagOverride } from "./regex-flags.js";

/** What `execute` is handed besides its arguments. */
export interface ToolContext {
  /** The call's id, as the model gave it. */
  id: string;
  /**
   * Aborted when the run is stopped. `| undefined` so a host calling `execute` itself forwards a
   * signal it may not have (`{ id, signal: ctx.signal }`) under `exactOptionalPropertyTypes`.
   */
  signal?: AbortSignal | undefined;
}

/**
 * A zod schema a tool's arguments can be read with: one whose input is an object (`z.object(…)`,
 * with `.strict()`, defaults or a `.transform()` after it) or whose output is one (a
 * `z.preprocess(…, z.object(…))`).
 */
export type ObjectSchema =
  | z.ZodType<unknown, Record<string, unknown>>
  | z.ZodType<Record<string, unknown>, unknown>;

/**
 * What `defineTool` reads: one tool, written once. `Input` is an `ObjectSchema`; `z.string()` and
 * other non-object schemas do not compile. A union of object schemas compiles but is refused by
 * `defineTool` at run time (`invalid-tool`): its JSON Schema is not `type: "object"`.
 */
export interface ToolSpec<Input extends ObjectSchema> {
  /** The name the model calls it by (letters, digits, `_` and `-`, at most 64). */
  name: string;
  /** What it does, for the model. */
  description: string;
  /** The arguments' schema: an object schema, so the model is asked for a JSON object. */
  input: Input;
  /** Runs the tool on arguments that passed `input` (defaults applied); what it returns is what the model reads. */
  execute: (args: z.output<Input>, context: ToolContext) => unknown;
}

/** A function tool declaration, the shape chat-completions and `runAgentLoop`'s `tools` take. */
export interface ToolDeclaration {
  type: "function";
  function: { name: string; description: string; parameters: { [keyword: string]: unknown } };
}

/** A tool `defineTool` made: its spec, and the declaration the model is sent. */
export interface Tool<Input extends ObjectSchema = ObjectSchema> extends ToolSpec<Input> {
  /** The declaration: name, description and the input schema as JSON Schema (input mode: defaulted fields optional). */
  readonly declaration: ToolDeclaration;
  /**
   * Checks raw arguments against `input`, synchronously: the parsed value, or a `ToolInputError`
   * (`invalid-arguments`) with every mismatch in `issues` and the first ten named in its message,
   * or naming where the arguments hold a key named `__proto__` (zod would drop it), or for arguments
   * nested deeper than `MAX_ARGUMENT_DEPTH` (zod would overflow the stack on a recursive schema).
   * A schema with an asynchronous refinement throws zod's own error here; a toolset's `dispatch`
   * awaits it.
   */
  parse(args: unknown): z.output<Input>;
  /**
   * The check `dispatch` makes before `execute`: `parse`'s refusals, and an asynchronous refinement
   * awaited rather than thrown as zod's error; rejects with `ToolInputError` (`invalid-arguments`),
   * also for arguments too large for zod's asynchronous check. What another agent's adapter calls
   * (`toAgentTool` of `@loopwright/agent`) so a tool it runs is checked as a toolset checks it.
   */
  check(args: unknown): Promise<z.output<Input>>;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Defines a tool once: `execute`'s argument is typed from `input`, and the declaration the model
 * is sent is generated from the same schema (`z.toJSONSchema(input, { io: "input" })`, so a field
 * with a default stays optional for the model and arrives filled in for `execute`).
 *
 * Throws `ToolInputError` (`invalid-tool`) for a name chat-completions refuses, a missing
 * description or `execute`, or an `input` that is not an object schema or cannot be written as
 * JSON Schema, or whose JSON Schema (through `.meta({ patternProperties })`) holds a
 * `patternProperties` pattern that may backtrack exponentially where a parameter named after an
 * `Object.prototype` member depends on it (`backtrackingPatterns` in `@loopwright/schema-compat`;
 * the message names the schema path and the pattern), or a `.regex()` whose flags no JSON Schema
 * pattern can hold exactly (`z.toJSONSchema` writes the source alone, dropping them): `i` with a
 * character past ASCII, with `u` or `v` where a letter is in play (Unicode case folding), or with a
 * backreference; the message names the path, the expression and why. A flag that can be held is
 * written into the pattern the model is shown: `i` as both cases of each ASCII letter (`/^abc$/i` →
 * `^[aA][bB][cC]$`), `s`'s `.` as `[\s\S]`, `m`'s `^` and `$` as lookarounds naming the line
 * terminators, `y` as a leading `^(?:…)`; `g`, `d`, `u` and `v` change nothing. Types refuse a schema whose input is not an object (`z.string()`); a union of
 * object schemas type-checks but is refused here at run time. Never calls `execute`.
 */
export function defineTool<Input extends ObjectSchema>(spec: ToolSpec<Input>): Tool<Input> {
  const name = typeof spec?.name === "string" ? spec.name : "";
  const refuse = (why: string, cause?: unknown): never => {
    throw new ToolInputError("invalid-tool", name, `defineTool: ${name === "" ? "a tool" : name} ${why}`, {
      cause,
    });
  };
  if (!NAME.test(name))
    refuse("needs a name of 1 to 64 letters, digits, _ or - (chat-completions refuses others).");
  if (typeof spec.description !== "string" || spec.description.trim() === "")
    refuse("needs a description: it is what the model reads to choose it.");
  if (typeof spec.execute !== "function") refuse("needs an execute function.");
  if (!(spec.input instanceof z.ZodType))
    refuse("needs an input zod schema, e.g. z.object({ path: z.string() }).");
  let parameters: { [keyword: string]: unknown } = {};
  const flagRefusals: FlagRefusal[] = [];
  try {
    parameters = z.toJSONSchema(spec.input, {
      io: "input",
      override: flagOverride(flagRefusals) as never,
    }) as { [keyword: string]: unknown };
  } catch (cause) {
    refuse(
      "has an input schema that cannot be written as JSON Schema (a transform or a custom type?).",
      cause,
    );
  }
  const flagged = flagRefusals[0];
  if (flagged !== undefined)
    refuse(
      `has a regular expression ${flagged.expression} at ${flagged.path} whose flags no JSON Schema pattern can hold exactly ` +
        `(${flagged.why}): the model would be shown a pattern other than the one its arguments are checked with. ` +
        "Write the flag's meaning into the expression and drop the flag (for i, [Aa] for each letter; see the README).",
    );
  if (parameters.type !== "object")
    refuse("needs an object input schema: a model's arguments are a JSON object.");
  const proto = protoPath(parameters);
  if (proto !== undefined)
    refuse(
      `declares a parameter named __proto__ (at ${proto}): zod never reads that key, so a value the model sent there could not reach execute. Name it otherwise.`,
    );
  const backtracking = backtrackingRefusal(parameters);
  if (backtracking !== undefined) refuse(backtracking);
  const { $schema: _dialect, ...declared } = parameters;
  const input = readerOf(spec.input) as Input;
  const tool: Tool<Input> = {
    ...spec,
    declaration: {
      type: "function",
      function: { name, description: spec.description, parameters: declared },
    },
    parse(args: unknown): z.output<Input> {
      const refused = shapeRefusal(name, args);
      if (refused !== undefined) throw refused;
      const checked = input.safeParse(withAbsentKeys(args, parameters));
      if (checked.success) return withAbsentKeys(checked.data, parameters) as z.output<Input>;
      throw refusal(name, checked.error);
    },
    check: (args: unknown) => checkArguments(tool, args),
  };
  readers.set(tool, input);
  return tool;
}

/** The schema each tool's arguments are checked with: its `input`, pipes and prefaults filled (see `readerOf`). */
const readers = new WeakMap<object, z.ZodType>();

/**
 * Whether `value` is an object `mendAlong` looks into: an ordinary one of any realm (its prototype
 * this realm's `Object.prototype` or a `node:vm` context's, see `isPlainPrototype`), one
 * `argumentsPrototype` gave its prototype, or one without a prototype (a host's own parser's, or
 * `Object.create(null)`): that one inherits no name to hide, but an ordinary object under it may.
 */
function isPlain(value: object): boolean {
  return isPlainPrototype(Object.getPrototypeOf(value));
}

/** JSON Schema keywords whose value is data, not a schema. */
const DATA_KEYWORDS = new Set(["default", "const", "enum", "examples"]);

/**
 * Where `schema` (a tool's input-mode JSON Schema) declares a property named `__proto__`, as an
 * argument path (`opts.__proto__`, `list[].__proto__`, `(Node).__proto__` in a definition), or
 * `undefined`. zod never reads such a key (its object schema skips it), so a value the model sent
 * under it could not reach `execute`.
 */
function protoPath(schema: SchemaNode): string | undefined {
  const seen = new Set<object>();
  const stack: [unknown, string][] = [[schema, ""]];
  while (stack.length > 0) {
    const [node, path] = stack.pop() as [unknown, string];
    if (typeof node !== "object" || node === null || seen.has(node)) continue;
    seen.add(node);
    if (Array.isArray(node)) {
      for (const child of node) stack.push([child, path]);
      continue;
    }
    for (const keyword of Object.keys(node)) {
      // A value given as data (a default, an example) names no parameter.
      if (DATA_KEYWORDS.has(keyword)) continue;
      const child = (node as SchemaNode)[keyword];
      if (keyword === "properties" && typeof child === "object" && child !== null) {
        for (const name of Object.keys(child)) {
          const at = path === "" ? name : `${path}.${name}`;
          if (name === "__proto__") return at;
          stack.push([(child as SchemaNode)[name], at]);
        }
      } else if (keyword === "items" || keyword === "prefixItems") {
        stack.push([child, `${path}[]`]);
      } else if (keyword === "additionalProperties" || keyword === "patternProperties") {
        stack.push([child, `${path}[key]`]);
      } else if (
        (keyword === "$defs" || keyword === "definitions") &&
        typeof child === "object" &&
        child !== null
      ) {
        for (const name of Object.keys(child)) stack.push([(child as SchemaNode)[name], `(${name})`]);
      } else {
        stack.push([child, path]);
      }
    }
  }
  return undefined;
}

type SchemaNode = { [keyword: string]: unknown };

/** Per declared JSON Schema (made here, never changed after): whether it names an inherited member as a property anywhere. */
const shadowCache = new WeakMap<object, boolean>();

/** `declaresInheritedName(schema)`, once per schema: `parse` asks it on every call. */
function namesInherited(schema: object): boolean {
  let found = shadowCache.get(schema);
  if (found === undefined) {
    found = declaresInheritedName(schema);
    shadowCache.set(schema, found);
  }
  return found;
}

/** `key` of `target` set as an ordinary own data property (an own `__proto__` key too, never the setter). */
function put(target: object, key: string, value: unknown, enumerable: boolean): void {
  Object.defineProperty(target, key, protoless({ value, enumerable, writable: true, configurable: true }));
}

/**
 * `value` (a plain object) copied without running a getter (a `.transform()` may have made it):
 * a spread when it holds only enumerable data keys (what zod makes), else key by key from its
 * descriptors, every key left configurable so `put` can set it.
 */
function copyOf(value: object): SchemaNode {
  const keys = Object.keys(value);
  let plain =
    Object.getOwnPropertyNames(value).length === keys.length &&
    Object.getOwnPropertySymbols(value).length === 0;
  for (let at = 0; plain && at < keys.length; at++) {
    plain = "value" in (ownDescriptor(value, keys[at] as string) as PropertyDescriptor);
  }
  if (plain) return { ...(value as SchemaNode) };
  const out: SchemaNode = {};
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = ownDescriptor(value, key) as PropertyDescriptor;
    if ("value" in descriptor) descriptor.writable = true;
    descriptor.configurable = true;
    Object.defineProperty(out, key, descriptor);
  }
  return out;
}

/**
 * `value` with `reshape` applied at every plain object (see `isPlain`) at a place `schema`
 * declares properties, deepest first (see `mapAlongSchema`); an object or array holding a rewritten
 * child is handed on as a copy, so nothing given is written into. Only own data properties are
 * followed (no getter is run to look inside).
 */
function mendAlong(value: unknown, schema: SchemaNode): unknown {
  return mapAlongSchema(value, schema, (object, place) => {
    if (!isPlain(object)) return object;
    const changed = new Map<string, unknown>();
    for (const key of Object.keys(object)) {
      const descriptor = ownDescriptor(object, key);
      if (descriptor === undefined || !("value" in descriptor)) continue;
      const mended = place.walk(descriptor.value, key);
      if (mended !== descriptor.value) changed.set(key, mended);
    }
    return reshape(object as SchemaNode, place.inherited, changed);
  });
}

/**
 * What `withAbsentKeys` hands on for `value`, a plain object at a place
 * the schema declares properties: where it declares an inherited name, a copy (see `copyOf`) whose
 * prototype is `argumentsPrototype(inherited)`; elsewhere `value` itself unless a child was rewritten (then a
 * copy). Rewritten children are put in; a frozen, sealed or closed object (`.readonly()`) stays so.
 */
function reshape(
  value: SchemaNode,
  inherited: ReadonlySet<string>,
  changed: ReadonlyMap<string, unknown>,
): unknown {
  const bare = Object.getPrototypeOf(value) === null;
  // An object without a prototype hides nothing; only its rewritten children make it a copy.
  if ((bare || inherited.size === 0) && changed.size === 0) return value;
  const out = copyOf(value);
  if (bare) Object.setPrototypeOf(out, null);
  else if (inherited.size > 0) Object.setPrototypeOf(out, argumentsPrototype(inherited));
  for (const [key, mended] of changed) put(out, key, mended, true);
  if (Object.isFrozen(value)) Object.freeze(out);
  else if (Object.isSealed(value)) Object.seal(out);
  else if (!Object.isExtensible(value)) Object.preventExtensions(out);
  return out;
}

/**
 * `value` (a call's arguments, or what zod made of them) as the schema is to read it and `execute`
 * to get it, for a tool whose JSON Schema names a property after an `Object.prototype` member
 * (`constructor`, `toString`, `valueOf`…): every plain object at a place the schema declares such a
 * property is handed on as a copy whose prototype lacks those names (`argumentsPrototype` from `@loopwright/schema-compat`). Going in, a
 * left-out one is then truly absent for zod (`in` false, reads `undefined`): `.optional()`,
 * `.exactOptional()` and `.default()` read it as left out, not as the inherited function. Coming
 * out (zod builds ordinary objects, and a `.default()`, `.catch()` or `.transform()` hands on
 * objects of its own), `execute` finds it `undefined`, not an own key (`Object.hasOwn` false) and
 * listed by nothing, and a host assigning it later (`args.toString ??= "x"`) makes an ordinary
 * enumerable own property that JSON, spreading and `structuredClone` carry. Only the objects on the
 * way to such a place are copied; nothing given, nor made by zod or a `.transform()`, is written
 * into. Other tools' values are handed on as they are.
 */
function withAbsentKeys(value: unknown, schema: SchemaNode): unknown {
  if (!namesInherited(schema)) return value;
  return mendAlong(value, schema);
}

/** A zod schema's definition, read field by field. */
type Def = { [field: string]: unknown; type: string };

/**
 * The schemas `node` holds, by the field of its definition they are in: a schema field (`in`,
 * `out`, `innerType`, `element`, `catchall`…), a list of them (`options`, `items`), an object's
 * `shape`, or a lazy's resolved schema (under `getter`). Data fields only: no getter of the
 * definition is run but zod's own `shape` (and a lazy's, which zod runs to parse anyway).
 */
function fieldsOf(node: z.ZodType): Map<string, z.ZodType | z.ZodType[] | Map<string, z.ZodType>> {
  const def = node._zod.def as unknown as Def;
  const fields = new Map<string, z.ZodType | z.ZodType[] | Map<string, z.ZodType>>();
  if (def.type === "lazy") {
    const inner = (node._zod as unknown as { innerType?: unknown }).innerType;
    if (inner instanceof z.ZodType) fields.set("getter", inner);
    return fields;
  }
  for (const key of Object.getOwnPropertyNames(def)) {
    if (key === "checks") continue;
    if (key === "shape") {
      const shape = def.shape;
      if (typeof shape !== "object" || shape === null) continue;
      const entries = new Map<string, z.ZodType>();
      for (const name of Object.keys(shape)) {
        const child = (shape as { [name: string]: unknown })[name];
        if (child instanceof z.ZodType) entries.set(name, child);
      }
      fields.set(key, entries);
      continue;
    }
    const descriptor = ownDescriptor(def, key);
    const field = descriptor !== undefined && "value" in descriptor ? descriptor.value : undefined;
    if (field instanceof z.ZodType) fields.set(key, field);
    else if (Array.isArray(field) && field.length > 0 && field.every((item) => item instanceof z.ZodType)) {
      fields.set(key, field as z.ZodType[]);
    }
  }
  return fields;
}

/** Every schema a field of `fieldsOf` holds. */
function schemasIn(field: z.ZodType | z.ZodType[] | Map<string, z.ZodType>): z.ZodType[] {
  return field instanceof z.ZodType ? [field] : Array.isArray(field) ? field : [...field.values()];
}

/**
 * `schema` with every pipe whose output side reads an object naming an `Object.prototype` member
 * (`z.preprocess(fn, z.object({ constructor: … }))`, at the top, nested or inside a recursive
 * schema) given `withAbsentKeys` between its two sides, and every `.prefault(…)` of such an object
 * given it before its inner schema: a preprocess that copies its input (`{ ...v }`,
 * `structuredClone`), or the prefault value zod substitutes, is an ordinary object that inherits
 * `constructor` again, which the object schema would read. The fill works on a copy, so what the
 * host's function returned is never written into. Only the schemas on the way to such a pipe or
 * prefault are rebuilt (zod's `clone`, with
 * the same definition but for the rebuilt field; a way back into a schema being rebuilt goes
 * through a `z.lazy`); the host's schema is not changed, and one with no such pipe is used as it is.
 */
function readerOf(schema: z.ZodType): z.ZodType {
  // Every schema reachable, what each holds, and the pipes and prefaults that need the fill.
  const held = new Map<z.ZodType, ReturnType<typeof fieldsOf>>();
  const fills = new Map<z.ZodType, { field: string; declared: SchemaNode }>();
  const heldBy = new Map<z.ZodType, z.ZodType[]>();
  const pending: z.ZodType[] = [schema];
  while (pending.length > 0) {
    const node = pending.pop() as z.ZodType;
    if (held.has(node)) continue;
    const fields = fieldsOf(node);
    held.set(node, fields);
    const def = node._zod.def as unknown as Def;
    // A pipe's output side reads what its input side made; a prefault's inner schema reads the
    // prefault value zod substitutes for a left-out one (a fresh ordinary object).
    const field = def.type === "pipe" ? "out" : def.type === "prefault" ? "innerType" : undefined;
    const reads = field === undefined ? undefined : def[field];
    if (field !== undefined && reads instanceof z.ZodType) {
      try {
        const declared = z.toJSONSchema(reads, { io: "input" }) as SchemaNode;
        if (namesInherited(declared)) fills.set(node, { field, declared });
      } catch {
        // A side JSON Schema cannot write (a transform) is not an object schema: no fill.
      }
    }
    for (const field of fields.values()) {
      for (const child of schemasIn(field)) {
        const parents = heldBy.get(child);
        if (parents === undefined) heldBy.set(child, [node]);
        else parents.push(node);
        pending.push(child);
      }
    }
  }
  if (fills.size === 0) return schema;
  // The schemas on the way to such a pipe or prefault: those, and whatever holds one of them.
  const onTheWay = new Set<z.ZodType>(fills.keys());
  const up = [...fills.keys()];
  while (up.length > 0) {
    for (const parent of heldBy.get(up.pop() as z.ZodType) ?? []) {
      if (!onTheWay.has(parent)) {
        onTheWay.add(parent);
        up.push(parent);
      }
    }
  }
  const rebuilt = new Map<z.ZodType, z.ZodType>();
  const building = new Set<z.ZodType>();
  const rebuild = (node: z.ZodType): z.ZodType => {
    if (!onTheWay.has(node)) return node;
    const done = rebuilt.get(node);
    if (done !== undefined) return done;
    if (building.has(node)) return z.lazy(() => rebuilt.get(node) ?? node);
    building.add(node);
    const def = node._zod.def as unknown as Def;
    const replaced = new Map<string, unknown>();
    for (const [key, field] of held.get(node) ?? []) {
      if (field instanceof z.ZodType) replaced.set(key, rebuild(field));
      else if (Array.isArray(field)) replaced.set(key, field.map(rebuild));
      else {
        const shape: SchemaNode = { ...(def.shape as SchemaNode) };
        for (const [name, child] of field) put(shape, name, rebuild(child), true);
        replaced.set(key, shape);
      }
    }
    const fill = fills.get(node);
    if (fill !== undefined) {
      replaced.set(
        fill.field,
        z.preprocess((value) => withAbsentKeys(value, fill.declared), replaced.get(fill.field) as z.ZodType),
      );
    }
    const descriptors = ownDescriptors(def) as { [key: string]: PropertyDescriptor };
    // A lazy caches what its getter gave on its definition; the copy must ask the new getter.
    delete descriptors._cachedInner;
    for (const [key, value] of replaced) {
      const field = key === "getter" && def.type === "lazy" ? () => value : value;
      descriptors[key] = protoless({ value: field, enumerable: true, writable: true, configurable: true });
    }
    const copy = node.clone(Object.defineProperties({}, descriptors) as typeof node._zod.def);
    rebuilt.set(node, copy);
    building.delete(node);
    return copy;
  };
  return rebuild(schema);
}

/** How many mismatches a refusal's message names before it only counts the rest. */
const NAMED_ISSUES = 10;

/** How much of a key the model wrote a path shows, and how much of zod's message an issue keeps. */
const KEY_CHARS = 60;
const MESSAGE_CHARS = 300;

/**
 * `text` cut to `max` characters, saying how long it was: the model wrote it, so it can be any size,
 * and any code units — a lone surrogate it holds (a key the model wrote, quoted by zod) is written
 * U+FFFD, so the refusal a tool result carries back is text every server takes.
 */
export function shorten(text: string, max: number): string {
  const sound = text.toWellFormed();
  if (sound.length <= max) return sound;
  // One code unit short where the cut would split a surrogate pair (an emoji): a lone half is text
  // a server reading UTF-8 refuses.
  const code = sound.charCodeAt(max - 1);
  return `${sound.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max)}… (${text.length} characters)`;
}

/**
 * C0 and C1 controls, DEL, the Unicode line and paragraph separators, and the bidirectional marks,
 * embeddings, overrides and isolates: what {@link echoed} writes as `\uXXXX` (the set
 * `@loopwright/tools-mcp`'s `echoedName` escapes in its call errors).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** `text` with each character of `CONTROLS` written `\uXXXX`. */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * Text the model wrote (a tool's name, an argument's key) as a refusal echoes it: cut to `max`
 * characters with its length said, half a surrogate pair written U+FFFD (see `shorten`), and each
 * control character — a terminal's escape, a line break, a NUL, a right-to-left override — written
 * `\uXXXX`. A refusal is a tool result the model is sent again on every later step, and a host may
 * log it or show it in a terminal.
 */
export function echoed(text: string, max: number): string {
  return escapeControls(shorten(text, max));
}

/**
 * zod's message for an issue, as a refusal carries it: each key an `unrecognized_keys` issue names
 * (zod quotes them raw, and the model made them up) echoed (see `echoed`), wherever the message
 * quotes it, then the whole message cut to `MESSAGE_CHARS` with its control characters escaped, as
 * a refinement's own message may quote the arguments too.
 */
function issueMessage(found: z.core.$ZodIssue): string {
  let message = found.message;
  if (found.code === "unrecognized_keys") {
    // One pass from left to right, each key looked for after the one before: a call with 100,000
    // made-up keys is not read 100,000 times.
    let out = "";
    let from = 0;
    for (const key of found.keys) {
      const quoted = `"${key}"`;
      const at = message.indexOf(quoted, from);
      if (at < 0) continue;
      out += `${message.slice(from, at)}"${echoed(key, KEY_CHARS)}"`;
      from = at + quoted.length;
    }
    message = out + message.slice(from);
  }
  return escapeControls(shorten(message, MESSAGE_CHARS));
}

/** How much of an argument path a refusal shows: its start and its end. */
const PATH_CHARS = 240;
const PATH_HEAD = 80;

/**
 * An argument path cut to `PATH_CHARS`: its start and its end (where the wrong value is), joined by
 * `…`. Each key in it is already cut to `KEY_CHARS`, but arguments nested 500 deep made a path of
 * 30,000 characters, ten of them in one refusal the model reads. Never cuts a surrogate pair.
 */
function shortenPath(path: string): string {
  if (path.length <= PATH_CHARS) return path;
  let head = PATH_HEAD;
  const last = path.charCodeAt(head - 1);
  if (last >= 0xd800 && last <= 0xdbff) head--;
  let tail = path.length - (PATH_CHARS - PATH_HEAD - 1);
  const first = path.charCodeAt(tail);
  if (first >= 0xdc00 && first <= 0xdfff) tail++;
  return `${path.slice(0, head)}…${path.slice(tail)}`;
}

/**
 * Where `value` (a call's arguments) holds an own key named `__proto__`, as an argument path
 * (`__proto__`, `opts.__proto__`, `list[2].__proto__`), or `undefined`. `JSON.parse` makes such a
 * key an ordinary own property, but zod drops it wherever it keeps other keys (a record, a loose
 * object, a catchall), so the value could never reach `execute`; and where it is kept (`z.any()`),
 * the tool's own `Object.assign` or `target[key] = value` would set a prototype with it. Walked
 * level by level (no recursion: any depth), each object once (a cycle a host built ends).
 */
function protoKeyPath(value: unknown): string | undefined {
  const seen = new Set<object>();
  let level: [unknown, string][] = [[value, ""]];
  while (level.length > 0) {
    const next: [unknown, string][] = [];
    for (const [item, path] of level) {
      if (typeof item !== "object" || item === null || seen.has(item)) continue;
      seen.add(item);
      if (Array.isArray(item)) {
        for (let at = 0; at < item.length; at++) next.push([item[at], `${path}[${at}]`]);
        continue;
      }
      for (const key of Object.keys(item)) {
        const at = path === "" ? echoed(key, KEY_CHARS) : `${path}.${echoed(key, KEY_CHARS)}`;
        if (key === "__proto__") return shortenPath(at);
        next.push([(item as SchemaNode)[key], at]);
      }
    }
    level = next;
  }
  return undefined;
}

/**
 * The deepest nesting of objects and arrays `dispatch` and `parse` hand to a tool's schema (512 levels, the
 * depth `@loopwright/tool-calls` reads a model's JSON to, so nothing `runAgentLoop` passes on is
 * refused here). zod checks a recursive schema by recursing, so deeper arguments, which only a host
 * calling `dispatch` or `parse` itself can pass, would overflow the stack.
 */
export const MAX_ARGUMENT_DEPTH = 512;

/**
 * True when an object or array in `value` lies deeper than `max` levels (the value itself is level
 * 0). Level by level, each level's objects counted once, so a cycle a host built ends (it is as deep
 * as it goes) and shared branches are not walked again and again.
 */
function nestsDeeper(value: unknown, max: number): boolean {
  let level: Set<object> = new Set();
  if (typeof value === "object" && value !== null) level.add(value);
  for (let depth = 0; level.size > 0; depth++) {
    if (depth >= max) return true;
    const next = new Set<object>();
    for (const item of level) {
      for (const child of Array.isArray(item) ? item : Object.values(item)) {
        if (typeof child === "object" && child !== null) next.add(child);
      }
    }
    level = next;
  }
  return false;
}

/**
 * The `invalid-arguments` error for arguments no schema is handed: nested deeper than
 * `MAX_ARGUMENT_DEPTH`, or holding a `__proto__` key (see `protoKeyPath`); else `undefined`.
 */
function shapeRefusal(name: string, args: unknown): ToolInputError | undefined {
  if (nestsDeeper(args, MAX_ARGUMENT_DEPTH)) {
    return new ToolInputError(
      "invalid-arguments",
      name,
      `${name} was not run: its arguments are nested deeper than ${MAX_ARGUMENT_DEPTH} levels. Call it again with arguments nested less deeply.`,
      { issues: [{ path: "", message: `nested deeper than ${MAX_ARGUMENT_DEPTH} levels` }] },
    );
  }
  const path = protoKeyPath(args);
  if (path === undefined) return undefined;
  const message = "a key named __proto__ cannot reach the tool; leave it out or name it otherwise";
  return new ToolInputError(
    "invalid-arguments",
    name,
    `${name} was not run: its arguments hold a key named __proto__ (at ${path}), which JavaScript reads as an object's prototype (zod drops it from a record or a loose object). Call it again without it.`,
    { issues: [{ path, message }] },
  );
}

/** The `invalid-arguments` error for `error`'s issues: each in `issues`, the first few in the message. */
function refusal(name: string, error: z.ZodError): ToolInputError {
  const issues: ArgumentIssue[] = error.issues.map((found) => ({
    path: shortenPath(
      found.path
        .map((part, at) => {
          const key = echoed(String(part), KEY_CHARS);
          return typeof part === "number" ? `[${part}]` : at === 0 ? key : `.${key}`;
        })
        .join(""),
    ),
    // zod quotes unrecognised keys in its message, and the model made those up.
    message: issueMessage(found),
  }));
  const named = issues
    .slice(0, NAMED_ISSUES)
    .map(({ path, message }) => (path === "" ? message : `${path}: ${message}`));
  if (issues.length > NAMED_ISSUES) named.push(`and ${issues.length - NAMED_ISSUES} more`);
  return new ToolInputError(
    "invalid-arguments",
    name,
    `${name} was not run: its arguments do not match its schema (${named.join("; ")}). Call it again with arguments that do.`,
    { issues },
  );
}

/**
 * The `invalid-arguments` error for a stack overflow inside zod's checker, or `undefined` for any
 * other error (a refinement's own, which passes through). zod 4's asynchronous path gathers each
 * element's issues onto its parent with one spread call, which overflows the stack at about
 * 200,000 issues (an array that long of wrong values).
 */
function overflowRefusal(name: string, error: unknown): ToolInputError | undefined {
  if (!(error instanceof RangeError) || !/call stack/i.test(error.message)) return undefined;
  return new ToolInputError(
    "invalid-arguments",
    name,
    `${name} was not run: its arguments are too large to check against its schema (the check ran out of stack). Call it again with fewer values.`,
    { cause: error },
  );
}

/**
 * Checks a call's arguments against `tool.input`, awaiting any asynchronous refinement: the parsed
 * arguments, or a rejection with `ToolInputError` (`invalid-arguments`) naming the mismatches.
 */
export async function checkArguments<Input extends ObjectSchema>(
  tool: Tool<Input>,
  args: unknown,
): Promise<z.output<Input>> {
  const parameters = tool.declaration.function.parameters;
  const refused = shapeRefusal(tool.declaration.function.name, args);
  if (refused !== undefined) throw refused;
  const input = readers.get(tool) ?? tool.input;
  let checked: Awaited<ReturnType<typeof input.safeParseAsync>>;
  try {
    checked = await input.safeParseAsync(withAbsentKeys(args, parameters));
  } catch (error) {
    throw overflowRefusal(tool.declaration.function.name, error) ?? error;
  }
  if (checked.success) return withAbsentKeys(checked.data, parameters) as z.output<Input>;
  throw refusal(tool.declaration.function.name, checked.error);
}
