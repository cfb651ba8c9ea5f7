/**
 * The `openai` personality: refusals of api.openai.com's chat completions, with the recorded bodies
 * from `errors/openai/` adjusted to the request (parameter, model, value, schema path).
 */
import { readFixture } from "../fixtures.js";
import { countTokens, renderPrompt } from "../prefix-cache.js";
import type { RecordedRequest } from "../recorded-request.js";
import type { ErrorReply } from "../replies.js";
import { type OptionRule, ownOptions, positiveWhole, regExp, stringList } from "./options.js";
import { type Personality, type PersonalityContext, requestedChoices } from "./personality.js";
import {
  includeUsageRequested,
  isRecord,
  jsonError,
  quotedList,
  requestedMaxTokens,
  swap,
} from "./recorded.js";
import { findStrictViolation, pythonTuple, type StrictViolation } from "./strict-schema.js";

/** Options of {@link openaiPersonality}. */
export interface OpenAiPersonalityOptions {
  /** Which models are reasoning models (default `/^(o\d|gpt-5)/`). */
  reasoningModels?: RegExp | null | undefined;
  /** `reasoning_effort` values reasoning models accept (default `none`, `low`, `medium`, `high`, as recorded for gpt-5.1). */
  reasoningEffortValues?: readonly string[] | null | undefined;
  /** Extra body fields to accept besides the documented chat-completions ones. */
  extraParams?: readonly string[] | null | undefined;
  /** Body fields to refuse as unrecognized even though OpenAI documents them. */
  unknownParams?: readonly string[] | null | undefined;
  /** When set, prompts over this many tokens (by the token rule) get the context-length refusal. */
  contextWindow?: number | null | undefined;
  /** When set, other model names get the 404 model_not_found refusal. */
  models?: readonly string[] | null | undefined;
  /**
   * The longest message `content` string, in characters, before the `string_above_max_length`
   * refusal (default 10485760, as recorded; OpenAI's older limit was 1048576).
   */
  maxContentLength?: number | null | undefined;
}

/** The chat-completions body fields OpenAI documents (reasoning_effort only for reasoning models). */
export const OPENAI_CHAT_PARAMS: readonly string[] = [
  "model",
  "messages",
  "audio",
  "frequency_penalty",
  "function_call",
  "functions",
  "logit_bias",
  "logprobs",
  "max_completion_tokens",
  "max_tokens",
  "metadata",
  "modalities",
  "n",
  "parallel_tool_calls",
  "prediction",
  "presence_penalty",
  "prompt_cache_key",
  "prompt_cache_retention",
  "reasoning_effort",
  "response_format",
  "safety_identifier",
  "seed",
  "service_tier",
  "stop",
  "store",
  "stream",
  "stream_options",
  "temperature",
  "tool_choice",
  "tools",
  "top_logprobs",
  "top_p",
  "user",
  "verbosity",
  "web_search_options",
];

const F = {
  unrecognized: "errors/openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json",
  maxTokens: "errors/openai/max-tokens-unsupported-use-max-completion-tokens.json",
  effort: "errors/openai/reasoning-effort-minimal-unsupported-gpt-5.1-chat.message.txt",
  effortNull: "errors/openai/reasoning-effort-null-unsupported-gpt-5.1.message.txt",
  temperature: "errors/openai/temperature-0-unsupported-value.json",
  streamOptions: "errors/openai/stream-options-only-when-stream-enabled.json",
  webSearch: "errors/openai/400-web-search-options-not-supported.json",
  strictRoot: "errors/openai/strict-schema-root-additionalproperties-chat.json",
  strictRequired: "errors/openai/strict-schema-required-missing-key-response-format.message.txt",
  context: "errors/openai/context-length-exceeded-messages-resulted-in.json",
  contextCompletion: "errors/openai/context-length-exceeded-requested-with-completion.json",
  contextFunctions: "errors/openai/context-length-exceeded-messages-functions-completion.json",
  notFound: "errors/openai/404-model-not-found-chat.json",
  belowMin: "errors/openai/400-max-tokens-integer-below-min-value.json",
  streamType: "errors/openai/400-stream-not-of-type-boolean.json",
  tooLong: "errors/openai/400-input-content-string-above-max-length-responses.json",
} as const;

