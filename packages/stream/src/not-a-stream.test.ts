import { startServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterEach, describe, expect, it, vi } from "vitest";
import { StreamError } from "./errors.js";
import { streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";

async function rejection(promise: Promise<unknown>): Promise<StreamError> {
  try {
    await promise;
  } catch (error) {
    return error as StreamError;
  }
  throw new Error("expected the promise to reject");
}

const HTML = `<!doctype html><html><head><title>Sign in to Guest Wi-Fi</title><style>p{}</style></head>
<body><h1>Welcome</h1><p>Please accept the terms to continue.</p></body></html>`;

describe("a 200 reply that is not a stream is an error naming what came back", () => {
  it("an HTML login page", async () => {
    const { client } = await harness([
      { type: "raw", headers: { "content-type": "text/html; charset=utf-8" }, chunks: [HTML] },
    ]);
    const error = await rejection(streamTurn(client, body()));
    expect(StreamError.isInstance(error)).toBe(true);
    expect(error.code).toBe("not-a-stream");
    expect(error.message).toContain("200");
    expect(error.message).toContain("HTML page");
    expect(error.message).toContain("Sign in to Guest Wi-Fi");
    expect(error.message).toContain("text/html");
    expect(error.message).toContain("Please accept the terms");
  });

  it("broken JSON", async () => {
    const { client } = await harness([
      { type: "raw", headers: { "content-type": "application/json" }, chunks: ['{"id": "x", "choices": [{'] },
    ]);
    const error = await rejection(streamTurn(client, body()));
    expect(error.code).toBe("not-a-stream");
    expect(error.message).toContain("neither a stream nor JSON");
    expect(error.message).toContain('{\\"id\\": \\"x\\"');
  });

  it("an empty body, with or without the stream content type", async () => {
    const { client } = await harness([
      { type: "raw", headers: { "content-type": "application/json" }, chunks: [] },
      { type: "raw", chunks: [] },
      { type: "raw", chunks: ["data: [DONE]\n\n"] },
    ]);
    for (let i = 0; i < 3; i++) {
      const error = await rejection(streamTurn(client, body()));
      expect(error.code).toBe("not-a-stream");
      expect(error.message).toMatch(/empty body|no chunks/);
    }
  });

  it("reads a whole completion from a server that ignored stream: true as the turn", async () => {
    const completion = {
      id: "chatcmpl-1",
      object: "chat.completion",
      model: "sim",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: "Paris.",
            tool_calls: [
              { id: "call_1", type: "function", function: { name: "look", arguments: '{"q":1}' } },
            ],
          },
          finish_reason: "tool_calls",
        },
      ],
      usage: { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 },
    };
    const { client } = await harness([
      { type: "raw", headers: { "content-type": "application/json" }, chunks: [JSON.stringify(completion)] },
    ]);
    const seen: string[] = [];
    const turn = await streamTurn(client, body(), { onOutput: (t) => seen.push(t) });
    expect(turn.content).toBe("Paris.");
    expect(seen.join("")).toBe("Paris.");
    expect(turn.finishReason).toBe("tool_calls");
    expect(turn.toolCalls).toEqual([
      { id: "call_1", type: "function", function: { name: "look", arguments: '{"q":1}' } },
    ]);
    expect(turn.usage).toMatchObject({ prompt: 9, completion: 3, total: 12 });
  });

  it("reads server-sent events under the wrong content type as the stream they are", async () => {
    const chunk = (content: string) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/plain" },
        chunks: [
          chunk("Hel"),
          chunk("lo"),
          'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
        ],
        chunkDelayMs: 5,
      },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn.content).toBe("Hello");
    expect(turn.finishReason).toBe("stop");
  });

  it("reads them when blank space leads the body and events and blank lines are cut across writes", async () => {
    const event = (content: string) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}`;
    const long = "x".repeat(50_000);
    const first = event(long);
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "text/plain" },
        chunks: [
          "\n",
          "  \r\n",
          first.slice(0, 10),
          first.slice(10, 30_000),
          `${first.slice(30_000)}\r`,
          "\n\r",
          `\n${event(" and more")}\n`,
          '\ndata: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n',
        ],
        chunkDelayMs: 5,
      },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn.content).toBe(`${long} and more`);
    expect(turn.finishReason).toBe("stop");
  });

  it("a 200 whose JSON body is an error is the server's error", async () => {
    const { client } = await harness([
      {
        type: "raw",
        headers: { "content-type": "application/json" },
        chunks: [JSON.stringify({ error: { message: "upstream quota exhausted", type: "quota" } })],
      },
    ]);
    const error = await rejection(streamTurn(client, body()));
    expect(error.code).toBe("server-error");
    expect(error.message).toContain("upstream quota exhausted");
  });

  it("reads a JSON error, an HTML page or a whole completion sent under the stream content type for what it is", async () => {
    // A proxy that sets text/event-stream on whatever it answers: read as events, the body was no
    // event at all, and the error said only that the stream had no chunks.
    const { client } = await harness([
      {
        type: "raw",
        chunks: [
          JSON.stringify({
            error: { message: "The model `x` does not exist", type: "invalid_request_error" },
          }),
        ],
      },
      { type: "raw", chunks: [HTML] },
      {
        type: "raw",
        chunks: [
          JSON.stringify({
            id: "chatcmpl-2",
            object: "chat.completion",
            choices: [{ index: 0, message: { role: "assistant", content: "Whole." }, finish_reason: "stop" }],
          }),
        ],
      },
    ]);
    const error = await rejection(streamTurn(client, body()));
    expect(error.code).toBe("server-error");
    expect(error.message).toContain("The model `x` does not exist");
    const page = await rejection(streamTurn(client, body()));
    expect(page.code).toBe("not-a-stream");
    expect(page.message).toContain("Sign in to Guest Wi-Fi");
    expect(page.message).toContain("text/event-stream");
    expect(await streamTurn(client, body())).toMatchObject({ content: "Whole.", finishReason: "stop" });
  });
});

describe("one host signal shared by many concurrent turns", () => {
  const servers: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  it("carries one abort listener, prints no MaxListenersExceededWarning, and still stops every turn", async () => {
    const server = await startServer({ replies: () => ({ content: "slow", silentAfterChunk: 1 }) });
    servers.push(server);
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0, logLevel: "off" });
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    const host = new AbortController();
    const added = vi.spyOn(host.signal, "addEventListener");
    try {
      const turns = Array.from({ length: 25 }, () =>
        streamTurn(client, body(), { signal: host.signal }).catch((e: unknown) => e),
      );
      await vi.waitFor(() => expect(server.chatRequests).toHaveLength(25), { timeout: 15_000 });
      expect(added).toHaveBeenCalledTimes(1);
      host.abort(new Error("host stopped"));
      const outcomes = await Promise.all(turns);
      for (const outcome of outcomes) expect((outcome as Error).message).toBe("host stopped");
      await new Promise((r) => setTimeout(r, 20));
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("takes the one listener off once the last turn on the signal ends", async () => {
    const { client } = await harness([{ content: "a" }, { content: "b" }]);
    const host = new AbortController();
    const removed = vi.spyOn(host.signal, "removeEventListener");
    await Promise.all([
      streamTurn(client, body(), { signal: host.signal }),
      streamTurn(client, body(), { signal: host.signal }),
    ]);
    expect(removed).toHaveBeenCalledTimes(1);
  });
});
