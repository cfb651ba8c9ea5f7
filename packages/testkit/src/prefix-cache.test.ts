import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import {
  commonPrefixLength,
  countTokens,
  createPrefixCache,
  renderPrompt,
  TOKEN_PATTERN,
  tokenize,
} from "./prefix-cache.js";
import { startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const tools = [
  {
    type: "function" as const,
    function: { name: "clock", description: "Current time", parameters: { type: "object", properties: {} } },
  },
];

describe("token rule", () => {
  it("splits words, single digits, punctuation, whitespace runs and role markers", () => {
    expect(tokenize("<|user|>\nHello, world 42!  ok")).toEqual([
      "<|user|>",
      "\n",
      "Hello",
      ",",
      " ",
      "world",
      " ",
      "4",
      "2",
      "!",
      "  ",
      "ok",
    ]);
  });

  it("tokens always join back to the text and countTokens agrees with tokenize", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (text) => {
        const tokens = tokenize(text);
        expect(tokens.join("")).toBe(text);
        expect(countTokens(text)).toBe(tokens.length);
        expect(tokens.every((t) => t.length > 0)).toBe(true);
      }),
    );
  });

  it("the exported pattern is global and unicode-aware", () => {
    expect(TOKEN_PATTERN.flags).toContain("g");
    expect(TOKEN_PATTERN.flags).toContain("u");
    expect(tokenize("héllo wörld")).toEqual(["héllo", " ", "wörld"]);
  });
});

describe("renderPrompt", () => {
  it("renders tools first, then each message with its role, then the generation prompt", () => {
    const prompt = renderPrompt({
      tools,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "time?" },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", type: "function", function: { name: "clock", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "c1", content: "12:00" },
      ],
    });
    expect(prompt).toBe(
      `<|tools|>\n${JSON.stringify(tools)}\n<|system|>\nBe brief.\n<|user|>\ntime?\n<|assistant|>\n\n<|tool_call|>clock\n{}\n<|tool|>\nc1\n12:00\n<|assistant|>\n`,
    );
  });

  it("joins text parts of array content", () => {
    const prompt = renderPrompt({
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "a" },
            { type: "text", text: "b" },
          ],
        },
      ],
    });
    expect(prompt).toBe("<|user|>\nab\n<|assistant|>\n");
  });

  it("is deterministic for equal requests", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ role: fc.constantFrom("user", "assistant"), content: fc.string() })),
        (messages) => {
          expect(renderPrompt({ messages: structuredClone(messages) })).toBe(renderPrompt({ messages }));
        },
      ),
    );
  });
});

describe("prefix cache", () => {
  it("commonPrefixLength never exceeds either length and is symmetric", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom("a", "b")), fc.array(fc.constantFrom("a", "b")), (a, b) => {
        const n = commonPrefixLength(a, b);
        expect(n).toBe(commonPrefixLength(b, a));
        expect(n).toBeLessThanOrEqual(Math.min(a.length, b.length));
        expect(a.slice(0, n)).toEqual(b.slice(0, n));
        if (n < Math.min(a.length, b.length)) expect(a[n]).not.toBe(b[n]);
      }),
    );
  });

  it("reports the longest prefix shared with any earlier prompt, not just the last", () => {
    const cache = createPrefixCache();
    const long = { messages: [{ role: "user", content: "one two three four five" }] };
    expect(cache.process(long)).toEqual({ promptTokens: countTokens(renderPrompt(long)), cachedTokens: 0 });
    cache.process({ messages: [{ role: "system", content: "other" }] });
    const again = { messages: [{ role: "user", content: "one two three nine" }] };
    const expected = commonPrefixLength(tokenize(renderPrompt(again)), tokenize(renderPrompt(long)));
    expect(cache.peek(again).cachedTokens).toBe(expected);
    expect(expected).toBe(8); // <|user|> \n one _ two _ three _
    cache.clear();
    expect(cache.peek(again).cachedTokens).toBe(0);
  });

  it("property: each count is the longest prefix shared with any prompt processed before it (all but the last token at most), peeked ones left out", () => {
    // Small words, so prompts share prefixes of every length, split mid-edge, or hold one another.
    const request = fc.record({
      tools: fc.constantFrom(undefined, tools),
      messages: fc.array(
        fc.record({
          role: fc.constantFrom("system", "user", "assistant"),
          content: fc
            .array(fc.constantFrom("a", "b", "a b", "7", "!", " "), { maxLength: 6 })
            .map((w) => w.join(" ")),
        }),
        { maxLength: 4 },
      ),
    });
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), request), { maxLength: 25 }), (steps) => {
        const cache = createPrefixCache();
        const processed: string[][] = [];
        for (const [remember, body] of steps) {
          const tokens = tokenize(renderPrompt(body));
          const shared = Math.max(0, ...processed.map((earlier) => commonPrefixLength(tokens, earlier)));
          // A server computes at least the last token of a prompt it has seen whole.
          const cachedTokens = Math.min(shared, Math.max(0, tokens.length - 1));
          const count = remember ? cache.process(body) : cache.peek(body);
          expect(count).toEqual({ promptTokens: tokens.length, cachedTokens });
          if (remember) processed.push(tokens);
        }
      }),
      propertyRuns(300),
    );
  });
});

