import { readFileSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fixturesDir } from "./fixtures.js";
import { startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function client(s: TestServer): OpenAI {
  return new OpenAI({ baseURL: s.baseUrl, apiKey: "k", maxRetries: 0 });
}

const streamed = {
  model: "sim",
  messages: [{ role: "user" as const, content: "hi" }],
  stream: true as const,
};

/** Resolves with "pending" when `promise` has not settled after `ms`. */
async function stillPendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const marker = Symbol("pending");
  const winner = await Promise.race([
    promise.then(
      () => "settled",
      () => "settled",
    ),
    new Promise((resolve) => setTimeout(() => resolve(marker), ms)),
  ]);
  return winner === marker;
}

async function postRaw(s: TestServer): Promise<Response> {
  return fetch(`${s.baseUrl}/chat/completions`, { method: "POST", body: JSON.stringify(streamed) });
}

describe("HTTP errors", () => {
  it("answers with the scripted status and JSON body, which the openai client raises", async () => {
    const body = { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } };
    server = await startServer({
      replies: [{ type: "error", status: 429, body, headers: { "retry-after": "7" } }],
    });
    const error = (await client(server)
      .chat.completions.create(streamed)
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.status).toBe(429);
    expect(error.error).toEqual(body.error);
    expect(error.headers?.get("retry-after")).toBe("7");
  });

  it("sends a string body verbatim as text", async () => {
    server = await startServer({
      replies: [{ type: "error", status: 502, body: "<html>Bad gateway</html>" }],
    });
    const res = await postRaw(server);
    expect(res.status).toBe(502);
    expect(await res.text()).toBe("<html>Bad gateway</html>");
  });
});

describe("timing and connection faults", () => {
  it("waits the first-byte delay before sending headers", async () => {
    server = await startServer({ replies: [{ content: "late", firstByteDelayMs: 150 }] });
    const started = Date.now();
    const res = await postRaw(server);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(res.status).toBe(200);
  });

  it("pauses mid-stream after the given chunk, then finishes", async () => {
    server = await startServer({
      replies: [{ content: "abcdef", chunkChars: 2, pause: { afterChunk: 2, ms: 150 } }],
    });
    const started = Date.now();
    const stream = await client(server).chat.completions.create(streamed);
    const arrivals: number[] = [];
    const text: string[] = [];
    for await (const chunk of stream) {
      arrivals.push(Date.now());
      text.push(chunk.choices[0]?.delta.content ?? "");
    }
    expect(text.join("")).toBe("abcdef");
    // Chunk 3 is written only after the 150 ms pause, so it cannot arrive sooner (a busy machine
    // may deliver chunk 2 late, so the gap between the two is no measure).
    expect(arrivals[2]! - started).toBeGreaterThanOrEqual(145);
  });

  it("goes silent after the given chunk: the client keeps waiting until close() ends the stream", async () => {
    server = await startServer({ replies: [{ content: "abcdef", chunkChars: 2, silentAfterChunk: 2 }] });
    const stream = await client(server).chat.completions.create(streamed);
    const seen: string[] = [];
    const reading = (async () => {
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? "");
    })();
    await vi.waitFor(() => expect(seen.join("")).toBe("ab"));
    expect(await stillPendingAfter(reading, 300)).toBe(true);
    expect(seen.join("")).toBe("ab");
    await server.close();
    await expect(reading).rejects.toThrow();
  });

  it("never answers a silent non-streamed request until close()", async () => {
    server = await startServer({ replies: [{ content: "x", silentAfterChunk: 0 }] });
    const call = client(server).chat.completions.create({ ...streamed, stream: false });
    expect(await stillPendingAfter(call, 250)).toBe(true);
    await server.close();
    await expect(call).rejects.toThrow();
  });

  it("drops the connection after the given chunk, which the client sees as an error", async () => {
    server = await startServer({ replies: [{ content: "abcdef", chunkChars: 2, dropAfterChunk: 3 }] });
    const stream = await client(server).chat.completions.create(streamed);
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? "");
      })(),
    ).rejects.toThrow();
    expect(seen.join("")).toBe("abcd");
  });

  it("drops a non-streamed request without any response", async () => {
    server = await startServer({ replies: [{ content: "x", dropAfterChunk: 0 }] });
    await expect(client(server).chat.completions.create({ ...streamed, stream: false })).rejects.toThrow(
      OpenAI.APIConnectionError,
    );
  });

  it("spaces chunks by chunkDelayMs", async () => {
    server = await startServer({
      replies: [{ content: "abc", chunkChars: 1, chunkDelayMs: 60, roleChunk: false }],
    });
    const started = Date.now();
    const res = await postRaw(server);
    await res.text();
    // 3 content chunks, finish, usage, [DONE]: five gaps
    expect(Date.now() - started).toBeGreaterThanOrEqual(5 * 55);
  });
});

