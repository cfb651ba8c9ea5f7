import fc from "fast-check";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { llamacppPersonality } from "./personalities/llamacpp.js";
import { countTokens, renderPrompt } from "./prefix-cache.js";
import { startServer, type TestServer } from "./server.js";
import { limitTurn } from "./token-budget.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const generated = (t: {
  reasoning?: string;
  content?: string;
  toolCalls?: { name: string; arguments: string }[];
}) =>
  countTokens((t.reasoning ?? "") + (t.content ?? "")) +
  (t.toolCalls ?? []).reduce((n, c) => n + countTokens(c.name) + countTokens(c.arguments), 0);

describe("limitTurn", () => {
  it("leaves a turn that fits untouched", () => {
    const turn = { content: "three small words" };
    expect(limitTurn(turn, 5)).toBe(turn);
  });

  it("cuts content at a token boundary and reports length", () => {
    expect(limitTurn({ content: "one two three four" }, 3)).toEqual({
      content: "one two",
      finishReason: "length",
    });
  });

  it("spends the budget on reasoning first, then content", () => {
    expect(limitTurn({ reasoning: "a b c", content: "d e" }, 4)).toEqual({
      reasoning: "a b ",
      content: "",
      finishReason: "length",
    });
  });

  it("keeps partial arguments of a tool call cut mid-way and drops the calls after it", () => {
    const turn = {
      toolCalls: [
        { name: "calc", arguments: '{"expression":"1+2"}' },
        { name: "clock", arguments: "{}" },
      ],
    };
    expect(limitTurn(turn, 6)).toEqual({
      toolCalls: [{ name: "calc", arguments: '{"expression":' }],
      finishReason: "length",
    });
  });

  it("never generates more tokens than the budget", () => {
    fc.assert(
      fc.property(
        fc.record({
          reasoning: fc.option(fc.string(), { nil: undefined }),
          content: fc.option(fc.string(), { nil: undefined }),
        }),
        fc.array(fc.record({ name: fc.stringMatching(/^[a-z_]{1,8}$/), arguments: fc.json() }), {
          maxLength: 3,
        }),
        fc.nat(40),
        (text, toolCalls, budget) => {
          const turn = { ...text, toolCalls };
          const limited = limitTurn(turn, budget);
          expect(generated(limited)).toBeLessThanOrEqual(budget);
          if (limited !== turn) expect(limited.finishReason).toBe("length");
          else expect(generated(turn)).toBeLessThanOrEqual(budget);
        },
      ),
    );
  });
});

describe("personalities honour the completion budget", () => {
  it("openai cuts a scripted reply at max_completion_tokens with finish_reason length", async () => {
    server = await startServer({
      personality: "openai",
      replies: () => ({ content: "one two three four five" }),
    });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const c = await client.chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "count" }],
      max_completion_tokens: 5,
    });
    expect(c.choices[0]?.message.content).toBe("one two three");
    expect(c.choices[0]?.finish_reason).toBe("length");
    expect(c.usage?.completion_tokens).toBe(5);
  });

  it("llamacpp stops with length when the context fills up, as in the near-limit capture", async () => {
    server = await startServer({
      personality: llamacppPersonality({ nCtx: 40 }),
      replies: () => ({ content: "word ".repeat(50) }),
    });
    const body = { model: "tiny", messages: [{ role: "user" as const, content: "hello ".repeat(10) }] };
    const prompt = countTokens(renderPrompt(body));
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const c = await client.chat.completions.create(body);
    expect(c.choices[0]?.finish_reason).toBe("length");
    expect(c.usage?.completion_tokens).toBe(40 - prompt);
    expect((c.usage?.prompt_tokens ?? 0) + (c.usage?.completion_tokens ?? 0)).toBe(40);
  });

  it("without a personality the script decides and max_tokens is not applied", async () => {
    server = await startServer({ replies: () => ({ content: "one two three four five" }) });
    const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "k", maxRetries: 0 });
    const c = await client.chat.completions.create({ model: "m", messages: [], max_tokens: 1 });
    expect(c.choices[0]?.finish_reason).toBe("stop");
  });
});