describe("usage over HTTP with prefixCache", () => {
  async function usageOf(client: OpenAI, body: Record<string, unknown>) {
    const stream = await client.chat.completions.create({ model: "sim", stream: true, ...body } as never);
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>)
      usage = chunk.usage ?? usage;
    return usage;
  }

  it("an appended conversation reports the whole previous prompt as cached", async () => {
    server = await startServer({ prefixCache: true, replies: () => ({ content: "Hello" }) });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const first = { tools, messages: [{ role: "user", content: "hi there" }] };
    const second = {
      tools,
      messages: [
        ...first.messages,
        { role: "assistant", content: "Hello" },
        { role: "user", content: "what time is it?" },
      ],
    };
    const u1 = await usageOf(client, first);
    expect(u1?.prompt_tokens).toBe(countTokens(renderPrompt(first)));
    expect(u1?.prompt_tokens_details?.cached_tokens).toBe(0);
    const u2 = await usageOf(client, second);
    expect(u2?.prompt_tokens).toBe(countTokens(renderPrompt(second)));
    expect(u2?.prompt_tokens_details?.cached_tokens).toBe(u1?.prompt_tokens);
  });

  it("the same request again reports all but its last token cached, as llama.cpp does (capture 12)", async () => {
    // llamacpp-live/11 and 12 send one prompt twice; the second answers 268 prompt tokens, 267
    // cached (timings.prompt_n 1): a server computes at least the last token to have its logits.
    server = await startServer({ prefixCache: true, replies: () => ({ content: "Hello" }) });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const body = { tools, messages: [{ role: "user", content: "hi there" }] };
    const first = await usageOf(client, body);
    const again = await usageOf(client, body);
    expect(again?.prompt_tokens).toBe(first?.prompt_tokens);
    expect(again?.prompt_tokens_details?.cached_tokens).toBe((first?.prompt_tokens as number) - 1);
  });

  it("keeps each model's cache apart: a prompt one model processed is no hit for another, and stays one for its own", async () => {
    server = await startServer({ prefixCache: true, replies: () => ({ content: "Hello" }) });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const body = { tools, messages: [{ role: "user", content: "hi there" }] };
    const first = await usageOf(client, { ...body, model: "big" });
    const other = await usageOf(client, { ...body, model: "small" });
    expect(other?.prompt_tokens).toBe(first?.prompt_tokens);
    expect(other?.prompt_tokens_details?.cached_tokens).toBe(0);
    const again = await usageOf(client, { ...body, model: "big" });
    expect(again?.prompt_tokens_details?.cached_tokens).toBe((first?.prompt_tokens as number) - 1);
  });

  it("changing the tools invalidates the cache from the start, because tools render first", async () => {
    server = await startServer({ prefixCache: true, replies: () => ({ content: "x" }) });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const messages = [{ role: "user", content: "a long question about many things" }];
    await usageOf(client, { tools, messages });
    const renamed = [{ ...tools[0], function: { ...tools[0]!.function, name: "time" } }];
    const u = await usageOf(client, { tools: renamed, messages });
    const expected = commonPrefixLength(
      tokenize(renderPrompt({ tools: renamed, messages })),
      tokenize(renderPrompt({ tools, messages })),
    );
    expect(u?.prompt_tokens_details?.cached_tokens).toBe(expected);
    // the cache stops inside the tools block, so none of the messages count as cached
    expect(expected).toBeLessThan(countTokens(`<|tools|>\n${JSON.stringify(tools)}`));
  });

  it("a non-streamed reply reports the same computed numbers", async () => {
    server = await startServer({ prefixCache: true, replies: () => ({ content: "x" }) });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const body = { model: "sim", messages: [{ role: "user" as const, content: "same" }] };
    await client.chat.completions.create(body);
    const completion = await client.chat.completions.create(body);
    const tokens = countTokens(renderPrompt(body));
    expect(completion.usage?.prompt_tokens).toBe(tokens);
    // The same prompt again: all but its last token (which a server computes for its logits).
    expect(completion.usage?.prompt_tokens_details?.cached_tokens).toBe(tokens - 1);
  });

  it("without prefixCache no cached_tokens are reported unless scripted", async () => {
    server = await startServer({
      replies: [{ content: "x" }, { content: "y", usage: { cached_tokens: 3 } }],
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const body = { model: "sim", messages: [{ role: "user" as const, content: "same" }] };
    expect((await client.chat.completions.create(body)).usage?.prompt_tokens_details).toBeUndefined();
    expect((await client.chat.completions.create(body)).usage?.prompt_tokens_details).toEqual({
      cached_tokens: 3,
    });
  });

  it("a refused request does not enter the cache", async () => {
    server = await startServer({
      prefixCache: true,
      personality: "openai",
      replies: () => ({ content: "x" }),
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const body = { model: "gpt-4o", messages: [{ role: "user" as const, content: "same words here" }] };
    await expect(client.chat.completions.create({ ...body, bogus: 1 } as never)).rejects.toThrow(
      OpenAI.BadRequestError,
    );
    expect((await client.chat.completions.create(body)).usage?.prompt_tokens_details?.cached_tokens).toBe(0);
  });
});
