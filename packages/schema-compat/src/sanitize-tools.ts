import { describeValue, SchemaCompatError } from "./errors.js";
import { nonJsonIn, nonJsonWhy } from "./non-json.js";
import {
  isObject,
  own,
  relaxSchema,
  type SanitizeOptions,
  sanitizeSchema,
  wellFormed,
} from "./sanitize-schema.js";
import type { SanitizedTool, ToolLike } from "./types.js";

/** Options for {@link sanitizeTools}. */
export interface SanitizeToolsOptions extends SanitizeOptions {
  /**
   * Told of every tool whose name had to change (OpenAI accepts only `[A-Za-z0-9_-]{1,64}`), so
   * the caller can map the model's calls back to the tool it meant.
   */
  onRename?: ((original: string, renamed: string) => void) | undefined;
}

const NAME_LIMIT = 64;

/** A short, stable hash of a string (FNV-1a, 32 bits, over its UTF-16 code units), as 8 hex digits. */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}

/**
 * Makes a function name OpenAI accepts, changing nothing about a name that already passes.
 *
 * A name of printable ASCII has each other character made `_` (`fs.read` → `fs_read`), cut with a
 * hash when over 64. A name holding anything else (`検索`, `café`, `🙂`, a control character),
 * which that swap would leave as bare `_`s told apart only by their order, goes as its legal
 * letters and digits — each run of other characters one `_`, none at either end, `tool` for none —
 * and `_` and a hash of the whole name (`検索` → `tool_fea3073b`, `café` → `caf_3308be7c`): the
 * same on every run whatever the other tools, and the name `@loopwright/loop` declares it under.
 */
function legalName(name: unknown): string {
  const text = typeof name === "string" ? name : "";
  if (/^[\x20-\x7e]*$/.test(text)) {
    let legal = text.replace(/[^A-Za-z0-9_-]/g, "_");
    if (legal === "") legal = "tool";
    if (legal.length > NAME_LIMIT) legal = `${legal.slice(0, NAME_LIMIT - 9)}_${hash(text)}`;
    return legal;
  }
  const base =
    text
      .split(/[^A-Za-z0-9_-]+/)
      .filter((part) => part !== "")
      .join("_")
      .replace(/^_+|_+$/g, "") || "tool";
  return `${base.slice(0, NAME_LIMIT - 9)}_${hash(text)}`;
}

/** The longest function description OpenAI takes (`string_above_max_length` past it). */
const DESCRIPTION_LIMIT = 1024;

/**
 * Splits a description OpenAI would refuse as too long: the part that fits, cut after a sentence
 * or a word and marked with "…", and the rest (which goes to the parameters' description, so the
 * model still reads all of it). A description that fits is returned whole.
 */
function splitDescription(text: string): [head: string, rest: string] {
  if (text.length <= DESCRIPTION_LIMIT) return [text, ""];
  const room = text.slice(0, DESCRIPTION_LIMIT - 1);
  const sentence = Math.max(room.lastIndexOf(". "), room.lastIndexOf(".\n"), room.lastIndexOf("\n\n"));
  const word = room.lastIndexOf(" ");
  let cut =
    sentence > DESCRIPTION_LIMIT / 2 ? sentence + 1 : word > DESCRIPTION_LIMIT / 2 ? word : room.length;
  // Never between the two halves of a surrogate pair (an emoji): a lone half is not valid text.
  const before = text.charCodeAt(cut - 1);
  if (before >= 0xd800 && before <= 0xdbff) cut--;
  return [`${text.slice(0, cut).trimEnd()}…`, text.slice(cut).trim()];
}

/**
 * The name itself when free, else the first free `name_2`, `name_3`, … — searched from where the
 * last search for the same name stopped (`next`), so a thousand tools of one name stay linear.
 */
function uniqueName(name: string, taken: Set<string>, next: Map<string, number>): string {
  if (!taken.has(name)) return name;
  for (let n = next.get(name) ?? 2; ; n++) {
    const suffix = `_${n}`;
    const candidate = `${name.slice(0, NAME_LIMIT - suffix.length)}${suffix}`;
    if (!taken.has(candidate)) {
      next.set(name, n + 1);
      return candidate;
    }
  }
}

function checkTools(tools: unknown, where: string): asserts tools is readonly unknown[] {
  if (!Array.isArray(tools)) {
    throw new SchemaCompatError(
      "invalid-tools",
      `${where} needs an array of tool definitions ({ type: "function", function: { name, parameters } }), ` +
        `and was given ${describeValue(tools)}.`,
    );
  }
}

/** A tool entry of the wrong shape, said in words (mapTools names its index). */
class MalformedTool extends Error {}

