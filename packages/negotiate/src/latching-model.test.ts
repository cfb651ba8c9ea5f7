/**
 * A model of what `negotiate` latches, where, and what is never sent twice — checked over HTTP.
 *
 * Two endpoints, each serving the same two model names, are testkit servers whose reply function
 * plays a quirky server: each endpoint and each (endpoint, model) has hidden things it refuses,
 * answered with the recorded refusal bodies (the request-specific part — a field name, a value —
 * put in, as the personalities do). Random faults (429s, 5xx, a 401, a 400 that is no refusal, a
 * cut connection, a stream cut after text) are scripted onto random attempts. Requests of random
 * shape go through `negotiate` → `buildBody` → the real `streamTurn` → a pooled `@loopwright/client`
 * client, inside the caller's retry loop the client's README prescribes (`isTransient` and
 * `backoffMs`, the client itself never retrying).
 *
 * A plain reference keeps what should be latched where. After every request it is checked that
 * each body the server received was the one the reference predicts (lacking exactly what is
 * latched for that endpoint and model), that a refusal latched on its own key and nowhere else,
 * that the request took exactly the attempts the reference predicts (so an error documented as
 * never retried was sent once), that the waits asked of the caller are the documented backoff,
 * that the notices are the documented ones, and that the store's snapshot — exported between
 * requests or inside an attempt — imported into a new store builds the same body. Twin requests
 * sent at once must each end as one alone does, sending only bodies it sent. A store bounded to
 * one endpoint forgets the other and starts it again at the defaults.
 *
 * A request's messages may open with a system message and may hold a user message straight after
 * a tool result; a model may refuse either in the recorded words (a Gemma-like template, a
 * Mistral-like validator). The reference predicts the messages each attempt sends — the system
 * text at the head of the question, a short assistant message between the tool result and the
 * user — and the caller's transcript is checked to be as it was after every request.
 *
 * A new store stands in for a fresh runtime: `createRuntime` lives in `@loopwright/loop`, which
 * depends on this package, and its capability store is one of these.
 *
 * A second model below does the same for `@loopwright/client`'s window-route latches: which
 * native routes a lookup asks, what it answers, and what it remembers for the server.
 */
import { createClientPool, NO_KEY } from "@loopwright/client";
import { streamTurn } from "@loopwright/stream";
import {
  type RecordedRequest,
  type Reply,
  readFixture,
  recordedError,
  recordedErrorBody,
  startServer,
  type TestServer,
} from "@loopwright/testkit";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { STRICT_LOOKUP_TOOLS, transcriptWithLongId } from "../test/wire.js";
import {
  type CapabilityStore,
  createCapabilityStore,
  EFFORT_LADDER,
  effortFor,
  type ModelCapabilities,
} from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { buildBody, type ModelParams, type ToolChoice, type ToolDefinition } from "./request-body.js";
import { backoffMs, isTransient } from "./retry.js";
import { TOOL_RESULTS_READ } from "./template-roles.js";

// ---------------------------------------------------------------------------------------------
// The recorded wordings, as the servers here send them.

type ErrorReply = { type: "error"; status: number; body: unknown };
const refusal = (status: number, body: unknown): ErrorReply => ({ type: "error", status, body });
const text = (file: string): string => readFixture(`errors/${file}`);
/** A recorded body with the recorded field name or value put in for this request's. */
const swapped = (file: string, from: string, to: string): unknown =>
  JSON.parse(readFixture(`errors/${file}`).split(from).join(to));

/** Wordings that name a field the server does not know (an unknown-field refusal). */
const UNKNOWN_FIELD: Record<string, (field: string) => ErrorReply> = {
  openaiUnrecognized: (field) => ({
    type: "error",
    status: 400,
    body: swapped(
      "openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json",
      "reasoning_effort",
      field,
    ),
  }),
  groqProperty: (field) =>
    refusal(400, swapped("groq/property-unsupported-did-you-mean.json", "chat_template_kwargs", field)),
  mistralExtraForbidden: (field) => ({
    type: "error",
    status: 422,
    body: JSON.parse(
      readFixture("errors/mistral/422-stream-options-extra-forbidden-message-is-object.json").replace(
        '"stream_options", "include_usage"',
        `"${field}", "inner"`,
      ),
    ),
  }),
  fireworksExtraInputs: (field) => ({
    type: "error",
    status: 400,
    body: text("fireworks/extra-inputs-not-permitted-stream-options.message.txt").replace(
      "stream_options",
      field,
    ),
  }),
  relayUnknownParameter: (field) => ({
    type: "error",
    status: 400,
    body: swapped(
      "relay-new-api/unknown-parameter-stream-options-with-request-ids.json",
      "stream_options",
      field,
    ),
  }),
};
const UNKNOWN_FIELD_NAMES = Object.keys(UNKNOWN_FIELD);

const STREAM_OPTIONS: Record<string, () => ErrorReply> = {
  openaiOnlyWhenStreaming: () => recordedError(400, "openai/stream-options-only-when-stream-enabled.json"),
  groq2024: () => recordedError(400, "groq/stream-options-unsupported-2024.json"),
  relay: () => recordedError(400, "relay-new-api/unknown-parameter-stream-options-with-request-ids.json"),
  mistral422: () => recordedError(422, "mistral/422-stream-options-extra-forbidden-message-is-object.json"),
  fireworks: () => refusal(400, text("fireworks/extra-inputs-not-permitted-stream-options.message.txt")),
};

const STRICT: Record<string, () => ErrorReply> = {
  openaiInvalidSchema: () => recordedError(400, "openai/strict-schema-root-additionalproperties-chat.json"),
  llamacppConversion: () =>
    recordedError(400, "llamacpp/json-schema-conversion-failed-unrecognized-schema.json"),
};

const TEMPERATURE: Record<string, (value: number) => ErrorReply> = {
  onlyTheDefault: (value) =>
    refusal(400, swapped("openai/temperature-0-unsupported-value.json", "support 0 ", `support ${value} `)),
  kimiOnlyOne: () => ({
    type: "error",
    status: 400,
    body: {
      error: {
        message: "invalid temperature: only 1 is allowed for this model",
        type: "invalid_request_error",
      },
    },
  }),
  unsupportedParameter: () =>
    recordedError(400, "openai/temperature-unsupported-parameter-responses-api.json"),
};

const TOOL_CALL_IDS: Record<string, (id: string) => ErrorReply> = {
  mistral: (id) =>
    refusal(400, swapped("mistral/400-tool-call-id-must-be-nine-alphanumerics.json", "2968-LWy3uasib", id)),
  openaiTooLong: () => recordedError(400, "openai/400-tool-call-id-string-above-max-length.json"),
  omlx500: (id) =>
    refusal(
      500,
      text("omlx/500-tool-call-id-must-be-nine-alphanumerics.message.txt").replace("call_49c89af0", id),
    ),
};

/**
 * A chat template that takes no system message: Gemma 2's under vLLM (recorded, a 400), the same
 * template exception under a 500 as SGLang passes it on, and Mistral v0.1's template sentence in
 * vLLM's envelope. The 500 must never be retried as a server fault: the same messages fail alike.
 */
const SYSTEM_ROLE: Record<string, () => ErrorReply> = {
  vllmGemma: () => recordedError(400, "vllm/system-role-not-supported-chat-template.json"),
  sglang500: () =>
    refusal(
      500,
      swapped(
        "vllm/system-role-not-supported-chat-template.json",
        '"System role not supported","type":"BadRequestError","param":null,"code":400',
        '"jinja2.exceptions.TemplateError: System role not supported","type":"InternalServerError","param":null,"code":500',
      ),
    ),
  mistralV01: () =>
    refusal(
      400,
      swapped(
        "vllm/system-role-not-supported-chat-template.json",
        "System role not supported",
        "Only user and assistant roles are supported!",
      ),
    ),
};

/** A user message straight after a tool result, refused by Mistral's API and by vLLM's mistral_common. */
const USER_AFTER_TOOL: Record<string, () => ErrorReply> = {
  mistralApi: () => recordedError(400, "mistral/400-unexpected-role-user-after-tool.json"),
  vllmMistralCommon: () => recordedError(400, "vllm/user-after-tool-mistral-common.json"),
};

/** "'a', 'b', and 'c'" as OpenAI lists the efforts a model takes. */
function listed(values: readonly string[]): string {
  const quoted = values.map((v) => `'${v}'`);
  if (quoted.length <= 2) return quoted.join(" and ");
  return `${quoted.slice(0, -1).join(", ")}, and ${quoted.at(-1)}`;
}

const EFFORT_WORDINGS = ["kimi", "responses", "vllm", "ollama", "gemini"] as const;
type EffortWording = (typeof EFFORT_WORDINGS)[number];

/**
 * An effort refusal for the value sent and what this model takes: the recorded Kimi / OpenAI and
 * Responses bodies with the values put in, vLLM's and Ollama's as their tests quote them, and
 * Gemini's, which refuses `none` and lists nothing.
 */
