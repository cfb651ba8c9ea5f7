import { once } from "node:events";
import { connect } from "node:net";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { readFixture, readRecordedResponse } from "../fixtures.js";
import { countTokens, renderPrompt } from "../prefix-cache.js";
import { startServer, type TestServer } from "../server.js";
import { llamacppPersonality } from "./llamacpp.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const captured = (rel: string) => readRecordedResponse(`llamacpp-live/${rel}.response.txt`);

async function post(body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${server?.baseUrl}/chat/completions`, {
    method: "POST",
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

const user = (content: string) => ({ model: "tiny", messages: [{ role: "user", content }] });

describe("llamacpp personality", () => {
  it("answers the captured 503 Loading model on every route while loading", async () => {
    server = await startServer({
      personality: llamacppPersonality({ loadingMs: 60_000 }),
      replies: () => ({ content: "hi" }),
    });
    const loading = captured("00-loading-503");
    for (const url of [`${server.baseUrl}/models`, `${server.origin}/health`, `${server.origin}/props`]) {
      const res = await fetch(url);
      expect(res.status).toBe(503);
      expect(await res.text()).toBe(loading.body);
    }
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const error = await client.chat.completions.create(user("x") as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((error as InstanceType<typeof OpenAI.APIError>).type).toBe("unavailable_error");
  });

  it("serves normally once the loading period is over", async () => {
    server = await startServer({
      personality: llamacppPersonality({ loadingMs: 50 }),
      replies: () => ({ content: "hi" }),
    });
    await new Promise((r) => setTimeout(r, 80));
    expect((await post(user("x"))).status).toBe(200);
    expect(await fetch(`${server.origin}/health`).then((r) => r.text())).toBe(captured("03-health").body);
  });

  it("the openai client's retries ride out the loading period", async () => {
    server = await startServer({
      personality: llamacppPersonality({ loadingMs: 300 }),
      replies: () => ({ content: "ready" }),
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 5 });
    const completion = await client.chat.completions.create(user("x") as never);
    expect(completion.choices[0]?.message.content).toBe("ready");
    expect(server.chatRequests.length).toBeGreaterThan(1);
    expect(server.requests.every((r) => r.path === "/v1/chat/completions")).toBe(true);
  });

  it("refuses a prompt that reaches n_ctx with the captured overflow body and this prompt's counts", async () => {
    server = await startServer({
      personality: llamacppPersonality({ nCtx: 64 }),
      replies: () => ({ content: "hi" }),
    });
    const body = user("hello ".repeat(40));
    const tokens = countTokens(renderPrompt(body));
    expect(tokens).toBeGreaterThan(64);
    const { status, text } = await post(body);
    expect(status).toBe(400);
    const recorded = JSON.parse(captured("18-overflow-nonstream").body);
    expect(JSON.parse(text)).toEqual({
      error: {
        ...recorded.error,
        message: `request (${tokens} tokens) exceeds the available context size (64 tokens), try increasing it`,
        n_prompt_tokens: tokens,
        n_ctx: 64,
      },
    });
  });

  it("answers overflow as JSON even when streaming was asked, which the openai client raises", async () => {
    server = await startServer({
      personality: llamacppPersonality({ nCtx: 10 }),
      replies: () => ({ content: "hi" }),
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const error = await client.chat.completions
      .create({ ...user("hello ".repeat(20)), stream: true } as never)
      .catch((e: unknown) => e);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect((error as InstanceType<typeof OpenAI.APIError>).type).toBe("exceed_context_size_error");
  });

  it("reproduces the captured 6029-token overflow body exactly when the counts match", async () => {
    server = await startServer({ personality: llamacppPersonality(), replies: () => ({ content: "hi" }) });
    // Build a prompt of exactly 6029 tokens by the token rule: "a" and "." are one token each.
    const body = user("a.".repeat(3012));
    expect(countTokens(renderPrompt(body))).toBe(6029);
    expect((await post(body)).text).toBe(captured("18-overflow-nonstream").body);
  });

  it("refuses a response_format pattern without anchors with the captured grammar error", async () => {
    server = await startServer({ personality: "llamacpp", replies: () => ({ content: "hi" }) });
    const request = JSON.parse(readFixture("llamacpp-live/20-schema-rejected-pattern.request.json"));
    const { status, text } = await post(request);
    expect(status).toBe(400);
    expect(text).toBe(captured("20-schema-rejected-pattern").body);
  });

  it("accepts a remote $ref in a schema, as the live server did", async () => {
    server = await startServer({ personality: "llamacpp", replies: () => ({ content: "{}" }) });
    const request = JSON.parse(readFixture("llamacpp-live/21-schema-rejected-remote-ref.request.json"));
    expect((await post(request)).status).toBe(200);
  });

  it("refuses a tool whose parameter schema it cannot recognise, with the recorded body", async () => {
    server = await startServer({ personality: "llamacpp", replies: () => ({ content: "hi" }) });
    const { status, text } = await post({
      ...user("x"),
      tools: [
        {
          type: "function",
          function: { name: "run", parameters: { description: "Arguments for the tool (JSON object)" } },
        },
      ],
    });
    expect(status).toBe(400);
    expect(JSON.parse(text)).toEqual(
      JSON.parse(readFixture("errors/llamacpp/json-schema-conversion-failed-unrecognized-schema.json")),
    );
  });

  it("refuses an unknown response_format type with the captured message naming it", async () => {
    server = await startServer({ personality: "llamacpp", replies: () => ({ content: "hi" }) });
    expect((await post({ ...user("x"), response_format: { type: "xml" } })).text).toBe(
      captured("23-bad-response-format-type").body,
    );
    const yaml = JSON.parse((await post({ ...user("x"), response_format: { type: "yaml" } })).text);
    expect(yaml.error.message).toBe(
      'response_format type must be one of "text" or "json_object", but got: yaml',
    );
  });

  it("answers a body that is not JSON with the captured 500", async () => {
    server = await startServer({ personality: "llamacpp" });
    const { status, text } = await post('{"model":"tiny","messages":[');
    expect(status).toBe(500);
    expect(text).toBe(captured("24-invalid-json-body").body);
  });

  it("refuses tools with the captured 500 when started without --jinja", async () => {
    server = await startServer({
      personality: llamacppPersonality({ jinja: false }),
      replies: () => ({ content: "hi" }),
    });
    const request = JSON.parse(readFixture("llamacpp-live/no-jinja/nj04-tools-required.request.json"));
    const { status, text } = await post(request);
    expect(status).toBe(500);
    expect(text).toBe(readRecordedResponse("llamacpp-live/no-jinja/nj04-tools-required.response.txt").body);
    expect((await post(user("plain chat still works"))).status).toBe(200);
  });

  it("serves /props, /v1/models and /models from the captures with the configured n_ctx", async () => {
    server = await startServer({ personality: llamacppPersonality({ nCtx: 2048, model: "qwen.gguf" }) });
    const props = (await fetch(`${server.origin}/props`).then((r) => r.json())) as {
      default_generation_settings: { n_ctx: number };
      total_slots: number;
    };
    expect(props.default_generation_settings.n_ctx).toBe(2048);
    expect(props.total_slots).toBe(JSON.parse(captured("02-props").body).total_slots);
    const models = (await fetch(`${server.baseUrl}/models`).then((r) => r.json())) as { data: unknown[] };
    expect(models.data[0]).toMatchObject({
      id: "qwen.gguf",
      owned_by: "llamacpp",
      meta: { n_ctx: 2048, n_ctx_train: 4096 },
    });
    expect(await fetch(`${server.origin}/models`).then((r) => r.json())).toEqual(models);
  });

  it("the unchanged captures are served when the defaults match the recording", async () => {
    server = await startServer({ personality: "llamacpp" });
    expect(await fetch(`${server.origin}/props`).then((r) => r.json())).toEqual(
      JSON.parse(captured("02-props").body),
    );
    expect(await fetch(`${server.baseUrl}/models`).then((r) => r.json())).toEqual(
      JSON.parse(captured("01-models").body),
    );
  });

  it("lets an explicit props option override the personality, and props: false turn it off", async () => {
    server = await startServer({ personality: "llamacpp", props: false });
    expect((await fetch(`${server.origin}/props`)).status).toBe(404);
  });
});

describe("personality option forms", () => {
  it("reads { name, …options } as the built-in personality with those options", async () => {
    server = await startServer({ personality: { name: "llamacpp", nCtx: 1234 } });
    const props = (await fetch(`${server.origin}/props`).then((r) => r.json())) as {
      default_generation_settings: { n_ctx: number };
    };
    expect(props.default_generation_settings.n_ctx).toBe(1234);
  });

  it("takes an object with hooks as a custom personality", async () => {
    server = await startServer({
      personality: {
        name: "mine",
        check: () => ({ type: "error", status: 418, body: { error: { message: "teapot" } } }),
      },
    });
    expect((await post(user("x"))).status).toBe(418);
  });

  it("refuses an unknown name in either form", async () => {
    await expect(startServer({ personality: { name: "ollama" } as never })).rejects.toThrow(
      /Unknown personality/,
    );
  });

  it("sends its refusals with the captured headers: Server llama.cpp, JSON with charset, empty CORS origin", async () => {
    server = await startServer({
      personality: llamacppPersonality({ nCtx: 16 }),
      replies: () => ({ content: "x" }),
    });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify(user("hello ".repeat(20))),
    });
    const recorded = captured("18-overflow-nonstream").headers;
    expect(res.status).toBe(400);
    expect(res.headers.get("server")).toBe(recorded.server);
    expect(res.headers.get("content-type")).toBe(recorded["content-type"]);
    expect(res.headers.get("access-control-allow-origin")).toBe("");
  });

  it("answers the loading 503 with the captured headers, and an OPTIONS preflight even while loading", async () => {
    server = await startServer({ personality: llamacppPersonality({ loadingMs: 60_000 }) });
    const health = await fetch(`${server.origin}/health`);
    expect(health.status).toBe(503);
    expect(health.headers.get("content-type")).toBe(
      captured("00-loading-503-health").headers["content-type"],
    );
    expect(await health.text()).toBe(captured("00-loading-503-health").body);
    expect((await fetch(`${server.baseUrl}/chat/completions`, { method: "OPTIONS" })).status).toBe(204);
  });

  it("answers an unknown route or method with llama-server's 404 File Not Found", async () => {
    server = await startServer({ personality: "llamacpp" });
    for (const [method, path] of [
      ["GET", "/v1/nothing"],
      ["GET", "/v1/chat/completions"],
      ["DELETE", "/props"],
    ] as const) {
      const res = await fetch(`${server.origin}${path}`, { method });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({
        error: { code: 404, message: "File Not Found", type: "not_found_error" },
      });
      expect(res.headers.get("server")).toBe("llama.cpp");
    }
  });

  it("answers HEAD /health like GET, without a body", async () => {
    server = await startServer({ personality: "llamacpp" });
    const res = await fetch(`${server.origin}/health`, { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
  });

  it("puts the captured headers on its answers too: plain completion, stream, /props and /v1/models", async () => {
    server = await startServer({ personality: "llamacpp", replies: () => ({ content: "hi" }) });
    const plain = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify(user("x")),
    });
    const plainCapture = captured("04-chat-nonstream").headers;
    expect(plain.headers.get("content-type")).toBe(plainCapture["content-type"]);
    expect(plain.headers.get("server")).toBe(plainCapture.server);
    const streamed = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ ...user("x"), stream: true }),
    });
    await streamed.text();
    const streamCapture = captured("05-chat-stream-usage").headers;
    expect(streamed.headers.get("content-type")).toBe(streamCapture["content-type"]);
    expect(streamed.headers.get("x-accel-buffering")).toBe(streamCapture["x-accel-buffering"]);
    expect(streamed.headers.get("server")).toBe("llama.cpp");
    for (const [url, name] of [
      [`${server.origin}/props`, "02-props"],
      [`${server.baseUrl}/models`, "01-models"],
    ] as const) {
      const res = await fetch(url);
      expect(res.headers.get("content-type")).toBe(captured(name).headers["content-type"]);
      expect(res.headers.get("access-control-allow-origin")).toBe("");
    }
  });

  it("with thinking on, refuses an assistant prefill with the recorded 400", async () => {
    server = await startServer({
      personality: { name: "llamacpp", thinking: true },
      replies: () => ({ content: "x" }),
    });
    const prefill = { model: "tiny", messages: [...user("x").messages, { role: "assistant", content: "" }] };
    const refused = await post(prefill);
    expect(refused.status).toBe(400);
    expect(refused.text).toBe(
      readFixture("errors/llamacpp/assistant-prefill-incompatible-with-enable-thinking.json"),
    );
    expect((await post(user("x"))).status).toBe(200);
    await server.close();
    server = await startServer({ personality: "llamacpp", replies: () => ({ content: "x" }) });
    expect((await post(prefill)).status).toBe(200);
  });

  it("with legacyOverflow, refuses an overflow as the Sept 2025 builds did: HTTP 500 with this prompt's counts", async () => {
    server = await startServer({
      personality: llamacppPersonality({ nCtx: 16, legacyOverflow: true }),
      replies: () => ({ content: "x" }),
    });
    const body = user("hello ".repeat(20));
    const refused = await post(body);
    expect(refused.status).toBe(500);
    const recorded = JSON.parse(readFixture("errors/llamacpp/exceed-context-size-code-500-pr15780.json"));
    expect(JSON.parse(refused.text)).toEqual({
      error: { ...recorded.error, n_prompt_tokens: countTokens(renderPrompt(body)), n_ctx: 16 },
    });
  });
});

describe("llamacpp personality: a trailing assistant message (a prefill)", () => {
  /** The content deltas of an SSE body, in order (the opener's `content: null` left out). */
  const contentDeltas = (sse: string): string[] =>
    sse
      .split("\n")
      .filter((line) => line.startsWith("data: {"))
      .flatMap((line) => {
        const content = JSON.parse(line.slice(6)).choices?.[0]?.delta?.content;
        return typeof content === "string" ? [content] : [];
      });
  // The recorded request, without its max_tokens (the testkit counts tokens its own way).
  const request = (rel: string) => {
    const { max_tokens: _, ...body } = JSON.parse(readFixture(`llamacpp-live/${rel}.request.json`));
    return body as { messages: { role: string; content: string }[] };
  };

  it("streams the prefill again at the start of the content, glued to the first new token, as b9749 does (capture 31)", async () => {
    const recorded = contentDeltas(captured("31-assistant-prefill-stream").body);
    const body = request("31-assistant-prefill-stream");
    const prefill = body.messages.at(-1)!.content;
    // What the real server did: the whole prefill, then a new token, in one delta.
    expect(recorded[0]!.startsWith(prefill)).toBe(true);
    expect(recorded[0]!.length).toBeGreaterThan(prefill.length);
    const fresh = recorded.join("").slice(prefill.length);
    server = await startServer({
      personality: "llamacpp",
      replies: () => ({ content: fresh, chunkChars: 5 }),
    });
    const echoed = await post(body);
    const deltas = contentDeltas(echoed.text);
    expect(deltas.join("")).toBe(recorded.join(""));
    expect(deltas[0]).toBe(prefill + fresh.slice(0, 5));
    // completion_tokens counts only the new tokens: the same as without the prefill.
    const usageOf = (sse: string) =>
      JSON.parse(
        sse
          .split("\n")
          .filter((l) => l.startsWith("data: {") && l.includes('"usage"'))
          .at(-1)!
          .slice(6),
      ).usage.completion_tokens;
    const plain = await post({ ...body, messages: body.messages.slice(0, -1) });
    expect(contentDeltas(plain.text).join("")).toBe(fresh);
    expect(usageOf(echoed.text)).toBe(usageOf(plain.text));
  });

  it("puts the prefill before a plain reply's content (capture 32), and sends it alone before the finish when nothing new comes", async () => {
    const body = request("32-assistant-prefill-nonstream");
    const prefill = body.messages.at(-1)!.content;
    const recorded = JSON.parse(captured("32-assistant-prefill-nonstream").body).choices[0].message.content;
    expect(recorded.startsWith(prefill)).toBe(true);
    server = await startServer({
      personality: "llamacpp",
      replies: [{ content: recorded.slice(prefill.length) }, { content: "" }],
    });
    expect(JSON.parse((await post(body)).text).choices[0].message.content).toBe(recorded);
    // Ended at once (the model's end of turn): the echo alone, as the live server sends it.
    const empty = await post({ ...body, stream: true });
    expect(contentDeltas(empty.text)).toEqual([prefill]);
  });

  it("does not repeat it with continue_final_message and add_generation_prompt false (capture 33)", async () => {
    const body = request("33-continue-final-message-stream");
    const recorded = contentDeltas(captured("33-continue-final-message-stream").body);
    expect(recorded.join("").startsWith(body.messages.at(-1)!.content)).toBe(false);
    server = await startServer({
      personality: "llamacpp",
      replies: () => ({ content: recorded.join(""), chunkChars: 5 }),
    });
    expect(contentDeltas((await post(body)).text).join("")).toBe(recorded.join(""));
    // Other personalities never echo.
    await server.close();
    server = await startServer({ replies: () => ({ content: "new", chunkChars: 5 }) });
    expect(contentDeltas((await post(request("31-assistant-prefill-stream"))).text).join("")).toBe("new");
  });
});

describe("the connection after an error answer", () => {
  /**
   * Sends `requests` one after another on one raw TCP connection and says what came back: the
   * text of everything read, and whether the server ended the connection within a generous 5 s
   * after the last answer began (a kept-alive connection stays open much longer; with `watchClose`
   * false that wait is skipped and `closed` is false).
   */
  async function onOneConnection(
    requests: string[],
    watchClose = true,
  ): Promise<{ text: string; closed: boolean }> {
    const url = new URL(server?.baseUrl ?? "");
    const socket = connect(Number(url.port), url.hostname);
    await once(socket, "connect");
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => {
      text += d;
    });
    const ended = once(socket, "end").then(() => true);
    for (const [i, r] of requests.entries()) {
      socket.write(r);
      while ((text.match(/HTTP\/1\.1 /g) ?? []).length <= i) await once(socket, "data");
    }
    const closed =
      watchClose &&
      (await Promise.race([ended, new Promise<boolean>((r) => setTimeout(() => r(false), 5000))]));
    socket.destroy();
    return { text, closed };
  }

  const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
  const bad = (body: string) =>
    `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

  it("is closed by the llamacpp personality, as llama-server b9749 closes it (captures 00, 18 and every refusal say Connection: close)", {
    timeout: 20_000,
  }, async () => {
    server = await startServer({ personality: "llamacpp" });
    for (const request of [bad(JSON.stringify({ messages: 5 })), get("/v1/no-such-path")]) {
      const { text, closed } = await onOneConnection([request]);
      expect(text).toMatch(/^HTTP\/1\.1 4\d\d /);
      expect(text.toLowerCase()).toContain("connection: close");
      expect(closed).toBe(true);
    }
  });

  it("stays open after a good answer, so a client reuses it as with llama-server", async () => {
    server = await startServer({ personality: "llamacpp" });
    const { text } = await onOneConnection([get("/health"), get("/health")], false);
    expect(text.match(/HTTP\/1\.1 200 /g)).toHaveLength(2);
    expect(text.toLowerCase()).not.toContain("connection: close");
  });
});
