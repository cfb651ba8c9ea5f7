/**
 * The llamacpp personality's completions against the live captures in `llamacpp-live/`: what a
 * client reads in a plain body and in each chunk of a stream, field by field and in key order.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { TestkitError } from "../errors.js";
import { readFixture, readRecordedResponse } from "../fixtures.js";
import type { TurnReply } from "../replies.js";
import { type ServerOptions, startServer, type TestServer } from "../server.js";
import { llamacppPersonality } from "./llamacpp.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Json = Record<string, unknown>;

const capturedBody = (name: string) => readRecordedResponse(`llamacpp-live/${name}.response.txt`).body;
const capturedRequest = (name: string): Json =>
  JSON.parse(readFixture(`llamacpp-live/${name}.request.json`)) as Json;

/** The `data:` payloads of an SSE body, `[DONE]` left as the string. */
function frames(text: string): (Json | string)[] {
  return text
    .split("\n\n")
    .filter((f) => f.startsWith("data: "))
    .map((f) => f.slice("data: ".length))
    .map((d) => (d === "[DONE]" ? d : (JSON.parse(d) as Json)));
}

/** The parsed chunks of a captured stream. */
const capturedChunks = (name: string) => frames(capturedBody(name)).filter((f): f is Json => f !== "[DONE]");

/**
 * What differs between two answers of the same server to the same request anyway: the random
 * completion and tool-call ids, the clock, and the measured milliseconds. Each is checked for
 * form and replaced by its form; everything else (values and key order) stays.
 */
function normalised(value: unknown, key = ""): unknown {
  if (Array.isArray(value)) return value.map((v) => normalised(v));
  if (typeof value === "object" && value !== null) {
    const out: Json = {};
    for (const [k, v] of Object.entries(value)) out[k] = normalised(v, k);
    return out;
  }
  if (key === "id" && typeof value === "string") {
    if (/^chatcmpl-[A-Za-z0-9]{32}$/.test(value)) return "chatcmpl-<32 letters and digits>";
    if (/^[A-Za-z0-9]{32}$/.test(value)) return "<32 letters and digits>";
    return value;
  }
  if (key === "created" && typeof value === "number" && Number.isInteger(value)) return "<unix seconds>";
  if (/_ms$|^prompt_per_|^predicted_per_/.test(key) && typeof value === "number" && value >= 0) return "<ms>";
  return value;
}

async function start(replies: TurnReply[], options: Partial<ServerOptions> = {}): Promise<TestServer> {
  server = await startServer({ personality: llamacppPersonality(), replies, ...options });
  return server;
}