function effortRefusal(
  wording: EffortWording,
  model: string,
  sent: string,
  takes: readonly string[],
): ErrorReply {
  if (wording === "gemini") {
    const message = "Budget 0 is invalid. This model only works in thinking mode.";
    return {
      type: "error",
      status: 400,
      body: { error: { code: 400, message, status: "INVALID_ARGUMENT" } },
    };
  }
  if (wording === "responses") {
    const recorded = recordedErrorBody(
      "openai/reasoning-effort-none-unsupported-gpt-5.1-codex-responses.json",
    );
    const message = `Unsupported value: '${sent}' is not supported with the '${model}' model. Supported values are: ${listed(takes)}.`;
    return { type: "error", status: 400, body: { error: { ...(recorded.error as object), message } } };
  }
  if (wording === "vllm") {
    const quoted = takes.map((v) => `'${v}'`);
    const list =
      quoted.length > 1 ? `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}` : quoted.join("");
    const message = `[{'type': 'literal_error', 'loc': ('body', 'reasoning_effort'), 'msg': "Input should be ${list}", 'input': '${sent}', 'ctx': {'expected': "${list}"}}]`;
    return {
      type: "error",
      status: 400,
      body: { error: { message, type: "BadRequestError", param: null, code: 400 } },
    };
  }
  if (wording === "ollama") {
    const message = `Expected 'reasoning_effort' to be one of: ${[...takes]
      .sort()
      .map((v) => `'${v}'`)
      .join(", ")}; found '${sent}'.`;
    return { type: "error", status: 400, body: { error: { message } } };
  }
  const recorded = recordedErrorBody("moonshot/kimi-code-reasoning-effort-none-unsupported.json");
  const message =
    `Unsupported value: 'reasoning_effort' does not support '${sent}' with this model. ` +
    `Supported values are: ${listed(takes)}.`;
  const error = recorded.error as Record<string, unknown>;
  return { type: "error", status: 400, body: { error: { ...error, message } } };
}

// ---------------------------------------------------------------------------------------------
// Faults that are not refusals.

/** A turn whose stream carries a server error after chunk `afterChunk` (the role opener is chunk 1). */
const overloadedAfter = (afterChunk: number, content: string): Reply => ({
  content,
  errorMidStream: { afterChunk, error: { message: "The server is overloaded.", type: "server_error" } },
});

/** OpenRouter's recorded 429 with the headers a server says how long to wait in. */
const upstreamLimited = (headers: Record<string, string>): Reply => ({
  type: "error",
  status: 429,
  headers,
  body: recordedErrorBody("openrouter/429-provider-returned-error-rate-limited-upstream.json"),
});

const FAULTS = {
  "429-try-again": {
    transient: true,
    hintMs: 644,
    reply: (): Reply => ({
      type: "error",
      status: 429,
      body: {
        error: {
          message: text("openai/429-rate-limit-reached-tpm-retry-in-ms.message.txt")
            .replace(/^429 /, "")
            .trim(),
          type: "tokens",
          code: "rate_limit_exceeded",
        },
      },
    }),
  },
  // The server's other ways of saying how long (README, backoffMs), a hint capped at 120 s.
  "429-retry-after-ms": {
    transient: true,
    hintMs: 1500,
    reply: (): Reply => upstreamLimited({ "retry-after-ms": "1500", "retry-after": "9" }),
  },
  "429-retry-after-past-the-cap": {
    transient: true,
    hintMs: 120_000,
    reply: (): Reply => upstreamLimited({ "retry-after": "300" }),
  },
  "429-retry-after-date": {
    transient: true,
    hintMs: 7000,
    // An HTTP date, read against the response's own Date header.
    reply: (): Reply =>
      upstreamLimited({
        date: "Sun, 06 Dec 2026 12:00:00 GMT",
        "retry-after": "Sun, 06 Dec 2026 12:00:07 GMT",
      }),
  },
  "429-ratelimit-reset": {
    transient: true,
    hintMs: 62_500,
    reply: (): Reply => ({
      type: "error",
      status: 429,
      // The reset of the budget that ran out (tokens), not of the other.
      headers: {
        "x-ratelimit-remaining-requests": "99",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-requests": "20ms",
        "x-ratelimit-reset-tokens": "1m2.5s",
      },
      body: recordedErrorBody("openai/429-request-too-large-tpm-gpt-4o.json"),
    }),
  },
  "429-azure-words": {
    transient: true,
    hintMs: 20_000,
    reply: (): Reply =>
      refusal(429, {
        error: {
          code: "429",
          message:
            "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 20 seconds.",
        },
      }),
  },
  "503-estimated-time": {
    transient: true,
    hintMs: 20_500,
    reply: (): Reply => refusal(503, { error: "Model m is currently loading", estimated_time: 20.5 }),
  },
  "429-retry-after": {
    transient: true,
    hintMs: 3000,
    reply: (): Reply => upstreamLimited({ "retry-after": "3" }),
  },
  "500": {
    transient: true,
    hintMs: undefined,
    reply: (): Reply => ({
      type: "error",
      status: 500,
      body: {
        error: { message: "The server had an error while processing your request.", type: "server_error" },
      },
    }),
  },
  "503-loading": {
    transient: true,
    hintMs: undefined,
    reply: (): Reply => recordedError(503, "llamacpp/503-loading-model.json"),
  },
  "connection-cut": {
    transient: true,
    hintMs: undefined,
    reply: (): Reply => ({ content: "x", dropAfterChunk: 0 }),
  },
  "401": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => ({
      type: "error",
      status: 401,
      body: {
        error: {
          message:
            "Incorrect API key provided: sk-wr***ng. You can find your API key at https://platform.openai.com/account/api-keys.",
          type: "invalid_request_error",
          param: null,
          code: "invalid_api_key",
        },
      },
    }),
  },
  "429-quota": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => ({
      type: "error",
      status: 429,
      body: {
        error: {
          message:
            "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
          type: "insufficient_quota",
          param: null,
          code: "insufficient_quota",
        },
      },
    }),
  },
  // Refusals of a value, not a field: never latched (dropping the field would answer them at the
  // model's default, with nothing saying so).
  "400-temperature-range": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => ({
      type: "error",
      status: 400,
      // OpenAI's recorded range refusal of max_tokens, spelled for a temperature.
      body: {
        error: {
          message:
            "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead.",
          type: "invalid_request_error",
          param: "temperature",
          code: "decimal_above_max_value",
        },
      },
    }),
  },
  "400-max-tokens-too-large": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => ({
      type: "error",
      status: 400,
      body: {
        error: {
          message:
            "max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you provided 100000.",
          type: "invalid_request_error",
          param: "max_tokens",
          code: "invalid_value",
        },
      },
    }),
  },
  "400-value": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => recordedError(400, "openai/400-max-tokens-integer-below-min-value.json"),
  },
  "400-tool-use-failed": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => recordedError(400, "groq/400-tool-use-failed-schema-mismatch.json"),
  },
  "404-model": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => recordedError(404, "openai/404-model-not-found-chat.json"),
  },
  // 5xx that no wait mends: a model loaded without its projector, a transcript the server cannot
  // read, a machine short of memory, an overflow under a 500, a server started without --jinja.
  "500-no-mmproj": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => recordedError(500, "llamacpp/image-input-not-supported-no-mmproj-500-b9749.json"),
  },
  "500-parse-messages": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => recordedError(500, "llamacpp/failed-to-parse-messages-500-b9749.json"),
  },
  "500-ollama-memory": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply =>
      refusal(500, { error: JSON.parse(text("ollama/500-model-requires-more-system-memory.message.txt")) }),
  },
  "500-overflow": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => recordedError(500, "llamacpp/exceed-context-size-code-500-pr15780.json"),
  },
  "500-needs-jinja": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply =>
      refusal(500, text("llamacpp/tools-param-requires-jinja.message.txt").replace(/^500 /, "").trim()),
  },
  // vLLM started without a tool parser: only its setup answers it, so nothing is latched.
  "400-auto-tool-choice": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => recordedError(400, "vllm/auto-tool-choice-requires-flags.json"),
  },
  // A server error sent inside the stream after the role opener only: nothing shown yet.
  "stream-error-before-text": {
    transient: true,
    hintMs: undefined,
    reply: (): Reply => overloadedAfter(1, "never shown"),
  },
  // The same after some text: the model has started answering.
  "stream-error-after-text": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => overloadedAfter(2, "partial answer that is cut"),
  },
  // Only the content-free role opener came: nothing shown, so it is retried like no answer at all.
  "cut-after-role": {
    transient: true,
    hintMs: undefined,
    reply: (): Reply => ({ content: "x", dropAfterChunk: 1 }),
  },
  // A piece of a tool call, or of the reasoning, has been streamed: the model has started answering.
  "cut-after-tool-call-text": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => ({ toolCalls: [{ name: "lookup", arguments: '{"id":"7"}' }], dropAfterChunk: 2 }),
  },
  "cut-after-reasoning-text": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => ({ reasoning: "Let me think about item 7.", content: "Lamp.", dropAfterChunk: 2 }),
  },
  // The model has started answering: nothing is re-sent, by negotiate or by the caller.
  "cut-after-text": {
    transient: false,
    hintMs: undefined,
    reply: (): Reply => ({ content: "partial answer that is cut", dropAfterChunk: 2 }),
  },
} as const;
type FaultName = keyof typeof FAULTS;
const FAULT_NAMES = Object.keys(FAULTS) as FaultName[];

// ---------------------------------------------------------------------------------------------
// The world: what each endpoint and each model on it refuses (hidden from negotiate).

const MODELS = ["model-a", "model-b"] as const;
const EXTRA_FIELDS = ["parallel_tool_calls", "chat_template_kwargs", "top_k", "web_search_options"] as const;
const EXTRA_VALUES: Record<string, unknown> = {
  parallel_tool_calls: false,
  chat_template_kwargs: { enable_thinking: false },
  top_k: 20,
  web_search_options: {},
};

