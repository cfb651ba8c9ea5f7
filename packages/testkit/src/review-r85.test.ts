/**
 * Review r85d: the server read each request body through `Object.prototype` (`JSON.parse` makes
 * every object of it inherit from there), so code in the test's process that polluted it changed
 * how requests were answered: `Object.prototype.stream = true` answered a plain request as a stream,
 * `.n = 3` sent three choices, `.tools` made the scripted model call a tool nobody offered,
 * `.max_tokens`, `.stream_options`, `.response_format`, `.tool_calls`, `.model` did what the client
 * never asked. The server reads the fields the client sent; `RecordedRequest.body` stays the plain
 * parse. Each field is set for one request and deleted after it (`polluted`).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { PersonalitySpec } from "./personalities/resolve.js";
import type { Reply } from "./replies.js";
import { startServer, type TestServer } from "./server.js";
import { polluted } from "./test-support/polluted.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const user = [{ role: "user", content: "hi" }];

async function serve(replies: Reply[] | undefined, personality?: PersonalitySpec): Promise<TestServer> {
  server = await startServer({
    ...(replies ? { replies } : { scriptedModel: { chunkDelayMs: 0 } }),
    personality,
  });
  return server;
}

/** Posts `body` with `fields` on Object.prototype meanwhile: status, content type and text. */
async function post(body: Record<string, unknown>, fields: Record<string, unknown>) {
  return polluted(fields, async () => {
    const response = await fetch(`${server?.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      type: response.headers.get("content-type") ?? "",
      text: await response.text(),
    };
  });
}

/** The data frames of an SSE body, parsed. */
function frames(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: {"))
    .map((line) => JSON.parse(line.slice(6)));
}

describe("a request body under a polluted Object.prototype", () => {
  it("a request that leaves stream out is answered as one JSON completion, not a stream", async () => {
    await serve([{ content: "noon" }]);
    const answer = await post({ model: "m", messages: user }, { stream: true });
    expect(answer.type).toMatch(/^application\/json/);
    expect(JSON.parse(answer.text).choices[0].message.content).toBe("noon");
  });

  it("n, model: one choice under the model sim, as sent", async () => {
    await serve([{ content: "noon" }]);
    const body = JSON.parse((await post({ messages: user }, { n: 3, model: "forged" })).text);
    expect(body.choices).toHaveLength(1);
    expect(body.model).toBe("sim");
  });

  it("tools, tool_choice: the scripted model calls no tool the request did not offer", async () => {
    await serve(undefined);
    const tools = [{ type: "function", function: { name: "clock", description: "time", parameters: {} } }];
    const answer = await post(
      { model: "m", messages: [{ role: "user", content: "what time is it?" }] },
      { tools, tool_choice: "required" },
    );
    const message = JSON.parse(answer.text).choices[0].message;
    expect(message.tool_calls ?? []).toEqual([]);
    expect(message.content).toMatch(/scripted model/);
  });

  it("stream_options (llamacpp): a stream without include_usage ends with no usage chunk", async () => {
    await serve([{ content: "noon" }], "llamacpp");
    const answer = await post(
      { model: "m", messages: user, stream: true },
      { stream_options: { include_usage: true } },
    );
    expect(frames(answer.text).filter((f) => f.usage !== undefined)).toEqual([]);
  });

  it("max_tokens, max_completion_tokens, n_predict (llamacpp): the turn is not cut", async () => {
    await serve([{ content: "a long answer of many words" }], "llamacpp");
    const answer = await post(
      { model: "m", messages: user },
      { max_tokens: 1, max_completion_tokens: 1, n_predict: 1 },
    );
    const choice = JSON.parse(answer.text).choices[0];
    expect(choice.message.content).toBe("a long answer of many words");
    expect(choice.finish_reason).toBe("stop");
  });

  it("response_format (llamacpp, lmstudio): not refused", async () => {
    await serve([{ content: "noon" }], "llamacpp");
    expect((await post({ model: "m", messages: user }, { response_format: { type: "xml" } })).status).toBe(
      200,
    );
    await server?.close();
    await serve([{ content: "noon" }], "lmstudio");
    expect(
      (await post({ model: "m", messages: user }, { response_format: { type: "json_object" } })).status,
    ).toBe(200);
  });

  it("role, content (llamacpp): an assistant message of the transcript is not echoed as a prefill", async () => {
    await serve([{ content: "noon" }], "llamacpp");
    const messages = [{ role: "user", content: "hi" }, { content: "x" }];
    const answer = await post({ model: "m", messages }, { role: "assistant" });
    // Refused for the role it does not have, as b9749 refuses it (r104a), not answered as a prefill.
    expect(answer.status).toBe(500);
    expect(JSON.parse(answer.text).error.message).toBe(
      `Failed to parse messages: Missing 'role' in message: {"content":"x"}`,
    );
  });

  it("tool_calls (mistral): a user message is not refused for a tool-call id it does not have", async () => {
    await serve([{ content: "noon" }], "mistral");
    const answer = await post({ model: "m", messages: user }, { tool_calls: [{ id: "call_long_id_0" }] });
    expect(answer.status).toBe(200);
  });

  it("messages (llamacpp): a prompt the request does not hold does not overflow the context", async () => {
    await serve([{ content: "noon" }, { content: "noon" }], { name: "llamacpp", nCtx: 64 });
    const long = [{ role: "user", content: "word ".repeat(200) }];
    expect((await post({ model: "m", messages: user }, { messages: long })).status).toBe(200);
    // A body without messages at all: refused for it, as b9749 refuses it (r104a), not for an
    // overflow of the polluted list.
    const missing = await post({ model: "m" }, { messages: long });
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.text).error.message).toBe("'messages' is required");
  });

  it("the recorded body is what was sent, a plain parse the host compares as it likes", async () => {
    await serve([{ content: "noon" }]);
    await post({ model: "m", messages: user }, { stream: true });
    const [recorded] = server?.chatRequests ?? [];
    expect(recorded?.body).toStrictEqual({ model: "m", messages: user });
    expect(Object.getPrototypeOf(recorded?.body)).toBe(Object.prototype);
  });

  it("a reply function is handed the recorded request", async () => {
    let seen: unknown;
    server = await startServer({
      replies: (request) => {
        seen = request;
        return { content: "noon" };
      },
    });
    await post({ model: "m", messages: user }, {});
    expect(seen).toBe(server.chatRequests[0]);
  });
});