async function post(body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${server?.baseUrl}/chat/completions`, {
    method: "POST",
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

// The captures' usage, scripted so the counts (the testkit's token rule is not the tiny model's
// tokenizer) are the recorded ones.
const usage04 = { prompt_tokens: 22, completion_tokens: 2, cached_tokens: 0 };
const usage05 = { prompt_tokens: 32, completion_tokens: 2, cached_tokens: 5 };
const usage06 = { prompt_tokens: 32, completion_tokens: 2, cached_tokens: 31 };

describe("llamacpp completions: the model it names", () => {
  it("answers with its own model name, not the one the request named (04, 05)", async () => {
    await start([{ content: " I" }, { content: " I" }]);
    const request = capturedRequest("04-chat-nonstream");
    expect(request.model).toBe("tiny");
    const plain = JSON.parse((await post(request)).text) as Json;
    expect(plain.model).toBe((JSON.parse(capturedBody("04-chat-nonstream")) as Json).model);
    const streamed = frames((await post(capturedRequest("05-chat-stream-usage"))).text);
    const recorded = capturedChunks("05-chat-stream-usage");
    for (const chunk of streamed.filter((f): f is Json => f !== "[DONE]"))
      expect(chunk.model).toBe(recorded[0]?.model);
  });

  it("names the model it was given, whatever the request says", async () => {
    server = await startServer({
      personality: llamacppPersonality({ model: "qwen.gguf" }),
      replies: [{ content: "x" }],
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(completion.model).toBe("qwen.gguf");
  });
});

describe("llamacpp completions: timings", () => {
  it("a plain completion carries timings after the usage, counts as the capture has them (04)", async () => {
    await start([{ content: " I", usage: usage04 }]);
    const ours = JSON.parse((await post(capturedRequest("04-chat-nonstream"))).text) as Json;
    const recorded = JSON.parse(capturedBody("04-chat-nonstream")) as Json;
    expect(normalised(ours.timings)).toEqual(normalised(recorded.timings));
    expect(Object.keys(ours.timings as Json)).toEqual(Object.keys(recorded.timings as Json));
  });

  it("with include_usage the timings ride on the usage chunk, not the finish chunk (05)", async () => {
    await start([{ content: " I", usage: usage05 }]);
    const ours = frames((await post(capturedRequest("05-chat-stream-usage"))).text);
    const recorded = capturedChunks("05-chat-stream-usage");
    const [finish, usageChunk] = ours.slice(-3, -1) as [Json, Json];
    expect(finish.timings).toBeUndefined();
    expect(normalised(usageChunk.timings)).toEqual(normalised(recorded.at(-1)?.timings));
    expect((usageChunk.timings as Json).cache_n).toBe(5);
  });

  it("without include_usage the finish chunk carries the timings (06)", async () => {
    await start([{ content: " I", usage: usage06 }]);
    const ours = frames((await post(capturedRequest("06-chat-stream-nousage"))).text);
    const recorded = capturedChunks("06-chat-stream-nousage");
    const finish = ours.at(-2) as Json;
    expect((finish.choices as Json[])[0]?.finish_reason).toBe("stop");
    expect(normalised(finish.timings)).toEqual(normalised(recorded.at(-1)?.timings));
  });

  it("with the prefix cache on, cache_n is the cached prefix and prompt_n the rest (as 06 and 12: all but one token)", async () => {
    await start([{ content: "a" }, { content: "a" }], { prefixCache: true });
    const request = { ...capturedRequest("05-chat-stream-usage") };
    const first = frames((await post(request)).text).at(-2) as Json;
    const second = frames((await post(request)).text).at(-2) as Json;
    const u1 = first.usage as { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
    const t2 = second.timings as Json;
    expect(first.timings).toMatchObject({ cache_n: 0, prompt_n: u1.prompt_tokens });
    expect(t2).toMatchObject({ cache_n: u1.prompt_tokens - 1, prompt_n: 1, predicted_n: 1 });
    expect((second.usage as typeof u1).prompt_tokens_details.cached_tokens).toBe(t2.cache_n);
  });

  it("reports cached_tokens 0 and cache_n 0 without the prefix cache, as the first capture (04) does", async () => {
    await start([{ content: " I" }]);
    const ours = JSON.parse((await post(capturedRequest("04-chat-nonstream"))).text) as Json;
    expect(ours.usage).toMatchObject({ prompt_tokens_details: { cached_tokens: 0 } });
    expect(ours.timings).toMatchObject({ cache_n: 0 });
  });

  it("the stream package's reader sees prefill and decode time in the timings it sends", async () => {
    await start([{ content: "hello there", usage: { prompt_tokens: 100, completion_tokens: 4 } }]);
    const ours = JSON.parse((await post({ model: "tiny", messages: [{ role: "user", content: "x" }] })).text);
    const t = ours.timings as Json;
    expect(t.prompt_n).toBe(100);
    expect(t.predicted_n).toBe(4);
    expect(t.prompt_ms).toBeGreaterThan(0);
    expect(t.predicted_ms).toBeGreaterThan(0);
    expect(t.prompt_per_token_ms).toBeCloseTo((t.prompt_ms as number) / 100, 9);
    expect(t.predicted_per_second).toBeCloseTo(4000 / (t.predicted_ms as number), 6);
  });
});

describe("llamacpp completions: the first delta", () => {
  it("opens a stream with role assistant and content null (05, 06)", async () => {
    await start([{ content: " I" }, { content: " I" }]);
    for (const name of ["05-chat-stream-usage", "06-chat-stream-nousage"]) {
      const ours = frames((await post(capturedRequest(name))).text)[0] as Json;
      expect(ours.choices).toEqual(capturedChunks(name)[0]?.choices);
    }
  });

  it("a tool call comes right after the opener, its first delta with index, id, type, the whole name and the first arguments piece (12)", async () => {
    await start([
      { toolCalls: [{ name: "get_weather", arguments: '{\n"location":"Paris"}' }], chunkChars: 1 },
    ]);
    const ours = frames((await post(capturedRequest("12-tools-required-stream"))).text) as Json[];
    const recorded = capturedChunks("12-tools-required-stream");
    expect(ours[0]?.choices).toEqual(recorded[0]?.choices);
    expect(normalised(ours[1]?.choices)).toEqual(normalised(recorded[1]?.choices));
    // The next delta carries only index and an arguments piece (ours cut at one character).
    const next = structuredClone(recorded[2]?.choices) as { delta: { tool_calls: Json[] } }[];
    (next[0]?.delta.tool_calls[0]?.function as Json).arguments = "\n";
    expect(ours[2]?.choices).toEqual(next);
  });
});

describe("llamacpp completions: read by the openai client", () => {
  it("its stream helper puts the tool call back together: whole name, all the arguments, the 32-character id", async () => {
    await start([
      {
        content: "Let me look.",
        toolCalls: [
          { name: "get_weather", arguments: '{"location":"Paris"}' },
          { name: "add", arguments: '{"a":2,"b":3}' },
        ],
        chunkChars: 3,
        interleave: true,
      },
    ]);
    const client = new OpenAI({ baseURL: server?.baseUrl, apiKey: "k", maxRetries: 0 });
    const stream = client.chat.completions.stream({
      model: "tiny",
      messages: [{ role: "user", content: "weather, and 2 + 3" }],
    });
    const done = await stream.finalChatCompletion();
    const message = done.choices[0]?.message;
    expect(message?.content).toBe("Let me look.");
    expect(
      message?.tool_calls?.map((c) => c.type === "function" && [c.function.name, c.function.arguments]),
    ).toEqual([
      ["get_weather", '{"location":"Paris"}'],
      ["add", '{"a":2,"b":3}'],
    ]);
    for (const call of message?.tool_calls ?? []) expect(call.id).toMatch(/^[A-Za-z0-9]{32}$/);
    expect(done.model).toBe("tiny.gguf");
  });
});

describe("llamacpp completions: whole answers, as captured", () => {
  it("a plain completion matches 04 field for field and in key order", async () => {
    await start([{ content: " I", usage: usage04 }]);
    const ours = JSON.parse((await post(capturedRequest("04-chat-nonstream"))).text);
    expect(JSON.stringify(normalised(ours))).toBe(
      JSON.stringify(normalised(JSON.parse(capturedBody("04-chat-nonstream")))),
    );
  });

  it("a stream with include_usage matches 05 chunk for chunk and in key order", async () => {
    await start([{ content: " I", usage: usage05 }]);
    const ours = frames((await post(capturedRequest("05-chat-stream-usage"))).text);
    expect(JSON.stringify(normalised(ours))).toBe(
      JSON.stringify(normalised(frames(capturedBody("05-chat-stream-usage")))),
    );
  });

  it("a stream without include_usage matches 06 chunk for chunk and in key order", async () => {
    await start([{ content: " I", usage: usage06 }]);
    const ours = frames((await post(capturedRequest("06-chat-stream-nousage"))).text);
    expect(JSON.stringify(normalised(ours))).toBe(
      JSON.stringify(normalised(frames(capturedBody("06-chat-stream-nousage")))),
    );
  });

  it("a plain tool call matches 11: content empty, the call's type, function and a 32-character id", async () => {
    const recorded = JSON.parse(capturedBody("11-tools-required-nonstream"));
    const call = recorded.choices[0].message.tool_calls[0].function;
    await start([
      {
        toolCalls: [{ name: call.name, arguments: call.arguments }],
        usage: { prompt_tokens: 268, completion_tokens: 54, cached_tokens: 0 },
      },
    ]);
    const ours = JSON.parse((await post(capturedRequest("11-tools-required-nonstream"))).text);
    expect(JSON.stringify(normalised(ours))).toBe(JSON.stringify(normalised(recorded)));
  });

  it("every chunk of one stream shares one chatcmpl- id; the next completion gets another", async () => {
    await start([{ content: "one two three", chunkChars: 2 }, { content: "x" }]);
    const a = frames((await post({ ...capturedRequest("06-chat-stream-nousage") })).text) as Json[];
    const b = frames((await post({ ...capturedRequest("06-chat-stream-nousage") })).text) as Json[];
    const ids = new Set(a.slice(0, -1).map((c) => c.id));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^chatcmpl-[A-Za-z0-9]{32}$/);
    expect(b[0]?.id).not.toBe(a[0]?.id);
  });
});

describe("llamacpp completions: a scripted tool call must name its tool", () => {
  const nameless: TurnReply = {
    toolCalls: [
      { name: "get_weather", arguments: "{}" },
      { name: "", arguments: "{}" },
    ],
  };

  it("refuses a queued reply whose tool call has an empty name, naming the field", async () => {
    const error = await startServer({ personality: "llamacpp", replies: [nameless] }).catch(
      (e: unknown) => e,
    );
    expect(TestkitError.isInstance(error)).toBe(true);
    expect((error as TestkitError).code).toBe("invalid-reply");
    expect((error as TestkitError).message).toMatch(/toolCalls\[1\]\.name/);
    server = await startServer({ personality: "llamacpp" });
    expect(() => server?.enqueue(nameless)).toThrow(/toolCalls\[1\]\.name/);
  });

  it("answers a reply function's nameless tool call with a 500 naming the field", async () => {
    server = await startServer({ personality: "llamacpp", replies: () => nameless });
    const { status, text } = await post({ model: "tiny", messages: [{ role: "user", content: "x" }] });
    expect(status).toBe(500);
    expect(text).toMatch(/toolCalls\[1\]\.name/);
  });

  it("still lets a reply without a personality script a nameless call", async () => {
    server = await startServer({ replies: [nameless] });
    expect((await post({ model: "m", messages: [{ role: "user", content: "x" }] })).status).toBe(200);
  });
});

describe("llamacpp completions: a tool call cut by max_tokens before its name is whole (51, 52)", () => {
  // Captures 51 and 52: `max_tokens: 4`, one tool, "hi". The counts are scripted as recorded (the
  // testkit's token rule is not the tiny model's tokenizer).
  const usage = { prompt_tokens: 157, completion_tokens: 4, cached_tokens: 156 };
  const cutCall = (): TurnReply => ({
    toolCalls: [{ name: "get_weather", arguments: '{"city":"Paris"}' }],
    usage,
  });

  it("a plain reply carries the raw <tool_call> markup so far in content, no tool_calls, finish length, as 51", async () => {
    await start([cutCall()], { personality: llamacppPersonality({ model: "tiny" }) });
    const ours = JSON.parse((await post(capturedRequest("51-tool-call-cut-before-name-nonstream"))).text);
    const recorded = JSON.parse(capturedBody("51-tool-call-cut-before-name-nonstream"));
    // The text is the model's own (the tiny model writes `<tool_call>\n {`); ours is the template's
    // markup cut at the same four tokens, `<tool_call>` being one.
    expect(recorded.choices[0].message.content).toBe("<tool_call>\n {");
    expect(ours.choices[0].message.content).toBe('<tool_call>\n{"');
    ours.choices[0].message.content = recorded.choices[0].message.content;
    ours.system_fingerprint = recorded.system_fingerprint; // 51 is b9749's; ours capture 04's build
    expect(JSON.stringify(normalised(ours))).toBe(JSON.stringify(normalised(recorded)));
  });

  it("the markup grows with the budget but never closes the name, and a call whose name fits goes out as a call", async () => {
    await start([cutCall(), cutCall(), cutCall(), { toolCalls: [{ name: "get_weather", arguments: "{}" }] }]);
    const request = capturedRequest("51-tool-call-cut-before-name-nonstream");
    const at = async (maxTokens: number) =>
      JSON.parse((await post({ ...request, max_tokens: maxTokens })).text).choices[0];
    expect((await at(1)).message).toEqual({ role: "assistant", content: "<tool_call>" });
    expect((await at(11)).message.content).toBe('<tool_call>\n{"name": "get_');
    // The whole name without its closing quote is still text (live: 17 tokens `…"get_weather`).
    const named = await at(12);
    expect(named.message).toEqual({ role: "assistant", content: '<tool_call>\n{"name": "get_weather' });
    expect(named.finish_reason).toBe("length");
    const whole = await at(64);
    expect(whole.message.content).toBe("");
    expect(whole.message.tool_calls[0].function.name).toBe("get_weather");
  });

  it("a stream sends the opener and the length finish, nothing of the markup, as 52", async () => {
    await start([cutCall()], { personality: llamacppPersonality({ model: "tiny" }) });
    const ours = frames((await post(capturedRequest("52-tool-call-cut-before-name-stream"))).text);
    // This capture is b9749's; the personality's fingerprint is capture 04's older build.
    for (const chunk of ours) if (typeof chunk !== "string") chunk.system_fingerprint = "b9749-d32676d77";
    expect(JSON.stringify(normalised(ours))).toBe(
      JSON.stringify(normalised(frames(capturedBody("52-tool-call-cut-before-name-stream")))),
    );
  });
});
