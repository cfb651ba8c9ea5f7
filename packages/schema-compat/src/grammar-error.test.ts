import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { isGrammarError } from "./grammar-error.js";

// The recordings the testkit publishes, read in place (this package does not depend on the testkit).
const fixtures =
  process.env.LOOPWRIGHT_FIXTURES ??
  resolve(dirname(fileURLToPath(import.meta.url)), "../../testkit/recordings");
const read = (rel: string) => readFileSync(join(fixtures, rel), "utf8");

/** The body of a recorded `curl -i` response (after the blank line that ends the headers). */
function httpBody(rel: string): { status: number; body: string } {
  const text = read(rel);
  const status = Number(/^HTTP\/[\d.]+ (\d+)/.exec(text)?.[1]);
  const body = text.slice(text.search(/\r?\n\r?\n/)).trim();
  return { status, body };
}

/** What the openai SDK throws for a body: status, the parsed `error` member, a message. */
function apiErrorLike(status: number, body: string): Record<string, unknown> {
  const parsed = JSON.parse(body) as Record<string, unknown>;
  const error = (parsed.error ?? parsed) as Record<string, unknown>;
  const message = typeof error === "object" && typeof error.message === "string" ? error.message : body;
  return { status, error, message: `${status} ${message}` };
}

describe("isGrammarError on recorded refusals", () => {
  const grammar = [
    "llamacpp-live/20-schema-rejected-pattern.response.txt",
    "llamacpp-live/22-schema-rejected-stream.response.txt",
  ];
  for (const rel of grammar) {
    it(`recognises llama.cpp failing to build a grammar (${rel})`, () => {
      const { status, body } = httpBody(rel);
      expect(status).toBe(400);
      expect(isGrammarError(body)).toBe(true);
      expect(isGrammarError(apiErrorLike(status, body))).toBe(true);
      expect(isGrammarError(new Error(`${status} ${JSON.parse(body).error.message}`))).toBe(true);
    });
  }

  it("recognises llama.cpp's 500 for output its grammar let through and its parser could not read", () => {
    // llama.cpp b9749, live: a sanitized `pattern` let the model write a raw quote inside a string.
    const message = "The model produced output that does not match the expected peg-native format";
    const body = JSON.stringify({ error: { code: 500, message, type: "server_error" } });
    expect(isGrammarError(body)).toBe(true);
    expect(isGrammarError(apiErrorLike(500, body))).toBe(true);
    // As the stream's error event: no status, the server's error object passed on.
    const midStream = new Error(`The server sent an error in the middle of the stream: ${message}.`);
    expect(isGrammarError(Object.assign(midStream, { serverError: { code: 500, message } }))).toBe(true);
  });

  it("recognises llama.cpp's 500 for a grammar that admits nothing further (r78)", () => {
    // llama.cpp b9749, live (unsatisfiable-live.test.ts): a tool parameter `{ type: "integer",
    // minimum: 5, maximum: 3 }` with tool_choice "required"; relaxTools' form is answered.
    const message = "got exception: Unexpected empty grammar stack after accepting piece: ? (30)";
    const body = JSON.stringify({ error: { code: 500, message, type: "server_error" } });
    expect(isGrammarError(body)).toBe(true);
    expect(isGrammarError(apiErrorLike(500, body))).toBe(true);
    // The same words with another status are not a refusal this function knows.
    expect(isGrammarError(apiErrorLike(503, body))).toBe(false);
  });

  it("recognises llama.cpp's 'Unrecognized schema' for a property without a type", () => {
    const body = read("errors/llamacpp/json-schema-conversion-failed-unrecognized-schema.json");
    expect(isGrammarError(body)).toBe(true);
    expect(isGrammarError(apiErrorLike(400, body))).toBe(true);
  });

  it("recognises OpenAI refusing a schema strict mode cannot take", () => {
    const body = read("errors/openai/strict-schema-root-additionalproperties-chat.json");
    expect(isGrammarError(apiErrorLike(400, body))).toBe(true);
    const message = read("errors/openai/strict-schema-required-missing-key-response-format.message.txt");
    expect(isGrammarError(message)).toBe(true);
  });

  it("recognises vLLM's xgrammar refusal and Ollama's invalid format schema", () => {
    // Wording from vllm-project/vllm#16321 and Ollama's structured-outputs handler.
    const vllm = {
      object: "error",
      message: "The provided JSON schema contains features not supported by xgrammar.",
      type: "BadRequestError",
      param: null,
      code: 400,
    };
    expect(isGrammarError({ status: 400, error: vllm, message: `400 ${vllm.message}` })).toBe(true);
    expect(isGrammarError(JSON.stringify({ error: "invalid JSON schema in format" }))).toBe(true);
  });

  it("reads the refusal through an Error's cause", () => {
    const body = httpBody("llamacpp-live/20-schema-rejected-pattern.response.txt").body;
    expect(isGrammarError(new Error("request failed", { cause: JSON.parse(body) }))).toBe(true);
  });
});

