/**
 * The `llamacpp` personality: llama-server's start-up 503, context overflow, grammar refusals,
 * `/props`, `/health` and its `/v1/models`, from the live captures in `llamacpp-live/` and the
 * bodies in `errors/llamacpp/`.
 */
import { readFixture, readRecordedResponse } from "../fixtures.js";
import type { RecordedRequest } from "../recorded-request.js";
import type { ErrorReply } from "../replies.js";
import { grammarErrors } from "./grammar-schema.js";
import { checkOptions, durationMs, flag, nonEmptyString, type OptionRule, positiveWhole } from "./options.js";
import type { Personality, PersonalityContext } from "./personality.js";
import { includeUsageRequested, isRecord, jsonError, requestedMaxTokens, swap } from "./recorded.js";

/** Options of {@link llamacppPersonality}. */
export interface LlamacppPersonalityOptions {
  /** Context size per slot (`-c`); prompts of this many tokens or more are refused. Default 4096. */
  nCtx?: number;
  /** Answer every route with 503 "Loading model" for this long after start (default 0). */
  loadingMs?: number;
  /** Started with `--jinja` (default true); without it any request with `tools` gets a 500. */
  jinja?: boolean;
  /** The model id it reports (default `tiny.gguf`, as recorded). */
  model?: string;
  /**
   * The chat template thinks (`enable_thinking` on): a conversation ending in an assistant message
   * (a prefill) gets the recorded 400 "Assistant response prefill is incompatible with
   * enable_thinking." Default false.
   */
  thinking?: boolean;
  /**
   * Refuse an overflow as the first builds with `exceed_context_size_error` did (llama.cpp PR #15780,
   * Sept 2025): HTTP 500 and "the request exceeds the available context size. try increasing the
   * context size or enable context shift", with `n_prompt_tokens` / `n_ctx`. Default false: the
   * captured current 400 with the counts in the message.
   */
  legacyOverflow?: boolean;
}

const F = {
  loading: "llamacpp-live/00-loading-503.response.txt",
  models: "llamacpp-live/01-models.response.txt",
  props: "llamacpp-live/02-props.response.txt",
  health: "llamacpp-live/03-health.response.txt",
  overflow: "llamacpp-live/18-overflow-nonstream.response.txt",
  patternRejected: "llamacpp-live/20-schema-rejected-pattern.response.txt",
  badFormatType: "llamacpp-live/23-bad-response-format-type.response.txt",
  invalidJson: "llamacpp-live/24-invalid-json-body.response.txt",
  noJinjaTools: "llamacpp-live/no-jinja/nj04-tools-required.response.txt",
  toolSchemaRejected: "errors/llamacpp/json-schema-conversion-failed-unrecognized-schema.json",
  prefill: "errors/llamacpp/assistant-prefill-incompatible-with-enable-thinking.json",
  legacyOverflow: "errors/llamacpp/exceed-context-size-code-500-pr15780.json",
} as const;

/** Every fixture the llamacpp personality reads, for the README and tests. */
export const LLAMACPP_FIXTURES: readonly string[] = Object.values(F);

/**
 * The headers llama-server sent with the captured answer: `Server: llama.cpp`, an empty
 * `Access-Control-Allow-Origin` (it echoes the request's `Origin`, and the capture sent none) and
 * `application/json; charset=utf-8`. Transport headers (length, connection) are left to Node.
 */
function serverHeaders(rel: string = F.health): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(readRecordedResponse(rel).headers)) {
    if (!["content-length", "connection", "keep-alive", "transfer-encoding"].includes(name))
      out[name] = value;
  }
  return out;
}

/** The captured response as an error reply, body verbatim, with the captured headers. */
function captured(rel: string): ErrorReply {
  const r = readRecordedResponse(rel);
  return jsonError(r.status, r.body, serverHeaders(rel));
}

/** A captured JSON body with its `error.message` replaced and other fields merged in. */
function capturedWith(
  rel: string,
  message: (recorded: string) => string,
  extra: Record<string, unknown> = {},
): ErrorReply {
  const r = readRecordedResponse(rel);
  const body = JSON.parse(r.body) as { error: Record<string, unknown> };
  body.error.message = message(String(body.error.message));
  Object.assign(body.error, extra);
  return jsonError(r.status, JSON.stringify(body), serverHeaders(rel));
}

/** The tool-parameter refusal: recorded body with the recorded errors replaced. */
function toolSchemaRefusal(errors: string[]): ErrorReply {
  const body = JSON.parse(readFixture(F.toolSchemaRejected)) as { error: Record<string, unknown> };
  body.error.message = `JSON schema conversion failed:\n${errors.join("\n")}`;
  return jsonError(400, JSON.stringify(body), serverHeaders());
}

/** What each option of {@link llamacppPersonality} must be. */
const LLAMACPP_OPTION_RULES: Record<keyof LlamacppPersonalityOptions, OptionRule> = {
  nCtx: positiveWhole,
  loadingMs: durationMs,
  jinja: flag,
  model: nonEmptyString,
  thinking: flag,
  legacyOverflow: flag,
};

/**
 * Makes the `llamacpp` personality.
 *
 * For `loadingMs` after start every route answers the captured 503 "Loading model". Chat requests
 * are refused, in order: a body that is not JSON (captured 500), `tools` without `--jinja`
 * (captured 500), a `response_format.type` other than text/json_object/json_schema (captured 400),
 * a `response_format` schema or a tool-parameter schema the grammar converter rejects (400 with
 * the converter's messages), with `thinking` a conversation ending in an assistant message
 * (recorded 400), a prompt of `nCtx` tokens or more (captured 400 `exceed_context_size_error` with
 * this prompt's `n_prompt_tokens` and `n_ctx`; with `legacyOverflow` the Sept 2025 HTTP 500 body).
 * Unknown routes and methods get llama-server's 404 "File Not Found"; every answer carries the
 * captured headers (`Server: llama.cpp`, JSON with charset). `GET /props`,
 * `GET /health` and `GET /v1/models` answer the captured bodies with `n_ctx` set to `nCtx`.
 * A streamed reply carries a usage chunk only with `stream_options.include_usage`.
 */
