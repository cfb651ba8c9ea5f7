import { z } from "zod";
import { type ArgumentIssue, ToolInputError } from "./errors.js";

/** What `execute` is handed besides its arguments. */
export interface ToolContext {
  /** The call's id, as the model gave it. */
  id: string;
  /** Aborted when the run is stopped. */
  signal?: AbortSignal;
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
   * (`invalid-arguments`) with every mismatch in `issues` and the first ten named in its message.
   * A schema with an asynchronous refinement throws zod's own error here; a toolset's `dispatch`
   * awaits it.
   */
  parse(args: unknown): z.output<Input>;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Defines a tool once: `execute`'s argument is typed from `input`, and the declaration the model
 * is sent is generated from the same schema (`z.toJSONSchema(input, { io: "input" })`, so a field
 * with a default stays optional for the model and arrives filled in for `execute`).
 *
 * Throws `ToolInputError` (`invalid-tool`) for a name chat-completions refuses, a missing
 * description or `execute`, or an `input` that is not an object schema or cannot be written as
 * JSON Schema. Types refuse a schema whose input is not an object (`z.string()`); a union of
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
  try {
    parameters = z.toJSONSchema(spec.input, { io: "input" }) as { [keyword: string]: unknown };
  } catch (cause) {
    refuse(
      "has an input schema that cannot be written as JSON Schema (a transform or a custom type?).",
      cause,
    );
  }
  if (parameters.type !== "object")
    refuse("needs an object input schema: a model's arguments are a JSON object.");
  const { $schema: _dialect, ...declared } = parameters;
  const input = spec.input;
  return {
    ...spec,
    declaration: {
      type: "function",
      function: { name, description: spec.description, parameters: declared },
    },
    parse(args: unknown): z.output<Input> {
      const checked = input.safeParse(withAbsentKeys(args, parameters));
      if (checked.success) return checked.data as z.output<Input>;
      throw refusal(name, checked.error);
    },
  };
}

/** How deep `withAbsentKeys` follows the arguments; below it a value is handed on as it is (dispatch refuses deeper anyway). */
const FILL_DEPTH = 512;

/** The `Object.prototype` members a parameter may be named after (`__proto__` aside: it reads as the prototype). */
const INHERITED = new Set(
  Object.getOwnPropertyNames(Object.prototype).filter((name) => name !== "__proto__"),
);

type SchemaNode = { [keyword: string]: unknown };

/** Per declared JSON Schema: whether it names an inherited member as a property anywhere. */
const shadowCache = new WeakMap<object, boolean>();

/** Whether `schema` (at any depth, `$defs` included) names a property that `Object.prototype` also has. */
function namesInherited(schema: object): boolean {
  const cached = shadowCache.get(schema);
  if (cached !== undefined) return cached;
  let found = false;
  const seen = new Set<object>();
  const stack: unknown[] = [schema];
  while (stack.length > 0 && !found) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null || seen.has(node)) continue;
    seen.add(node);
    const properties = (node as { properties?: unknown }).properties;
    if (typeof properties === "object" && properties !== null && !Array.isArray(properties)) {
      for (const key of Object.keys(properties)) if (INHERITED.has(key)) found = true;
    }
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push(child);
  }
  shadowCache.set(schema, found);
  return found;
}

/** `node[keyword]` when `node` holds it as its own (a schema's `properties` never lends `constructor`). */
function own(node: unknown, keyword: string): unknown {
  return typeof node === "object" && node !== null && Object.hasOwn(node, keyword)
    ? (node as SchemaNode)[keyword]
    : undefined;
}