/**
 * What a validator object handed over as `parameters` is, or `undefined` for anything else: a
 * Standard Schema (zod 3.24 and later, valibot, ArkType: a `~standard` member naming its vendor) or
 * an older zod schema (`_def` and `safeParse`). Read as JSON Schema it holds no keyword, so the tool
 * went out taking no arguments at all, and `parameters: unknown` let it through with no type error.
 */
function validatorKind(value: unknown): string | undefined {
  if (!isObject(value)) return undefined;
  const standard = own(value, "~standard");
  // zod 4's own `z.toJSONSchema` output carries a `~standard` too (not enumerable, on plain data):
  // that is JSON Schema. A validator is a class's instance (zod) or lists the member (valibot).
  const prototype = Object.getPrototypeOf(value) as unknown;
  const plain = prototype === Object.prototype || prototype === null;
  if (isObject(standard) && (!plain || Object.prototype.propertyIsEnumerable.call(value, "~standard"))) {
    const vendor = own(standard, "vendor");
    return `a ${typeof vendor === "string" ? `${vendor} ` : ""}schema object (Standard Schema)`;
  }
  if (typeof own(value, "safeParse") === "function" && own(value, "_def") !== undefined)
    return "a zod schema object";
  return undefined;
}

/** What mapTools reads of one entry, read in one place so a value that throws when read is caught there. */
function readTool(tool: Record<string, unknown>):
  | { other: Record<string, unknown> }
  | {
      other?: undefined;
      base: Record<string, unknown>;
      original: string;
      description: unknown;
      schema: unknown;
      rest: Record<string, unknown>;
    } {
  const base = { ...tool };
  const fn = base.function;
  if (typeof base.type !== "string") {
    throw new MalformedTool(
      base.type === undefined
        ? 'has no "type" (such as "function")'
        : `has a "type" of ${describeValue(base.type)}, not a string such as "function"`,
    );
  }
  if (base.type === "function" && fn !== undefined && !isObject(fn)) {
    throw new MalformedTool(`is a function tool whose "function" is ${describeValue(fn)}, not an object`);
  }
  if (base.type !== "function" || !isObject(fn)) return { other: base };
  if (typeof fn.name !== "string") {
    throw new MalformedTool(
      fn.name === undefined
        ? "is a function tool with no function.name"
        : `is a function tool whose function.name is ${describeValue(fn.name)}, not a string`,
    );
  }
  const validator = validatorKind(Object.hasOwn(fn, "parameters") ? fn.parameters : undefined);
  if (validator !== undefined) {
    throw new MalformedTool(
      // Named as well as numbered: among many tools, the name says which one to convert.
      `is the function tool ${JSON.stringify(fn.name)}, whose function.parameters is ${validator}, not JSON Schema; convert it first ` +
        "(zod 4: z.toJSONSchema(schema))",
    );
  }
  const { description, parameters, ...rest } = fn;
  const original = typeof rest.name === "string" ? rest.name : "";
  // `other` written as absent, and the fields a tool may leave out read where it holds them: an
  // inherited `other` made every tool that string, and an inherited `description` every tool's.
  return {
    other: undefined,
    base,
    original,
    description: Object.hasOwn(fn, "description") ? description : undefined,
    schema: Object.hasOwn(fn, "parameters") ? parameters : undefined,
    rest,
  };
}

