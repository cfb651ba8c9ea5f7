import { describe, expect, it } from "vitest";
import { StreamError } from "./errors.js";
import { streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";
import type { Turn } from "./turn.js";

// SSE as servers write it, sent byte for byte by the testkit and read through the real openai
// client. The SDK's decoder (openai/src/core/streaming.ts) decides what reaches streamTurn: it
// drops comment lines and unknown fields, joins several `data:` lines of one event with "\n",
// accepts `data:` with or without the space, CRLF / CR / LF line ends, ignores everything after
// `[DONE]`, and throws for any event whose JSON has a truthy `error` member.

const chunk = (
  delta: Record<string, unknown>,
  finish: string | null = null,
  extra: Record<string, unknown> = {},
) =>
  JSON.stringify({
    id: "c1",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  });

const USAGE = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 };

/** The reference stream every dialect below encodes: "Hello, world" then stop with usage. */
const EXPECTED: Turn = {
  content: "Hello, world",
  toolCalls: [],
  usage: { prompt: 7, completion: 3, total: 10, cached: 0 },
  finishReason: "stop",
  reasoning: "",
};

async function read(chunks: string[]) {
  const { client } = await harness([{ type: "raw", chunks }]);
  return streamTurn(client, body());
}

async function failure(chunks: string[]): Promise<StreamError> {
  const { client } = await harness([{ type: "raw", chunks }]);
  try {
    await streamTurn(client, body());
  } catch (error) {
    expect(StreamError.isInstance(error)).toBe(true);
    return error as StreamError;
  }
  throw new Error("expected streamTurn to reject");
}

