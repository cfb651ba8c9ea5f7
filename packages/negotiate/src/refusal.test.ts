import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fixturesDir, readFixture, startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { capture, clientFor, rejection } from "../test/wire.js";
import { readRefusal } from "./refusal.js";
import { isModelLoading, isOverflow, isTransient } from "./retry.js";

/**
 * Every recorded error body, what it is, and what each classifier must answer for it. `refusal` is
 * the kind `readRefusal` reads (with its details), or undefined for an error negotiate must pass on.
 * `status` is the HTTP status the source reported. `sdkLoses`: the body has no `error` member, and
 * openai-node v6 then drops it (its APIError keeps only `body.error`), so through the SDK the
 * request reads as a bare "400 status code (no body)" — the classifiers see nothing to go on.
 */
interface Row {
  what: string;
  status: number;
  refusal?: Record<string, unknown>;
  overflow?: boolean;
  transient?: boolean;
  loading?: boolean;
  sdkLoses?: boolean;
}

const ROWS: Record<string, Row> = {
  "errors/azure-openai/tool-call-id-string-too-long-max-40.message.txt": {
    what: "a tool-call id longer than Azure takes (40): answered with nine-character ids",
    status: 400,
    refusal: { kind: "tool-call-ids" },
  },
  "errors/fireworks/extra-inputs-not-permitted-stream-options.message.txt": {
    what: "stream_options refused (Fireworks 'Extra inputs are not permitted')",
    status: 400,
    refusal: { kind: "stream-options" },
  },
  "errors/github-copilot/max-tokens-unsupported-code-invalid-request-body.jsobject.txt": {
    what: "max_tokens → max_completion_tokens (Copilot, code invalid_request_body)",
    status: 400,
    refusal: { kind: "token-limit-spelling" },
  },
  "errors/groq/400-tool-use-failed-schema-mismatch.json": {
    what: "the model's own tool call failed validation: not a refusal of the request",
    status: 400,
  },
  "errors/groq/404-model-not-found.json": { what: "unknown model", status: 404 },
  "errors/groq/property-reasoning-unsupported-no-suggestion.json": {
    what: "unknown field 'reasoning' (Groq wording)",
    status: 400,
    refusal: { kind: "unknown-field", field: "reasoning", name: "reasoning" },
  },
  "errors/groq/property-unsupported-did-you-mean.json": {
    what: "unknown field 'chat_template_kwargs' (Groq wording with a suggestion)",
    status: 400,
    refusal: { kind: "unknown-field", field: "chat_template_kwargs", name: "chat_template_kwargs" },
  },
  "errors/groq/stream-options-unsupported-2024.json": {
    what: "stream_options refused (Groq 2024)",
    status: 400,
    refusal: { kind: "stream-options" },
  },
  "errors/huggingface-tgi/422-input-validation-context.message.txt": {
    what: "overflow (TGI, HTTP 422)",
    status: 422,
    overflow: true,
  },
  "errors/llamacpp/503-loading-model.json": {
    what: "llama.cpp still loading the model",
    status: 503,
    transient: true,
    loading: true,
  },
  "errors/llamacpp/assistant-prefill-incompatible-with-enable-thinking.json": {
    what: "prefill refused: continueTurn's to latch, not negotiate's",
    status: 400,
  },
  "errors/llamacpp/exceed-context-size-code-500-pr15780.json": {
    what: "overflow (llama.cpp PR #15780, code 500)",
    status: 500,
    overflow: true,
  },
  "errors/llamacpp/exceed-context-size-new-format-8708-of-8192.json": {
    what: "overflow (llama.cpp exceed_context_size_error)",
    status: 400,
    overflow: true,
  },
  "errors/llamacpp/failed-to-parse-grammar-own-grammar-b9749.json": {
    what: "a grammar of the request's own that does not parse: read as a grammar failure (negotiate takes the latch back when relaxing does not help)",
    status: 400,
    refusal: { kind: "grammar" },
  },
  "errors/llamacpp/failed-to-parse-messages-500-b9749.json": {
    what: "a message llama.cpp could not read (no role): a 500 that is the same every time",
    status: 500,
  },
  "errors/llamacpp/failed-to-parse-tools-500-b9749.json": {
    what: "a tool llama.cpp could not read (a custom tool): a 500 that is the same every time",
    status: 500,
  },
  "errors/llamacpp/image-input-not-supported-no-mmproj-500-b9749.json": {
    what: "an image sent to a model loaded without its projector: a 500 that is the same every time",
    status: 500,
  },
  "errors/llamacpp/json-schema-conversion-failed-unrecognized-schema.json": {
    what: "grammar: llama.cpp could not convert a tool schema",
    status: 400,
    refusal: { kind: "grammar" },
  },
  "errors/llamacpp/roles-must-alternate-jinja-b9749.json": {
    what: "a template that makes roles alternate refused two user messages in a row: the transcript's, not a field to drop",
    status: 400,
  },
  "errors/llamacpp/tool-call-ids-length-9-jinja-b9749.json": {
    what: "a Mistral v3 template's exception about the ids (llama.cpp): ids, not a grammar",
    status: 400,
    refusal: { kind: "tool-call-ids" },
  },
  "errors/llamacpp/tools-param-requires-jinja.message.txt": {
    what: "llama.cpp without --jinja: a 500 that is the same every time",
    status: 500,
  },
  "errors/lmstudio/cannot-truncate-prompt-n-keep-ge-n-ctx.message.txt": {
    what: "overflow (LM Studio n_keep >= n_ctx)",
    status: 400,
    overflow: true,
  },
  "errors/lmstudio/context-overflow-error-string.jsobject.txt": {
    what: "overflow (LM Studio, error as a string)",
    status: 400,
    overflow: true,
  },
  "errors/lmstudio/context-overflow-trying-to-keep-first-tokens.log.txt": {
    what: "overflow (LM Studio server log wording)",
    status: 400,
    overflow: true,
  },
  "errors/lmstudio/response-format-json-object-rejected.json": {
    what: "a refused response_format value (json_object): the caller's to see",
    status: 400,
  },
  "errors/mistral/400-tool-call-id-must-be-nine-alphanumerics.json": {
    what: "Mistral API: a tool-call id not nine letters and digits",
    status: 400,
    refusal: { kind: "tool-call-ids" },
    sdkLoses: true,
  },
  "errors/mistral/400-unexpected-role-user-after-tool.json": {
    what: "Mistral API: a user message straight after a tool message",
    status: 400,
    refusal: { kind: "user-after-tool" },
    sdkLoses: true,
  },
  "errors/mistral/422-stream-options-extra-forbidden-message-is-object.json": {
    what: "stream_options.include_usage refused (Mistral pydantic detail, nested name)",
    status: 422,
    refusal: { kind: "stream-options" },
    sdkLoses: true,
  },
  "errors/moonshot/kimi-code-reasoning-effort-none-unsupported.json": {
    what: "effort 'none' refused with the supported values listed (Kimi)",
    status: 400,
    refusal: { kind: "effort", refused: "none", supported: ["minimal", "low", "medium", "high"] },
  },
  "errors/ollama/500-model-requires-more-system-memory.message.txt": {
    what: "Ollama cannot load the model: a 500 that is the same every time",
    status: 500,
    // Only the quoted message was recorded: served as is it is a JSON string, which the SDK drops.
    sdkLoses: true,
  },
  "errors/ollama/openai-compat-model-does-not-support-tools.http": {
    what: "the model has no tools at all: dropping them would change the request",
    status: 400,
  },
  "errors/omlx/500-tool-call-id-must-be-nine-alphanumerics.message.txt": {
    what: "oMLX: the tokenizer's refusal of an id, as a 500 — a refusal, never retried",
    status: 500,
    refusal: { kind: "tool-call-ids" },
  },
  "errors/openai/400-input-content-string-above-max-length-responses.json": {
    what: "one content string over 10,485,760 characters (string_above_max_length on input[0].content): not a tool-call id, not the window",
    status: 400,
  },
  "errors/openai/400-invalid-content-block-in-tool-message.json": {
    what: "an invalid message: the caller's to fix",
    status: 400,
  },
  "errors/openai/400-max-tokens-integer-below-min-value.json": {
    what: "max_tokens below 1 (integer_below_min_value): the caller's own mistake, nothing to drop and re-send",
    status: 400,
  },
  "errors/openai/400-stream-not-of-type-boolean.json": {
    what: "stream given as a string ('false' is not of type 'boolean'): nothing to drop and re-send",
    status: 400,
  },
  "errors/openai/400-tool-call-id-string-above-max-length.json": {
    what: "OpenAI: a tool-call id above 40 characters (string_above_max_length)",
    status: 400,
    refusal: { kind: "tool-call-ids" },
  },
  "errors/openai/400-web-search-options-not-supported.json": {
    what: "web_search_options not taken by this model (droppable if the caller says so)",
    status: 400,
    refusal: { kind: "unknown-field", field: "web_search_options", name: "web_search_options" },
  },
  "errors/openai/404-model-not-found-chat.json": { what: "unknown model", status: 404 },
  "errors/openai/429-rate-limit-reached-tpm-retry-in-ms.message.txt": {
    what: "ordinary TPM rate limit",
    status: 429,
    transient: true,
  },
  "errors/openai/429-request-too-large-tpm-gpt-4o.json": {
    what: "429 'Request too large … tokens per min': a rate limit, NOT an overflow",
    status: 429,
    transient: true,
  },
  "errors/openai/context-length-exceeded-messages-functions-completion.json": {
    what: "overflow (OpenAI, three-part breakdown)",
    status: 400,
    overflow: true,
  },
  "errors/openai/context-length-exceeded-messages-resulted-in.json": {
    what: "overflow (OpenAI 'your messages resulted in')",
    status: 400,
    overflow: true,
  },
  "errors/openai/context-length-exceeded-requested-with-completion.json": {
    what: "overflow (OpenAI 'you requested … in the completion')",
    status: 400,
    overflow: true,
  },
  "errors/openai/max-tokens-unsupported-use-max-completion-tokens.json": {
    what: "max_tokens → max_completion_tokens (OpenAI reasoning model)",
    status: 400,
    refusal: { kind: "token-limit-spelling" },
  },
  "errors/openai/reasoning-effort-minimal-unsupported-gpt-5.1-chat.message.txt": {
    what: "effort 'minimal' refused, 'none' listed below it (gpt-5.1)",
    status: 400,
    refusal: { kind: "effort", refused: "minimal", supported: ["none", "low", "medium", "high"] },
  },
  "errors/openai/reasoning-effort-none-unsupported-gpt-5.1-codex-responses.json": {
    what: "effort 'none' refused, Responses wording and dotted param",
    status: 400,
    refusal: { kind: "effort", refused: "none", supported: ["low", "medium", "high"] },
  },
  "errors/openai/reasoning-effort-null-unsupported-gpt-5.1.message.txt": {
    what: "effort null refused: read, but null is not on the ladder so negotiate passes it on",
    status: 400,
    refusal: { kind: "effort", refused: null, supported: ["none", "low", "medium", "high"] },
  },
  "errors/openai/stream-options-only-when-stream-enabled.json": {
    what: "stream_options refused (OpenAI, param stream_options)",
    status: 400,
    refusal: { kind: "stream-options" },
  },
  "errors/openai/strict-schema-required-missing-key-response-format.message.txt": {
    what: "the caller's response_format schema is invalid: never latched",
    status: 400,
  },
  "errors/openai/strict-schema-root-additionalproperties-chat.json": {
    what: "strict tool schema refused (OpenAI)",
    status: 400,
    refusal: { kind: "strict-schema" },
  },
  "errors/openai/temperature-0-unsupported-value.json": {
    what: "temperature not ours to pick ('Only the default (1) value is supported')",
    status: 400,
    refusal: { kind: "temperature" },
  },
  "errors/openai/temperature-unsupported-parameter-responses-api.json": {
    what: "temperature not taken at all (Unsupported parameter)",
    status: 400,
    refusal: { kind: "temperature" },
  },
  "errors/openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json": {
    what: "a model with no effort at all ('Unrecognized request argument supplied')",
    status: 400,
    refusal: { kind: "unknown-field", field: "reasoning_effort", name: "reasoning_effort" },
  },
  "errors/openrouter/404-no-endpoints-support-tool-choice.message.txt": {
    what: "OpenRouter: no provider takes this tool_choice (answered by sending none)",
    status: 404,
    refusal: { kind: "tool-choice" },
  },
  "errors/openrouter/404-no-endpoints-support-tool-use.json": {
    what: "OpenRouter: no provider takes tools",
    status: 404,
  },
  "errors/openrouter/429-provider-returned-error-rate-limited-upstream.json": {
    what: "upstream rate limit through OpenRouter",
    status: 429,
    transient: true,
  },
  "errors/openrouter/context-length-requested-about-middle-out.message.txt": {
    what: "overflow (OpenRouter, lower-cased)",
    status: 400,
    overflow: true,
  },
  "errors/relay-new-api/unknown-parameter-stream-options-with-request-ids.json": {
    what: "stream_options refused ('Unknown parameter' relay wording)",
    status: 400,
    refusal: { kind: "stream-options" },
  },
  "errors/together/tgi-input-validation-context.message.txt": {
    what: "overflow (Together / TGI)",
    status: 400,
    overflow: true,
  },
  "errors/vllm/auto-tool-choice-requires-flags.json": {
    what: "vLLM without tool-choice flags: a server setup problem",
    status: 400,
    sdkLoses: true,
  },
  "errors/vllm/context-length-legacy-top-level-object-error.json": {
    what: "overflow (vLLM legacy top-level error object)",
    status: 400,
    overflow: true,
    sdkLoses: true,
  },
  "errors/vllm/context-length-server-log-line.txt": {
    what: "overflow (vLLM log line, OpenAI's sentence)",
    status: 400,
    overflow: true,
  },
  "errors/vllm/max-tokens-negative-legacy-top-level.json": {
    what: "a refused max_tokens value: passed on, never latched",
    status: 400,
    sdkLoses: true,
  },
  "errors/vllm/tool-call-id-must-be-nine-alphanumerics-legacy-top-level.json": {
    what: "vLLM with mistral_common: a tool-call id not nine letters and digits",
    status: 400,
    refusal: { kind: "tool-call-ids" },
    sdkLoses: true,
  },
  "errors/vllm/tool-call-ids-alphanumeric-length-9-chat-template.json": {
    what: "vLLM rendering a Mistral v3 template: the template's exception about the ids",
    status: 400,
    refusal: { kind: "tool-call-ids" },
    sdkLoses: true,
  },
  "errors/vllm/system-role-not-supported-chat-template.json": {
    what: "vLLM rendering Gemma's template: it takes no system message",
    status: 400,
    refusal: { kind: "system-role" },
    sdkLoses: true,
  },
  "errors/vllm/user-after-tool-mistral-common.json": {
    what: "vLLM with mistral_common: a user message straight after a tool message",
    status: 400,
    refusal: { kind: "user-after-tool" },
  },
  "llamacpp-live/00-loading-503.response.txt": {
    what: "live llama.cpp: 503 Loading model",
    status: 503,
    transient: true,
    loading: true,
  },
  "llamacpp-live/18-overflow-nonstream.response.txt": {
    what: "live llama.cpp: overflow",
    status: 400,
    overflow: true,
  },
  "llamacpp-live/30-prompt-fits-but-no-room.response.txt": {
    what: "live llama.cpp: prompt plus reply room over the window",
    status: 400,
    overflow: true,
  },
  "llamacpp-live/20-schema-rejected-pattern.response.txt": {
    what: "live llama.cpp: grammar (unanchored pattern)",
    status: 400,
    refusal: { kind: "grammar" },
  },
  "llamacpp-live/23-bad-response-format-type.response.txt": {
    what: "live llama.cpp: a refused response_format value",
    status: 400,
  },
  "llamacpp-live/24-invalid-json-body.response.txt": {
    what: "live llama.cpp: our body did not parse (a 500 that repeats)",
    status: 500,
  },
  "llamacpp-live/36-n-over-slots.response.txt": {
    what: "live llama.cpp b9749: n past its slot count (a 400 that repeats; not a field negotiate sends)",
    status: 400,
  },
  "llamacpp-live/37-n-over-slots-stream.response.txt": {
    what: "live llama.cpp b9749: the same n refusal to a streamed request (JSON, not SSE)",
    status: 400,
  },
  "llamacpp-live/no-jinja/nj04-tools-required.response.txt": {
    what: "live llama.cpp --no-jinja: tools refused with a 500",
    status: 500,
  },
};

