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
      const checked = input.safeParse(args);
      if (checked.success) return checked.data as z.output<Input>;
      throw refusal(name, checked.error);
    },
  };
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
  const checked = await tool.input.safeParseAsync(args);
  if (checked.success) return checked.data as z.output<Input>;
  throw refusal(tool.declaration.function.name, checked.error);
}
