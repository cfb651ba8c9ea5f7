import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { readFixture } from "../fixtures.js";
import { countTokens, renderPrompt } from "../prefix-cache.js";
import { type ServerOptions, startServer, type TestServer } from "../server.js";
import { openaiPersonality } from "./openai.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function refusal(body: Record<string, unknown>, options: ServerOptions = { personality: "openai" }) {
  server = await startServer({ replies: () => ({ content: "ok" }), ...options });
  const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
  const error = await client.chat.completions
    .create({ messages: [{ role: "user", content: "hi" }], ...body } as never)
    .then(() => undefined)
    .catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
  const raw = await fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], ...body }),
  });
  return { error, status: raw.status, text: await raw.text() };
}

/** The `error.message` of the response body (the client's own message prefixes the status). */
const messageOf = (error: InstanceType<typeof OpenAI.APIError> | undefined) =>
  (error?.error as { message?: string } | undefined)?.message;

const recordedError = (rel: string) => (JSON.parse(readFixture(rel)) as { error: unknown }).error;

describe("openai personality", () => {
  it("lets an ordinary request through to the script", async () => {
    const { error, status } = await refusal({ model: "gpt-4o", temperature: 0.2 });
    expect(error).toBeUndefined();
    expect(status).toBe(200);
  });

  it("refuses reasoning_effort on a non-reasoning model with the recorded unrecognized-argument body", async () => {
    const rel = "errors/openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json";
    const { error, status } = await refusal({ model: "gpt-4o-mini", reasoning_effort: "low" });
    expect(status).toBe(400);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error?.error).toEqual(recordedError(rel));
  });

  it("refuses any unknown body field, naming it", async () => {
    const { error } = await refusal({ model: "gpt-4o", chat_template_kwargs: { thinking: true } });
    expect(error?.message).toContain("Unrecognized request argument supplied: chat_template_kwargs");
    expect(error?.param).toBeNull();
  });

  it("refuses parameters configured as unknown and accepts configured extras", async () => {
    const personality = openaiPersonality({ unknownParams: ["seed"], extraParams: ["top_k"] });
    expect((await refusal({ model: "gpt-4o", seed: 1 }, { personality })).status).toBe(400);
    await server?.close();
    expect((await refusal({ model: "gpt-4o", top_k: 3 }, { personality })).status).toBe(200);
  });

  it("refuses max_tokens on reasoning models with the recorded body, byte for byte", async () => {
    const rel = "errors/openai/max-tokens-unsupported-use-max-completion-tokens.json";
    for (const model of ["gpt-5.1", "o3-mini"]) {
      const { error, text } = await refusal({ model, max_tokens: 100 });
      expect(text).toBe(readFixture(rel));
      expect(error?.code).toBe("unsupported_parameter");
      await server?.close();
    }
    expect((await refusal({ model: "gpt-4o", max_tokens: 100 })).status).toBe(200);
  });

  it("refuses an unsupported reasoning_effort with the recorded message, listing the supported values", async () => {
    const { error } = await refusal({ model: "gpt-5.1", reasoning_effort: "minimal" });
    expect(error?.error).toEqual({
      message: readFixture(
        "errors/openai/reasoning-effort-minimal-unsupported-gpt-5.1-chat.message.txt",
      ).trim(),
      type: "invalid_request_error",
      param: "reasoning_effort",
      code: "unsupported_value",
    });
    await server?.close();
    const nulled = await refusal({ model: "gpt-5.1", reasoning_effort: null });
    expect(messageOf(nulled.error)).toBe(
      readFixture("errors/openai/reasoning-effort-null-unsupported-gpt-5.1.message.txt").trim(),
    );
    await server?.close();
    const custom = await refusal(
      { model: "gpt-5", reasoning_effort: "none" },
      { personality: openaiPersonality({ reasoningEffortValues: ["minimal", "low", "medium", "high"] }) },
    );
    expect(messageOf(custom.error)).toBe(
      "Unsupported value: 'reasoning_effort' does not support 'none' with this model. Supported values are: 'minimal', 'low', 'medium', and 'high'.",
    );
  });

  it("accepts a supported reasoning_effort on a reasoning model", async () => {
    expect(
      (await refusal({ model: "gpt-5.1", reasoning_effort: "high", max_completion_tokens: 9 })).status,
    ).toBe(200);
  });

  it("refuses temperature other than 1 on reasoning models with the recorded body", async () => {
    const { error } = await refusal({ model: "gpt-5", temperature: 0 });
    expect(error?.error).toEqual(recordedError("errors/openai/temperature-0-unsupported-value.json"));
  });

  it("refuses stream_options without stream with the recorded body", async () => {
    const { text } = await refusal({ model: "gpt-4o", stream_options: { include_usage: true } });
    expect(text).toBe(readFixture("errors/openai/stream-options-only-when-stream-enabled.json"));
  });

  it("refuses a strict tool schema without additionalProperties: false, as recorded", async () => {
    const { error } = await refusal({
      model: "gpt-4o",
      tools: [
        { type: "function", function: { name: "ok", strict: false, parameters: { type: "object" } } },
        {
          type: "function",
          function: { name: "<...>", strict: true, parameters: { type: "object", title: "T" } },
        },
      ],
    });
    const recorded = recordedError(
      "errors/openai/strict-schema-root-additionalproperties-chat.json",
    ) as Record<string, unknown>;
    expect(error?.error).toEqual({ ...recorded, param: "tools[1].function.parameters" });
  });

  it("refuses a strict response_format whose nested object leaves a key out of required", async () => {
    const schema = {
      type: "object",
      additionalProperties: false,
      required: ["organizations"],
      properties: {
        organizations: {
          type: "array",
          items: {
            type: "object",
            additionalProperties: false,
            required: ["name"],
            properties: { name: { type: "string" }, roles: { type: "string" } },
          },
        },
      },
    };
    const { error } = await refusal({
      model: "gpt-4o",
      response_format: { type: "json_schema", json_schema: { name: "response", strict: true, schema } },
    });
    expect(messageOf(error)).toBe(
      readFixture("errors/openai/strict-schema-required-missing-key-response-format.message.txt").trim(),
    );
    expect(error?.param).toBe("response_format");
  });

  it("accepts a schema that follows the strict rules", async () => {
    const parameters = {
      type: "object",
      additionalProperties: false,
      required: ["a"],
      properties: { a: { anyOf: [{ type: "string" }, { type: "null" }] } },
    };
    const { status } = await refusal({
      model: "gpt-4o",
      tools: [{ type: "function", function: { name: "f", strict: true, parameters } }],
    });
    expect(status).toBe(200);
  });

  it("refuses an unknown model with the recorded 404 when models are listed", async () => {
    const { error } = await refusal(
      { model: "gpt-5.2-proo" },
      { personality: openaiPersonality({ models: ["gpt-4o"] }) },
    );
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error?.error).toEqual(recordedError("errors/openai/404-model-not-found-chat.json"));
  });

  it("refuses a prompt over the context window with the recorded context_length_exceeded body", async () => {
    const { error } = await refusal(
      { model: "gpt-4o", messages: [{ role: "user", content: "word ".repeat(50) }] },
      { personality: openaiPersonality({ contextWindow: 20 }) },
    );
    expect(error?.code).toBe("context_length_exceeded");
    expect(messageOf(error)).toMatch(
      /^This model's maximum context length is 20 tokens\. However, your messages resulted in \d+ tokens\./,
    );
  });

  it("streams usage only when stream_options.include_usage is set", async () => {
    server = await startServer({ personality: "openai", replies: () => ({ content: "hi" }) });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const usages = async (extra: Record<string, unknown>) => {
      const stream = await client.chat.completions.create({
        model: "gpt-4o",
        messages: [{ role: "user", content: "x" }],
        stream: true,
        ...extra,
      });
      const seen: unknown[] = [];
      for await (const chunk of stream) if (chunk.usage) seen.push(chunk.usage);
      return seen;
    };
    expect(await usages({})).toEqual([]);
    expect(await usages({ stream_options: { include_usage: true } })).toHaveLength(1);
  });

  it("with max_tokens, refuses prompt + completion over the window in the recorded 'you requested' wording", async () => {
    const body = { model: "gpt-4o", messages: [{ role: "user" as const, content: "word ".repeat(10) }] };
    const prompt = countTokens(renderPrompt(body));
    const { error } = await refusal(
      { ...body, max_tokens: 50 },
      { personality: openaiPersonality({ contextWindow: prompt + 10 }) },
    );
    expect(error?.status).toBe(400);
    expect(error?.code).toBe("context_length_exceeded");
    expect(error?.param).toBe("messages");
    expect(messageOf(error)).toBe(
      `This model's maximum context length is ${prompt + 10} tokens. However, you requested ${prompt + 50} tokens (${prompt} in the messages, 50 in the completion). Please reduce the length of the messages or completion.`,
    );
  });

  it("counts the tools as 'functions' in the overflow message when tools are sent", async () => {
    const tools = [{ type: "function", function: { name: "lookup", parameters: { type: "object" } } }];
    const body = { model: "gpt-4o", messages: [{ role: "user" as const, content: "hi" }], tools };
    const prompt = countTokens(renderPrompt(body));
    const functions = prompt - countTokens(renderPrompt({ messages: body.messages }));
    const { error } = await refusal(
      { ...body, max_completion_tokens: 40 },
      {
        personality: openaiPersonality({ contextWindow: prompt }),
      },
    );
    expect(error?.code).toBe("context_length_exceeded");
    expect(messageOf(error)).toBe(
      `This model's maximum context length is ${prompt} tokens. However, you requested ${prompt + 40} tokens (${prompt - functions} in the messages, ${functions} in the functions, and 40 in the completion). Please reduce the length of the messages, functions, or completion.`,
    );
  });

  it("lets a request through when prompt + max_tokens fits the window exactly", async () => {
    const body = { model: "gpt-4o", messages: [{ role: "user" as const, content: "fits" }] };
    const prompt = countTokens(renderPrompt(body));
    const { status } = await refusal(
      { ...body, max_tokens: 5 },
      { personality: openaiPersonality({ contextWindow: prompt + 5 }) },
    );
    expect(status).toBe(200);
  });

  it("answers a body that is not JSON with OpenAI's parse error, param and code null", async () => {
    server = await startServer({ personality: "openai", replies: [{ content: "unused" }] });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: '{"model": "gpt-4o",',
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: "invalid_request_error", param: null, code: null });
    expect(String(body.error.message)).toMatch(/^We could not parse the JSON body of your request\. \(HINT:/);
    expect(server.pending).toBe(1);
  });

  it("answers an unknown path or method with OpenAI's 404 Invalid URL naming both", async () => {
    server = await startServer({ personality: "openai" });
    const get = await fetch(`${server.baseUrl}/chat/completions`);
    expect(get.status).toBe(404);
    expect(await get.json()).toEqual({
      error: {
        message: "Invalid URL (GET /v1/chat/completions)",
        type: "invalid_request_error",
        param: null,
        code: null,
      },
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const error = await client.embeddings
      .create({ model: "text-embedding-3-small", input: "x" })
      .catch((e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(messageOf(error as InstanceType<typeof OpenAI.APIError>)).toBe(
      "Invalid URL (POST /v1/embeddings)",
    );
  });
});