/** The body as the server sent it: parsed JSON for `.json`, the capture's body, or the text as is. */
function served(file: string): unknown {
  if (file.endsWith(".response.txt") || file.endsWith(".http")) {
    const { body } = capture(file);
    return JSON.parse(body);
  }
  const text = readFixture(file);
  return file.endsWith(".json") ? JSON.parse(text) : text;
}

function listErrorFixtures(): string[] {
  const root = join(fixturesDir(), "errors");
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? walk(path) : [`errors/${relative(root, path)}`];
    });
  return walk(root).sort();
}

let server: TestServer;
const viaSdk = new Map<string, unknown>();

beforeAll(async () => {
  server = await startServer();
  const client = clientFor(server.baseUrl);
  for (const [file, row] of Object.entries(ROWS)) {
    server.enqueue({ type: "error", status: row.status, body: served(file) });
    viaSdk.set(file, await rejection(client.chat.completions.create({ model: "m", messages: [] })));
  }
});
afterAll(() => server.close());

describe("every recorded error body is classified", () => {
  it("covers every file under errors/", () => {
    const covered = Object.keys(ROWS).filter((f) => f.startsWith("errors/"));
    expect(covered.sort()).toEqual(listErrorFixtures());
  });

  for (const [file, row] of Object.entries(ROWS)) {
    it(`${file}: ${row.what}`, () => {
      const asBody = { status: row.status, body: served(file) };
      const sdkError = viaSdk.get(file);
      const expected = {
        refusal: row.refusal,
        overflow: row.overflow ?? false,
        transient: row.transient ?? false,
        loading: row.loading ?? false,
      };
      const answers = (error: unknown) => ({
        refusal: readRefusal(error) as Record<string, unknown> | undefined,
        overflow: isOverflow(error),
        transient: isTransient(error),
        loading: isModelLoading(error),
      });
      // A client that keeps the whole body (a fetch wrapper, the AI SDK) reads it all.
      expect(answers(asBody)).toEqual(expected);
      // The real openai client, over HTTP from the testkit.
      if (row.sdkLoses) {
        expect((sdkError as Error).message).toBe(`${row.status} status code (no body)`);
        expect(answers(sdkError)).toEqual({
          refusal: undefined,
          overflow: false,
          transient: row.status >= 500,
          loading: false,
        });
      } else {
        expect(answers(sdkError)).toEqual(expected);
      }
    });
  }
});

