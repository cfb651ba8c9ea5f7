/**
 * Review r81e: the openai personality let through what api.openai.com refuses — `max_tokens: 0`
 * (or below), `stream: "true"` (a string), a message content string over OpenAI's length limit —
 * so a test against it passed where the real endpoint answers 400. Each is now refused with the
 * recorded body (recordings/errors/openai, provenance in its README), adjusted to the request.
 */
import { afterEach, describe, expect, it } from "vitest";
import { readFixture } from "./fixtures.js";
import { startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Status and parsed body of a raw POST to the openai personality's chat completions. */
async function post(body: Record<string, unknown>, options: { maxContentLength?: number } = {}) {
  server ??= await startServer({
    replies: () => ({ content: "ok" }),
    personality: { name: "openai", ...options },
  });
  const response = await fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }], ...body }),
  });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as Record<string, unknown> };
}

const recorded = (rel: string) => (JSON.parse(readFixture(rel)) as { error: Record<string, unknown> }).error;

describe("openai personality: types and ranges OpenAI refuses (r81e #4)", () => {
  it.each([
    ["max_tokens", 0],
    ["max_tokens", -5],
    ["max_completion_tokens", 0],
  ])("%s: %d is refused as integer_below_min_value", async (param, value) => {
    const { status, body } = await post({ [param]: value });
    expect(status).toBe(400);
    const shape = recorded("errors/openai/400-max-tokens-integer-below-min-value.json");
    expect(body).toEqual({
      error: {
        ...shape,
        param,
        message: `Invalid '${param}': integer below minimum value. Expected a value >= 1, but got ${value} instead.`,
      },
    });
  });

  it.each([
    ["true", "'true' is not of type 'boolean' - 'stream'"],
    ["false", "'false' is not of type 'boolean' - 'stream'"],
    [1, "1 is not of type 'boolean' - 'stream'"],
    [{}, "{} is not of type 'boolean' - 'stream'"],
  ])("stream: %j is refused as not a boolean", async (stream, message) => {
    const { status, body } = await post({ stream });
    expect(status).toBe(400);
    expect(body).toEqual({
      error: { ...recorded("errors/openai/400-stream-not-of-type-boolean.json"), message },
    });
  });

  it("a message content over the limit is refused as string_above_max_length, naming the message", async () => {
    const { status, body } = await post(
      {
        messages: [
          { role: "system", content: "s" },
          { role: "user", content: "é".repeat(65) },
        ],
      },
      { maxContentLength: 64 },
    );
    expect(status).toBe(400);
    expect(body).toEqual({
      error: {
        ...recorded("errors/openai/400-input-content-string-above-max-length-responses.json"),
        param: "messages[1].content",
        message:
          "Invalid 'messages[1].content': string too long. Expected a string with maximum length 64, but got a string with length 65 instead.",
      },
    });
  });

  it("the default limit is the recorded 10485760 characters", async () => {
    const { status, body } = await post({ messages: [{ role: "user", content: "x".repeat(10_485_761) }] });
    expect(status).toBe(400);
    expect((body.error as { message: string }).message).toContain(
      "maximum length 10485760, but got a string with length 10485761",
    );
  });

  it("what OpenAI takes still goes through: max_tokens 1, stream false, null, content at the limit", async () => {
    for (const body of [
      { max_tokens: 1 },
      { max_completion_tokens: 1 },
      { stream: false },
      { stream: null },
      { messages: [{ role: "user", content: "x".repeat(10_485_760) }] },
    ]) {
      const { status } = await post(body);
      expect(status, JSON.stringify(body).slice(0, 60)).toBe(200);
    }
  });
});