describe("SSE dialects read back the same turn", () => {
  const frames = [
    chunk({ role: "assistant", content: "" }),
    chunk({ content: "Hello," }),
    chunk({ content: " world" }),
    chunk({}, "stop", { usage: USAGE }),
  ];

  it("reads CRLF line endings", async () => {
    expect(await read([`${frames.map((f) => `data: ${f}\r\n\r\n`).join("")}data: [DONE]\r\n\r\n`])).toEqual(
      EXPECTED,
    );
  });

  it("reads bare-CR line endings", async () => {
    expect(await read([`${frames.map((f) => `data: ${f}\r\r`).join("")}data: [DONE]\r\r`])).toEqual(EXPECTED);
  });

  it("reads `data:` without the space after the colon", async () => {
    expect(await read([`${frames.map((f) => `data:${f}\n\n`).join("")}data:[DONE]\n\n`])).toEqual(EXPECTED);
  });

  it("reads one event whose JSON is spread over several data: lines", async () => {
    const pretty = (f: string) =>
      JSON.stringify(JSON.parse(f), null, 2)
        .split("\n")
        .map((line) => `data: ${line}`)
        .join("\n");
    expect(await read([`${frames.map((f) => `${pretty(f)}\n\n`).join("")}data: [DONE]\n\n`])).toEqual(
      EXPECTED,
    );
  });

  it("skips heartbeats: comment frames, event: ping, an id: field and a null data frame", async () => {
    // ": OPENROUTER PROCESSING" (fixture wire/openrouter/minimax-…); a bare ":" ping every 30 s from
    // llama.cpp b9478 (ollama/ollama#16443); Anthropic-style `event: ping`.
    const text = [
      ": OPENROUTER PROCESSING\n\n",
      `id: 1\ndata: ${frames[0]}\n\n`,
      ":\n\n",
      'event: ping\ndata: {"type": "ping"}\n\n',
      `data: ${frames[1]}\n\n`,
      "data: null\n\n",
      `: keep-alive\ndata: ${frames[2]}\n\n`,
      `data: ${frames[3]}\n\n`,
      "data: [DONE]\n\n",
    ];
    expect(await read(text)).toEqual(EXPECTED);
  });

  it("reads a stream without [DONE] whose last chunk holds the finish reason and usage", async () => {
    expect(await read([frames.map((f) => `data: ${f}\n\n`).join("")])).toEqual(EXPECTED);
  });

  it("reads the last chunk when the body ends without the blank line after it (and without [DONE])", async () => {
    const text = `${frames
      .slice(0, 3)
      .map((f) => `data: ${f}\n\n`)
      .join("")}data: ${frames[3]}`;
    expect(await read([text])).toEqual(EXPECTED);
  });

  it("skips an `event:` line that comes with no data line, as the event-stream format says", async () => {
    const text = [
      `data: ${frames[0]}\n\n`,
      "event: ping\n\n",
      `data: ${frames[1]}\n\n`,
      `data: ${frames[2]}\n\n`,
      `data: ${frames[3]}\n\n`,
      "data: [DONE]\n\n",
    ];
    expect(await read(text)).toEqual(EXPECTED);
  });

  it("reads one text/event-stream event of two million characters, written 16 KiB at a time, whole", async () => {
    const content = "y".repeat(2_000_000);
    const event = `data: ${chunk({ content }, "stop")}\n\n`;
    const pieces: string[] = [];
    for (let at = 0; at < event.length; at += 16_384) pieces.push(event.slice(at, at + 16_384));
    const turn = await read([...pieces, "data: [DONE]\n\n"]);
    expect(turn.content).toBe(content);
    expect(turn.finishReason).toBe("stop");
  });

  it("ignores anything a server sends after [DONE]", async () => {
    const text =
      frames.map((f) => `data: ${f}\n\n`).join("") +
      "data: [DONE]\n\n" +
      `data: ${chunk({ content: "!!" })}\n\n`;
    expect(await read([text])).toEqual(EXPECTED);
  });

  it("reads a tool call whole in one delta, role repeated on every delta, finish_reason stop", async () => {
    // Gemini's endpoint finishes tool-call turns with "stop" (open-webui/computer#224); the reason is
    // kept as sent, the call is read all the same.
    const turn = await read([
      `data: ${chunk({ role: "assistant", content: "", tool_calls: [{ id: "call_x1", index: 0, type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }] })}\n\n`,
      `data: ${chunk({ role: "assistant", content: "" }, "stop")}\n\n`,
      `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [], usage: USAGE })}\n\n`,
      "data: [DONE]\n\n",
    ]);
    expect(turn.toolCalls).toEqual([
      { id: "call_x1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
    ]);
    expect(turn.finishReason).toBe("stop");
  });
});

describe("errors servers put in the stream", () => {
  const opening = `data: ${chunk({ role: "assistant", content: "" })}\n\ndata: ${chunk({ content: "Partial" })}\n\n`;

  it("rejects with server-error for `event: error` carrying an OpenAI-style error body", async () => {
    const error = await failure([
      opening,
      'event: error\ndata: {"error":{"message":"The server had an error while processing your request.","type":"server_error"}}\n\n',
    ]);
    expect(error).toMatchObject({ code: "server-error", produced: true, partial: { content: "Partial" } });
    expect(error.message).toContain("The server had an error while processing your request.");
  });

  it("rejects with server-error for `event: error` whose data has no error member", async () => {
    // The SDK yields such data as a chunk; a message with a type or code and no choices is an error.
    const error = await failure([
      opening,
      'event: error\ndata: {"message":"Overloaded","type":"overloaded_error"}\n\n',
    ]);
    expect(error).toMatchObject({ code: "server-error", serverError: { message: "Overloaded" } });
    expect(error.message).toContain("Overloaded");
  });

  it("rejects with server-error quoting the text for `event: error` whose data is not JSON", async () => {
    // A proxy or gateway in front of the server names the event and writes its complaint as plain text.
    const error = await failure([opening, "event: error\ndata: upstream request timed out\n\n"]);
    expect(error).toMatchObject({
      code: "server-error",
      serverError: "upstream request timed out",
      partial: { content: "Partial" },
    });
    expect(error.message).toContain("upstream request timed out");
  });

  it("rejects with server-error for `event: error` whose JSON is of no known error shape", async () => {
    // Before, such data was read as a chunk of no known shape and skipped: the turn ended as if fine.
    const error = await failure([
      opening,
      'event: error\ndata: {"detail":"Rate limit reached for requests"}\n\n',
      "data: [DONE]\n\n",
    ]);
    expect(error).toMatchObject({
      code: "server-error",
      serverError: { detail: "Rate limit reached for requests" },
    });
    expect(error.message).toContain("Rate limit reached for requests");
  });

  it("rejects with server-error for vLLM's bare error object sent as a data frame", async () => {
    // vLLM's ErrorResponse shape with no {"error": …} wrapper (fixtures errors/vllm/*-legacy-top-level*).
    const body = {
      object: "error",
      message: "This model's maximum context length is 4096 tokens.",
      type: "BadRequestError",
      param: null,
      code: 400,
    };
    const error = await failure([opening, `data: ${JSON.stringify(body)}\n\n`, "data: [DONE]\n\n"]);
    expect(error).toMatchObject({ code: "server-error", serverError: body, partial: { content: "Partial" } });
    expect(error.message).toContain("maximum context length is 4096 tokens");
  });

  it("rejects with server-error for TGI's string error frame, quoting it", async () => {
    // TGI: data: {"error":"…","error_type":"…"} (error is a string, not an object).
    const error = await failure([
      opening,
      'data: {"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 500 `max_new_tokens`","error_type":"validation"}\n\n',
    ]);
    expect(error.code).toBe("server-error");
    expect(error.message).toContain("must be <= 4096");
  });

  it("rejects with malformed-chunk for an empty data: frame, keeping what came before", async () => {
    // coddy-project/coddy-agent#106: empty `data:` frames kill an SDK's JSON decoding.
    const error = await failure([opening, "data:\n\n", `data: ${chunk({}, "stop")}\n\n`]);
    expect(error).toMatchObject({ code: "malformed-chunk", partial: { content: "Partial" } });
  });

  it("rejects with malformed-chunk when a server separates events with one newline instead of a blank line", async () => {
    // The SDK joins consecutive data: lines of one event with "\n", so two chunks become one text
    // that is not JSON; the turn so far is kept.
    const error = await failure([
      `data: ${chunk({ content: "One" })}\n\n`,
      `data: ${chunk({ content: " two" })}\ndata: ${chunk({ content: " three" })}\n\n`,
    ]);
    expect(error).toMatchObject({ code: "malformed-chunk", partial: { content: "One" } });
  });

  it("rejects with server-error for old llama.cpp's `error:` line, quoting the server's message", async () => {
    // llama.cpp until ggml-org/llama.cpp#16109 (Sept 2025) wrote a mid-stream error as `error: {…}`,
    // a field no SSE reader takes as data. Read as the format says, it was dropped and the turn came
    // back empty with finishReason "" — an unfinished answer that looked like a quiet one.
    const error = await failure([
      `data: ${chunk({ role: "assistant", content: null })}\n\n`,
      'error: {"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"invalid_request_error"}\n\n',
      "data: [DONE]\n\n",
    ]);
    expect(error).toMatchObject({
      code: "server-error",
      produced: false,
      serverError: {
        code: 400,
        message:
          "the request exceeds the available context size. try increasing the context size or enable context shift",
        type: "invalid_request_error",
      },
      partial: { content: "", finishReason: "" },
    });
    expect(error.message).toContain("exceeds the available context size");
  });

  it("rejects with server-error for an `error:` line that is the first thing in the body", async () => {
    const error = await failure([
      'error: {"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"invalid_request_error"}\n\n',
    ]);
    expect(error).toMatchObject({ code: "server-error", produced: false, partial: { content: "" } });
    expect(error.message).toContain("exceeds the available context size");
  });

  it("rejects with server-error for an `error:` line after text, keeping the text as partial", async () => {
    const error = await failure([
      opening,
      'error: {"code":500,"message":"failed to parse tool call arguments","type":"server_error"}\n\n',
    ]);
    expect(error).toMatchObject({ code: "server-error", produced: true, partial: { content: "Partial" } });
    expect(error.message).toContain("failed to parse tool call arguments");
  });
});