interface EndpointWorld {
  streamOptions: string | null;
  strict: string | null;
  /** Cannot build a grammar from a response_format schema: refuses it in llama.cpp's words, strict tools or not. */
  formatGrammar: boolean;
}
interface ModelWorld {
  tokenSpelling: boolean;
  /** Which words a model with no effort at all refuses `reasoning_effort` in. */
  noEffortWording: 0 | 1 | 2;
  temperature: string | null;
  /** `null`: takes any effort; `"none-at-all"`: takes no reasoning_effort; else the rungs it refuses. */
  effort: null | "none-at-all" | { refuses: string[]; wording: EffortWording };
  fields: Record<string, string>;
  toolChoice: boolean;
  responseFormat: string | null;
  toolCallIds: string | null;
  /** Refuses a transcript with tool calls in the tool-call-id words whatever the ids (no id at fault). */
  idsAlways: boolean;
  /** Its chat template takes no system message (Gemma-like), refused in these words; `null`: takes one. */
  systemRole: string | null;
  /** Refuses a user message straight after a tool message (Mistral-like), in these words; `null`: takes it. */
  userAfterTool: string | null;
}
/**
 * 0: two servers, one key; 1: one server, two keys; 2: one server and key, two tenants told apart
 * by a header; 3: two local servers with no key (absent, blank and NO_KEY one tenant).
 */
type Layout = 0 | 1 | 2 | 3;
interface TenantEndpoint {
  baseUrl: string;
  apiKey?: string;
  headers?: Record<string, string>;
}

interface World {
  /** 0: two servers, one key each; 1: one server, two keys (the key is part of the endpoint). */
  layout: Layout;
  /** A store bounded to one endpoint: using the other forgets the least recently used. */
  tight: boolean;
  endpoints: [EndpointWorld, EndpointWorld];
  models: [[ModelWorld, ModelWorld], [ModelWorld, ModelWorld]];
}

const endpointWorld: fc.Arbitrary<EndpointWorld> = fc.record({
  streamOptions: fc.option(fc.constantFrom(...Object.keys(STREAM_OPTIONS)), { freq: 2 }),
  strict: fc.option(fc.constantFrom(...Object.keys(STRICT)), { freq: 2 }),
  formatGrammar: fc.oneof(
    { weight: 4, arbitrary: fc.constant(false) },
    { weight: 1, arbitrary: fc.constant(true) },
  ),
});
const modelWorld: fc.Arbitrary<ModelWorld> = fc.record({
  tokenSpelling: fc.boolean(),
  noEffortWording: fc.constantFrom(0 as const, 1 as const, 2 as const),
  temperature: fc.option(fc.constantFrom(...Object.keys(TEMPERATURE)), { freq: 2 }),
  effort: fc.oneof(
    fc.constant(null),
    fc.constant("none-at-all" as const),
    fc.record({
      // xhigh is off the ladder: its refusal goes to the caller.
      refuses: fc.subarray([...EFFORT_LADDER, "xhigh"], { minLength: 1, maxLength: 3 }),
      wording: fc.constantFrom("kimi", "responses", "vllm", "ollama") as fc.Arbitrary<EffortWording>,
    }),
    fc.constant<{ refuses: string[]; wording: EffortWording }>({ refuses: ["none"], wording: "gemini" }),
  ),
  fields: fc.dictionary(fc.constantFrom(...EXTRA_FIELDS), fc.constantFrom(...UNKNOWN_FIELD_NAMES), {
    maxKeys: 4,
  }),
  toolChoice: fc.boolean(),
  responseFormat: fc.option(fc.constantFrom(...UNKNOWN_FIELD_NAMES), { freq: 2 }),
  toolCallIds: fc.option(fc.constantFrom(...Object.keys(TOOL_CALL_IDS)), { freq: 2 }),
  idsAlways: fc.oneof(
    { weight: 4, arbitrary: fc.constant(false) },
    { weight: 1, arbitrary: fc.constant(true) },
  ),
  systemRole: fc.option(fc.constantFrom(...Object.keys(SYSTEM_ROLE)), { freq: 3 }),
  userAfterTool: fc.option(fc.constantFrom(...Object.keys(USER_AFTER_TOOL)), { freq: 3 }),
});
const world: fc.Arbitrary<World> = fc.record({
  layout: fc.constantFrom<Layout>(0, 1, 2, 3),
  tight: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  endpoints: fc.tuple(endpointWorld, endpointWorld),
  models: fc.tuple(fc.tuple(modelWorld, modelWorld), fc.tuple(modelWorld, modelWorld)),
});

// ---------------------------------------------------------------------------------------------
// Requests.

const TOOLS = STRICT_LOOKUP_TOOLS;
const RESPONSE_FORMAT = {
  type: "json_schema",
  json_schema: { name: "answer", strict: true, schema: { type: "object", properties: {} } },
};

interface Shape {
  endpoint: 0 | 1;
  model: 0 | 1;
  /** Whether `negotiate` is told the model's name (model-level latches only then). */
  namesModel: boolean;
  effort: string | undefined;
  maxTokens: number | undefined;
  temperature: number | undefined;
  tools: boolean;
  toolChoice: ToolChoice | undefined;
  extra: string[];
  /** A ceiling given in extraBody as `max_tokens` (512), beside or instead of `maxTokens`. */
  extraCeiling: boolean;
  /** The effort and the response_format given in extraBody rather than the config and the caller's body. */
  inExtra: boolean;
  droppable: string[];
  responseFormat: boolean;
  /** A transcript with an earlier tool call whose id is 53 characters. */
  toolHistory: boolean;
  /** A system message ahead of the question, or a host's note as one after the transcript (after the tool result, if any). */
  system: "none" | "head" | "note";
  /** With `toolHistory`, a user message straight after the tool result (the user spoke before the model did). */
  userAfterTool: boolean;
  /** What each wire attempt of this request meets before the server's own checks (`null`: none). */
  script: (FaultName | null)[];
  jitter: number;
  /** 0: as written; 1: the key with whitespace around it; 2: the base URL as `HTTP://…/v1/` (one tenant). */
  spelling: 0 | 1 | 2;
  /** Tells twin requests apart in the server's log. */
  tag?: string;
}

const shape: fc.Arbitrary<Shape> = fc
  .record({
    endpoint: fc.constantFrom(0 as const, 1 as const),
    model: fc.constantFrom(0 as const, 1 as const),
    namesModel: fc.oneof(
      { weight: 6, arbitrary: fc.constant(true) },
      { weight: 1, arbitrary: fc.constant(false) },
    ),
    effort: fc.constantFrom(undefined, "off", ...EFFORT_LADDER, "xhigh"),
    maxTokens: fc.constantFrom(undefined, 0, 256),
    temperature: fc.constantFrom(undefined, 0, 0.2, 0.7),
    tools: fc.boolean(),
    toolChoice: fc.constantFrom<ToolChoice | undefined>(undefined, "auto", "required", "none"),
    extra: fc.subarray([...EXTRA_FIELDS]),
    extraCeiling: fc.boolean(),
    inExtra: fc.boolean(),
    droppableAll: fc.boolean(),
    responseFormat: fc.boolean(),
    toolHistory: fc.boolean(),
    system: fc.constantFrom("none" as const, "head" as const, "note" as const),
    userAfterTool: fc.boolean(),
    script: fc.array(
      fc.option(fc.constantFrom(...FAULT_NAMES), { freq: 3 }).map((f) => f ?? null),
      { maxLength: 4 },
    ),
    jitter: fc.double({ min: 0, max: 1, noNaN: true }),
    spelling: fc.constantFrom(0 as const, 1 as const, 2 as const),
  })
  .map(({ droppableAll, ...rest }) => ({
    ...rest,
    droppable: droppableAll ? rest.extra : rest.extra.slice(0, 1),
  }));

/** A request asking for everything the servers here can refuse: the snapshot probe's too. */
const FULL_SHAPE: Shape = {
  endpoint: 0,
  model: 0,
  namesModel: true,
  effort: "none",
  maxTokens: 256,
  temperature: 0.2,
  tools: true,
  toolChoice: "auto",
  extra: [...EXTRA_FIELDS],
  extraCeiling: true,
  inExtra: false,
  droppable: [...EXTRA_FIELDS],
  responseFormat: true,
  toolHistory: true,
  system: "note",
  userAfterTool: true,
  script: [],
  jitter: 0,
  spelling: 0,
};

type Step =
  | { kind: "request"; shape: Shape }
  | { kind: "twins"; shape: Shape }
  | { kind: "pair"; shapes: [Shape, Shape] }
  | { kind: "reset" }
  | { kind: "forget"; endpoint: 0 | 1 };
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 12, arbitrary: shape.map((s) => ({ kind: "request" as const, shape: s })) },
  { weight: 3, arbitrary: shape.map((s) => ({ kind: "twins" as const, shape: { ...s, script: [] } })) },
  {
    weight: 2,
    arbitrary: fc.tuple(shape, shape).map(([a, b]) => ({
      kind: "pair" as const,
      shapes: [
        { ...a, script: [] },
        { ...b, script: [] },
      ] as [Shape, Shape],
    })),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "reset" as const }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(0 as const, 1 as const).map((e) => ({ kind: "forget" as const, endpoint: e })),
  },
);

// ---------------------------------------------------------------------------------------------
// The reference: what should be latched where.

interface RefModel {
  refusedEfforts: Set<string>;
  legacyTokenLimit: boolean;
  chosenTemperature: boolean;
  structuredOutput: boolean;
  droppedFields: Set<string>;
  toolChoice: boolean;
  anyToolCallIds: boolean;
  systemRole: boolean;
  userAfterTool: boolean;
  /** The step ups told for this record, as "asked>sent" (once per record, asked rung and rung sent). */
  told: Set<string>;
}
interface RefEndpoint {
  strictSchemas: boolean;
  usageInStream: boolean;
  models: [RefModel, RefModel];
}
const freshModel = (): RefModel => ({
  refusedEfforts: new Set(),
  legacyTokenLimit: true,
  chosenTemperature: true,
  structuredOutput: true,
  droppedFields: new Set(),
  toolChoice: true,
  anyToolCallIds: true,
  systemRole: true,
  userAfterTool: true,
  told: new Set(),
});
const freshEndpoint = (): RefEndpoint => ({
  strictSchemas: true,
  usageInStream: true,
  models: [freshModel(), freshModel()],
});

