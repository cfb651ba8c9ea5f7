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
});