describe("isGrammarError leaves every other failure alone", () => {
  const others = [
    "errors/groq/400-tool-use-failed-schema-mismatch.json",
    "errors/llamacpp/exceed-context-size-new-format-8708-of-8192.json",
    "errors/llamacpp/exceed-context-size-code-500-pr15780.json",
    "errors/llamacpp/assistant-prefill-incompatible-with-enable-thinking.json",
    "errors/llamacpp/503-loading-model.json",
    "errors/openai/context-length-exceeded-messages-resulted-in.json",
    "errors/openai/max-tokens-unsupported-use-max-completion-tokens.json",
    "errors/openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json",
    "errors/openai/400-web-search-options-not-supported.json",
    "errors/openai/400-invalid-content-block-in-tool-message.json",
    "errors/openai/temperature-0-unsupported-value.json",
    "errors/groq/property-unsupported-did-you-mean.json",
    "errors/lmstudio/response-format-json-object-rejected.json",
    "errors/relay-new-api/unknown-parameter-stream-options-with-request-ids.json",
    "errors/vllm/auto-tool-choice-requires-flags.json",
    "errors/vllm/context-length-legacy-top-level-object-error.json",
    "errors/vllm/max-tokens-negative-legacy-top-level.json",
    "errors/mistral/422-stream-options-extra-forbidden-message-is-object.json",
    "errors/openrouter/404-no-endpoints-support-tool-use.json",
  ];
  for (const rel of others) {
    it(`is false for ${rel}`, () => {
      const body = read(rel);
      expect(isGrammarError(body)).toBe(false);
      expect(isGrammarError(apiErrorLike(400, body))).toBe(false);
    });
  }

  const live = [
    "llamacpp-live/18-overflow-nonstream.response.txt",
    "llamacpp-live/23-bad-response-format-type.response.txt",
    "llamacpp-live/24-invalid-json-body.response.txt",
    "llamacpp-live/00-loading-503.response.txt",
  ];
  for (const rel of live) {
    it(`is false for the live llama.cpp answer ${rel}`, () => {
      const { status, body } = httpBody(rel);
      expect(isGrammarError(apiErrorLike(status, body))).toBe(false);
    });
  }

  it("is false for the message-only recordings of other failures", () => {
    for (const rel of [
      "errors/llamacpp/tools-param-requires-jinja.message.txt",
      "errors/openai/429-rate-limit-reached-tpm-retry-in-ms.message.txt",
      "errors/lmstudio/cannot-truncate-prompt-n-keep-ge-n-ctx.message.txt",
      "errors/fireworks/extra-inputs-not-permitted-stream-options.message.txt",
    ]) {
      expect(isGrammarError(read(rel)), rel).toBe(false);
    }
  });

  it("is false for a grammar refusal's wording under a status that cannot carry one", () => {
    const body = httpBody("llamacpp-live/20-schema-rejected-pattern.response.txt").body;
    expect(isGrammarError(apiErrorLike(429, body))).toBe(false);
  });

  it("is false, never throwing, for values that are not errors", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.error = cyclic;
    for (const value of [undefined, null, 0, "", "{", [], {}, cyclic, Symbol("x")]) {
      expect(isGrammarError(value)).toBe(false);
    }
  });
});
