/**
 * Review r83e: a request with `n: 2` was answered with one choice, by the openai personality and
 * without one; OpenAI answers n choices (`index` 0..n-1), streamed and not. The testkit now does
 * (also the vllm personality), each choice the same scripted turn.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import type { PersonalitySpec } from "./personalities/resolve.js";
import type { Reply } from "./replies.js";
import { startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function clientFor(reply: Reply, personality?: PersonalitySpec): Promise<OpenAI> {
  server = await startServer({ replies: () => reply, ...(personality ? { personality } : {}) });
  return new OpenAI({ baseURL: server.baseUrl, apiKey: "test", maxRetries: 0 });
}

const ask = { model: "gpt-4o", messages: [{ role: "user" as const, content: "hi" }] };
const lookup = { toolCalls: [{ name: "lookup", arguments: '{"q":"x"}' }], chunkChars: 4 } satisfies Reply;

describe("r83-2: n choices", () => {
  for (const personality of ["openai", "vllm", undefined] as const) {
    it(`answers n: 3 with three choices, index 0..2, not streamed (${personality ?? "no personality"})`, async () => {
      const client = await clientFor({ content: "It is noon.", usage: { prompt_tokens: 9 } }, personality);
      const one = await client.chat.completions.create({ ...ask });
      const three = await client.chat.completions.create({ ...ask, n: 3 });
      expect(three.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([
        [0, "It is noon.", "stop"],
        [1, "It is noon.", "stop"],
        [2, "It is noon.", "stop"],
      ]);
      // Every choice was generated: three times the completion tokens.
      expect(three.usage?.completion_tokens).toBe(3 * (one.usage?.completion_tokens ?? 0));
      expect(one.choices).toHaveLength(1);
    });
  }

  it("streams n choices, each chunk one choice, each ending with its finish reason; usage once, last", async () => {
    const client = await clientFor(lookup, "openai");
    const stream = await client.chat.completions.create({
      ...ask,
      n: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const calls: Record<number, { id: string; name: string; arguments: string }> = {};
    const finishes: Record<number, string | null> = {};
    const usageAt: number[] = [];
    let count = 0;
    for await (const chunk of stream) {
      count++;
      if (chunk.usage) usageAt.push(count);
      expect(chunk.choices.length).toBeLessThanOrEqual(1);
      for (const choice of chunk.choices) {
        for (const d of choice.delta.tool_calls ?? []) {
          const call = calls[choice.index] ?? { id: "", name: "", arguments: "" };
          calls[choice.index] = call;
          call.id += d.id ?? "";
          call.name += d.function?.name ?? "";
          call.arguments += d.function?.arguments ?? "";
        }
        if (choice.finish_reason) finishes[choice.index] = choice.finish_reason;
      }
    }
    expect(finishes).toEqual({ 0: "tool_calls", 1: "tool_calls" });
    expect(calls[0]).toMatchObject({ name: "lookup", arguments: '{"q":"x"}' });
    expect(calls[1]).toMatchObject({ name: "lookup", arguments: '{"q":"x"}' });
    // Each choice's call has its own id, as OpenAI's do.
    expect(calls[0]?.id).not.toBe(calls[1]?.id);
    expect(usageAt).toEqual([count]);
  });

  it("the stream helper's final completion has both choices", async () => {
    const client = await clientFor({ content: "Hello there, friend." }, "openai");
    const done = await client.chat.completions.stream({ ...ask, n: 2 }).finalChatCompletion();
    expect(done.choices.map((c) => [c.index, c.message.content])).toEqual([
      [0, "Hello there, friend."],
      [1, "Hello there, friend."],
    ]);
  });

  it("takes n from 1 to 128: absent, null, 0, 2.5 or '2' is one choice, more than 128 is 128", async () => {
    const client = await clientFor({ content: "x", usage: false });
    const count = async (n: unknown) =>
      (await client.chat.completions.create({ ...ask, n } as unknown as typeof ask)).choices.length;
    expect(await count(null)).toBe(1);
    expect(await count(0)).toBe(1);
    expect(await count(2.5)).toBe(1);
    expect(await count("2")).toBe(1);
    expect(await count(2)).toBe(2);
    expect(await count(1_000_000)).toBe(128);
  });
});
