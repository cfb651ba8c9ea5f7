import type { Endpoint } from "@loopwright/client";
import { relaxSchema, restoreArguments, sanitizeSchema, takesStringAt } from "@loopwright/schema-compat";
import { parseJson, ToolCallsError } from "@loopwright/tool-calls";
import {
  type JsonShape,
  noticeTeller,
  type SideTaskOptions,
  type SideTaskReply,
  sideCall,
  sideTaskLimit,
} from "./call.js";
import { describeValue, isPlainObject, SideTaskError } from "./errors.js";
import type { SideTaskInput } from "./input.js";
import { ownView } from "./own.js";
import { headOf, quotedText } from "./text.js";
import { checkAnswer, readStandard, type StandardJsonSchema, type StandardOutput } from "./typed-schema.js";
import type { SideTaskKind } from "./usage.js";

/** `ask`'s reply ceiling when none is given: a side task's answer is short. */
export const ASK_MAX_TOKENS = 512;

/** `ask`'s temperature when none is given, whatever the agent's own is. */
export const ASK_TEMPERATURE = 0.3;

const ASK_DEFAULTS = { maxTokens: ASK_MAX_TOKENS, temperature: ASK_TEMPERATURE };

/** How much of a model's refusal a notice quotes. */
export const REFUSAL_CHARS = 300;

/**
 * One-shot side call: a system prompt and a user turn to a model, the reply's text back.
 *
 * A system prompt and a user turn to `model` at `endpoint`, no tools, not
 * streamed, bounded in time, the reply's text back (any fenced scratchpad taken out).
 *
 * The body is built like a turn's (`buildBody` from what the endpoint and model refused, through
 * `negotiate`), so a refusal is answered the same way and latched for both. Defaults: ceiling
 * `ASK_MAX_TOKENS`, temperature `ASK_TEMPERATURE`, the no-thinking hints. An image part the model
 * refuses is latched and the text sent alone. A refusal sent in place of content (OpenAI's
 * `message.refusal`) answers `""` and is told to `onNotice` in the model's words. Throws `SideTaskError`: `invalid-input` for bad
 * arguments, `request-failed`, `timeout`, `aborted` or `no-reply`. A server still loading the model
 * (a 503 "Loading model") is asked again every second, within the time bound and for at most two
 * minutes, with a notice. Never retries a lost request (that is the caller's budget), and never
 * tells a cut-off reply from a finished one — `askReply` does.
 */
export async function ask(
  endpoint: Endpoint,
  model: string,
  system: string,
  input: SideTaskInput,
  options: SideTaskOptions = {},
): Promise<string> {
  const own = ownView(options);
  const reply = await sideCall(endpoint, model, system, input, own, ASK_DEFAULTS, "ask");
  tellRefusal(reply, model, own);
  return reply.text;
}

/** A refusal sent in place of content, told to `onNotice` in the model's words. */
function tellRefusal(reply: SideTaskReply, model: string, options: SideTaskOptions): void {
  const refusal = Object.hasOwn(reply, "refusal") ? reply.refusal : undefined;
  if (reply.text === "" && refusal !== undefined) {
    noticeTeller(options.onNotice)(
      `${model} refused to answer: ${quotedText(headOf(refusal, REFUSAL_CHARS))}. The answer is empty.`,
    );
  }
}

/**
 * `ask` that also says how the reply ended: `{ text, finishReason }`.
 *
 * `finishReason` is the choice's `finish_reason` as the server sent it (`"length"` for one cut off at the ceiling), or
 * `undefined` where it sent none; `refusal` the model's words where it refused in place of content
 * (then also told to `onNotice`). Nothing is thrown for a cut-off reply. Throws as `ask` does.
 */
export async function askReply(
  endpoint: Endpoint,
  model: string,
  system: string,
  input: SideTaskInput,
  options: SideTaskOptions = {},
): Promise<SideTaskReply> {
  const own = ownView(options);
  const { text, finishReason, refusal } = await sideCall(
    endpoint,
    model,
    system,
    input,
    own,
    ASK_DEFAULTS,
    "askReply",
  );
  const reply: SideTaskReply = { text, finishReason, ...(refusal !== undefined ? { refusal } : {}) };
  tellRefusal(reply, model, own);
  return reply;
}

