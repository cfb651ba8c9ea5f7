import { untilAborted } from "./call.js";
import { describeValue, errorText, isPlainObject, SideTaskError } from "./errors.js";
import { headOf } from "./text.js";

/**
 * A schema `askJson` can both send and check its answer with: the Standard Schema interface
 * (`~standard.validate`) with its JSON Schema converter (`~standard.jsonSchema`), as zod ≥ 4.2,
 * ArkType and Valibot (through `@valibot/to-json-schema`'s `toStandardJsonSchema`) give it.
 * Declared here by shape, so this package needs none of them: any object (or function, as an
 * ArkType type is) holding such a `~standard` fits.
 */
export interface StandardJsonSchema<Input = unknown, Output = Input> {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    /** Only the types: a library fills it in for inference, never at run time. */
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
    /** Read for its `issues` and `value` whatever it answers; a promise of one is awaited. */
    readonly validate: (value: unknown) => unknown;
    readonly jsonSchema: {
      readonly input: (options: { readonly target: string }) => unknown;
    };
  };
}

/** What a {@link StandardJsonSchema} answers once valid: its output type (defaults and transforms applied). */
export type StandardOutput<Schema extends StandardJsonSchema> = NonNullable<
  Schema["~standard"]["types"]
>["output"];

/**
 * The drafts asked of a schema's converter, in order: 2020-12 first, the form zod's
 * `toJSONSchema` gives a tool's parameters by default, so an answer's schema and a tool's reach
 * `sanitizeSchema` alike (it reads draft-07's `definitions` and `items` lists as well, which is
 * the second choice, for a library that converts only to that).
 */
export const STANDARD_TARGETS = ["draft-2020-12", "draft-07"] as const;

/** The most of an issue's message a notice quotes: a library may put the value it refused in it. */
export const ISSUE_CHARS = 200;

/** The most of one key of an issue's path a notice shows: a key may be the model's, and as long. */
const KEY_CHARS = 40;

/** The most steps of an issue's path a notice shows, counted from the answer's top. */
const PATH_STEPS = 8;

/** How deep a prototype chain is looked along for `~standard`: a Proxy can make one endless. */
const MAX_CHAIN = 64;

/** A Standard Schema read once: the JSON Schema it converts to, and its validate, bound to it. */
export interface ReadStandard {
  readonly jsonSchema: Record<string, unknown>;
  readonly validate: (value: unknown) => unknown;
  readonly vendor: string;
}

const invalid = (message: string, cause?: unknown) =>
  new SideTaskError("invalid-input", `askJson: ${message}`, cause === undefined ? {} : { cause });

/**
 * Whether `value` holds `~standard` itself or on a prototype of its own (zod's is on its class's
 * prototype), never where only `Object.prototype` or `Function.prototype` does: some code setting
 * `Object.prototype["~standard"]` must not make every plain JSON Schema read as another kind.
 * A Proxy whose trap throws is no Standard Schema here: it goes on as a plain schema would.
 */
function holdsStandard(value: object): boolean {
  try {
    let at: object | null = value;
    for (let depth = 0; at !== null && depth < MAX_CHAIN; depth++) {
      if (at === Object.prototype || at === Function.prototype) return false;
      if (Object.hasOwn(at, "~standard")) return true;
      at = Object.getPrototypeOf(at) as object | null;
    }
  } catch {
    return false;
  }
  return false;
}

/** `holder[name]`, where reading it may run a host's getter that throws: that is `invalid-input`. */
function field(holder: object, name: string, shown: string): unknown {
  try {
    return (holder as Record<string, unknown>)[name];
  } catch (error) {
    throw invalid(`reading the schema's ${shown} threw: ${headOf(errorText(error), ISSUE_CHARS)}`, error);
  }
}

/**
 * The Standard Schema `schema` is, read and converted once, or `undefined` for anything else (a
 * plain JSON Schema, and whatever `askJson` refuses as one). Throws `invalid-input` — before any
 * request — for a `~standard` that is not an object, has no `validate`, has no `jsonSchema` (a
 * Standard Schema without JSON Schema support: zod/mini, zod before 4.2), or whose converter throws
 * for both drafts or answers something that is not a JSON Schema object.
 */
