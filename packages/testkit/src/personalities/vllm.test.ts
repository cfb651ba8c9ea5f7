import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { readFixture } from "../fixtures.js";
import { countTokens, renderPrompt } from "../prefix-cache.js";
import { startServer, type TestServer } from "../server.js";
import { vllmPersonality } from "./vllm.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const user = (content: string) => ({ model: "m", messages: [{ role: "user" as const, content }] });

describe("vllm personality", () => {
  it("lists max_model_len in /v1/models, the recorded listing by default", async () => {
    server = await startServer({ personality: "vllm" });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const page = await client.models.list();
    expect(page.data).toEqual(JSON.parse(readFixture("models/vllm.json")).data);
    await server.close();
    server = await startServer({ personality: vllmPersonality({ maxModelLen: 2048, model: "qwen" }) });
    const body = (await fetch(`${server.baseUrl}/models`).then((r) => r.json())) as { data: unknown[] };
    expect(body.data[0]).toMatchObject({ id: "qwen", root: "qwen", max_model_len: 2048, owned_by: "vllm" });
  });

  it("refuses prompt plus max_tokens over max_model_len with the recorded top-level error wording", async () => {
    server = await startServer({
      personality: vllmPersonality({ maxModelLen: 100 }),
      replies: () => ({ content: "x" }),
    });
    const body = { ...user("hello ".repeat(20)), max_tokens: 80 };
    const prompt = countTokens(renderPrompt(body));
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(400);
    const recorded = JSON.parse(readFixture("errors/vllm/context-length-legacy-top-level-object-error.json"));
    expect(await res.json()).toEqual({
      ...recorded,
      message: `This model's maximum context length is 100 tokens. However, you requested ${prompt + 80} tokens (${prompt} in the messages, 80 in the completion). Please reduce the length of the messages or completion.`,
    });
  });

  it("the openai client finds no error.message in the legacy top-level body, as with a real vLLM", async () => {
    server = await startServer({
      personality: vllmPersonality({ maxModelLen: 10 }),
      replies: () => ({ content: "x" }),
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const error = await client.chat.completions.create(user("hello ".repeat(20))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).error).toBeUndefined();
    expect((error as Error).message).toBe("400 status code (no body)");
  });

  it("accepts a request that fits", async () => {
    server = await startServer({ personality: "vllm", replies: () => ({ content: "fits" }) });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    expect(
      (await client.chat.completions.create({ ...user("hi"), max_tokens: 100 })).choices[0]?.message.content,
    ).toBe("fits");
  });

  it("refuses max_tokens below 1 with the recorded body", async () => {
    server = await startServer({ personality: "vllm" });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ ...user("x"), max_tokens: -186 }),
    });
    expect(await res.json()).toEqual(
      JSON.parse(readFixture("errors/vllm/max-tokens-negative-legacy-top-level.json")),
    );
  });

  it("refuses auto tool choice with the recorded body when started without the flags", async () => {
    server = await startServer({
      personality: vllmPersonality({ autoToolChoice: false }),
      replies: () => ({ content: "x" }),
    });
    const tools = [{ type: "function", function: { name: "f", parameters: { type: "object" } } }];
    const post = (extra: object) =>
      fetch(`${server?.baseUrl}/chat/completions`, {
        method: "POST",
        body: JSON.stringify({ ...user("x"), tools, ...extra }),
      });
    const refused = await post({});
    expect(await refused.text()).toBe(readFixture("errors/vllm/auto-tool-choice-requires-flags.json"));
    expect((await post({ tool_choice: "none" })).status).toBe(200);
  });

  it("without max_tokens, refuses a prompt that reaches max_model_len in vLLM's 'in the messages' wording", async () => {
    const body = user("hello ".repeat(20));
    const prompt = countTokens(renderPrompt(body));
    server = await startServer({
      personality: vllmPersonality({ maxModelLen: prompt }),
      replies: () => ({ content: "x" }),
    });
    const post = (b: unknown) =>
      fetch(`${server?.baseUrl}/chat/completions`, { method: "POST", body: JSON.stringify(b) });
    const refused = await post(body);
    expect(refused.status).toBe(400);
    const recorded = JSON.parse(readFixture("errors/vllm/context-length-legacy-top-level-object-error.json"));
    // vllm-project/vllm@0030b9ff:vllm/entrypoints/openai/serving_engine.py (_validate_prompt_and_tokenize)
    expect(await refused.json()).toEqual({
      ...recorded,
      message: `This model's maximum context length is ${prompt} tokens. However, you requested ${prompt} tokens in the messages, Please reduce the length of the messages.`,
    });
    await server.close();
    server = await startServer({
      personality: vllmPersonality({ maxModelLen: prompt + 1 }),
      replies: () => ({ content: "fits" }),
    });
    expect((await post(body)).status).toBe(200);
  });

  it("reads max_completion_tokens as the completion, as vLLM does", async () => {
    server = await startServer({
      personality: vllmPersonality({ maxModelLen: 30 }),
      replies: () => ({ content: "x" }),
    });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ ...user("hi"), max_completion_tokens: 40 }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(/, 40 in the completion\)/);
  });

  it("the nested format puts the fields under error, so the openai client reads message and type", async () => {
    server = await startServer({
      personality: vllmPersonality({ maxModelLen: 20, errorFormat: "nested" }),
      replies: () => ({ content: "x" }),
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const body = user("hello ".repeat(4));
    const prompt = countTokens(renderPrompt(body));
    const withMax = (await client.chat.completions
      .create({ ...body, max_tokens: 100 })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(withMax).toBeInstanceOf(OpenAI.BadRequestError);
    expect(withMax.error).toEqual({
      message: `'max_tokens' or 'max_completion_tokens' is too large: 100. This model's maximum context length is 20 tokens and your request has ${prompt} input tokens (100 > 20 - ${prompt}).`,
      type: "BadRequestError",
      param: null,
      code: 400,
    });
    const long = user("hello ".repeat(30));
    const noMax = (await client.chat.completions.create(long).catch((e: unknown) => e)) as InstanceType<
      typeof OpenAI.APIError
    >;
    expect((noMax.error as { message: string }).message).toBe(
      `This model's maximum context length is 20 tokens. However, your request has ${countTokens(renderPrompt(long))} input tokens. Please reduce the length of the input messages.`,
    );
    const negative = (await client.chat.completions
      .create({ ...body, max_tokens: -3 })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(negative.error).toEqual({
      message: "max_tokens must be at least 1, got -3.",
      type: "BadRequestError",
      param: null,
      code: 400,
    });
  });

  it("answers unknown paths and wrong methods as FastAPI does", async () => {
    server = await startServer({ personality: "vllm" });
    const missing = await fetch(`${server.origin}/props`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: "Not Found" });
    const wrong = await fetch(`${server.baseUrl}/chat/completions`);
    expect(wrong.status).toBe(405);
    expect(await wrong.json()).toEqual({ detail: "Method Not Allowed" });
    expect(wrong.headers.get("allow")).toBe("POST");
  });

  it("with refuseUnknownModels, answers another model name with vLLM's 404 NotFoundError", async () => {
    server = await startServer({
      personality: vllmPersonality({ refuseUnknownModels: true }),
      replies: () => ({ content: "served" }),
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify(user("x")),
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      object: "error",
      message: "The model `m` does not exist.",
      type: "NotFoundError",
      param: null,
      code: 404,
    });
    const served = (await client.models.list()).data[0]?.id ?? "";
    const ok = await client.chat.completions.create({ ...user("x"), model: served });
    expect(ok.choices[0]?.message.content).toBe("served");
  });
});
