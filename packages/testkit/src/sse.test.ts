import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { countTokens, renderPrompt } from "./prefix-cache.js";
import type { Reply } from "./replies.js";
import { startServer, type TestServer } from "./server.js";
import { splitChars, splitFrames } from "./sse.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const body = { model: "sim", messages: [{ role: "user", content: "hi" }], stream: true };

/** Posts a streamed request and returns every `data:` payload, parsed (except `[DONE]`). */
async function streamData(reply: Reply, extra: Record<string, unknown> = {}): Promise<unknown[]> {
  server = await startServer({ replies: [reply] });
  const res = await fetch(`${server.baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...body, ...extra }),
  });
  expect(res.headers.get("content-type")).toBe("text/event-stream");
  const text = await res.text();
  return text
    .split("\n\n")
    .filter((f) => f.startsWith("data: "))
    .map((f) => f.slice(6))
    .map((d) => (d === "[DONE]" ? d : JSON.parse(d)));
}

type Chunk = {
  choices: {
    delta: Record<string, unknown> & { tool_calls?: Record<string, unknown>[] };
    finish_reason: string | null;
  }[];
  usage?: Record<string, unknown>;
};

function deltas(data: unknown[]): Chunk["choices"][number]["delta"][] {
  return data
    .filter((d): d is Chunk => d !== "[DONE]" && (d as Chunk).choices.length > 0)
    .map((d) => d.choices[0]!.delta);
}

describe("streamed turns", () => {
  it("opens with a content-free role chunk and ends with [DONE]", async () => {
    const data = await streamData({ content: "hello" });
    expect(deltas(data)[0]).toEqual({ role: "assistant", content: "" });
    expect(data.at(-1)).toBe("[DONE]");
  });

  it("leaves out the role chunk and [DONE] when asked", async () => {
    const data = await streamData({ content: "hello", roleChunk: false, noDone: true });
    expect(deltas(data)[0]).toEqual({ content: "hello" });
    expect(data).not.toContain("[DONE]");
  });

  it("splits a tool call's name and arguments over many deltas with the id only in the first", async () => {
    const args = JSON.stringify({ path: "src/index.ts", lines: [1, 20] });
    const data = await streamData({
      toolCalls: [{ id: "call_A", name: "read_file_contents", arguments: args }],
      chunkChars: 5,
    });
    const calls = deltas(data).flatMap((d) => d.tool_calls ?? []);
    expect(calls.length).toBeGreaterThan(5);
    expect(calls[0]).toMatchObject({ index: 0, id: "call_A", type: "function", function: { name: "read_" } });
    expect(calls.slice(1).every((c) => !("id" in c) && !("type" in c))).toBe(true);
    const fn = calls.map((c) => c.function as { name?: string; arguments?: string });
    expect(fn.map((f) => f.name ?? "").join("")).toBe("read_file_contents");
    expect(fn.map((f) => f.arguments ?? "").join("")).toBe(args);
    const finish = data.find((d) => d !== "[DONE]" && (d as Chunk).choices[0]?.finish_reason) as Chunk;
    expect(finish.choices[0]?.finish_reason).toBe("tool_calls");
  });

  it("sends parallel tool calls one after another, or interleaved when asked", async () => {
    const toolCalls = [
      { name: "clock", arguments: '{"zone":"UTC"}' },
      { name: "calculator", arguments: '{"expression":"2+2"}' },
    ];
    const sequential = deltas(await streamData({ toolCalls, chunkChars: 4 }))
      .flatMap((d) => d.tool_calls ?? [])
      .map((c) => c.index);
    expect(sequential).toEqual([...sequential].sort());
    await server?.close();
    const mixed = deltas(await streamData({ toolCalls, chunkChars: 4, interleave: true }))
      .flatMap((d) => d.tool_calls ?? [])
      .map((c) => c.index);
    expect(mixed.slice(0, 4)).toEqual([0, 1, 0, 1]);
  });

  it("the openai client reassembles interleaved parallel calls with the default ids", async () => {
    // splitNames: false, because openai-node's stream helper overwrites (does not concatenate)
    // name pieces, so a split name would not survive it.
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { name: "clock", arguments: "{}" },
            { name: "calculator", arguments: '{"expression":"6*7"}' },
          ],
          interleave: true,
          chunkChars: 2,
          splitNames: false,
        },
      ],
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const final = await client.chat.completions
      .stream({ model: "sim", messages: [{ role: "user", content: "x" }] })
      .finalChatCompletion();
    const calls = final.choices[0]?.message.tool_calls ?? [];
    expect(
      calls.map((c) => (c.type === "function" ? [c.id, c.function.name, c.function.arguments] : [])),
    ).toEqual([
      ["call_sim1_0", "clock", "{}"],
      ["call_sim1_1", "calculator", '{"expression":"6*7"}'],
    ]);
  });

  it.each([
    ["reasoning_content", "reasoning_content"],
    ["reasoning", "reasoning"],
  ] as const)("streams reasoning in the %s field before the content", async (as, field) => {
    const d = deltas(
      await streamData({ reasoning: "think hard", content: "answer", reasoningAs: as, chunkChars: 4 }),
    );
    const reasoning = d.map((x) => x[field] ?? "").join("");
    expect(reasoning).toBe("think hard");
    const firstContent = d.findIndex((x) => typeof x.content === "string" && x.content !== "");
    const lastReasoning = d.findLastIndex((x) => x[field] !== undefined);
    expect(lastReasoning).toBeLessThan(firstContent);
  });

  it("fences reasoning in <think> tags inside the content when asked", async () => {
    const d = deltas(await streamData({ reasoning: "hmm", content: "ok", reasoningAs: "fence" }));
    expect(d.map((x) => x.content ?? "").join("")).toBe("<think>hmm</think>ok");
    expect(d.some((x) => "reasoning_content" in x)).toBe(false);
  });

  it("reports finish_reason length", async () => {
    const data = await streamData({ content: "cut off", finishReason: "length" });
    const reasons = data.filter((d) => d !== "[DONE]").map((d) => (d as Chunk).choices[0]?.finish_reason);
    expect(reasons.filter(Boolean)).toEqual(["length"]);
  });

  it("sends no finish_reason at all when it is null", async () => {
    const data = await streamData({ content: "x", finishReason: null });
    expect(data.filter((d) => d !== "[DONE]").every((d) => !(d as Chunk).choices[0]?.finish_reason)).toBe(
      true,
    );
  });

  it("ends with a usage chunk computed from the prompt and the reply when none is scripted", async () => {
    const data = await streamData({ content: "two words" });
    const last = data.at(-2) as Chunk;
    expect(last.choices).toEqual([]);
    const prompt = countTokens(renderPrompt(body));
    expect(last.usage).toEqual({ prompt_tokens: prompt, completion_tokens: 3, total_tokens: prompt + 3 });
  });

  it("reports scripted usage with cached and reasoning tokens", async () => {
    const data = await streamData({
      content: "x",
      usage: { prompt_tokens: 100, completion_tokens: 20, cached_tokens: 64, reasoning_tokens: 12 },
    });
    expect((data.at(-2) as Chunk).usage).toEqual({
      prompt_tokens: 100,
      completion_tokens: 20,
      total_tokens: 120,
      prompt_tokens_details: { cached_tokens: 64 },
      completion_tokens_details: { reasoning_tokens: 12 },
    });
  });

  it("computes no number that contradicts a scripted one: cached ≤ prompt, reasoning ≤ completion", async () => {
    // The prompt ("hi") is a few tokens: a scripted cached count raises the computed prompt count.
    const cached = (await streamData({ content: "x", usage: { cached_tokens: 500 } })).at(-2) as Chunk;
    expect(cached.usage).toMatchObject({ prompt_tokens: 500, prompt_tokens_details: { cached_tokens: 500 } });
    await server?.close();
    const reasoning = (await streamData({ content: "x", usage: { reasoning_tokens: 50 } })).at(-2) as Chunk;
    expect(reasoning.usage).toMatchObject({
      completion_tokens: 50,
      completion_tokens_details: { reasoning_tokens: 50 },
    });
    await server?.close();
    // A scripted completion count caps the reasoning count computed from the reasoning text.
    const capped = (
      await streamData({
        reasoning: "many words of reasoning here",
        content: "x",
        usage: { completion_tokens: 2 },
      })
    ).at(-2) as Chunk;
    expect(capped.usage).toMatchObject({
      completion_tokens: 2,
      completion_tokens_details: { reasoning_tokens: 2 },
    });
  });

  it("caps the prefix cache's count at a scripted prompt count", async () => {
    const ask = {
      model: "sim",
      messages: [{ role: "user" as const, content: "the same question, asked twice" }],
    };
    server = await startServer({
      prefixCache: true,
      replies: [{ content: "x" }, { content: "y", usage: { prompt_tokens: 2 } }],
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const first = await client.chat.completions.create(ask);
    expect(first.usage?.prompt_tokens).toBeGreaterThan(2);
    const second = await client.chat.completions.create(ask);
    expect(second.usage).toMatchObject({ prompt_tokens: 2, prompt_tokens_details: { cached_tokens: 2 } });
  });

  it("sends no usage when usage is false", async () => {
    const data = await streamData({ content: "x", usage: false });
    expect(data.some((d) => d !== "[DONE]" && (d as Chunk).usage)).toBe(false);
  });

  it("sends an error line mid-stream that the openai client throws", async () => {
    server = await startServer({
      replies: [
        {
          content: "partial answer",
          chunkChars: 2,
          errorMidStream: { afterChunk: 3, error: { message: "boom" } },
        },
      ],
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const seen: string[] = [];
    const run = async () => {
      const stream = await client.chat.completions.create({ model: "sim", messages: [], stream: true });
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? "");
    };
    await expect(run()).rejects.toThrow(/boom/);
    // chunk 1 is the role opener, chunks 2 and 3 carry "pa" and "rt"
    expect(seen.join("")).toBe("part");
  });
});

describe("plain completions", () => {
  it("carry reasoning, tool calls, finish reason and usage in one body", async () => {
    server = await startServer({
      replies: [
        {
          reasoning: "r",
          content: "c",
          toolCalls: [{ id: "t1", name: "clock", arguments: "{}" }],
          usage: { prompt_tokens: 5, completion_tokens: 2, cached_tokens: 0 },
        },
      ],
    });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [] }),
    });
    const json = (await res.json()) as { choices: unknown[]; usage: unknown; model: string };
    expect(json.choices[0]).toMatchObject({
      message: {
        role: "assistant",
        content: "c",
        reasoning_content: "r",
        tool_calls: [{ id: "t1", type: "function", function: { name: "clock", arguments: "{}" } }],
      },
      finish_reason: "tool_calls",
    });
    expect(json.usage).toMatchObject({
      prompt_tokens: 5,
      completion_tokens: 2,
      prompt_tokens_details: { cached_tokens: 0 },
    });
    expect(json.model).toBe("m");
  });
});

describe("splitting", () => {
  it("splitChars pieces join back to the text and respect the size", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.integer({ min: 1, max: 20 }), (text, size) => {
        const pieces = splitChars(text, size);
        expect(pieces.join("")).toBe(text);
        for (const p of pieces) expect(Array.from(p).length).toBeLessThanOrEqual(size);
      }),
    );
  });

  it("splitFrames keeps every byte and cuts only after blank lines", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom("data: x", "\n", "\r\n", "é", ":c", "{}")), (parts) => {
        const bytes = new TextEncoder().encode(parts.join(""));
        const frames = splitFrames(bytes);
        expect(Buffer.concat(frames)).toEqual(Buffer.from(bytes));
        for (const f of frames.slice(0, -1))
          expect(Buffer.from(f).toString()).toMatch(/(\r\n|\n|\r)(\r\n|\n|\r)$/);
      }),
    );
  });

  it("splitFrames gives back the same frames whether the server ends its lines with LF, CRLF or a lone CR", () => {
    const line = fc.stringMatching(/^[^\r\n]+$/);
    const frame = fc.record({
      lines: fc.array(line, { minLength: 1, maxLength: 4 }),
      ending: fc.constantFrom("\n", "\r\n", "\r"),
    });
    fc.assert(
      fc.property(fc.array(frame, { maxLength: 6 }), (frames) => {
        const texts = frames.map(({ lines, ending }) => lines.join(ending) + ending + ending);
        const split = splitFrames(new TextEncoder().encode(texts.join("")));
        expect(split.map((f) => new TextDecoder().decode(f))).toEqual(texts);
      }),
      propertyRuns(100, {
        examples: [
          [
            [
              { lines: ["data: {}"], ending: "\r" },
              { lines: ["data: [DONE]"], ending: "\r" },
            ],
          ],
        ],
      }),
    );
  });
});

describe("round trip", () => {
  it("any scripted turn streams back through the openai client exactly, at any chunk size", async () => {
    server = await startServer();
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    await fc.assert(
      fc.asyncProperty(
        fc.string(),
        fc.array(fc.record({ name: fc.stringMatching(/^[a-z_]{1,12}$/), arguments: fc.json() }), {
          maxLength: 3,
        }),
        fc.integer({ min: 1, max: 12 }),
        fc.boolean(),
        async (content, toolCalls, chunkChars, interleave) => {
          server?.enqueue({ content, toolCalls, chunkChars, interleave, splitNames: false });
          const final = await client.chat.completions
            .stream({ model: "sim", messages: [{ role: "user", content: "x" }] })
            .finalChatCompletion();
          const message = final.choices[0]?.message;
          expect(message?.content ?? "").toBe(content);
          const calls = (message?.tool_calls ?? []).map((c) =>
            c.type === "function" ? { name: c.function.name, arguments: c.function.arguments } : {},
          );
          expect(calls).toEqual(toolCalls);
        },
      ),
      propertyRuns(40),
    );
  });
});