describe("replay and raw", () => {
  const recorded = [
    "wire/openai/gpt-4o-parallel-tool-calls-usage-chunk.sse",
    "wire/openrouter/minimax-m2-length-then-instream-error.sse",
    "wire/together/deepseek-r1-think-tags-in-content-via-hf-router.sse",
    "wire/mistral/zai-glm-5-2-incremental-tool-call.sse",
  ];

  it.each(recorded)("replays %s byte for byte", async (fixture) => {
    server = await startServer({ replies: [{ type: "replay", fixture }] });
    const res = await postRaw(server);
    const received = Buffer.from(await res.arrayBuffer());
    expect(received.equals(readFileSync(join(fixturesDir(), fixture)))).toBe(true);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
  });

  it("replays byte for byte even when delayed frame by frame", async () => {
    const fixture = "wire/groq/llama-3.3-70b-tool-call-single-delta.sse";
    server = await startServer({ replies: [{ type: "replay", fixture, chunkDelayMs: 5 }] });
    const received = Buffer.from(await (await postRaw(server)).arrayBuffer());
    expect(received.equals(readFileSync(join(fixturesDir(), fixture)))).toBe(true);
  });

  it("the openai client reads a replayed OpenAI stream into its two parallel tool calls", async () => {
    server = await startServer({
      replies: [{ type: "replay", fixture: "wire/openai/gpt-4o-parallel-tool-calls-usage-chunk.sse" }],
    });
    const final = await client(server)
      .chat.completions.stream({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] })
      .finalChatCompletion();
    expect(final.choices[0]?.message.tool_calls).toHaveLength(2);
  });

  it("replays a llama.cpp curl capture with its status, content type and exact body", async () => {
    const fixture = "llamacpp-live/12-tools-required-stream.response.txt";
    server = await startServer({ replies: [{ type: "replay", fixture }] });
    const res = await postRaw(server);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const received = Buffer.from(await res.arrayBuffer());
    const file = readFileSync(join(fixturesDir(), fixture));
    expect(file.subarray(file.length - received.length).equals(received)).toBe(true);
    expect(received.toString().startsWith("data: ")).toBe(true);
  });

  it("the openai client reads the tool call out of a replayed live llama.cpp stream", async () => {
    server = await startServer({
      replies: [
        { type: "replay", fixture: "llamacpp-live/12-tools-required-stream.response.txt", chunkDelayMs: 1 },
      ],
    });
    const final = await client(server)
      .chat.completions.stream({ model: "tiny", messages: [{ role: "user", content: "x" }] })
      .finalChatCompletion();
    expect(final.choices[0]?.message.tool_calls).toHaveLength(1);
    expect(final.choices[0]?.finish_reason).toBe("tool_calls");
  });

  it("replays a captured error response as that error", async () => {
    server = await startServer({
      replies: [{ type: "replay", fixture: "llamacpp-live/19-overflow-stream.response.txt" }],
    });
    const error = (await client(server)
      .chat.completions.create(streamed)
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error.status).toBe(400);
    expect(error.type).toBe("exceed_context_size_error");
  });

  it("answers a missing replay fixture with a 500 naming it", async () => {
    server = await startServer({ replies: [{ type: "replay", fixture: "wire/nope.sse" }] });
    const res = await postRaw(server);
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/wire\/nope\.sse/);
  });

  it("writes raw chunks exactly, with the given status and headers", async () => {
    server = await startServer({
      replies: [
        {
          type: "raw",
          status: 201,
          headers: { "content-type": "text/plain" },
          chunks: ["a", new Uint8Array([98]), "c"],
        },
      ],
    });
    const res = await postRaw(server);
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toBe("text/plain");
    expect(await res.text()).toBe("abc");
  });
});
