/**
 * ask and askReply over HTTP against the testkit through the real `openai` client: what a side
 * task sends by default, how a cut-off reply is told apart, the image part a text-only model
 * refuses, the time bound, and bad arguments.
 */
import { readFixtureJson, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it, vi } from "vitest";
import { bodies, isolated, userContent } from "../test/wire.js";
import { ask, askReply } from "./ask.js";
import { SideTaskError } from "./errors.js";
import type { SideTaskInput } from "./input.js";

let server: TestServer | undefined;
afterEach(() => {
  vi.useRealTimers();
  return server?.close();
});

const page: SideTaskInput = [
  { type: "text", text: "Transcribe this page." },
  { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
];

describe("ask", () => {
  it("sends a small non-streamed request with the side task's own defaults and reads the answer", async () => {
    server = await startServer({ replies: [{ content: "<think>they want a title</think>Trip to Lisbon" }] });
    const text = await ask(
      { baseUrl: server.baseUrl },
      "tiny",
      "Name this chat.",
      "We plan a trip to Lisbon.",
      isolated(),
    );
    expect(text).toBe("Trip to Lisbon");
    const [body] = bodies(server);
    expect(body).toMatchObject({
      model: "tiny",
      stream: false,
      max_tokens: 512,
      temperature: 0.3,
      chat_template_kwargs: { enable_thinking: false },
      messages: [
        { role: "system", content: "Name this chat." },
        { role: "user", content: "We plan a trip to Lisbon." },
      ],
    });
    expect(body).not.toHaveProperty("tools");
    expect(body).not.toHaveProperty("stream_options");
    expect(body).not.toHaveProperty("reasoning_effort");
  });

  it("keeps the no-thinking hint beside the template arguments an extraBody adds, unless it sets the hint itself", async () => {
    server = await startServer({ replies: [{ content: "Lisbon" }, { content: "Lisbon" }] });
    const endpoint = { baseUrl: server.baseUrl };
    const kwargs = (extra: Record<string, unknown>) =>
      ask(endpoint, "tiny", "Name this chat.", "Lisbon trip", { ...isolated(), extraBody: extra });
    await kwargs({ chat_template_kwargs: { add_vision_id: true }, top_k: 20 });
    await kwargs({ chat_template_kwargs: { enable_thinking: true } });
    const [first, second] = bodies(server);
    expect(first).toMatchObject({
      top_k: 20,
      chat_template_kwargs: { enable_thinking: false, add_vision_id: true },
    });
    expect(second?.chat_template_kwargs).toEqual({ enable_thinking: true });
  });

  it("answers the refusals a turn would meet the same way: OpenAI's reasoning model and unknown fields", async () => {
    server = await startServer({ personality: "openai", replies: [{ content: "Lisbon" }] });
    const notices: string[] = [];
    const options = { ...isolated(), onNotice: (m: string) => notices.push(m) };
    const endpoint = { baseUrl: server.baseUrl, apiKey: "sk-test" };
    await expect(ask(endpoint, "gpt-5-mini", "Name this chat.", "Lisbon trip", options)).resolves.toBe(
      "Lisbon",
    );
    const sent = bodies(server);
    const last = sent[sent.length - 1] ?? {};
    // The no-thinking hint, max_tokens and the temperature were each refused once and latched.
    expect(last).not.toHaveProperty("chat_template_kwargs");
    expect(last).not.toHaveProperty("max_tokens");
    expect(last).not.toHaveProperty("temperature");
    expect(last).toMatchObject({ max_completion_tokens: 512 });
    expect(notices.join("\n")).toMatch(/chat_template_kwargs/);
    // Learned for the model: the next side task goes out right first time.
    server.enqueue({ content: "Porto" });
    const before = server.chatRequests.length;
    await expect(ask(endpoint, "gpt-5-mini", "Name this chat.", "Porto trip", options)).resolves.toBe(
      "Porto",
    );
    expect(server.chatRequests.length).toBe(before + 1);
  });
});

describe("askReply", () => {
  it("tells a reply cut off at the ceiling from a finished one", async () => {
    server = await startServer({
      replies: [
        { content: "The page says: the quick brown", finishReason: "length" },
        { content: "The page says: hello.", finishReason: "stop" },
      ],
    });
    const endpoint = { baseUrl: server.baseUrl };
    const options = isolated();
    await expect(askReply(endpoint, "ocr", "You are an OCR engine.", "page 1", options)).resolves.toEqual({
      text: "The page says: the quick brown",
      finishReason: "length",
    });
    await expect(askReply(endpoint, "ocr", "You are an OCR engine.", "page 2", options)).resolves.toEqual({
      text: "The page says: hello.",
      finishReason: "stop",
    });
  });

  it("says undefined where the server sent no finish reason", async () => {
    server = await startServer({ replies: [{ content: "done", finishReason: null }] });
    const reply = await askReply({ baseUrl: server.baseUrl }, "m", "", "x", isolated());
    expect(reply).toEqual({ text: "done", finishReason: undefined });
  });
});

describe("an image part", () => {
  // llama.cpp without a projector, as reported in ggml-org/llama.cpp#13566 (server log line).
  const noVision = {
    type: "error" as const,
    status: 500,
    body: {
      error: { code: 500, message: "image input is not supported by this server", type: "server_error" },
    },
  };

  it("is sent as content parts to a model that takes it", async () => {
    server = await startServer({ replies: [{ content: "hello" }] });
    await ask({ baseUrl: server.baseUrl }, "vision", "You are an OCR engine.", page, isolated());
    expect(userContent(bodies(server)[0] ?? {})).toEqual(page);
  });

  it("is left out and the text retried when the model refuses it, and the model is not sent one again", async () => {
    server = await startServer({ replies: [noVision, { content: "no image seen" }, { content: "again" }] });
    const notices: string[] = [];
    const options = { ...isolated(), onNotice: (m: string) => notices.push(m) };
    const endpoint = { baseUrl: server.baseUrl };
    await expect(ask(endpoint, "text-only", "You are an OCR engine.", page, options)).resolves.toBe(
      "no image seen",
    );
    const [first, second] = bodies(server);
    expect(userContent(first ?? {})).toEqual(page);
    expect(userContent(second ?? {})).toBe(
      "Transcribe this page.\n\n[An image was attached here, but this model cannot take images.]",
    );
    expect(notices.join("\n")).toMatch(/refused the image/);
    await ask(endpoint, "text-only", "You are an OCR engine.", page, options);
    expect(server.chatRequests).toHaveLength(3);
    expect(typeof userContent(bodies(server)[2] ?? {})).toBe("string");
  });

  it("still goes to another model on the same endpoint", async () => {
    server = await startServer({ replies: [noVision, { content: "a" }, { content: "b" }] });
    const options = isolated();
    const endpoint = { baseUrl: server.baseUrl };
    await ask(endpoint, "text-only", "", page, options);
    await ask(endpoint, "vision", "", page, options);
    expect(userContent(bodies(server)[2] ?? {})).toEqual(page);
  });

  it("is not dropped for an error that is not about images", async () => {
    server = await startServer({
      replies: [
        { type: "error", status: 500, body: readFixtureJson("errors/llamacpp/503-loading-model.json") },
      ],
    });
    const error = await ask({ baseUrl: server.baseUrl }, "m", "", page, isolated()).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("request-failed");
    expect(server.chatRequests).toHaveLength(1);
  });
});

describe("bounded and abandonable", () => {
  it("gives up at its time bound with a typed error", async () => {
    // No clock: the answer comes after 30 s, so an ask that waited for it rather than giving up at
    // its bound would end at vitest's test timeout (or with the answer, not a timeout).
    server = await startServer({ replies: [{ content: "late", firstByteDelayMs: 30_000 }] });
    const error = await ask({ baseUrl: server.baseUrl }, "slow", "", "x", {
      ...isolated(),
      timeoutMs: 200,
    }).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("timeout");
  });

  it("reads requestTimeoutSeconds off the endpoint as its bound", async () => {
    server = await startServer({ replies: [{ content: "late", firstByteDelayMs: 3000 }] });
    const error = await ask(
      { baseUrl: server.baseUrl, requestTimeoutSeconds: 0.2 },
      "slow",
      "",
      "x",
      isolated(),
    ).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("timeout");
  });

  /**
   * A reply the server holds until the test lets it go, and a promise that settles once the request
   * has arrived: with the clock faked, minutes pass in an instant while the request is open.
   */
  async function heldReply(content: string) {
    let arrived!: () => void;
    let release!: () => void;
    const received = new Promise<void>((resolve) => (arrived = resolve));
    const gate = new Promise<void>((resolve) => (release = resolve));
    server = await startServer({
      replies: async () => {
        arrived();
        await gate;
        return { content };
      },
    });
    return { received, release, baseUrl: server.baseUrl };
  }

  it.each([
    ["requestTimeoutSeconds: 0 on the endpoint", { requestTimeoutSeconds: 0 }, {}],
    ["timeoutMs: 0", {}, { timeoutMs: 0 }],
  ])(
    "waits for as long as the server takes with %s (a CPU model's long summary)",
    async (_what, endpoint, options) => {
      const held = await heldReply("slow but sure");
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      const answer = ask({ baseUrl: held.baseUrl, ...endpoint }, "cpu-model", "", "Summarise.", {
        ...isolated(),
        ...options,
      }).catch((e: unknown) => e);
      await held.received;
      await vi.advanceTimersByTimeAsync(10 * 60_000);
      held.release();
      expect(await answer).toBe("slow but sure");
    },
  );

  it.each([
    ["requestTimeoutSeconds past what a timer holds", { requestTimeoutSeconds: 1e7 }, {}],
    ["timeoutMs past what a timer holds", {}, { timeoutMs: 3e9 }],
  ])("answers with %s, instead of failing at once", async (_what, endpoint, options) => {
    server = await startServer({ replies: [{ content: "in time", firstByteDelayMs: 100 }] });
    const answer = await ask({ baseUrl: server.baseUrl, ...endpoint }, "m", "", "x", {
      ...isolated(),
      ...options,
    }).catch((e: unknown) => e);
    expect(answer).toBe("in time");
  });

  it("waits for a server still loading its model, within its time bound, and says so", async () => {
    // llama.cpp answers 503 "Loading model" until the weights are mapped; a router build says the
    // same while it swaps to the side task's own model.
    server = await startServer({
      personality: { name: "llamacpp", loadingMs: 700 },
      replies: [{ content: "Paris" }],
    });
    const notices: string[] = [];
    const answer = await ask({ baseUrl: server.baseUrl }, "small", "", "Capital of France?", {
      ...isolated(),
      onNotice: (m) => notices.push(m),
    }).catch((e: unknown) => e);
    expect(answer).toBe("Paris");
    expect(notices.join("\n")).toMatch(/loading the model/);
  });

  it("gives up on a model still loading at its time bound, with a typed error", async () => {
    server = await startServer({ personality: { name: "llamacpp", loadingMs: 60_000 } });
    const error = await ask({ baseUrl: server.baseUrl }, "small", "", "x", {
      ...isolated(),
      timeoutMs: 600,
    }).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("timeout");
  });

  it("stops when the caller's signal fires", async () => {
    // The answer comes after 30 s, far past the stop however late a loaded machine runs its timer.
    server = await startServer({ replies: [{ content: "late", firstByteDelayMs: 30_000 }] });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const error = await ask({ baseUrl: server.baseUrl }, "slow", "", "x", {
      ...isolated(),
      signal: controller.signal,
    }).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("aborted");
  });
});

describe("bad arguments", () => {
  const endpoint = { baseUrl: "http://127.0.0.1:9/v1" };
  it.each([
    ["an empty model", () => ask(endpoint, "", "s", "x"), /model must be the non-empty name/],
    [
      "no endpoint",
      () => ask(undefined as never, "m", "s", "x"),
      /endpoint must be an object with a baseUrl/,
    ],
    [
      "a user turn that is a number",
      () => ask(endpoint, "m", "s", 5 as never),
      /string or an array of content parts/,
    ],
    [
      "a content part without a type",
      () => ask(endpoint, "m", "s", [{ text: "hi" }] as never),
      /content part 0 must be/,
    ],
    [
      "a negative ceiling",
      () => ask(endpoint, "m", "s", "x", { maxTokens: -1 }),
      /maxTokens must be a whole number/,
    ],
    [
      "a system prompt that is not text",
      () => ask(endpoint, "m", 3 as never, "x"),
      /system prompt must be a string/,
    ],
  ])("%s is a typed error naming it, with nothing sent", async (_what, call, message) => {
    const error = await call().catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("invalid-input");
    expect(String((error as Error).message)).toMatch(message);
  });
});

describe("options a host stored or typed wrong", () => {
  it("reads null as absent, as a nullable column comes back from JSON: the side task's own defaults and hints are sent", async () => {
    server = await startServer({ replies: [{ content: "A title" }] });
    const nulls = { maxTokens: null, temperature: null, timeoutMs: null, reasoningEffort: null };
    const answer = await ask({ baseUrl: server.baseUrl }, "small", "Name it.", "hello", {
      ...isolated(),
      ...(nulls as object),
    });
    expect(answer).toBe("A title");
    const [body] = bodies(server);
    expect(body).toMatchObject({
      max_tokens: 512,
      temperature: 0.3,
      chat_template_kwargs: { enable_thinking: false },
    });
    expect(body).not.toHaveProperty("reasoning_effort");
  });

  it("reads null as absent in every other option too: extraBody, signal, onNotice, capabilities, clients", async () => {
    server = await startServer({ replies: [{ content: "A title" }] });
    const row = {
      maxTokens: null,
      temperature: null,
      reasoningEffort: null,
      timeoutMs: null,
      extraBody: null,
      signal: null,
      onNotice: null,
      capabilities: null,
      clients: null,
    };
    await expect(ask({ baseUrl: server.baseUrl }, "small", "Name it.", "hello", row)).resolves.toBe(
      "A title",
    );
    const [body] = bodies(server);
    expect(body).toMatchObject({ max_tokens: 512, chat_template_kwargs: { enable_thinking: false } });
    expect(server.chatRequests).toHaveLength(1);
  });

  it.each([
    ["a reasoningEffort that is a number", { reasoningEffort: 5 }, /reasoningEffort must be a string/],
    [
      "a reasoningEffort that is an object",
      { reasoningEffort: { level: "high" } },
      /reasoningEffort must be a string/,
    ],
    ["a fractional ceiling", { maxTokens: 2.5 }, /maxTokens must be a whole number of 0 or more/],
    ["a ceiling past a safe integer", { maxTokens: 1e21 }, /maxTokens must be a whole number of 0 or more/],
    [
      "a signal-like object with no removeEventListener",
      { signal: { aborted: false, addEventListener() {} } },
      /signal must be an AbortSignal/,
    ],
  ])("%s is refused as invalid-input, naming it, with nothing sent", async (_what, bad, message) => {
    server = await startServer({ replies: [{ content: "A title" }] });
    const error = await ask({ baseUrl: server.baseUrl }, "small", "Name it.", "hello", {
      ...isolated(),
      ...(bad as object),
    }).catch((e: unknown) => e);
    expect(SideTaskError.isInstance(error) && error.code).toBe("invalid-input");
    expect(String((error as Error).message)).toMatch(message);
    expect(server.chatRequests).toHaveLength(0);
  });
});
