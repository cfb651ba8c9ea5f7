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
 * What `defineTool` reads: one tool, written once. `Input` is a zod schema whose input is an object
 * (`z.object(…)`, with `.strict()`, defaults or a `.transform()` after it); `z.string()` and other
 * non-object schemas do not compile. A union of object schemas compiles but is refused by
 * `defineTool` at run time (`invalid-tool`): its JSON Schema is not `type: "object"`.
 */
export interface ToolSpec<Input extends z.ZodType<unknown, Record<string, unknown>>> {
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
export interface Tool<
  Input extends z.ZodType<unknown, Record<string, unknown>> = z.ZodType<unknown, Record<string, unknown>>,
> extends ToolSpec<Input> {
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
export function defineTool<Input extends z.ZodType<unknown, Record<string, unknown>>>(
  spec: ToolSpec<Input>,
): Tool<Input> {
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
      const checked = input.safeParse(ownOnly(args));
      if (checked.success) return shadowInherited(checked.data, shadowedBy(parameters)) as z.output<Input>;
      throw refusal(name, checked.error);
    },
  };
}

/** How deep `ownOnly` copies; below it a value is handed on as it is (dispatch refuses deeper anyway). */
const COPY_DEPTH = 512;

/**
 * `args` with every plain object in it (at any depth, inside arrays too) copied into an object with
 * no prototype, so a schema reads only the keys the model wrote: an optional parameter named like
 * an `Object.prototype` member (`constructor`, `toString`, `valueOf`…) that the call leaves out is
 * absent, not the inherited function. Arrays are copied as arrays; anything else is kept as it is.
 * Shared and cyclic objects are copied once. Never changes `args`.
 */
function ownOnly(args: unknown): unknown {
  const copies = new Map<object, unknown>();
  const copy = (value: unknown, depth: number): unknown => {
    if (typeof value !== "object" || value === null || depth > COPY_DEPTH) return value;
    const done = copies.get(value);
    if (done !== undefined) return done;
    if (Array.isArray(value)) {
      const out: unknown[] = [];
      copies.set(value, out);
      for (const item of value) out.push(copy(item, depth + 1));
      return out;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return value;
    const out: Record<string, unknown> = Object.create(null);
    copies.set(value, out);
    for (const key of Object.keys(value)) {
      out[key] = copy((value as Record<string, unknown>)[key], depth + 1);
    }
    return out;
  };
  return copy(args, 0);
}

/** The `Object.prototype` members a parameter may be named after (`__proto__` aside: it reads as the prototype). */
const INHERITED = new Set(
  Object.getOwnPropertyNames(Object.prototype).filter((name) => name !== "__proto__"),
);

/** Per declared JSON Schema: the inherited names it uses as property names, anywhere in it. */
const shadowCache = new WeakMap<object, readonly string[]>();

/** The property names in `schema` (at any depth, `$defs` included) that `Object.prototype` also has. */
function shadowedBy(schema: object): readonly string[] {
  const cached = shadowCache.get(schema);
  if (cached) return cached;
  const found = new Set<string>();
  const seen = new Set<object>();
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null || seen.has(node)) continue;
    seen.add(node);
    const properties = (node as { properties?: unknown }).properties;
    if (typeof properties === "object" && properties !== null && !Array.isArray(properties)) {
      for (const key of Object.keys(properties)) if (INHERITED.has(key)) found.add(key);
    }
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push(child);
  }
  const names = [...found];
  shadowCache.set(schema, names);
  return names;
}

/**
 * For a tool that names a parameter after an `Object.prototype` member: in every plain object of
 * the parsed arguments that does not hold that key, the key reads `undefined` (a non-enumerable own
 * property, so `Object.keys`, spreading and JSON do not show it), as its optional type says, rather
 * than the inherited function — so `const { constructor } = args` is `undefined` when the call left
 * it out. Other tools' arguments are handed on untouched.
 */
function shadowInherited(data: unknown, names: readonly string[]): unknown {
  if (names.length === 0) return data;
  const seen = new Set<object>();
  const stack: unknown[] = [data];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== "object" || node === null || seen.has(node)) continue;
    seen.add(node);
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    if (Object.getPrototypeOf(node) !== Object.prototype) continue;
    for (const name of names) {
      if (Object.hasOwn(node, name)) continue;
      try {
        Object.defineProperty(node, name, {
          value: undefined,
          enumerable: false,
          writable: true,
          configurable: true,
        });
      } catch {
        // A frozen object a transform returned: left as it is.
      }
    }
    for (const value of Object.values(node)) stack.push(value);
  }
  return data;
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
export async function checkArguments<Input extends z.ZodType<unknown, Record<string, unknown>>>(
  tool: Tool<Input>,
  args: unknown,
): Promise<z.output<Input>> {
  const checked = await tool.input.safeParseAsync(ownOnly(args));
  if (checked.success) {
    return shadowInherited(checked.data, shadowedBy(tool.declaration.function.parameters)) as z.output<Input>;
  }
  throw refusal(tool.declaration.function.name, checked.error);
}
