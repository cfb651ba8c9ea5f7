import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { readFixture, readFixtureJson, startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createClientPool } from "./pool.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

const ask = (client: { chat: OpenAI["chat"] }) =>
  client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] });

describe("error bodies the openai SDK would drop", () => {
  it("keeps vLLM's top-level error words, which a bare SDK client reports as '(no body)'", async () => {
    const body = readFixtureJson("errors/vllm/context-length-legacy-top-level-object-error.json");
    server.enqueue({ type: "error", status: 400, body }, { type: "error", status: 400, body });
    const bare = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    await expect(ask(bare)).rejects.toThrow(/no body/);
    const error = await ask(createClientPool().getClient({ baseUrl: server.baseUrl })).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toMatch(
      /maximum context length is 6048 tokens/,
    );
    expect((error as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
      object: "error",
      type: "BadRequestError",
    });
  });

  it("keeps Mistral's 422 whose message is an object, and a bare JSON string body", async () => {
    const mistral = readFixtureJson(
      "errors/mistral/422-stream-options-extra-forbidden-message-is-object.json",
    );
    server.enqueue(
      { type: "error", status: 422, body: mistral },
      { type: "error", status: 400, body: JSON.stringify("model not loaded") },
    );
    const client = createClientPool().getClient({ baseUrl: server.baseUrl });
    await expect(ask(client)).rejects.toThrow(/stream_options/);
    await expect(ask(client)).rejects.toThrow(/model not loaded/);
  });

  it("leaves a body that already has an error member exactly as the server sent it", async () => {
    const body = readFixtureJson("errors/openai/404-model-not-found-chat.json") as {
      error: { message: string };
    };
    server.enqueue({ type: "error", status: 404, body });
    const error = await ask(createClientPool().getClient({ baseUrl: server.baseUrl })).catch(
      (e: unknown) => e,
    );
    expect((error as InstanceType<typeof OpenAI.APIError>).error).toEqual(body.error);
    expect(readFixture("errors/openai/404-model-not-found-chat.json")).toContain(body.error.message);
  });

  it("unwraps Gemini's one-element array, which the SDK would report as '(no body)'", async () => {
    // https://github.com/Alishahryar1/free-claude-code/issues/542
    const body = [
      {
        error: {
          code: 400,
          message: 'Invalid JSON payload received. Unknown name "google": Cannot find field.',
          status: "INVALID_ARGUMENT",
        },
      },
    ];
    server.enqueue({ type: "error", status: 400, body }, { type: "error", status: 400, body });
    const bare = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    await expect(ask(bare)).rejects.toThrow(/no body/);
    const error = (await ask(createClientPool().getClient({ baseUrl: server.baseUrl })).catch(
      (e: unknown) => e,
    )) as InstanceType<typeof OpenAI.APIError>;
    expect(error.message).toMatch(/Unknown name "google"/);
    expect(error.error).toMatchObject({ status: "INVALID_ARGUMENT" });
  });

  it("keeps the siblings of an error that is a plain string (Hugging Face's estimated_time)", async () => {
    // https://github.com/huggingface/transformers/issues/32665
    const body = { error: "Model meta-llama/Llama-2-13b-chat is currently loading", estimated_time: 20.0 };
    server.enqueue({ type: "error", status: 503, body });
    const client = createClientPool().getClient({ baseUrl: server.baseUrl });
    const error = (await ask(client).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error.status).toBe(503);
    expect(error.message).toMatch(/is currently loading/);
    expect(error.error).toEqual({ message: body.error, estimated_time: 20 });
  });
});

describe("a status that has no body", () => {
  it("reaches the caller as the server's status, as a bare SDK client reports it, not as a connection error", async () => {
    const http = createServer((_req, res) => {
      res.writeHead(304, { etag: '"listing-1"' });
      res.end();
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1`;
    try {
      const bare = await new OpenAI({ baseURL: baseUrl, apiKey: "k", maxRetries: 0 }).models
        .list()
        .catch((e: unknown) => e);
      expect((bare as InstanceType<typeof OpenAI.APIError>).status).toBe(304);
      const pooled = await createClientPool()
        .getClient({ baseUrl })
        .models.list()
        .catch((e: unknown) => e);
      expect(pooled).toBeInstanceOf(OpenAI.APIError);
      expect(pooled).not.toBeInstanceOf(OpenAI.APIConnectionError);
      expect((pooled as InstanceType<typeof OpenAI.APIError>).status).toBe(304);
    } finally {
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    }
  });
});