/** The longest message `content` string OpenAI takes unless `maxContentLength` says otherwise (recorded). */
const MAX_CONTENT_LENGTH = 10_485_760;

/** A JSON value as the recorded type refusal quotes it (Python's repr: `'false'` for a string). */
function quotedValue(value: unknown): string {
  return typeof value === "string" ? `'${value}'` : JSON.stringify(value);
}

/** The number of characters (code points, as OpenAI counts) in `text`, counted only past `over`. */
function longerThan(text: string, over: number): number | undefined {
  if (text.length <= over) return undefined;
  let count = 0;
  for (const _ of text) count++;
  return count > over ? count : undefined;
}

/** Every fixture the openai personality reads, for the README and tests. */
export const OPENAI_FIXTURES: readonly string[] = Object.values(F);

/**
 * OpenAI's 400 for a body that is not JSON (not in the fixtures; as quoted from api.openai.com in
 * public bug reports and proxies that mirror it, e.g. ravendb's mock LLM handler tests).
 */
const UNPARSEABLE_BODY =
  "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)";

function envelope(message: string, param: string | null, code: string | null): string {
  return JSON.stringify({ error: { message, type: "invalid_request_error", param, code } });
}

/** The message text of a recorded JSON error body. */
function recordedMessage(rel: string): string {
  const body = JSON.parse(readFixture(rel)) as { error: { message: string } };
  return body.error.message;
}

/** A recorded JSON body with one message swapped in, other fields kept, re-serialised compactly. */
function withMessage(
  rel: string,
  pairs: readonly (readonly [string, string])[],
  extra: Record<string, unknown> = {},
): string {
  const body = JSON.parse(readFixture(rel)) as { error: Record<string, unknown> };
  body.error.message = swap(String(body.error.message), pairs, rel);
  Object.assign(body.error, extra);
  return JSON.stringify(body);
}

function strictRefusal(
  v: StrictViolation,
  kind: "function" | "response_format",
  name: string,
  param: string,
): ErrorReply {
  const prefix =
    kind === "function"
      ? `Invalid schema for function '${name}': `
      : `Invalid schema for response_format '${name}': `;
  let sentence: string;
  if (v.kind === "additionalProperties") {
    const recorded = recordedMessage(F.strictRoot);
    sentence = swap(
      recorded.slice(recorded.indexOf("In context=")),
      [["context=()", `context=${pythonTuple(v.context)}`]],
      F.strictRoot,
    );
  } else {
    const recorded = readFixture(F.strictRequired).trim();
    sentence = swap(
      recorded.slice(recorded.indexOf("In context=")),
      [
        ["context=('properties', 'organizations', 'items')", `context=${pythonTuple(v.context)}`],
        ["Missing 'roles'.", `Missing '${v.missing ?? ""}'.`],
      ],
      F.strictRequired,
    );
  }
  // The function-schema refusal's envelope is recorded; the response_format one is message-only,
  // so its code is left null rather than guessed.
  return jsonError(
    400,
    envelope(prefix + sentence, param, kind === "function" ? "invalid_function_parameters" : null),
  );
}

/**
 * The context-length refusal, in the recorded wording that fits the request: with no completion
 * limit, "your messages resulted in N tokens" (prompt over the window); with one, "you requested
 * N tokens (P in the messages, M in the completion)" (prompt + limit over the window), and with
 * tools as well, "(P in the messages, F in the functions, and M in the completion)". The tokens of
 * the rendered `tools` block count as the functions'.
 */
