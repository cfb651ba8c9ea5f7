// r104h: a tool call cut by max_tokens before its name is whole, as llama-server b9749 streams it
// (testkit capture llamacpp-live/52): the opener, then a `length` finish with an empty delta, then
// `[DONE]` — nothing of the `<tool_call>` markup. Read as a turn it is empty and says it was cut.
import { startServer, type TestServer } from "@loopwright/testkit";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { streamTurn } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("streamTurn on llama.cpp's stream cut before the tool's name was whole", () => {
  it("reads a turn with no tool call, no text and finishReason length, and shows nothing", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [{ toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }] }],
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const told: string[] = [];
    const deltas: unknown[] = [];
    const turn = await streamTurn(
      client,
      {
        model: "tiny",
        max_tokens: 4,
        messages: [{ role: "user", content: "hi" }],
        tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
      },
      { onOutput: (text) => told.push(text), onToolCallDelta: (p) => deltas.push(p) },
    );
    expect(turn.finishReason).toBe("length");
    expect(turn.toolCalls).toEqual([]);
    expect(turn.content).toBe("");
    expect(told.join("")).toBe("");
    expect(deltas).toEqual([]);
  });
});