export function llamacppPersonality(options: LlamacppPersonalityOptions = {}): Personality {
  checkOptions("llamacpp personality", options, LLAMACPP_OPTION_RULES);
  const nCtx = options.nCtx ?? 4096;
  const loadingMs = options.loadingMs ?? 0;
  const model = options.model ?? "tiny.gguf";
  let base: Record<string, string> | undefined;

  const check = (request: RecordedRequest, ctx: PersonalityContext): ErrorReply | undefined => {
    const body = request.body;
    if (!isRecord(body)) return captured(F.invalidJson);
    if (options.jinja === false && Array.isArray(body.tools)) return captured(F.noJinjaTools);
    const format = body.response_format;
    if (isRecord(format)) {
      const type = String(format.type);
      if (!["text", "json_object", "json_schema"].includes(type)) {
        return capturedWith(F.badFormatType, (m) =>
          swap(m, [["but got: xml", `but got: ${type}`]], F.badFormatType),
        );
      }
      const schema =
        type === "json_schema" && isRecord(format.json_schema) ? format.json_schema.schema : format.schema;
      const errors = grammarErrors(schema);
      if (errors.length > 0) {
        return capturedWith(F.patternRejected, (m) =>
          swap(m, [["Pattern must start with '^' and end with '$'", errors.join("\n")]], F.patternRejected),
        );
      }
    }
    if (Array.isArray(body.tools)) {
      for (const tool of body.tools) {
        const fn = isRecord(tool) && isRecord(tool.function) ? tool.function : undefined;
        const errors = grammarErrors(fn?.parameters);
        if (errors.length > 0) return toolSchemaRefusal(errors);
      }
    }
    const last = Array.isArray(body.messages) ? body.messages.at(-1) : undefined;
    if (options.thinking && isRecord(last) && last.role === "assistant") {
      return jsonError(400, readFixture(F.prefill), serverHeaders());
    }
    if (ctx.promptTokens >= nCtx && options.legacyOverflow) {
      const recorded = JSON.parse(readFixture(F.legacyOverflow)) as { error: Record<string, unknown> };
      Object.assign(recorded.error, { n_prompt_tokens: ctx.promptTokens, n_ctx: nCtx });
      // llama-server sends the error's code as the HTTP status.
      return jsonError(500, JSON.stringify(recorded), serverHeaders());
    }
    if (ctx.promptTokens >= nCtx) {
      return capturedWith(
        F.overflow,
        (m) =>
          swap(
            m,
            [
              ["(6029 tokens)", `(${ctx.promptTokens} tokens)`],
              ["(4096 tokens)", `(${nCtx} tokens)`],
            ],
            F.overflow,
          ),
        { n_prompt_tokens: ctx.promptTokens, n_ctx: nCtx },
      );
    }
    return undefined;
  };

  const capturedJson = (rel: string): Record<string, unknown> => JSON.parse(readRecordedResponse(rel).body);

  const models = () => {
    const body = capturedJson(F.models) as {
      models: Record<string, unknown>[];
      data: (Record<string, unknown> & { meta: Record<string, unknown> })[];
    };
    for (const m of body.models) Object.assign(m, { name: model, model });
    for (const d of body.data) {
      Object.assign(d, { id: model, aliases: [model] });
      d.meta.n_ctx = nCtx;
    }
    return body;
  };

  return {
    name: "llamacpp",
    intercept: (_request, uptimeMs) => (uptimeMs < loadingMs ? captured(F.loading) : undefined),
    check,
    models,
    props() {
      const body = capturedJson(F.props) as Record<string, unknown> & {
        default_generation_settings: Record<string, unknown>;
      };
      body.default_generation_settings.n_ctx = nCtx;
      Object.assign(body, { model_alias: model, model_path: model });
      return body;
    },
    route(request) {
      if (request.method === "GET" && request.path === "/health") return captured(F.health);
      if (request.method === "GET" && request.path === "/models")
        return { status: 200, body: models(), headers: serverHeaders(F.models) };
      return undefined;
    },
    // What llama-server sends with every answer (captures 04-chat-nonstream, 05-chat-stream-usage):
    // Server and an empty CORS origin; JSON as `application/json; charset=utf-8`; streams with
    // `X-Accel-Buffering: no`.
    headers(contentType) {
      base ??= serverHeaders(F.health);
      if (contentType === "application/json") return base;
      const { "content-type": _json, ...rest } = base;
      return contentType === "text/event-stream" ? { ...rest, "x-accel-buffering": "no" } : rest;
    },
    // cpp-httplib answers any unmatched method or path with 404, which llama-server's error handler
    // turns into its JSON error (ggml-org/llama.cpp tools/server/server.cpp, set_error_handler:
    // format_error_response("File Not Found", ERROR_TYPE_NOT_FOUND)).
    notFound: () => ({
      status: 404,
      body: JSON.stringify({ error: { code: 404, message: "File Not Found", type: "not_found_error" } }),
      headers: serverHeaders(F.health),
    }),
    // Generation stops at max_tokens or when the context is full (capture 29-near-context-limit).
    completionBudget: (request, ctx) =>
      Math.min(requestedMaxTokens(request) ?? Number.POSITIVE_INFINITY, nCtx - ctx.promptTokens),
    streamsUsage: includeUsageRequested,
  };
}
