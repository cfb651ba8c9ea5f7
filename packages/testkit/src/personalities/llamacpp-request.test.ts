import { afterEach, describe, expect, it } from "vitest";
import { readFixture, readRecordedResponse } from "../fixtures.js";
import { startServer, type TestServer } from "../server.js";
import { LLAMACPP_FIXTURES, llamacppPersonality } from "./llamacpp.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function post(body: unknown): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(`${server?.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), type: res.headers.get("content-type") };
}

/** A server with the llamacpp personality whose script would answer anything it lets through. */
async function llama(options: Parameters<typeof llamacppPersonality>[0] = {}): Promise<TestServer> {
  server = await startServer({
    personality: llamacppPersonality(options),
    replies: () => ({ content: "hi" }),
  });
  return server;
}

const user = [{ role: "user", content: "Say hello." }];
const image = { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } };
const tool = { type: "function", function: { name: "f", parameters: { type: "object" } } };

/** The message of a JSON error answer. */
const message = (text: string): string => (JSON.parse(text) as { error: { message: string } }).error.message;

describe("llamacpp personality: ill-formed requests", () => {
  const captures = [
    "40-messages-missing",
    "41-messages-not-array",
    "42-content-not-string",
    "43-message-without-content",
    "44-assistant-without-content",
    "45-tools-not-array",
    "46-tool-choice-invalid",
    "47-continue-final-message-alone",
    "48-stream-not-boolean",
    "49-content-part-type-unknown",
  ];
  it.each(captures)(
    "answers the request of capture %s with the status, body and content type b9749 sent",
    async (name) => {
      await llama();
      const recorded = readRecordedResponse(`llamacpp-live/${name}.response.txt`);
      const answer = await post(readFixture(`llamacpp-live/${name}.request.json`));
      expect(answer.status).toBe(recorded.status);
      expect(answer.text).toBe(recorded.body);
      expect(answer.type).toBe(recorded.headers["content-type"]);
      expect(LLAMACPP_FIXTURES).toContain(`llamacpp-live/${name}.response.txt`);
    },
  );

  it("refuses a body that is JSON but not an object for its missing messages, and one that is not JSON with the parse error", async () => {
    await llama();
    const missing = readRecordedResponse("llamacpp-live/40-messages-missing.response.txt").body;
    for (const body of ["[1,2]", '"s"', "null", "5", "{}"]) {
      expect(await post(body)).toMatchObject({ status: 400, text: missing });
    }
    const truncated = readRecordedResponse("llamacpp-live/24-invalid-json-body.response.txt").body;
    expect(await post('{"messages":')).toMatchObject({ status: 500, text: truncated });
  });

  it("names the message without a role, the role's type, and a text part without text, as the template's 500", async () => {
    await llama();
    const missing = await post({ messages: [{ content: "x", name: "bob" }] });
    expect(missing.status).toBe(500);
    expect(message(missing.text)).toBe(
      `Failed to parse messages: Missing 'role' in message: {"content":"x","name":"bob"}`,
    );
    // The recorded body, word for word, for the request it was recorded with.
    const recorded = readFixture("errors/llamacpp/failed-to-parse-messages-500-b9749.json");
    expect((await post({ model: "tiny", max_tokens: 3, messages: [{ content: "x" }] })).text).toBe(recorded);
    expect(message((await post({ messages: [{ role: null, content: "x" }] })).text)).toBe(
      "Failed to parse messages: [json.exception.type_error.302] type must be string, but is null",
    );
    expect(message((await post({ messages: [{ role: 5, content: "x" }] })).text)).toMatch(/but is number$/);
    expect(message((await post({ messages: [{ role: "user", content: [{ type: "text" }] }] })).text)).toBe(
      "Failed to parse messages: [json.exception.out_of_range.403] key 'text' not found",
    );
  });

  it("refuses an image or audio part without mmproj, with the recorded 500, and takes them with it", async () => {
    await llama();
    const recorded = readFixture("errors/llamacpp/image-input-not-supported-no-mmproj-500-b9749.json");
    expect(
      await post({ messages: [{ role: "user", content: [{ type: "text", text: "x" }, image] }] }),
    ).toMatchObject({ status: 500, text: recorded });
    const audio = await post({
      messages: [
        { role: "user", content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] },
      ],
    });
    expect(audio.status).toBe(500);
    expect(message(audio.text)).toMatch(/^audio input is not supported - hint: /);
    await server?.close();
    await llama({ mmproj: true });
    expect((await post({ messages: [{ role: "user", content: [image] }] })).status).toBe(200);
  });

  it("writes the tools it refuses as llama-server does: once on a line, then indented", async () => {
    await llama();
    const answer = await post({ messages: user, tools: { a: [1, "b"], c: null } });
    expect(answer.status).toBe(500);
    expect(message(answer.text)).toBe(
      `Failed to parse tools: Expected 'tools' to be an array, got {"a":[1,"b"],"c":null}; tools = {\n  "a": [\n    1,\n    "b"\n  ],\n  "c": null\n}`,
    );
    expect(message((await post({ messages: user, tools: "f" })).text)).toBe(
      `Failed to parse tools: Expected 'tools' to be an array, got "f"; tools = "f"`,
    );
  });

  it("names the tool_choice and the stream's type it refuses", async () => {
    await llama();
    expect(message((await post({ messages: user, tool_choice: "AUTO" })).text)).toBe(
      "Invalid tool_choice: AUTO",
    );
    expect(message((await post({ messages: user, stream: 1 })).text)).toBe(
      "Field 'stream': [json.exception.type_error.302] type must be boolean, but is number",
    );
  });

  // Each pair found by sending the live b9749 server a request wrong in both ways.
  it("refuses a request wrong in two ways for the one b9749 checks first", async () => {
    await llama();
    const badPattern = {
      type: "json_schema",
      json_schema: { name: "x", schema: { type: "string", pattern: "abc" } },
    };
    const first = async (body: unknown) => message((await post(body)).text);
    expect(await first({ response_format: { type: "xml" } })).toMatch(/^response_format type must be one of/);
    expect(await first({ stream: "yes", n: 5 })).toBe("'messages' is required");
    expect(await first({ response_format: badPattern })).toBe("'messages' is required");
    expect(await first({ messages: [{ content: 5 }] })).toBe("Expected 'content' to be a string or an array");
    expect(
      await first({
        messages: [
          { role: "user", content: [image] },
          { role: "user", content: 5 },
        ],
      }),
    ).toMatch(/^image input is not supported/);
    expect(await first({ messages: [{ content: "x" }], tools: {}, tool_choice: "x" })).toMatch(
      /Missing 'role'/,
    );
    expect(await first({ messages: user, tools: {}, tool_choice: "x" })).toMatch(/^Failed to parse tools/);
    const prefill = [...user, { role: "assistant", content: "a" }];
    expect(await first({ messages: prefill, tool_choice: "x", continue_final_message: true })).toBe(
      "Invalid tool_choice: x",
    );
    expect(await first({ messages: prefill, continue_final_message: true, stream: "x" })).toMatch(
      /^Cannot set both/,
    );
    expect(await first({ messages: user, response_format: badPattern, stream: "x" })).toMatch(
      /JSON schema conversion failed/,
    );
    expect(await first({ messages: user, stream: "yes", max_tokens: "x" })).toMatch(/^Field 'stream'/);
  });

  it("lets through what b9749 takes: null tools, tool_choice and stream, null content, an assistant with only tool calls, continue_final_message with add_generation_prompt false", async () => {
    await llama();
    const ok = [
      { messages: user, tools: null, tool_choice: null, stream: null },
      { messages: user, tool_choice: { type: "function", function: { name: "f" } }, tools: [tool] },
      { messages: user, tool_choice: 3 },
      { messages: [{ role: "user", content: null }] },
      { messages: [{ role: "wizard", content: "x" }] },
      { messages: [...user, { role: "assistant", tool_calls: [] }, ...user] },
      { messages: [...user, { role: "assistant", content: "a" }], continue_final_message: "yes" },
      {
        messages: [...user, { role: "assistant", content: "a" }],
        continue_final_message: true,
        add_generation_prompt: false,
      },
      { messages: [{ role: "user", content: [{ type: "text", text: "x" }] }] },
    ];
    for (const body of ok) expect((await post(body)).status, JSON.stringify(body)).toBe(200);
  });
});

describe("llamacpp personality: an error in the middle of a stream", () => {
  it("ends a scripted errorMidStream as b9749 ends its stream on a failed turn: a data frame holding the error, no [DONE]", async () => {
    const recorded = readRecordedResponse(
      "llamacpp-live/50-special-tools-stream-midstream-error.response.txt",
    );
    const frames = recorded.body.split("\n\n").filter((frame) => frame !== "");
    const last = frames.at(-1) as string;
    const error = (JSON.parse(last.slice("data: ".length)) as { error: unknown }).error;
    server = await startServer({
      personality: "llamacpp",
      replies: [
        {
          toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }],
          errorMidStream: { afterChunk: 2, error },
        },
      ],
    });
    const answer = await post(
      readFixture("llamacpp-live/50-special-tools-stream-midstream-error.request.json"),
    );
    expect(answer.status).toBe(200);
    expect(answer.type).toBe(recorded.headers["content-type"]);
    expect(answer.text.endsWith(`\n\n${last}\n\n`)).toBe(true);
    expect(recorded.body).not.toContain("[DONE]");
    expect(answer.text).not.toContain("[DONE]");
  });
});