function mapTools(
  tools: unknown,
  where: string,
  schemaFn: (schema: unknown, options: SanitizeOptions) => Record<string, unknown>,
  given: SanitizeToolsOptions,
): unknown[] {
  checkTools(tools, where);
  const options: SanitizeToolsOptions = isObject(given) ? given : {};
  const taken = new Set<string>();
  const next = new Map<string, number>();
  return tools.map((tool, index) => {
    let read: ReturnType<typeof readTool> | undefined;
    try {
      read = isObject(tool) ? readTool(tool) : undefined;
    } catch (cause) {
      if (cause instanceof MalformedTool) {
        throw new SchemaCompatError(
          "invalid-tools",
          `${where}: the tool at index ${index} of the tool array ${cause.message}; ` +
            'a function tool is { type: "function", function: { name, description?, parameters } }.',
        );
      }
      // A throwing getter or a revoked Proxy in the host's own objects: named, not a TypeError inside.
      throw new SchemaCompatError(
        "invalid-tools",
        `${where} could not read the tool at index ${index} of the tool array ` +
          `(${cause instanceof Error ? cause.message : String(cause)}); each entry must be a plain tool definition object.`,
        { cause },
      );
    }
    if (!read) {
      throw new SchemaCompatError(
        "invalid-tools",
        `${where} was given ${describeValue(tool)} at index ${index} of the tool array; ` +
          "each entry must be a tool definition object.",
      );
    }
    if (read.other) return read.other;
    const { base, original, description, schema, rest } = read;
    // What JSON cannot hold was rewritten away below (a Map of properties read as none, a BigInt
    // default dropped), and the tool sent as something else: refused, by its name and the place.
    const found = nonJsonIn(schema);
    if (found) {
      throw new SchemaCompatError(
        "invalid-tools",
        `${where}: the function tool ${JSON.stringify(original)} (index ${index} of the tool array) holds ` +
          `${found.what} in function.parameters at ${found.path}, ${nonJsonWhy(found.what)}.`,
      );
    }
    const name = uniqueName(legalName(original), taken, next);
    taken.add(name);
    const onRename = Object.hasOwn(options, "onRename") ? options.onRename : undefined;
    if (name !== original && typeof onRename === "function") onRename(original, name);
    const out: Record<string, unknown> = { ...rest, name };
    // A lone surrogate (a description cut inside an emoji) would have the whole request refused.
    const text = typeof description === "string" ? wellFormed(description.trim()) : "";
    // Notices name the tool (as the host declared it): one tool's schema among many is otherwise unfindable.
    const { onNotice } = options;
    const parameters = schemaFn(
      schema,
      typeof onNotice === "function"
        ? { ...options, onNotice: (notice: string) => onNotice(`Tool "${original}": ${notice}`) }
        : options,
    );
    const [head, overflow] = splitDescription(text);
    if (head !== "") out.description = head;
    if (overflow !== "") {
      const own = typeof parameters.description === "string" ? ` ${parameters.description}` : "";
      parameters.description = `(Tool description, continued:) ${overflow}${own}`;
    }
    out.parameters = parameters;
    return { ...base, function: out };
  });
}

/**
 * Makes every function tool in an array acceptable to a strict or grammar-constrained server:
 * parameters through {@link sanitizeSchema}, names OpenAI refuses made legal (and unique; a name
 * outside printable ASCII as its letters and digits and a hash of it, the same on every run),
 * descriptions that are not text dropped, a description over OpenAI's 1,024 characters cut at a
 * sentence or word with the rest moved into the parameters' description. Other tool kinds and other fields (such as `strict`)
 * pass through unchanged. `onNotice` hears each notice after the tool's name as declared
 * (`Tool "pick": …`).
 *
 * Returns a new array in the same order; never mutates its input. Throws a `SchemaCompatError`
 * (`code: "invalid-tools"`) when `tools` is not an array or holds something that is not an object
 * or cannot be read (a throwing getter, a revoked Proxy), has no string `type`, or is a function
 * tool whose `function` is there but not an object or whose `function.name` is not a string, or
 * whose `function.parameters` is a validator rather than JSON Schema (a zod schema, any Standard
 * Schema object: convert it first, `z.toJSONSchema(schema)` in zod 4), naming its index and what
 * was wrong; and when `function.parameters` holds what JSON cannot, which the schema would be sent
 * without — a `Map` or a `Set` (a Map of `properties` read as none: the tool took no arguments), a
 * BigInt outside a numeric keyword (`default: 10n` dropped), `NaN`, a function or a symbol, or a
 * field that throws when read (a getter, a Proxy's trap: the whole schema went as an object with
 * no properties, told only) — naming the tool and the place as a JSON Pointer
 * (`#/properties/n/default`), and for a throw what was thrown. A class's instance is read through
 * its own fields and its class's getters, what each getter answers checked. A BigInt bound (`minimum:
 * 5n`) is read as its number, ±Infinity (what JSON text `1e309` parses to) as `sanitizeSchema`
 * reads it, and a cycle as a recursive `$ref`; `sanitizeSchema` itself never throws.
 */
export function sanitizeTools<T extends ToolLike>(
  tools: readonly T[],
  options: SanitizeToolsOptions = {},
): SanitizedTool<T>[] {
  return mapTools(tools, "sanitizeTools", sanitizeSchema, options) as SanitizedTool<T>[];
}

/**
 * {@link sanitizeTools} with each parameters schema through {@link relaxSchema}: the form to send
 * a server that could not build a grammar from the sanitized tools (see `isGrammarError`).
 *
 * Returns a new array in the same order; never mutates its input. Throws a `SchemaCompatError`
 * (`code: "invalid-tools"`) as {@link sanitizeTools} does.
 */
export function relaxTools<T extends ToolLike>(
  tools: readonly T[],
  options: SanitizeToolsOptions = {},
): SanitizedTool<T>[] {
  return mapTools(tools, "relaxTools", relaxSchema, options) as SanitizedTool<T>[];
}