describe("refusals of a value are not refusals of a field", () => {
  // Real OpenAI wordings for values out of range (bodies written for this test, not recorded).
  it("reads a max_tokens above the model's ceiling as nothing negotiate answers", () => {
    const error = {
      status: 400,
      error: {
        message:
          "max_tokens is too large: 100000. This model supports at most 16384 completion tokens, whereas you provided 100000.",
        type: "invalid_request_error",
        param: "max_tokens",
        code: "invalid_value",
      },
    };
    expect(readRefusal(error)).toBeUndefined();
  });

  it("reads a temperature out of range as nothing negotiate answers", () => {
    const error = {
      status: 400,
      error: {
        message:
          "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 3 instead.",
        type: "invalid_request_error",
        param: "temperature",
        code: "decimal_above_max_value",
      },
    };
    expect(readRefusal(error)).toBeUndefined();
  });

  it("still reads a grammar failure that an older llama.cpp answered with a 500, and never retries it", () => {
    // The recorded llama.cpp body, under the 500 status older builds used for it.
    const body = JSON.parse(
      readFixture("errors/llamacpp/json-schema-conversion-failed-unrecognized-schema.json"),
    );
    const error = { status: 500, body };
    expect(readRefusal(error)).toEqual({ kind: "grammar" });
    expect(isTransient(error)).toBe(false);
  });

  it("names a nested refused field by its top-level field", () => {
    const error = {
      status: 400,
      error: { message: "Unknown parameter: 'chat_template_kwargs.enable_thinking'." },
    };
    expect(readRefusal(error)).toEqual({
      kind: "unknown-field",
      field: "chat_template_kwargs",
      name: "chat_template_kwargs.enable_thinking",
    });
  });
});