/** Options of `askJson`: those of `ask`, plus the schema's name and strictness. */
export interface AskJsonOptions extends SideTaskOptions {
  /** The schema's name in `response_format` (letters, digits, `_` and `-`). Default `"answer"`. */
  name?: string | null | undefined;
  /**
   * Ask for strict adherence (`strict: true`), which OpenAI takes to mean every property required
   * and no others. Default `true`; the schema is normalised to that form either way.
   */
  strict?: boolean | null | undefined;
}

function jsonInstruction(system: string, schema: Record<string, unknown>): string {
  const rule = `Answer with one JSON value only, no prose, matching this JSON Schema:\n${JSON.stringify(schema)}`;
  return system.trim() ? `${system.trimEnd()}\n\n${rule}` : rule;
}

/**
 * `ask` for an answer held to a JSON Schema: the parsed value, or `undefined`.
 *
 * Answers the parsed JSON, or `undefined` for a reply with no JSON in it
 * (or one cut off at the ceiling before its JSON closed; an object or array followed only by blank
 * space up to the ceiling is whole, and answered). A refusal sent in place of content (OpenAI's
 * `message.refusal`) is `undefined` too, told to `onNotice` with its words.
 *
 * The schema goes as `response_format` of type `json_schema` — normalised as a tool's parameters
 * are (`sanitizeSchema`), relaxed (`relaxSchema`) once the endpoint could not build a grammar —
 * where the model takes it; a model that refuses it is latched (`structuredOutput: false`) and
 * asked with `json_object`, then, if it refuses that too, in words alone. The schema also rides on
 * the system prompt, and the reply is read with `parseJson` (JSON inside prose or a fence, nearly
 * right JSON repaired); a `null` the normalising added for an optional property is taken out again.
 * A number JavaScript cannot hold as written (`12345678901234567891`, `1e400`) is never answered as
 * another number: it is the model's digits as a string where the schema takes a string there, and
 * otherwise (an integer or out-of-range number) a `SideTaskError` (`inexact-number`) naming its
 * path and digits; a decimal of more than about 17 significant digits is its nearest double.
 * A server that finds the schema itself invalid is not latched: that throws `SideTaskError`
 * (`request-failed`), as every other failure does. Throws `invalid-input` for a schema or options
 * that are not an object.
 *
 * The schema may instead be a Standard Schema with its JSON Schema converter (zod 4.2 or later,
 * ArkType, Valibot: `~standard.validate` and `~standard.jsonSchema`). What is sent is the JSON
 * Schema of its input (draft 2020-12, else draft-07), and the answer read as above is then checked
 * with its `validate`: the answer is its output (defaults filled in, transforms run), typed as
 * that without a cast, or `undefined` where it is invalid, with a notice naming the first issue's
 * path and message (never the answer). One without the converter, or whose converter throws, is
 * `invalid-input` before anything is sent; a `validate` that throws is `invalid-input` too.
 * The caller's `signal` holds through the check: fired while `validate` is pending (an
 * asynchronous refinement), the task rejects with `aborted` at once, the check left to settle.
 * The time bound is one for the whole call, the request and the check after it: a `validate`
 * still pending when it runs out rejects with `timeout`, as a request that outlasts it does.
 */
export function askJson<Schema extends StandardJsonSchema>(
  endpoint: Endpoint,
  model: string,
  system: string,
  input: SideTaskInput,
  schema: Schema,
  options?: AskJsonOptions,
): Promise<StandardOutput<Schema> | undefined>;
/** {@link askJson} with a plain JSON Schema: the answer is `T` by the caller's word, unchecked. */
export function askJson<T = unknown>(
  endpoint: Endpoint,
  model: string,
  system: string,
  input: SideTaskInput,
  schema: Readonly<Record<string, unknown>>,
  options?: AskJsonOptions,
): Promise<T | undefined>;
export async function askJson(
  endpoint: Endpoint,
  model: string,
  system: string,
  input: SideTaskInput,
  schema: unknown,
  options: AskJsonOptions = {},
): Promise<unknown> {
  // A Standard Schema is read, and converted, before anything is sent; a plain one goes as it is.
  const standard = readStandard(schema);
  const sent = standard ? standard.jsonSchema : (schema as Readonly<Record<string, unknown>>);
  // One deadline for the call: the check gets what the request left of the bound, not a bound anew.
  const started = performance.now();
  const value = await askJsonReading(endpoint, model, system, input, sent, options, true);
  if (!standard || value === undefined) return value;
  const view = ownView(options);
  // Read as the request read it, which it did without throwing (the call got this far).
  const limit = sideTaskLimit(view, ownView(endpoint));
  const checked = await checkAnswer(standard, value, model, view.signal, {
    limit,
    leftMs: limit - (performance.now() - started),
  });
  if (checked.ok) return checked.value;
  noticeTeller(view.onNotice)(checked.notice);
  return undefined;
}