export function readStandard(schema: unknown): ReadStandard | undefined {
  if ((typeof schema !== "object" && typeof schema !== "function") || schema === null) return undefined;
  if (!holdsStandard(schema)) return undefined;
  const props = field(schema, "~standard", "~standard");
  if ((typeof props !== "object" && typeof props !== "function") || props === null) {
    throw invalid(
      `the schema's ~standard must be an object (the Standard Schema interface), and was ${describeValue(props)}.`,
    );
  }
  const vendorField = field(props, "vendor", "~standard.vendor");
  const vendor = typeof vendorField === "string" ? headOf(vendorField, KEY_CHARS) : "unknown";
  const validate = field(props, "validate", "~standard.validate");
  if (typeof validate !== "function") {
    throw invalid(
      `the schema (vendor ${JSON.stringify(vendor)}) has no ~standard.validate function, so its answer could not be checked; it was ${describeValue(validate)}.`,
    );
  }
  const converter = field(props, "jsonSchema", "~standard.jsonSchema");
  const input =
    (typeof converter === "object" || typeof converter === "function") && converter !== null
      ? field(converter, "input", "~standard.jsonSchema.input")
      : undefined;
  if (typeof input !== "function") {
    throw invalid(
      `the schema (vendor ${JSON.stringify(vendor)}) has no ~standard.jsonSchema.input, so there is no JSON Schema to ask the model with: it is a Standard Schema without JSON Schema support (zod/mini, zod before 4.2 do not give one). Give a schema whose library converts (zod 4.2 or later, a recent ArkType, a Valibot schema wrapped in toStandardJsonSchema from @valibot/to-json-schema), or its JSON Schema as a plain object.`,
    );
  }
  const jsonSchema = convert(converter as object, input as (...args: unknown[]) => unknown, vendor);
  return {
    jsonSchema,
    // Called as the library's method: zod's and others' read their own `this`.
    validate: (value) => Reflect.apply(validate, props, [value]),
    vendor,
  };
}

/** The converter's JSON Schema of the schema's input: what the model writes is what validate reads. */
function convert(
  converter: object,
  input: (...args: unknown[]) => unknown,
  vendor: string,
): Record<string, unknown> {
  let first: unknown;
  for (const target of STANDARD_TARGETS) {
    let made: unknown;
    try {
      made = Reflect.apply(input, converter, [{ target }]);
    } catch (error) {
      first ??= error;
      continue;
    }
    if (!isPlainObject(made)) {
      throw invalid(
        `the schema's ~standard.jsonSchema.input (vendor ${JSON.stringify(vendor)}) answered ${describeValue(made)}, not a JSON Schema object.`,
      );
    }
    return made as Record<string, unknown>;
  }
  throw invalid(
    `the schema's ~standard.jsonSchema.input (vendor ${JSON.stringify(vendor)}) threw for ${STANDARD_TARGETS.join(" and ")}, so there is no JSON Schema to ask the model with: ${headOf(errorText(first), ISSUE_CHARS)}`,
    first,
  );
}

/** What checking an answer came to: its validated output, or why there is none. */
export type Checked =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly notice: string };

/** What is left of `askJson`'s time bound for the check: the bound, and the ms not yet spent of it. */
export interface CheckDeadline {
  readonly limit: number;
  readonly leftMs: number;
}

/**
 * `value` (the parsed answer) checked with the schema's `validate`, awaited where it answers a
 * promise. Valid: the output it answers (defaults filled in, transforms run). Invalid: a notice
 * naming the first issue's path and message, each cut short — never the answer itself, which may
 * be long or hold what the model was shown (the endpoint's key is already masked in a reply's text,
 * as in every reply the pooled client reads). A validate that throws, or answers no result, is
 * `invalid-input`: the schema's library is broken, not the model's answer. One still pending when
 * `deadline` runs out is `timeout`, as a request past the bound is; one pending when `signal`
 * fires is `aborted`. Either way it is left to settle on its own.
 */