/** The effort the seed says goes out: the cheapest unrefused rung at or above the asked one. */
function refEffort(model: RefModel, asked: string | undefined): string {
  if (!asked || asked === "off" || model.droppedFields.has("reasoning_effort")) return "";
  const at = EFFORT_LADDER.indexOf(asked);
  if (at < 0) return asked;
  return EFFORT_LADDER.slice(at).find((rung) => !model.refusedEfforts.has(rung)) ?? asked;
}

/** The parts of a body the latches decide. */
interface Features {
  streamOptions: boolean;
  tools: "none" | "strict" | "relaxed";
  toolChoice: unknown;
  effort: string | undefined;
  ceiling: string | undefined;
  temperature: boolean;
  extra: string[];
  responseFormat: boolean;
  shortIds: boolean | undefined;
  /** Each message as `role:text` (`-` for content that is no string), tool-call ids and twin tags left out. */
  messages: string[];
}

const SYSTEM_TEXT = "Answer in one line.";
const FOLLOW_UP = "Only its colour, please.";
const QUESTION = "Look up item 7.";
const NOTE = "Note: the user is on a phone.";

/** A message as `featuresOf` compares it: its role and string content, a twin's tag taken off. */
function messageLine(message: { role?: unknown; content?: unknown }): string {
  const content =
    typeof message.content === "string" ? message.content.replace(/ \((?:A|B|P0|P1)\)$/, "") : "-";
  return `${String(message.role)}:${content}`;
}

/**
 * The messages the seed says go out for this model: once its template refused a system message,
 * each system text at the head of the next user message (one with none after it as a user message
 * of its own); once it refused a user message after a tool result, the short assistant message
 * between them — a user message the fold made included.
 */
function expectedMessages(model: RefModel, s: Shape): string[] {
  const lines: string[] = [];
  let pending: string | undefined;
  const push = (role: string, text: string) => {
    if (role === "user" && !model.userAfterTool && lines.at(-1)?.startsWith("tool:")) {
      lines.push(`assistant:${TOOL_RESULTS_READ}`);
    }
    lines.push(`${role}:${text}`);
  };
  const system = (text: string) => {
    if (model.systemRole) push("system", text);
    else pending = text;
  };
  const user = (text: string) => {
    push("user", pending === undefined ? text : `${pending}\n\n${text}`);
    pending = undefined;
  };
  if (s.system === "head") system(SYSTEM_TEXT);
  user(QUESTION);
  if (s.toolHistory) lines.push("assistant:-", "tool:item 7 is a lamp");
  if (s.system === "note") system(NOTE);
  if (s.toolHistory && s.userAfterTool) user(FOLLOW_UP);
  if (pending !== undefined) {
    push("user", pending);
    pending = undefined;
  }
  return lines;
}

function featuresOf(body: Record<string, unknown>): Features {
  const tools = body.tools as ToolDefinition[] | undefined;
  const messages = body.messages as {
    role?: unknown;
    content?: unknown;
    tool_calls?: { id: string }[];
    tool_call_id?: string;
  }[];
  const ids = messages.flatMap((m) => [
    ...(m.tool_calls ?? []).map((c) => c.id),
    ...(m.tool_call_id ? [m.tool_call_id] : []),
  ]);
  return {
    streamOptions: "stream_options" in body,
    tools: !tools ? "none" : tools.some((t) => t.function.strict === true) ? "strict" : "relaxed",
    toolChoice: body.tool_choice,
    effort: body.reasoning_effort as string | undefined,
    ceiling:
      "max_completion_tokens" in body
        ? "max_completion_tokens"
        : "max_tokens" in body
          ? "max_tokens"
          : undefined,
    temperature: "temperature" in body,
    extra: EXTRA_FIELDS.filter((f) => f in body),
    responseFormat: "response_format" in body,
    shortIds: ids.length === 0 ? undefined : ids.every((id) => /^[A-Za-z0-9]{9}$/.test(id)),
    messages: messages.map(messageLine),
  };
}

function expectedFeatures(endpoint: RefEndpoint, shape: Shape): Features {
  const named = shape.namesModel;
  // Without the model's name, no model latch is read: the defaults.
  const model = named ? endpoint.models[shape.model] : freshModel();
  const toolsGo = shape.tools && (model.toolChoice || shape.toolChoice !== "none");
  // In extraBody an effort goes as given where nothing climbs it ("off" included), unless dropped.
  const asGiven = shape.inExtra
    ? (shape.effort ?? "")
    : shape.effort && shape.effort !== "off"
      ? shape.effort
      : "";
  const effort = model.droppedFields.has("reasoning_effort")
    ? ""
    : named
      ? refEffort(model, shape.effort) || asGiven
      : asGiven;
  return {
    streamOptions: endpoint.usageInStream,
    tools: !toolsGo ? "none" : endpoint.strictSchemas ? "strict" : "relaxed",
    toolChoice: toolsGo && model.toolChoice ? shape.toolChoice : undefined,
    effort: effort || undefined,
    // The config's ceiling or extraBody's, spelled as the model takes it.
    ceiling:
      shape.maxTokens || shape.extraCeiling
        ? model.legacyTokenLimit
          ? "max_tokens"
          : "max_completion_tokens"
        : undefined,
    // The seed's `model?.chosenTemperature ? { temperature } : {}`: no model named, no temperature.
    temperature: shape.temperature !== undefined && named && model.chosenTemperature,
    extra: EXTRA_FIELDS.filter((f) => shape.extra.includes(f) && !model.droppedFields.has(f)),
    responseFormat: shape.responseFormat && model.structuredOutput,
    shortIds: shape.toolHistory ? !model.anyToolCallIds : undefined,
    messages: expectedMessages(model, shape),
  };
}

// ---------------------------------------------------------------------------------------------
// The quirky servers.

/** What the server did with one wire attempt. */
type Outcome =
  | { kind: "ok" }
  | { kind: "fault"; fault: FaultName }
  | { kind: "refusal"; latch: Latch; effortRefused?: string; effortTakes?: string[]; field?: string };
type Latch =
  | "usageInStream"
  | "strictSchemas"
  | "legacyTokenLimit"
  | "chosenTemperature"
  | "effort"
  | "noEffort"
  | "droppedField"
  | "toolChoice"
  | "structuredOutput"
  | "anyToolCallIds"
  | "systemRole"
  | "userAfterTool";
const ENDPOINT_LATCHES = new Set<Latch>(["usageInStream", "strictSchemas"]);

interface Logged {
  endpoint: 0 | 1;
  model: string;
  body: Record<string, unknown>;
  outcome: Outcome;
}

/** The server's own reading of a body: the first thing this endpoint or model refuses in it. */
function check(
  w: World,
  endpoint: 0 | 1,
  body: Record<string, unknown>,
): { reply: Reply; outcome: Outcome } | undefined {
  const e = w.endpoints[endpoint];
  const index = MODELS.indexOf(body.model as (typeof MODELS)[number]);
  const m = w.models[endpoint][index === 1 ? 1 : 0];
  const refuse = (reply: Reply, outcome: Outcome) => ({ reply, outcome });
  if (e.streamOptions && "stream_options" in body) {
    return refuse(STREAM_OPTIONS[e.streamOptions]!(), { kind: "refusal", latch: "usageInStream" });
  }
  const tools = (body.tools ?? []) as ToolDefinition[];
  if (e.strict && tools.some((t) => t.function.strict === true)) {
    return refuse(STRICT[e.strict]!(), { kind: "refusal", latch: "strictSchemas" });
  }
  if (e.formatGrammar && "response_format" in body) {
    return refuse(STRICT.llamacppConversion!(), { kind: "refusal", latch: "strictSchemas" });
  }
  if (m.tokenSpelling && "max_tokens" in body) {
    const reply = {
      type: "error" as const,
      status: 400,
      body: recordedErrorBody("openai/max-tokens-unsupported-use-max-completion-tokens.json"),
    };
    return refuse(reply, { kind: "refusal", latch: "legacyTokenLimit" });
  }
  if (m.temperature && typeof body.temperature === "number") {
    return refuse(TEMPERATURE[m.temperature]!(body.temperature), {
      kind: "refusal",
      latch: "chosenTemperature",
    });
  }
  const effort = body.reasoning_effort;
  if (m.effort === "none-at-all" && effort !== undefined) {
    // OpenAI's recorded sentence, or LiteLLM's and xAI's as the README quotes them.
    const bodies = [
      recordedErrorBody("openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json"),
      {
        error: {
          message: `openai does not support parameters: ['reasoning_effort'], for model=${body.model}.`,
        },
      },
      {
        code: "Client specified an invalid argument",
        error: `Model ${body.model} does not support parameter reasoningEffort.`,
      },
    ];
    const reply = { type: "error" as const, status: 400, body: bodies[m.noEffortWording] };
    return refuse(reply, { kind: "refusal", latch: "noEffort" });
  }
  if (
    m.effort &&
    m.effort !== "none-at-all" &&
    typeof effort === "string" &&
    m.effort.refuses.includes(effort)
  ) {
    const refused = m.effort.refuses;
    const takes =
      m.effort.wording === "gemini" ? [] : EFFORT_LADDER.filter((rung) => !refused.includes(rung));
    return refuse(effortRefusal(m.effort.wording, String(body.model), effort, takes), {
      kind: "refusal",
      latch: "effort",
      effortRefused: effort,
      effortTakes: takes,
    });
  }
  for (const [field, wording] of Object.entries(m.fields)) {
    if (field in body) {
      return refuse(UNKNOWN_FIELD[wording]!(field), { kind: "refusal", latch: "droppedField", field });
    }
  }
  if (m.toolChoice && "tool_choice" in body) {
    const reply = {
      type: "error" as const,
      status: 404,
      body: text("openrouter/404-no-endpoints-support-tool-choice.message.txt"),
    };
    return refuse(reply, { kind: "refusal", latch: "toolChoice" });
  }
  if (m.responseFormat && "response_format" in body) {
    return refuse(UNKNOWN_FIELD[m.responseFormat]!("response_format"), {
      kind: "refusal",
      latch: "structuredOutput",
    });
  }
  const messages = body.messages as { role: string; tool_calls?: { id: string }[] }[];
  if (m.systemRole && messages.some((message) => message.role === "system")) {
    return refuse(SYSTEM_ROLE[m.systemRole]!(), { kind: "refusal", latch: "systemRole" });
  }
  const afterTool = messages.some(
    (message, i) => message.role === "user" && messages[i - 1]?.role === "tool",
  );
  if (m.userAfterTool && afterTool) {
    return refuse(USER_AFTER_TOOL[m.userAfterTool]!(), { kind: "refusal", latch: "userAfterTool" });
  }
  const badId = messages
    .flatMap((message) => message.tool_calls ?? [])
    .map((call) => call.id)
    .find((id) => !/^[A-Za-z0-9]{9}$/.test(id));
  if (m.toolCallIds && badId !== undefined) {
    return refuse(TOOL_CALL_IDS[m.toolCallIds]!(badId), { kind: "refusal", latch: "anyToolCallIds" });
  }
  const anyId = messages.flatMap((message) => message.tool_calls ?? []).map((call) => call.id)[0];
  if (m.idsAlways && anyId !== undefined) {
    return refuse(TOOL_CALL_IDS.mistral!(anyId), { kind: "refusal", latch: "anyToolCallIds" });
  }
  return undefined;
}