function contextRefusal(
  body: Record<string, unknown>,
  prompt: number,
  window: number,
  completion: number | undefined,
): ErrorReply | undefined {
  if (completion === undefined) {
    if (prompt <= window) return undefined;
    return jsonError(
      400,
      withMessage(F.context, [
        ["length is 4097 tokens", `length is ${window} tokens`],
        ["resulted in 4294 tokens", `resulted in ${prompt} tokens`],
      ]),
    );
  }
  if (prompt + completion <= window) return undefined;
  const functions =
    Array.isArray(body.tools) && body.tools.length > 0
      ? countTokens(renderPrompt({ tools: body.tools })) - countTokens(renderPrompt({}))
      : 0;
  if (functions === 0) {
    return jsonError(
      400,
      withMessage(F.contextCompletion, [
        ["length is 4096 tokens", `length is ${window} tokens`],
        ["requested 4130 tokens", `requested ${prompt + completion} tokens`],
        [
          "(3130 in the messages, 1000 in the completion)",
          `(${prompt} in the messages, ${completion} in the completion)`,
        ],
      ]),
    );
  }
  return jsonError(
    400,
    withMessage(F.contextFunctions, [
      ["length is 8192 tokens", `length is ${window} tokens`],
      ["requested 8213 tokens", `requested ${prompt + completion} tokens`],
      [
        "(6683 in the messages, 730 in the functions, and 800 in the completion)",
        `(${prompt - functions} in the messages, ${functions} in the functions, and ${completion} in the completion)`,
      ],
    ]),
  );
}

/** What each option of {@link openaiPersonality} must be. */
const OPENAI_OPTION_RULES: Record<keyof OpenAiPersonalityOptions, OptionRule> = {
  reasoningModels: regExp,
  reasoningEffortValues: stringList,
  extraParams: stringList,
  unknownParams: stringList,
  contextWindow: positiveWhole,
  models: stringList,
  maxContentLength: positiveWhole,
};

/**
 * Makes the `openai` personality.
 *
 * Refuses, in this order: a body that is not JSON (OpenAI's "We could not parse the JSON body"
 * 400), unknown body fields (`reasoning_effort` counts as unknown on non-reasoning models), a
 * `stream` that is not a boolean (`"true"`: "'true' is not of type 'boolean' - 'stream'"), a
 * `max_tokens` or `max_completion_tokens` below 1 (`integer_below_min_value`), a message `content`
 * string over `maxContentLength` characters (`string_above_max_length`, 10485760 unless given),
 * `max_tokens` on reasoning models, unsupported `reasoning_effort` values, a `temperature` other
 * than 1 on reasoning models, `stream_options` without `stream`, `web_search_options` on a
 * non-search model, strict tool / response_format schemas that break the strict rules, an unknown
 * model (when `models` is set), a context overflow (when `contextWindow` is set; see
 * `contextRefusal`). Unknown paths and methods get OpenAI's 404 "Invalid URL (METHOD /path)". A
 * streamed reply carries a usage chunk only when `stream_options.include_usage` is true, as OpenAI
 * does.
 */