export async function checkAnswer(
  read: ReadStandard,
  value: unknown,
  model: string,
  signal?: AbortSignal | null,
  deadline?: CheckDeadline,
): Promise<Checked> {
  let result: unknown;
  // A stopped task checks nothing: an asynchronous refinement may have effects of its own.
  if (signal?.aborted) throw abandoned(signal);
  // One stop for the caller's signal and the time left: a validate that never settles (a
  // refinement waiting on something hung) holds neither a stopped task nor a bounded one.
  const stop = new AbortController();
  const expired = new Error(`timed out after ${deadline?.limit ?? 0} ms`);
  const onAbort = () => stop.abort(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  let round: ReturnType<typeof setImmediate> | undefined;
  // As for the request: one round of the event loop once the time is up, so a check whose answer
  // came while the host's loop was held up (a long synchronous task) is still taken.
  const timer =
    deadline && deadline.limit > 0
      ? setTimeout(
          () => {
            round = setImmediate(() => stop.abort(expired));
          },
          Math.max(0, deadline.leftMs),
        )
      : undefined;
  try {
    const pending = read.validate(value);
    result = await untilAborted(pending as PromiseLike<unknown>, stop.signal);
  } catch (error) {
    if (error === expired) {
      throw new SideTaskError(
        "timeout",
        `askJson: the answer of ${model} was not checked within ${deadline?.limit} ms, the call's time bound: the schema's ~standard.validate (vendor ${JSON.stringify(read.vendor)}) had not settled. Raise timeoutMs (or the endpoint's requestTimeoutSeconds), or look at what its asynchronous check waits on.`,
        { cause: expired },
      );
    }
    if (signal?.aborted && error === signal.reason) throw abandoned(signal);
    throw invalid(
      `the schema's ~standard.validate (vendor ${JSON.stringify(read.vendor)}) threw on the answer of ${model}: ${headOf(errorText(error), ISSUE_CHARS)}`,
      error,
    );
  } finally {
    if (timer) clearTimeout(timer);
    if (round) clearImmediate(round);
    signal?.removeEventListener("abort", onAbort);
  }
  if (typeof result !== "object" || result === null) {
    throw invalid(
      `the schema's ~standard.validate (vendor ${JSON.stringify(read.vendor)}) answered ${describeValue(result)}, not a result with value or issues.`,
    );
  }
  const issues = field(result, "issues", "validate result's issues");
  // The Standard Schema's rule: a falsy `issues` is success.
  if (!issues) return { ok: true, value: field(result, "value", "validate result's value") };
  const first = Array.isArray(issues) ? (issues[0] as unknown) : undefined;
  const said = (safely(() => describeIssue(first)) as string | undefined) ?? "the schema found it invalid";
  return { ok: false, notice: `${model}'s answer does not match the schema: ${said}; no answer taken.` };
}

const abandoned = (signal: AbortSignal) =>
  new SideTaskError("aborted", "askJson: abandoned by the caller's signal.", { cause: signal.reason });

/** `at tools[0]: "Expected string"`: one issue, told without the value it is about. */
function describeIssue(issue: unknown): string {
  if (typeof issue !== "object" || issue === null) return "the schema found it invalid (no issue said why)";
  const message = safely(() => (issue as { message?: unknown }).message);
  const path = safely(() => (issue as { path?: unknown }).path);
  const words =
    typeof message === "string" && message !== ""
      ? JSON.stringify(headOf(message, ISSUE_CHARS) + (message.length > ISSUE_CHARS ? "…" : ""))
      : "(no message)";
  return `at ${describePath(path)}: ${words}`;
}

/** A getter that throws reads as absent: the notice is said with what could be read. */
function safely(read: () => unknown): unknown {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/** `tools[0].name`, `["a key"]`; `(the answer)` for the top. Each key, and the steps shown, bounded. */
function describePath(path: unknown): string {
  if (!Array.isArray(path) || path.length === 0) return "(the answer)";
  let out = "";
  for (const step of path.slice(0, PATH_STEPS) as unknown[]) {
    // A step is a key, or a segment holding one under `key`.
    const key =
      typeof step === "object" && step !== null ? safely(() => (step as { key?: unknown }).key) : step;
    if (typeof key === "number") out += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_$][\w$]{0,39}$/.test(key))
      out += out === "" ? key : `.${key}`;
    else if (typeof key === "string") {
      out += `[${JSON.stringify(key.length > KEY_CHARS ? `${headOf(key, KEY_CHARS)}…` : key)}]`;
    } else if (typeof key === "symbol") out += "[a symbol]";
    else out += "[?]";
  }
  return path.length > PATH_STEPS ? `${out}… (${path.length} steps)` : out;
}
