import { startServer, type TestServer } from "@loopwright/testkit";
import fc from "fast-check";
import OpenAI from "openai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { createCapabilityStore } from "./capabilities.js";
import { buildBody, type ToolDefinition } from "./request-body.js";

// Half a surrogate pair (a host that cut a pasted text by UTF-16 units, inside an emoji) goes out
// of JSON.stringify as an escape llama.cpp refuses with a 500, on every request of the transcript.

/** What llama.cpp b9749 answered a request carrying one (seen against the live server). */
const LLAMACPP_500 = {
  error: {
    code: 500,
    message:
      "[json.exception.parse_error.101] parse error at line 1, column 62: syntax error while parsing value - invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF; last read: '\"pasted \\ud83d\"'",
    type: "server_error",
  },
};

/** A JSON text's escapes of surrogates with no partner, as JSON.stringify writes them. */
const LONE_ESCAPE =
  /\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f][0-9a-f]{2})|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}/i;

function fresh() {
  const store = createCapabilityStore();
  const supports = store.capabilitiesFor("http://127.0.0.1:1/v1");
  return { supports, model: store.modelCapabilitiesFor(supports, "m") };
}

const PASTED = "sunny \u{1F31E} all day".slice(0, 7); // "sunny " and half the emoji

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("buildBody and half a surrogate pair", () => {
  it("sends a message holding one with it written U+FFFD, so a server reading UTF-8 answers; the caller's message is left as it was", async () => {
    server = await startServer({
      replies: (request) =>
        LONE_ESCAPE.test(request.raw)
          ? { type: "error", status: 500, body: LLAMACPP_500 }
          : { content: "Sunny, then." },
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "test", maxRetries: 0 });
    const messages: ChatCompletionMessageParam[] = [
      { role: "system", content: "Answer briefly." },
      { role: "user", content: [{ type: "text", text: `pasted ${PASTED}` }] },
    ];
    const { supports, model } = fresh();
    const body = buildBody({ model: "m" }, supports, model, messages);
    const stream = await client.chat.completions.create(body);
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
    expect(text).toBe("Sunny, then.");
    const sent = server.chatRequests.at(-1);
    expect(sent?.raw).not.toMatch(LONE_ESCAPE);
    expect(sent?.body).toMatchObject({
      messages: [
        { role: "system", content: "Answer briefly." },
        { role: "user", content: [{ type: "text", text: "pasted sunny \uFFFD" }] },
      ],
    });
    // Not mutated; the message without one is the caller's own object.
    expect(messages[1]).toEqual({ role: "user", content: [{ type: "text", text: `pasted ${PASTED}` }] });
    expect(body.messages[0]).toBe(messages[0]);
    expect(body.messages[1]).not.toBe(messages[1]);
  });

  it("writes one in a tool's description, a key, a tool call's arguments, and at any depth; what has none is kept as is", () => {
    const { supports, model } = fresh();
    const deep: unknown[] = [];
    let at = deep;
    for (let i = 0; i < 1_000; i++) {
      const next: unknown[] = [];
      at.push(next);
      at = next;
    }
    at.push("\udc00tail");
    const messages = [
      { role: "user", content: "ok", extra: { ["k\ud800"]: 1, ["__proto__"]: "kept" } },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: '{"q":"\ud83d"}' } }],
      },
      { role: "tool", tool_call_id: "c1", content: "done", deep },
    ];
    const tools: ToolDefinition[] = [
      {
        type: "function",
        function: { name: "f", description: "Finds \ud83d", parameters: { type: "object" } },
      },
    ];
    const body = buildBody({ model: "m" }, supports, model, messages, tools);
    const json = JSON.stringify({ messages: body.messages, tools: body.tools });
    expect(json).not.toMatch(LONE_ESCAPE);
    const parsed = JSON.parse(json);
    expect(Object.entries(parsed.messages[0].extra)).toEqual([
      ["k\uFFFD", 1],
      ["__proto__", "kept"],
    ]);
    expect(parsed).toMatchObject({
      messages: [
        { role: "user", content: "ok" },
        { tool_calls: [{ function: { arguments: '{"q":"\uFFFD"}' } }] },
        { content: "done" },
      ],
      tools: [{ function: { description: "Finds \uFFFD" } }],
    });
    expect(json).toContain('"\uFFFDtail"');
    expect(tools[0]?.function.description).toBe("Finds \ud83d");
  });

  it("writes one U+FFFD in the rest of the body too: tool_choice names the tool as the tool array does (r70f)", () => {
    const { supports, model } = fresh();
    const tools: ToolDefinition[] = [
      { type: "function", function: { name: "find\ud83d", parameters: { type: "object" } } },
    ];
    const body = buildBody(
      { model: "m\udc00", extraBody: { user: "id \ud800", metadata: { ["k\ud800"]: "v" } } },
      supports,
      model,
      [{ role: "user", content: "hi" }],
      tools,
      { toolChoice: { type: "function", function: { name: "find\ud83d" } } },
    );
    const json = JSON.stringify(body);
    expect(json).not.toMatch(LONE_ESCAPE);
    const sent = JSON.parse(json);
    expect(sent.tool_choice.function.name).toBe(sent.tools[0].function.name);
    expect(sent).toMatchObject({ model: "m\uFFFD", user: "id \uFFFD", metadata: { "k\uFFFD": "v" } });
  });

  it("property: the body's JSON holds no lone surrogate, and a string that had none is sent as it was", () => {
    const { supports, model } = fresh();
    const unit = fc.oneof(
      fc.constantFrom("\ud83d", "\ude00", "\ud83d\ude00", "a", "\u00e9", " "),
      fc.string({ maxLength: 3 }),
    );
    const text = fc.array(unit, { maxLength: 8 }).map((parts) => parts.join(""));
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 5 }), (texts) => {
        const messages = texts.map((content) => ({ role: "user", content }));
        const body = buildBody({ model: "m" }, supports, model, messages);
        expect(JSON.stringify(body)).not.toMatch(LONE_ESCAPE);
        body.messages.forEach((sent, i) => {
          const content = (sent as { content: string }).content;
          expect(content).toBe((texts[i] as string).toWellFormed());
          if ((texts[i] as string).isWellFormed()) expect(sent).toBe(messages[i]);
        });
      }),
      propertyRuns(300),
    );
  });
});