/** The schema objects `node` stands for: itself, what its `$ref` names, and its `allOf`/`anyOf`/`oneOf` branches. */
function schemaNodes(root: SchemaNode, node: unknown, into: SchemaNode[]): SchemaNode[] {
  const seen = new Set<object>();
  const stack: unknown[] = [node];
  while (stack.length > 0) {
    const next = stack.pop();
    if (typeof next !== "object" || next === null || Array.isArray(next) || seen.has(next)) continue;
    seen.add(next);
    into.push(next as SchemaNode);
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

/** `key` of `target` set as an ordinary own data property (an own `__proto__` key too, never the setter). */
function put(target: object, key: string, value: unknown, enumerable: boolean): void {
  Object.defineProperty(target, key, { value, enumerable, writable: true, configurable: true });
}

/**
 * `args` as the schema is to read them: for a tool whose JSON Schema names a property after an
 * `Object.prototype` member (`constructor`, `toString`, `valueOf`…), every plain object at a place
 * the schema declares such a property, and that does not hold it, is handed on as a copy holding it
 * as an own `undefined` (not enumerable), so zod finds it absent rather than reading the inherited
 * function. Only the objects on the way to such a place are copied (ordinary objects, prototype
 * kept); `args` itself is never written into, nothing the schema does not declare is followed,
 * and arrays are walked by index (any length). Other tools' arguments are handed on as they are.
 */
function withAbsentKeys(args: unknown, schema: SchemaNode): unknown {
  if (!namesInherited(schema)) return args;
  const fill = (value: unknown, nodes: readonly SchemaNode[], depth: number): unknown => {
    if (typeof value !== "object" || value === null || nodes.length === 0 || depth > FILL_DEPTH) return value;
    if (Array.isArray(value)) {
      const items: SchemaNode[] = [];
      let longestPrefix = 0;
      for (const node of nodes) {
        const prefix = own(node, "prefixItems");
        if (Array.isArray(prefix)) longestPrefix = Math.max(longestPrefix, prefix.length);
        schemaNodes(schema, own(node, "items"), items);
      }
      let out: unknown[] | undefined;
      for (let at = 0; at < value.length; at++) {
        let itemNodes: readonly SchemaNode[] = items;
        if (at < longestPrefix) {
          const these = [...items];
          for (const node of nodes) {
            const prefix = own(node, "prefixItems");
            if (Array.isArray(prefix) && at < prefix.length) schemaNodes(schema, prefix[at], these);
          }
          itemNodes = these;
        }
        const item = value[at];
        const filled = fill(item, itemNodes, depth + 1);
        if (filled !== item) {
          out ??= value.slice();
          out[at] = filled;
        }
      }
      return out ?? value;
    }
    if (Object.getPrototypeOf(value) !== Object.prototype) return value;
    const changed = new Map<string, unknown>();
    for (const key of Object.keys(value)) {
      const childNodes: SchemaNode[] = [];
      for (const node of nodes) {
        const properties = own(node, "properties");
        const declared = own(properties, key);
        if (declared !== undefined) schemaNodes(schema, declared, childNodes);
        else schemaNodes(schema, own(node, "additionalProperties"), childNodes);
      }
      const child = (value as SchemaNode)[key];
      const filled = fill(child, childNodes, depth + 1);
      if (filled !== child) changed.set(key, filled);
    }
    const absent = new Set<string>();
    for (const node of nodes) {
      const properties = own(node, "properties");
      if (typeof properties !== "object" || properties === null) continue;
      for (const key of Object.keys(properties)) {
        if (INHERITED.has(key) && !Object.hasOwn(value, key)) absent.add(key);
      }
    }
    if (changed.size === 0 && absent.size === 0) return value;
    const out: SchemaNode = { ...(value as SchemaNode) };
    for (const [key, filled] of changed) put(out, key, filled, true);
    for (const key of absent) put(out, key, undefined, false);
    return out;
  };
  return fill(args, schemaNodes(schema, schema, []), 0);
}

/** How many mismatches a refusal's message names before it only counts the rest. */
const NAMED_ISSUES = 10;

/** How much of a key the model wrote a path shows, and how much of zod's message an issue keeps. */
const KEY_CHARS = 60;
const MESSAGE_CHARS = 300;

/** `text` cut to `max` characters, saying how long it was: the model wrote it, so it can be any size. */
export function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  // One code unit short where the cut would split a surrogate pair (an emoji): a lone half is text
  // a server reading UTF-8 refuses.
  const code = text.charCodeAt(max - 1);
  return `${text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max)}… (${text.length} characters)`;
}

/** The `invalid-arguments` error for `error`'s issues: each in `issues`, the first few in the message. */
function refusal(name: string, error: z.ZodError): ToolInputError {
  const issues: ArgumentIssue[] = error.issues.map((found) => ({
    path: found.path
      .map((part, at) => {
        const key = shorten(String(part), KEY_CHARS);
        return typeof part === "number" ? `[${part}]` : at === 0 ? key : `.${key}`;
      })
      .join(""),
    // zod quotes unrecognised keys in its message, and the model made those up.
    message: shorten(found.message, MESSAGE_CHARS),
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
 * Checks a call's arguments against `tool.input`, awaiting any asynchronous refinement: the parsed
 * arguments, or a rejection with `ToolInputError` (`invalid-arguments`) naming the mismatches.
 */
export async function checkArguments<Input extends ObjectSchema>(
  tool: Tool<Input>,
  args: unknown,
): Promise<z.output<Input>> {
  const checked = await tool.input.safeParseAsync(withAbsentKeys(args, tool.declaration.function.parameters));
  if (checked.success) return checked.data as z.output<Input>;
  throw refusal(tool.declaration.function.name, checked.error);
}