const KEYS = ["sk-endpoint-one-1111", "sk-endpoint-two-2222"] as const;
let servers: [TestServer, TestServer];
let current: { world: World; script: (FaultName | null)[]; attempt: number; log: Logged[] } | undefined;

/** The (base URL, key, headers) of endpoint 0 and 1 under a layout. */
function endpointsOf(layout: Layout): [TenantEndpoint, TenantEndpoint] {
  const [a, b] = servers;
  if (layout === 0) {
    return [
      { baseUrl: a.baseUrl, apiKey: KEYS[0] },
      { baseUrl: b.baseUrl, apiKey: KEYS[0] },
    ];
  }
  if (layout === 3) return [{ baseUrl: a.baseUrl }, { baseUrl: b.baseUrl }];
  if (layout === 1) {
    return [
      { baseUrl: a.baseUrl, apiKey: KEYS[0] },
      { baseUrl: a.baseUrl, apiKey: KEYS[1] },
    ];
  }
  return [
    { baseUrl: a.baseUrl, apiKey: KEYS[0], headers: { "x-tenant": "one" } },
    { baseUrl: a.baseUrl, apiKey: KEYS[0], headers: { "x-tenant": "two" } },
  ];
}

function replies(serverIndex: 0 | 1) {
  return (request: RecordedRequest): Reply => {
    if (!current) return { type: "error", status: 500, body: { error: { message: "no world" } } };
    const key = (request.headers.authorization ?? "").replace(/^Bearer /, "");
    const layout = current.world.layout;
    const endpoint: 0 | 1 =
      layout === 0 || layout === 3
        ? serverIndex
        : layout === 1
          ? key === KEYS[1]
            ? 1
            : 0
          : request.headers["x-tenant"] === "two"
            ? 1
            : 0;
    const body = request.body as Record<string, unknown>;
    const fault = current.script[current.attempt] ?? null;
    current.attempt++;
    let answer: { reply: Reply; outcome: Outcome };
    if (fault) answer = { reply: FAULTS[fault].reply(), outcome: { kind: "fault", fault } };
    else
      answer = check(current.world, endpoint, body) ?? {
        reply: { content: "done" },
        outcome: { kind: "ok" },
      };
    current.log.push({ endpoint, model: String(body.model), body, outcome: answer.outcome });
    return answer.reply;
  };
}

