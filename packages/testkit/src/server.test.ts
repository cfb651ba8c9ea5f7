import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function client(s: TestServer): OpenAI {
  return new OpenAI({ baseURL: s.baseUrl, apiKey: "test", maxRetries: 0 });
}

const ask = { model: "sim", messages: [{ role: "user" as const, content: "hi" }] };

describe("startServer", () => {
  it("listens on 127.0.0.1 with a free port and gives an OpenAI baseURL", async () => {
    server = await startServer();
    expect(server.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(server.origin).toBe(server.baseUrl.slice(0, -3));
    const other = await startServer();
    expect(other.port).not.toBe(server.port);
    await other.close();
  });

  it("answers a plain completion with the scripted text", async () => {
    server = await startServer({ replies: [{ content: "Hello there" }] });
    const completion = await client(server).chat.completions.create(ask);
    expect(completion.choices[0]?.message.content).toBe("Hello there");
    expect(completion.choices[0]?.finish_reason).toBe("stop");
    expect(completion.object).toBe("chat.completion");
  });

  it("streams the scripted text as SSE that the openai client reads back whole", async () => {
    server = await startServer({ replies: [{ content: "Streaming works fine", chunkChars: 3 }] });
    const stream = await client(server).chat.completions.create({ ...ask, stream: true });
    const pieces: string[] = [];
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta.content;
      if (piece) pieces.push(piece);
    }
    expect(pieces.join("")).toBe("Streaming works fine");
    expect(pieces[0]).toBe("Str");
  });

  it("records every request body it received", async () => {
    server = await startServer({ replies: [{ content: "a" }, { content: "b" }] });
    const c = client(server);
    await c.chat.completions.create({ ...ask, temperature: 0.5 });
    await c.chat.completions.create({ ...ask, stream: true }).then(async (s) => {
      for await (const _ of s);
    });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[0]?.body).toMatchObject({ model: "sim", temperature: 0.5 });
    expect(server.requests[0]?.method).toBe("POST");
    expect(server.requests[0]?.path).toBe("/v1/chat/completions");
    expect(server.requests[0]?.headers.authorization).toBe("Bearer test");
    expect(JSON.parse(server.requests[1]?.raw ?? "")).toMatchObject({ stream: true });
  });

  it("lets a function decide each reply from the request and its index", async () => {
    server = await startServer({
      replies: (req, i) => ({ content: `#${i} ${(req.body as { model: string }).model}` }),
    });
    const c = client(server);
    expect((await c.chat.completions.create({ ...ask, model: "m1" })).choices[0]?.message.content).toBe(
      "#0 m1",
    );
    expect((await c.chat.completions.create({ ...ask, model: "m2" })).choices[0]?.message.content).toBe(
      "#1 m2",
    );
  });

  it("serves enqueued replies before the reply function", async () => {
    server = await startServer({ replies: () => ({ content: "from function" }) });
    server.enqueue({ content: "queued" });
    expect(server.pending).toBe(1);
    const c = client(server);
    expect((await c.chat.completions.create(ask)).choices[0]?.message.content).toBe("queued");
    expect((await c.chat.completions.create(ask)).choices[0]?.message.content).toBe("from function");
  });

  it("answers 500 saying the script ran out when nothing is queued", async () => {
    server = await startServer();
    const error = await client(server)
      .chat.completions.create(ask)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(500);
    expect(String((error as Error).message)).toMatch(/script ran out/);
  });

  it("reports a malformed scripted reply as a 500 naming the bad field", async () => {
    server = await startServer({ replies: () => ({ toolCalls: [{ name: "x" }] }) as never });
    const error = await client(server)
      .chat.completions.create(ask)
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/toolCalls\[0\]/);
  });

  it("refuses to enqueue a reply of an unknown type", async () => {
    server = await startServer();
    expect(() => server?.enqueue({ type: "nope" } as never)).toThrow(/Unknown reply type/);
  });

  it("lists one sim model by default on GET /v1/models", async () => {
    server = await startServer();
    const page = await client(server).models.list();
    expect(page.data.map((m) => m.id)).toEqual(["sim"]);
  });

  it("lists the configured models, wrapping an array as a list", async () => {
    server = await startServer({ models: [{ id: "a" }, { id: "b", max_model_len: 4096 }] });
    const body = await fetch(`${server.baseUrl}/models`).then((r) => r.json());
    expect(body).toMatchObject({
      object: "list",
      data: [
        { id: "a", object: "model" },
        { id: "b", max_model_len: 4096 },
      ],
    });
  });

  it("sends a non-array models body as is", async () => {
    server = await startServer({ models: { data: [], custom: true } });
    expect(await fetch(`${server.baseUrl}/models`).then((r) => r.json())).toEqual({ data: [], custom: true });
  });

  it("serves /props and /api/v0/models only when configured", async () => {
    server = await startServer({ props: { default_generation_settings: { n_ctx: 2048 } } });
    const props = await fetch(`${server.origin}/props`);
    expect(props.status).toBe(200);
    expect(await props.json()).toEqual({ default_generation_settings: { n_ctx: 2048 } });
    expect((await fetch(`${server.origin}/api/v0/models`)).status).toBe(404);
    await server.close();
    server = await startServer({ lmstudio: { data: [] }, props: false });
    expect((await fetch(`${server.origin}/props`)).status).toBe(404);
    expect(await fetch(`${server.origin}/api/v0/models`).then((r) => r.json())).toEqual({ data: [] });
  });

  it("answers unknown routes with 404 and records them", async () => {
    server = await startServer();
    const res = await fetch(`${server.origin}/v1/embeddings`, { method: "POST", body: "{}" });
    expect(res.status).toBe(404);
    expect(server.requests[0]?.path).toBe("/v1/embeddings");
  });

  it("rejects a chat body that is not JSON with a 400", async () => {
    server = await startServer({ replies: [{ content: "unused" }] });
    const res = await fetch(`${server.baseUrl}/chat/completions`, { method: "POST", body: "{not json" });
    expect(res.status).toBe(400);
    expect(server.requests[0]?.raw).toBe("{not json");
    expect(server.pending).toBe(1);
  });

  it("close() can be called twice", async () => {
    server = await startServer();
    await server.close();
    await server.close();
    await expect(fetch(`${server.origin}/v1/models`)).rejects.toThrow();
  });
});