/**
 * Whether a reply cut off at the ceiling still holds a whole answer: an object or array that
 * closed, then nothing but blank space (what a grammar lets follow the value, and a model can loop
 * on until the ceiling). Read strictly: a repair would close a cut-off value and answer it.
 */
function closedJson(text: string): boolean {
  const trimmed = text.trim();
  if (!/^[[{]/.test(trimmed)) return false;
  try {
    JSON.parse(trimmed);
    return true;
  } catch {
    return false;
  }
}

/**
 * {@link askJson}, with `exact` saying whether numbers JavaScript cannot hold are settled by the
 * schema (`askJson`) or read as `JSON.parse` reads them (`preselect`, which reads only names).
 */
export async function askJsonReading<T = unknown>(
  endpoint: Endpoint,
  model: string,
  system: string,
  input: SideTaskInput,
  schema: Readonly<Record<string, unknown>>,
  given: AskJsonOptions,
  exact: boolean,
  task: SideTaskKind = "askJson",
): Promise<T | undefined> {
  // Read as the host wrote them: never a field only a polluted Object.prototype holds.
  const options = ownView(given);
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    throw new SideTaskError(
      "invalid-input",
      `askJson: the schema must be a JSON Schema object, and was ${describeValue(schema)}.`,
    );
  }
  if (!isPlainObject(options)) {
    throw new SideTaskError(
      "invalid-input",
      `askJson: options must be an object, and was ${describeValue(options)}.`,
    );
  }
  const name = options.name ?? "answer";
  if (typeof name !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw new SideTaskError(
      "invalid-input",
      `askJson: name must be 1 to 64 letters, digits, _ or -, and was ${JSON.stringify(name)}.`,
    );
  }
  const strict = options.strict as unknown;
  if (strict != null && typeof strict !== "boolean") {
    throw new SideTaskError(
      "invalid-input",
      `askJson: strict must be true or false (or absent for true), and was ${typeof strict === "string" ? JSON.stringify(strict.slice(0, 40)) : describeValue(strict)}.`,
    );
  }
  const strictSchema = sanitizeSchema(schema) as Record<string, unknown>;
  const shape: JsonShape = {
    name,
    strictSchema,
    relaxedSchema: relaxSchema(schema) as Record<string, unknown>,
    strict: options.strict ?? true,
  };
  const reply = await sideCall(
    endpoint,
    model,
    typeof system === "string" ? jsonInstruction(system, strictSchema) : system,
    input,
    options,
    ASK_DEFAULTS,
    "askJson",
    shape,
    task,
  );
  if (reply.text === "" && reply.refusal !== undefined) {
    noticeTeller(options.onNotice)(
      `${model} refused to answer: ${quotedText(headOf(reply.refusal, REFUSAL_CHARS))}. No answer taken.`,
    );
    return undefined;
  }
  if (reply.finishReason === "length" && !closedJson(reply.text)) {
    noticeTeller(options.onNotice)(
      `${model} ran into its reply ceiling before the JSON was finished; no answer taken.`,
    );
    return undefined;
  }
  let value: T | undefined;
  try {
    // A number JS cannot hold: the model's digits where the schema takes a string, else refused.
    value = parseJson<T>(reply.text, exact ? { takesString: (path) => takesStringAt(schema, path) } : {});
  } catch (error) {
    if (!ToolCallsError.isInstance(error) || error.code !== "inexact") throw error;
    throw new SideTaskError(
      "inexact-number",
      `askJson: the answer of ${model} was not taken. ${error.message}`,
      {
        cause: error,
      },
    );
  }
  return value === undefined ? undefined : restoreArguments(value, schema);
}