beforeAll(async () => {
  servers = [await startServer({ replies: replies(0) }), await startServer({ replies: replies(1) })];
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

// ---------------------------------------------------------------------------------------------
// The caller: negotiate inside the retry loop the client's README prescribes.

const MAX_RETRIES = 2;
const pool = createClientPool();

interface Result {
  ok: boolean;
  error?: unknown;
  produced: boolean;
  /** The waits `backoffMs` asked for before each retry. */
  waits: number[];
  /** What negotiate told the caller, by kind (see `noticeKind`). */
  notices: string[];
}

/** A notice by what it says, so the reference can count them. */
function noticeKind(message: string): string {
  if (/refused tool_choice/.test(message)) return "tool-choice";
  if (/refused a tool-call id/.test(message)) return "ids";
  if (/ids were not at fault/.test(message)) return "ids-back";
  const climbed = /does not take reasoning_effort "(\w+)"; sending "(\w+)", which spends/.exec(message);
  if (climbed) return `climb:${climbed[1]}>${climbed[2]}`;
  if (/does not take reasoning_effort; sending it without/.test(message)) return "no-effort";
  if (/refused the field/.test(message)) return "field";
  if (/takes no system message \(its chat template refused one\)/.test(message)) return "system-role";
  if (/takes no user message straight after a tool result/.test(message)) return "user-after-tool";
  if (/^The server refused stream_options; streaming without it/.test(message)) return "stream-options";
  if (/refused the temperature asked \(it takes only its own default\)/.test(message)) return "temperature";
  // Every structured-output refusal this model scripts names the field (an unknown-field wording).
  if (/refused structured output \(response_format[\w.[\]]*, a field it does not take\)/.test(message))
    return "structured-output";
  if (/sending tool and response_format schemas relaxed from now on/.test(message)) return "relaxed";
  return `other: ${message}`;
}

function messagesOf(s: Shape): unknown[] {
  const question = `${QUESTION}${s.tag ? ` (${s.tag})` : ""}`;
  return [
    ...(s.system === "head" ? [{ role: "system", content: SYSTEM_TEXT }] : []),
    ...(s.toolHistory ? transcriptWithLongId(question) : [{ role: "user", content: question }]),
    ...(s.system === "note" ? [{ role: "system", content: NOTE }] : []),
    ...(s.toolHistory && s.userAfterTool ? [{ role: "user", content: FOLLOW_UP }] : []),
  ];
}

/** Whether a body the server logged is the request tagged `tag` (its question, folded or not, ends so). */
function taggedWith(body: Record<string, unknown>, tag: string): boolean {
  return (body.messages as { content?: unknown }[]).some(
    (m) => typeof m.content === "string" && m.content.endsWith(`(${tag})`),
  );
}

function configOf(s: Shape): ModelParams {
  const extraBody = {
    ...Object.fromEntries(s.extra.map((f) => [f, EXTRA_VALUES[f]])),
    ...(s.extraCeiling ? { max_tokens: 512 } : {}),
    ...(s.inExtra && s.effort !== undefined ? { reasoning_effort: s.effort } : {}),
    ...(s.inExtra && s.responseFormat ? { response_format: RESPONSE_FORMAT } : {}),
  };
  return {
    model: MODELS[s.model],
    ...(s.maxTokens !== undefined ? { maxTokens: s.maxTokens } : {}),
    ...(s.temperature !== undefined ? { temperature: s.temperature } : {}),
    ...(s.effort !== undefined && !s.inExtra ? { reasoningEffort: s.effort } : {}),
    ...(Object.keys(extraBody).length > 0 ? { extraBody } : {}),
  };
}

/**
 * The body a caller builds from the latches: buildBody, and response_format while the model takes
 * it. `messages` is the caller's transcript (the same objects on every attempt of a request).
 */
function bodyFor(
  s: Shape,
  supports: ReturnType<CapabilityStore["capabilitiesFor"]>,
  model: ModelCapabilities | undefined,
  messages: unknown[] = messagesOf(s),
): Record<string, unknown> {
  const body: Record<string, unknown> = buildBody(
    configOf(s),
    supports,
    model,
    messages,
    s.tools ? TOOLS : [],
    {
      toolChoice: s.toolChoice,
    },
  );
  if (s.responseFormat && !s.inExtra && model?.structuredOutput !== false)
    body.response_format = RESPONSE_FORMAT;
  return body;
}

async function send(store: CapabilityStore, layout: Layout, s: Shape): Promise<Result> {
  const plain = endpointsOf(layout)[s.endpoint];
  // Spelled another way, the same tenant: the pool and the store both read it as the plain one.
  const endpoint =
    s.spelling === 1
      ? { ...plain, apiKey: plain.apiKey === undefined ? "  " : ` ${plain.apiKey}\n` }
      : s.spelling === 2
        ? {
            ...plain,
            baseUrl: `${plain.baseUrl.replace("http://", "HTTP://")}/`,
            ...(plain.apiKey === undefined ? { apiKey: NO_KEY } : {}),
            // A header's name in another case is the same header.
            ...(plain.headers ? { headers: { "X-Tenant": plain.headers["x-tenant"] ?? "" } } : {}),
          }
        : plain;
  const client = pool.getClient(endpoint);
  const supports = store.capabilitiesFor(endpoint.baseUrl, endpoint.apiKey, endpoint.headers);
  const waits: number[] = [];
  const notices: string[] = [];
  // The caller's transcript: the latches change what is sent, never what the caller holds.
  const transcript = messagesOf(s);
  const untouched = () => expect(transcript, "the caller's transcript").toEqual(messagesOf(s));
  for (let call = 0; ; call++) {
    const produced = { value: false };
    try {
      await negotiate(
        supports,
        (supports, produced, model) => {
          const body = bodyFor(s, supports, model, transcript);
          // Exported at this point (mid-request, latches just changed) and imported into a new
          // store, the snapshot builds this very body — while the store still holds the endpoint;
          // a store bounded to one forgets it when a request beside this one uses the other, and
          // then the snapshot has none.
          const held =
            store.peekCapabilities?.(endpoint.baseUrl, endpoint.apiKey, endpoint.headers) === supports;
          const restored = createCapabilityStore();
          restored.importCapabilities(store.exportCapabilities());
          const again = restored.peekCapabilities?.(endpoint.baseUrl, endpoint.apiKey, endpoint.headers);
          const sameModel =
            again && model ? restored.modelCapabilitiesFor(again, MODELS[s.model]) : undefined;
          expect(again && bodyFor(s, again, sameModel), "the body from the snapshot").toEqual(
            held ? body : undefined,
          );
          return streamTurn(client, body as never, { produced });
        },
        {
          ...(s.namesModel ? { model: MODELS[s.model] } : {}),
          droppable: s.droppable,
          produced,
          reasoningEffort: s.effort,
          onNotice: (message) => notices.push(noticeKind(message)),
        },
      );
      untouched();
      return { ok: true, produced: produced.value, waits, notices };
    } catch (error) {
      if (produced.value || call >= MAX_RETRIES || !isTransient(error)) {
        untouched();
        return { ok: false, error, produced: produced.value, waits, notices };
      }
      waits.push(backoffMs(call, error, { random: () => s.jitter }));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Walking the reference through what the server logged.

/** Applies a refusal to the reference; answers whether negotiate should have re-sent for it. */
interface CallState {
  /** This negotiate call latched strict schemas off / tool-call ids short. */
  relaxedHere: boolean;
  idsHere: boolean;
}

function learn(
  ref: RefEndpoint,
  s: Shape,
  outcome: Extract<Outcome, { kind: "refusal" }>,
  call: CallState,
  notices: string[],
): boolean {
  const answered = learnOnce(ref, s, outcome);
  const model = ref.models[s.model];
  if (answered && outcome.latch === "strictSchemas") call.relaxedHere = true;
  if (answered && outcome.latch === "anyToolCallIds") call.idsHere = true;
  // What a user is told: every latch that costs or drops something (the ids taken back too), as it
  // is made; the relaxed schemas as the call ends (\`endCall\`); the ceiling's new spelling never.
  if (answered) {
    const told: Partial<Record<Latch, string>> = {
      usageInStream: "stream-options",
      chosenTemperature: "temperature",
      structuredOutput: "structured-output",
      toolChoice: "tool-choice",
      anyToolCallIds: "ids",
      droppedField: "field",
      noEffort: "no-effort",
      systemRole: "system-role",
      userAfterTool: "user-after-tool",
    };
    const kind = told[outcome.latch];
    if (kind) notices.push(kind);
    if (outcome.latch === "effort" && outcome.effortRefused === "none") tellClimb(model, "none", notices);
  }
  // The same refusal again once this call changed the latch: that was not what the server meant,
  // and the latch is taken back before the refusal goes to the caller.
  if (!answered && outcome.latch === "strictSchemas" && call.relaxedHere) ref.strictSchemas = true;
  if (!answered && outcome.latch === "anyToolCallIds" && call.idsHere) {
    model.anyToolCallIds = true;
    notices.push("ids-back");
  }
  return answered;
}

/** A negotiate call over: the schemas it relaxed are told if that latch still holds. */
function endCall(ref: RefEndpoint, call: CallState, notices: string[]): void {
  if (call.relaxedHere && !ref.strictSchemas) notices.push("relaxed");
}

/** An asked rung now goes out as a higher one: told once per model record, asked rung and rung sent. */
function tellClimb(model: RefModel, asked: string, notices: string[]): void {
  if (!EFFORT_LADDER.includes(asked)) return;
  const sent = refEffort(model, asked);
  if (sent === asked || sent === "" || model.told.has(`${asked}>${sent}`)) return;
  model.told.add(`${asked}>${sent}`);
  notices.push(`climb:${asked}>${sent}`);
}

function learnOnce(ref: RefEndpoint, s: Shape, outcome: Extract<Outcome, { kind: "refusal" }>): boolean {
  if (ENDPOINT_LATCHES.has(outcome.latch)) {
    const latch = outcome.latch as "usageInStream" | "strictSchemas";
    if (!ref[latch]) return false;
    ref[latch] = false;
    return true;
  }
  if (!s.namesModel) return false; // model-level refusals without a model name go to the caller
  const model = ref.models[s.model];
  switch (outcome.latch) {
    case "legacyTokenLimit":
    case "chosenTemperature":
    case "toolChoice":
    case "structuredOutput":
    case "anyToolCallIds":
    case "systemRole":
    case "userAfterTool":
      if (!model[outcome.latch]) return false;
      model[outcome.latch] = false;
      return true;
    case "noEffort":
      if (model.droppedFields.has("reasoning_effort")) return false;
      model.droppedFields.add("reasoning_effort");
      return true;
    case "droppedField": {
      const field = outcome.field ?? "";
      if (!s.droppable.includes(field) || model.droppedFields.has(field)) return false;
      model.droppedFields.add(field);
      return true;
    }
    case "effort": {
      const refused = outcome.effortRefused ?? "";
      const takes = outcome.effortTakes ?? [];
      const at = EFFORT_LADDER.indexOf(refused);
      if (at < 0 || model.refusedEfforts.has(refused)) return false;
      // Only upward, to a rung the model listed (any, where it listed none) and has not refused.
      const takesRung = (r: string) =>
        (takes.length === 0 || takes.includes(r)) && !model.refusedEfforts.has(r);
      const next = EFFORT_LADDER.slice(at + 1).find(takesRung);
      if (next === undefined) return false;
      // A listing says every rung it leaves out is refused as well.
      if (takes.length > 0)
        for (const rung of EFFORT_LADDER) if (!takes.includes(rung)) model.refusedEfforts.add(rung);
      model.refusedEfforts.add(refused);
      return true;
    }
    default:
      return false;
  }
}

function checkStore(
  store: CapabilityStore,
  layout: Layout,
  refs: [RefEndpoint, RefEndpoint],
  where: string,
): void {
  endpointsOf(layout).forEach((endpoint, e) => {
    // Peeked, so checking moves nothing up the recency order of a bounded store.
    const held = store.peekCapabilities?.(endpoint.baseUrl, endpoint.apiKey, endpoint.headers);
    const ref = refs[e]!;
    if (!held) {
      expect(ref, `${where}: endpoint ${e} is forgotten, so nothing is latched for it`).toEqual(
        freshEndpoint(),
      );
      return;
    }
    const supports = held;
    expect(
      { strictSchemas: supports.strictSchemas, usageInStream: supports.usageInStream },
      `${where}: endpoint ${e}`,
    ).toEqual({ strictSchemas: ref.strictSchemas, usageInStream: ref.usageInStream });
    MODELS.forEach((name, m) => {
      const caps = store.modelCapabilitiesFor(supports, name);
      const r = ref.models[m]!;
      expect(
        {
          refusedEfforts: [...caps.refusedEfforts].sort(),
          legacyTokenLimit: caps.legacyTokenLimit,
          chosenTemperature: caps.chosenTemperature,
          structuredOutput: caps.structuredOutput,
          droppedFields: [...caps.droppedFields].sort(),
          toolChoice: caps.toolChoice,
          anyToolCallIds: caps.anyToolCallIds,
          systemRole: caps.systemRole,
          userAfterTool: caps.userAfterTool,
        },
        `${where}: endpoint ${e}, ${name}`,
      ).toEqual({
        refusedEfforts: [...r.refusedEfforts].sort(),
        legacyTokenLimit: r.legacyTokenLimit,
        chosenTemperature: r.chosenTemperature,
        structuredOutput: r.structuredOutput,
        droppedFields: [...r.droppedFields].sort(),
        toolChoice: r.toolChoice,
        anyToolCallIds: r.anyToolCallIds,
        systemRole: r.systemRole,
        userAfterTool: r.userAfterTool,
      });
    });
  });
}

/** The snapshot of `store`, imported into a new store, builds the bodies `store` builds. */
function checkSnapshot(store: CapabilityStore, layout: Layout, where: string): void {
  const restored = createCapabilityStore();
  restored.importCapabilities(JSON.stringify(store.exportCapabilities()));
  const probe = FULL_SHAPE;
  for (const endpoint of endpointsOf(layout)) {
    const a = store.peekCapabilities?.(endpoint.baseUrl, endpoint.apiKey, endpoint.headers);
    const b = restored.peekCapabilities?.(endpoint.baseUrl, endpoint.apiKey, endpoint.headers);
    expect(b === undefined, `${where}: the snapshot holds what the store holds`).toBe(a === undefined);
    if (!a || !b) continue;
    MODELS.forEach((name, m) => {
      const ma = store.modelCapabilitiesFor(a, name);
      const mb = restored.modelCapabilitiesFor(b, name);
      for (const effort of [...EFFORT_LADDER, undefined]) {
        const s = { ...probe, model: m as 0 | 1, effort };
        expect(bodyFor(s, b, mb), `${where}: restored ${endpoint.apiKey} ${name} ${effort}`).toEqual(
          bodyFor(s, a, ma),
        );
        expect(effortFor(mb, effort)).toBe(effortFor(ma, effort));
      }
    });
  }
}

/**
 * Walks the reference along what the server logged for one request, checking each body, the
 * attempts, the outcome and the waits; answers the bodies' features in the order they were sent.
 */
function walk(ref: RefEndpoint, s: Shape, log: Logged[], result: Result, where: string): Features[] {
  // Walk the reference along what the server saw.
  let calls = 1;
  let attemptsThisCall = 0;
  let expectOk = false;
  let endedAt = -1;
  let lastFault: FaultName | undefined;
  let callState: CallState = { relaxedHere: false, idsHere: false };
  const expectedWaits: [number, FaultName][] = [];
  const seen: Features[] = [];
  const notices: string[] = [];
  for (const [i, entry] of log.entries()) {
    expect(endedAt, `${where}: attempt ${i} sent after the request should have ended`).toBe(-1);
    expect(entry.endpoint, `${where}: attempt ${i} went to the other endpoint`).toBe(s.endpoint);
    expect(entry.model).toBe(MODELS[s.model]);
    // A rung asked and a higher one going out, however that became known: said once.
    if (s.namesModel && s.effort !== undefined) tellClimb(ref.models[s.model], s.effort, notices);
    seen.push(expectedFeatures(ref, s));
    expect(featuresOf(entry.body), `${where}: attempt ${i} body`).toEqual(seen.at(-1));
    attemptsThisCall++;
    // The documented bound: one more than the latches the call can change, at least 12.
    const latchable = 2 + (s.namesModel ? 7 + EFFORT_LADDER.length + s.droppable.length : 0);
    expect(attemptsThisCall, `${where}: attempts in one negotiate call`).toBeLessThanOrEqual(
      Math.max(12, latchable + 1),
    );
    const outcome = entry.outcome;
    if (outcome.kind === "ok") {
      expectOk = true;
      endedAt = i;
    } else if (outcome.kind === "refusal") {
      if (!learn(ref, s, outcome, callState, notices)) endedAt = i; // passed to the caller, never re-sent
    } else {
      lastFault = outcome.fault;
      const fault = FAULTS[outcome.fault];
      if (fault.transient && calls <= MAX_RETRIES) {
        expectedWaits.push([calls - 1, outcome.fault]);
        calls++;
        attemptsThisCall = 0;
        endCall(ref, callState, notices);
        callState = { relaxedHere: false, idsHere: false };
      } else endedAt = i;
    }
  }
  expect(endedAt, `${where}: the request ended at the attempt the reference says (${log.length} sent)`).toBe(
    log.length - 1,
  );
  endCall(ref, callState, notices);
  expect(result.ok, `${where}: outcome ${String(result.error)}`).toBe(expectOk);
  if (!result.ok && /after-text/.test(lastFault ?? "") && log.at(-1)?.outcome.kind === "fault") {
    expect(result.produced).toBe(true);
  }
  expect([...result.notices].sort(), `${where}: notices`).toEqual([...notices].sort());
  // The waits are the server's hint where it gave one, else the capped exponential backoff.
  expect(result.waits).toHaveLength(expectedWaits.length);
  expectedWaits.forEach(([attempt, fault], k) => {
    const wait = result.waits[k]!;
    const hint = FAULTS[fault].hintMs;
    if (hint !== undefined) expect(wait, `${where}: wait ${k} after ${fault}`).toBe(hint);
    else {
      const ceiling = Math.min(1000 * 2 ** attempt, 30_000);
      expect(wait, `${where}: wait ${k} after ${fault}`).toBeGreaterThanOrEqual(ceiling / 2);
      expect(wait, `${where}: wait ${k} after ${fault}`).toBeLessThanOrEqual(ceiling);
    }
  });
  return seen;
}

const cloneRef = (ref: RefEndpoint): RefEndpoint => ({
  ...ref,
  models: ref.models.map((m) => ({
    ...m,
    refusedEfforts: new Set(m.refusedEfforts),
    droppedFields: new Set(m.droppedFields),
    // A store restored from a snapshot has new records: nothing told on them yet.
    told: new Set<string>(),
  })) as [RefModel, RefModel],
});

/**
 * The same request twice at once. What one of them alone does is found first on a copy (the
 * store's snapshot in a new store, a copy of the reference) and checked as any request is; the
 * twins then each end as that one did — a refusal the other twin latched first is answered by
 * sending again, not failed — and each sends only bodies that one sent, no more of them.
 */
/** The reference read back from the store (after requests whose order the reference cannot know). */
function readBack(store: CapabilityStore, layout: Layout, refs: [RefEndpoint, RefEndpoint]): void {
  endpointsOf(layout).forEach((endpoint, e) => {
    const held = store.peekCapabilities?.(endpoint.baseUrl, endpoint.apiKey, endpoint.headers);
    const ref = refs[e]!;
    if (!held) return;
    ref.strictSchemas = held.strictSchemas;
    ref.usageInStream = held.usageInStream;
    MODELS.forEach((name, m) => {
      const caps = store.modelCapabilitiesFor(held, name);
      Object.assign(ref.models[m]!, {
        refusedEfforts: new Set(caps.refusedEfforts),
        legacyTokenLimit: caps.legacyTokenLimit,
        chosenTemperature: caps.chosenTemperature,
        structuredOutput: caps.structuredOutput,
        droppedFields: new Set(caps.droppedFields),
        toolChoice: caps.toolChoice,
        anyToolCallIds: caps.anyToolCallIds,
        systemRole: caps.systemRole,
        userAfterTool: caps.userAfterTool,
      });
    });
  });
}

/**
 * Two requests of any shapes at once, to any endpoints and models. Which of them latches what
 * first is a race, so the exact outcome is not predicted; what is checked is that every latch
 * that changed was named by a refusal the server sent to that endpoint — and, for a model's
 * latch, for that model by a request that named it — so nothing leaks to another key.
 */
async function pair(
  w: World,
  store: CapabilityStore,
  refs: [RefEndpoint, RefEndpoint],
  shapes: [Shape, Shape],
  where: string,
) {
  const before = refs.map(cloneRef);
  current = { world: w, script: [], attempt: 0, log: [] };
  const tagged = shapes.map((s, i) => ({ ...s, tag: `P${i}` }));
  const results = await Promise.all(tagged.map((s) => send(store, w.layout, s)));
  const log = current.log;
  current = undefined;
  readBack(store, w.layout, refs);
  // The step up from "none" told by either is told for that record, if the store still holds it.
  const eps = endpointsOf(w.layout);
  tagged.forEach((s, i) => {
    const ep = eps[s.endpoint];
    const held = store.peekCapabilities?.(ep.baseUrl, ep.apiKey, ep.headers) !== undefined;
    if (!held) return;
    for (const kind of results[i]?.notices ?? []) {
      if (kind.startsWith("climb:")) refs[s.endpoint].models[s.model].told.add(kind.slice(6));
    }
  });
  const named = (entry: Logged) =>
    tagged.find((s) => taggedWith(entry.body, s.tag ?? ""))?.namesModel ?? false;
  const refused = (e: number, latch: Latch, model?: string) =>
    log.some(
      (entry) =>
        entry.endpoint === e &&
        entry.outcome.kind === "refusal" &&
        entry.outcome.latch === latch &&
        (model === undefined || (entry.model === model && named(entry))),
    );
  [0, 1].forEach((e) => {
    const was = before[e]!;
    const now = refs[e]!;
    for (const latch of ["strictSchemas", "usageInStream"] as const) {
      if (was[latch] !== now[latch]) expect(refused(e, latch), `${where}: endpoint ${e} ${latch}`).toBe(true);
    }
    MODELS.forEach((name, m) => {
      const a = was.models[m]!;
      const b = now.models[m]!;
      const why = `${where}: endpoint ${e}, ${name}`;
      for (const latch of [
        "legacyTokenLimit",
        "chosenTemperature",
        "structuredOutput",
        "toolChoice",
        "anyToolCallIds",
        "systemRole",
        "userAfterTool",
      ] as const) {
        if (a[latch] !== b[latch]) expect(refused(e, latch, name), `${why}: ${latch}`).toBe(true);
      }
      if (![...b.refusedEfforts].every((r) => a.refusedEfforts.has(r))) {
        expect(refused(e, "effort", name), `${why}: refusedEfforts`).toBe(true);
      }
      for (const field of b.droppedFields) {
        if (a.droppedFields.has(field)) continue;
        const latch: Latch = field === "reasoning_effort" ? "noEffort" : "droppedField";
        expect(refused(e, latch, name), `${why}: dropped ${field}`).toBe(true);
      }
    });
  });
}

async function twins(
  w: World,
  store: CapabilityStore,
  refs: [RefEndpoint, RefEndpoint],
  s: Shape,
  where: string,
) {
  const shadow = createCapabilityStore();
  shadow.importCapabilities(store.exportCapabilities());
  const ref = cloneRef(refs[s.endpoint]);
  current = { world: w, script: [], attempt: 0, log: [] };
  const alone = await send(shadow, w.layout, s);
  const chain = walk(ref, s, current.log, alone, `${where}, alone`);
  current = { world: w, script: [], attempt: 0, log: [] };
  const [a, b] = await Promise.all([
    send(store, w.layout, { ...s, tag: "A" }),
    send(store, w.layout, { ...s, tag: "B" }),
  ]);
  const log = current.log;
  current = undefined;
  for (const [tag, result] of [
    ["A", a],
    ["B", b],
  ] as const) {
    const mine = log.filter((entry) => taggedWith(entry.body, tag));
    expect(result.ok, `${where}: twin ${tag} ended as the request alone did (${String(result.error)})`).toBe(
      alone.ok,
    );
    expect(mine.length, `${where}: twin ${tag} attempts`).toBeLessThanOrEqual(chain.length);
    for (const [i, entry] of mine.entries()) {
      expect(chain, `${where}: twin ${tag} attempt ${i} is a body the request alone sent`).toContainEqual(
        featuresOf(entry.body),
      );
    }
  }
  // The store's own records were told what they were told before, and what a twin told now.
  ref.models.forEach((m, i) => {
    for (const asked of refs[s.endpoint].models[i]!.told) m.told.add(asked);
  });
  refs[s.endpoint] = ref;
}

/** Forgets one tenant in the store and the client pool; the store answers whether it held it. */
function forgetOne(store: CapabilityStore, ep: TenantEndpoint, held: boolean, where: string): void {
  expect(store.forget(ep.baseUrl, ep.apiKey, ep.headers), `${where}: forget answers whether it held it`).toBe(
    held,
  );
  pool.forget(ep);
}

async function run(w: World, steps: Step[]): Promise<void> {
  const store = createCapabilityStore(w.tight ? { maxEndpoints: 1 } : {});
  const refs: [RefEndpoint, RefEndpoint] = [freshEndpoint(), freshEndpoint()];
  const eps = endpointsOf(w.layout);
  // The endpoints the store holds, least recently used first.
  let held: (0 | 1)[] = [];
  const touch = (e: 0 | 1) => {
    held = [...held.filter((h) => h !== e), e];
    if (held.length > (w.tight ? 1 : 2)) {
      const dropped = held.shift() as 0 | 1;
      refs[dropped] = freshEndpoint(); // starts again at the defaults
    }
  };
  for (const [n, st] of steps.entries()) {
    const where = `step ${n} (${st.kind})`;
    if (st.kind === "reset") {
      store.reset();
      refs[0] = freshEndpoint();
      refs[1] = freshEndpoint();
      held = [];
    } else if (st.kind === "forget") {
      forgetOne(store, eps[st.endpoint], held.includes(st.endpoint), where);
      refs[st.endpoint] = freshEndpoint();
      held = held.filter((h) => h !== st.endpoint);
    } else if (st.kind === "request") {
      const s = st.shape;
      touch(s.endpoint);
      current = { world: w, script: s.script, attempt: 0, log: [] };
      const result = await send(store, w.layout, s);
      const log = current.log;
      current = undefined;
      walk(refs[s.endpoint], s, log, result, where);
    } else if (st.kind === "twins") {
      touch(st.shape.endpoint);
      await twins(w, store, refs, st.shape, where);
    } else {
      // Touched in the order the two requests ask the store, both before anything is sent.
      for (const s of st.shapes) touch(s.endpoint);
      await pair(w, store, refs, st.shapes, where);
    }
    checkStore(store, w.layout, refs, where);
    checkSnapshot(store, w.layout, where);
  }
}

/**
 * Refused once for each of fourteen things in one request (the twelve that a bound of 12 used to
 * cut short, then the system message and the user message after the tool result).
 */
const EVERYTHING_AT_ONCE: [World, Step[]] = (() => {
  const m: ModelWorld = {
    tokenSpelling: true,
    noEffortWording: 0,
    temperature: "onlyTheDefault",
    effort: { refuses: ["none"], wording: "kimi" },
    fields: {
      parallel_tool_calls: "openaiUnrecognized",
      chat_template_kwargs: "groqProperty",
      top_k: "relayUnknownParameter",
      web_search_options: "mistralExtraForbidden",
    },
    toolChoice: true,
    responseFormat: "openaiUnrecognized",
    toolCallIds: "mistral",
    idsAlways: false,
    systemRole: "sglang500",
    userAfterTool: "mistralApi",
  };
  const e: EndpointWorld = {
    streamOptions: "openaiOnlyWhenStreaming",
    strict: "openaiInvalidSchema",
    formatGrammar: false,
  };
  const s = FULL_SHAPE;
  const w: World = {
    layout: 0,
    tight: false,
    endpoints: [e, e],
    models: [
      [m, m],
      [m, m],
    ],
  };
  return [
    w,
    [
      { kind: "request", shape: s },
      { kind: "request", shape: { ...s, model: 1 } },
    ],
  ];
})();

describe("latching model: negotiate over HTTP against quirky servers", () => {
  it(
    "latches each refusal on its own key, rebuilds the body from the latches, and re-sends only what it may",
    async () => {
      await fc.assert(
        fc.asyncProperty(world, fc.array(step, { minLength: 1, maxLength: 10 }), async (w, steps) => {
          await run(w, steps);
        }),
        propertyRuns(Number(process.env.LATCH_RUNS ?? 60), { examples: [EVERYTHING_AT_ONCE] }),
      );
    },
    propertyTimeout(120_000 + Number(process.env.LATCH_RUNS ?? 0) * 200),
  );
});

// ---------------------------------------------------------------------------------------------
// @loopwright/client's window-route latches: what a window lookup remembers about a server.

/** What one native route answers on one lookup: a window, a 200 without one, or an error status. */
type RouteAnswer = { window: number } | "no-window" | 401 | 403 | 404 | 405 | 500 | 501 | 503;
const routeAnswer: fc.Arbitrary<RouteAnswer> = fc.oneof(
  fc.integer({ min: 512, max: 65_536 }).map((window) => ({ window })),
  fc.constantFrom<RouteAnswer>("no-window", 401, 403, 404, 405, 500, 501, 503),
);
type RouteStep =
  | { kind: "lookup"; tenant: 0 | 1; props: RouteAnswer; lmstudio: RouteAnswer }
  | { kind: "wait"; ms: number }
  | { kind: "forget"; tenant: 0 | 1 }
  | { kind: "reset" };
const routeStep: fc.Arbitrary<RouteStep> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("lookup" as const),
      tenant: fc.constantFrom(0 as const, 1 as const),
      props: routeAnswer,
      lmstudio: routeAnswer,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("wait" as const),
      ms: fc.constantFrom(1_000, 59_999, 60_000, 120_000),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("forget" as const),
      tenant: fc.constantFrom(0 as const, 1 as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "reset" as const }) },
);

let routes: { props: RouteAnswer; lmstudio: RouteAnswer } | undefined;
const routeError = (status: number) => ({
  type: "error" as const,
  status,
  body: {
    error: { message: `status ${status}`, type: status >= 500 ? "server_error" : "invalid_request_error" },
  },
});

describe("latching model: the client's window-route latches", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({
      personality: {
        name: "routes",
        // Each lookup's answers come from the step being run; an error status for either route.
        intercept(request) {
          const answer =
            request.path === "/props"
              ? routes?.props
              : request.path === "/api/v0/models"
                ? routes?.lmstudio
                : undefined;
          return typeof answer === "number" ? routeError(answer) : undefined;
        },
        props() {
          const answer = routes?.props;
          if (answer === "no-window") return { default_generation_settings: {} };
          return typeof answer === "object"
            ? { default_generation_settings: { n_ctx: answer.window } }
            : undefined;
        },
        lmstudioModels() {
          const answer = routes?.lmstudio;
          if (answer === "no-window") return { object: "list", data: [{ id: "m", state: "not-loaded" }] };
          return typeof answer === "object"
            ? { object: "list", data: [{ id: "m", state: "loaded", loaded_context_length: answer.window }] }
            : undefined;
        },
      },
    });
  });
  afterAll(async () => {
    await server.close();
  });

  it(
    "latches a route on the server's own answers only, for every tenant of it, and forgets it with a tenant",
    async () => {
      const MISS_MS = 60_000;
      await fc.assert(
        fc.asyncProperty(fc.array(routeStep, { minLength: 1, maxLength: 12 }), async (steps) => {
          let clock = 1_000_000;
          const lookups = createClientPool({ now: () => clock, listingMissMs: MISS_MS });
          const tenants = [
            { baseUrl: server.baseUrl, apiKey: KEYS[0] },
            { baseUrl: server.baseUrl, apiKey: KEYS[1] },
          ] as const;
          // The reference: one server, so one set of latches whoever asks.
          let ref = { neither: false, gone: false, missUntil: 0, propsMissUntil: 0 };
          for (const [n, step] of steps.entries()) {
            const where = `route step ${n} (${step.kind})`;
            if (step.kind === "wait") {
              clock += step.ms;
              continue;
            }
            if (step.kind === "forget" || step.kind === "reset") {
              if (step.kind === "forget") lookups.forget(tenants[step.tenant]);
              else lookups.reset();
              ref = { neither: false, gone: false, missUntil: 0, propsMissUntil: 0 };
              continue;
            }
            // What the lookup should ask and answer, and what it should latch.
            const asked: string[] = [];
            let expected: number | undefined;
            const next = { ...ref };
            if (!ref.neither) {
              // /props is left alone for MISS_MS once it answered 200 without a window (r101).
              const propsAsked = !(ref.propsMissUntil > clock);
              if (propsAsked) asked.push("/props");
              const props = propsAsked ? step.props : undefined;
              if (typeof props === "object") expected = props.window;
              else {
                if (props === "no-window") next.propsMissUntil = clock + MISS_MS;
                const propsAbsent = props === 404 || props === 405 || props === 501;
                if (ref.gone || ref.missUntil > clock) {
                  if (propsAbsent && ref.gone) next.neither = true;
                } else {
                  asked.push("/api/v0/models");
                  const lm = step.lmstudio;
                  if (typeof lm === "object") expected = lm.window;
                  else if (lm === 404 || lm === 405 || lm === 501) {
                    next.gone = true;
                    if (propsAbsent) next.neither = true;
                  } else if (lm !== "no-window" && lm !== 401 && lm !== 403) next.missUntil = clock + MISS_MS;
                }
              }
            }
            routes = { props: step.props, lmstudio: step.lmstudio };
            const before = server.requests.length;
            const window = await lookups.servedWindow(tenants[step.tenant]);
            routes = undefined;
            const paths = server.requests.slice(before).map((r) => r.path);
            expect(paths, `${where}: routes asked`).toEqual(asked);
            expect(window, `${where}: window`).toBe(expected);
            ref = next;
          }
        }),
        propertyRuns(Number(process.env.LATCH_RUNS ?? 100)),
      );
    },
    propertyTimeout(120_000 + Number(process.env.LATCH_RUNS ?? 0) * 50),
  );
});