describe("startServer options", () => {
  it("rejects an unknown personality with a TestkitError listing the built-in ones", async () => {
    await expect(startServer({ personality: "ollama" as never })).rejects.toThrow(
      /use one of openai, llamacpp, vllm, lmstudio/,
    );
  });

  it("rejects a malformed reply in the initial queue before listening", async () => {
    await expect(startServer({ replies: [{ type: "error", status: 42, body: {} }] })).rejects.toThrow(
      /HTTP status 100-599/,
    );
  });

  it("rejects replies that are neither an array nor a function", async () => {
    await expect(startServer({ replies: "nope" as never })).rejects.toThrow(/replies must be an array/);
  });
});

describe("robustness", () => {
  it("rejects a port outside 0-65535", async () => {
    await expect(startServer({ port: 70000 })).rejects.toThrow(/port must be an integer 0-65535/);
  });

  it("turns a reply function that throws into a 500 naming the failure", async () => {
    server = await startServer({
      replies: () => {
        throw new Error("script bug");
      },
    });
    const error = await client(server)
      .chat.completions.create(ask)
      .catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(500);
    expect((error as Error).message).toContain("script bug");
  });

  it("keeps serving after a client aborts a slow stream", async () => {
    server = await startServer({
      replies: [{ content: "slow stream of text", chunkChars: 1, chunkDelayMs: 30 }, { content: "next" }],
    });
    const c = client(server);
    const controller = new AbortController();
    const stream = await c.chat.completions.create({ ...ask, stream: true }, { signal: controller.signal });
    const seen: string[] = [];
    // openai-node ends the iteration quietly when its own signal aborts
    for await (const chunk of stream) {
      seen.push(chunk.choices[0]?.delta.content ?? "");
      if (seen.length === 3) controller.abort();
    }
    expect(seen.join("")).toBe("sl");
    expect((await c.chat.completions.create(ask)).choices[0]?.message.content).toBe("next");
  });
});

describe("GET /v1/models/{id}", () => {
  it("retrieves one listed model and answers 404 model_not_found for others", async () => {
    server = await startServer({ models: [{ id: "org/model-a" }] });
    const c = client(server);
    expect(await c.models.retrieve("org/model-a")).toMatchObject({ id: "org/model-a", object: "model" });
    const error = (await c.models.retrieve("nope").catch((e: unknown) => e)) as InstanceType<
      typeof OpenAI.APIError
    >;
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect(error.code).toBe("model_not_found");
  });
});