export function openaiPersonality(given: OpenAiPersonalityOptions = {}): Personality {
  const options = ownOptions("openai personality", given, OPENAI_OPTION_RULES);
  const reasoning = options.reasoningModels ?? /^(o\d|gpt-5)/;
  const efforts = options.reasoningEffortValues ?? ["none", "low", "medium", "high"];
  const refused = new Set(options.unknownParams ?? []);
  const known = new Set([...OPENAI_CHAT_PARAMS, ...(options.extraParams ?? [])]);

  const check = (request: RecordedRequest, ctx: PersonalityContext): ErrorReply | undefined => {
    const body = request.body;
    if (body === undefined) return jsonError(400, envelope(UNPARSEABLE_BODY, null, null));
    if (!isRecord(body)) return undefined;
    const model = typeof body.model === "string" ? body.model : "";
    const isReasoning = reasoning.test(model);
    for (const key of Object.keys(body)) {
      const unknown = !known.has(key) || refused.has(key) || (key === "reasoning_effort" && !isReasoning);
      if (unknown) {
        return jsonError(400, withMessage(F.unrecognized, [["reasoning_effort", key]]));
      }
    }
    // Types and ranges first, as OpenAI reads the body against its schema before what it means.
    if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean") {
      return jsonError(400, withMessage(F.streamType, [["'false'", quotedValue(body.stream)]]));
    }
    for (const param of ["max_tokens", "max_completion_tokens"]) {
      const value = body[param];
      if (typeof value !== "number" || !Number.isInteger(value) || value >= 1) continue;
      return jsonError(
        400,
        withMessage(
          F.belowMin,
          [
            ["'max_tokens'", `'${param}'`],
            ["got -15335", `got ${value}`],
          ],
          { param },
        ),
      );
    }
    if (Array.isArray(body.messages)) {
      const limit = options.maxContentLength ?? MAX_CONTENT_LENGTH;
      for (const [i, message] of body.messages.entries()) {
        const content = isRecord(message) ? message.content : undefined;
        const length = typeof content === "string" ? longerThan(content, limit) : undefined;
        if (length === undefined) continue;
        const param = `messages[${i}].content`;
        return jsonError(
          400,
          withMessage(
            F.tooLong,
            [
              ["'input[0].content'", `'${param}'`],
              ["maximum length 10485760", `maximum length ${limit}`],
              ["length 62114761", `length ${length}`],
            ],
            { param },
          ),
        );
      }
    }
    if (isReasoning && "max_tokens" in body) return jsonError(400, readFixture(F.maxTokens));
    if (isReasoning && "reasoning_effort" in body) {
      const value = body.reasoning_effort;
      if (value === null) {
        const message = readFixture(F.effortNull).trim();
        const text = swap(
          message,
          [["'none', 'low', 'medium', and 'high'", quotedList(efforts)]],
          F.effortNull,
        );
        return jsonError(400, envelope(text, "reasoning_effort", "unsupported_value"));
      }
      if (typeof value !== "string" || !efforts.includes(value)) {
        const message = readFixture(F.effort).trim();
        const text = swap(
          message,
          [
            ["'minimal'", typeof value === "string" ? `'${value}'` : JSON.stringify(value)],
            ["'none', 'low', 'medium', and 'high'", quotedList(efforts)],
          ],
          F.effort,
        );
        return jsonError(400, envelope(text, "reasoning_effort", "unsupported_value"));
      }
    }
    if (isReasoning && "temperature" in body && body.temperature !== 1) {
      return jsonError(
        400,
        withMessage(F.temperature, [
          ["does not support 0", `does not support ${JSON.stringify(body.temperature)}`],
        ]),
      );
    }
    if ("stream_options" in body && body.stream !== true) return jsonError(400, readFixture(F.streamOptions));
    if ("web_search_options" in body && !model.includes("search"))
      return jsonError(400, readFixture(F.webSearch));
    if (Array.isArray(body.tools)) {
      for (const [i, tool] of body.tools.entries()) {
        const fn = isRecord(tool) && isRecord(tool.function) ? tool.function : undefined;
        if (fn?.strict !== true) continue;
        const violation = findStrictViolation(fn.parameters ?? {});
        if (violation)
          return strictRefusal(violation, "function", String(fn.name), `tools[${i}].function.parameters`);
      }
    }
    const format = body.response_format;
    if (isRecord(format) && format.type === "json_schema" && isRecord(format.json_schema)) {
      const spec = format.json_schema;
      const violation = spec.strict === true ? findStrictViolation(spec.schema ?? {}) : undefined;
      if (violation) return strictRefusal(violation, "response_format", String(spec.name), "response_format");
    }
    if (options.models && !options.models.includes(model)) {
      return jsonError(404, withMessage(F.notFound, [["gpt-5.2-proo", model]]));
    }
    if (options.contextWindow != null) {
      const refusal = contextRefusal(
        body,
        ctx.promptTokens,
        options.contextWindow,
        requestedMaxTokens(request),
      );
      if (refusal) return refusal;
    }
    return undefined;
  };

  return {
    name: "openai",
    check,
    // api.openai.com answers any path or method it does not serve with a 404 naming both, e.g.
    // {"error":{"message":"Invalid URL (GET /v1/chat/completions)","type":"invalid_request_error",
    // "param":null,"code":null}} (quoted in codex / relay bug reports and client tests).
    notFound: (request) => ({
      status: 404,
      body: envelope(`Invalid URL (${request.method} ${request.path})`, null, null),
      headers: { "content-type": "application/json" },
    }),
    completionBudget: (request) => requestedMaxTokens(request),
    streamsUsage: includeUsageRequested,
    choices: requestedChoices,
  };
}
