// ContextOverflow.window and .promptTokens: the window and the prompt an endpoint's refusal names,
// read off the real client's error for each recorded wording (over HTTP to the testkit), and off
// the testkit personalities' own overflow refusals.
import { createClientPool } from "@loopwright/client";
import { readFixture, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { fixtureError, rejection } from "../test/wire.js";
import { ContextOverflow } from "./errors.js";
import { isOverflow } from "./retry.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const LONG = "word ".repeat(400);

/** The project's client, which keeps a body the bare SDK drops (vLLM's top-level error object). */
const clientFor = (baseUrl: string) => createClientPool().getClient({ baseUrl });

async function refusal(reply: unknown, maxTokens?: number): Promise<unknown> {
  server ??= await startServer();
  server.enqueue(reply as never);
  return rejection(
    clientFor(server.baseUrl).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: LONG }],
      ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
    }),
  );
}

async function personalityRefusal(
  personality: Record<string, unknown>,
  maxTokens?: number,
): Promise<unknown> {
  await server?.close();
  server = await startServer({ personality: personality as never, replies: () => ({ content: "ok" }) });
  return rejection(
    clientFor(server.baseUrl).chat.completions.create({
      model: "m",
      messages: [{ role: "user", content: LONG }],
      ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
    }),
  );
}

describe("ContextOverflow.fromError reads the window and the prompt the refusal names", () => {
  it.each([
    ["llamacpp/exceed-context-size-new-format-8708-of-8192.json", 400, 8192, 8708],
    ["llamacpp/exceed-context-size-code-500-pr15780.json", 500, 256, 1407],
    ["openai/context-length-exceeded-messages-resulted-in.json", 400, 4097, 4294],
    ["openai/context-length-exceeded-requested-with-completion.json", 400, 4096, 3130],
    // The functions count toward the prompt: the whole request less its completion.
    ["openai/context-length-exceeded-messages-functions-completion.json", 400, 8192, 7413],
    ["vllm/context-length-legacy-top-level-object-error.json", 400, 6048, 568],
  ])("%s", async (file, status, window, prompt) => {
    const error = await refusal(fixtureError(file, status));
    expect(isOverflow(error)).toBe(true);
    const overflow = ContextOverflow.fromError(error);
    expect(overflow.window).toBe(window);
    expect(overflow.promptTokens).toBe(prompt);
  });

  it("reads LM Studio's and OpenRouter's wordings", async () => {
    const text = readFixture("errors/lmstudio/context-overflow-error-string.jsobject.txt");
    const words = /error: '([^']*)'/.exec(text)?.[1] ?? "";
    const lmstudio = ContextOverflow.fromError(
      await refusal({ type: "error", status: 400, body: { error: words } }),
    );
    expect([lmstudio.window, lmstudio.promptTokens]).toEqual([2048, 14538]);
    const said = readFixture(
      "errors/openrouter/context-length-requested-about-middle-out.message.txt",
    ).trim();
    const openrouter = ContextOverflow.fromError(
      await refusal({ type: "error", status: 400, body: { error: { message: said, code: 400 } } }),
    );
    expect([openrouter.window, openrouter.promptTokens]).toEqual([131072, 7884]);
  });

  it("reads the testkit personalities' refusals: llama.cpp's n_ctx, vLLM's (both formats) and OpenAI's", async () => {
    const llama = ContextOverflow.fromError(await personalityRefusal({ name: "llamacpp", nCtx: 300 }));
    expect(llama.window).toBe(300);
    expect(llama.promptTokens).toBeGreaterThanOrEqual(300);
    expect(llama.serverMessage).toMatch(/available context size \(300 tokens\)/);
    const vllm = ContextOverflow.fromError(
      await personalityRefusal({ name: "vllm", maxModelLen: 300, errorFormat: "nested" }, 100),
    );
    expect(vllm.window).toBe(300);
    expect(vllm.promptTokens).toBeGreaterThan(200);
    const legacy = ContextOverflow.fromError(await personalityRefusal({ name: "vllm", maxModelLen: 300 }));
    expect(legacy.window).toBe(300);
    const openai = ContextOverflow.fromError(
      await personalityRefusal({ name: "openai", contextWindow: 300 }),
    );
    expect(openai.window).toBe(300);
    expect(openai.promptTokens).toBeGreaterThan(300);
  });

  // Real wordings (the sources are in retry-wordings.test.ts), each holding several numbers: only the
  // window is read as the window, and only the prompt as the prompt.
  it.each<[string, unknown, number | undefined, number | undefined]>([
    [
      "vLLM V1: decoder prompt (length N) longer than the maximum model length of M",
      {
        object: "error",
        message:
          "The decoder prompt (length 10127) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens.",
        type: "BadRequestError",
        param: null,
        code: 400,
      },
      8192,
      10127,
    ],
    [
      "vLLM V1: prompt length of N longer than the maximum model length of M",
      { error: { message: "Prompt length of 5016 is longer than the maximum model length of 4096." } },
      4096,
      5016,
    ],
    [
      "vLLM: prompt (total length N) too long to fit into the model (context length M)",
      {
        error: {
          message:
            "The prompt (total length 25938) is too long to fit into the model (context length 4096). Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens.",
        },
      },
      4096,
      25938,
    ],
    [
      "vLLM scheduler: input prompt (N tokens) exceeds limit of M",
      { error: { message: "Input prompt (35247 tokens) is too long and exceeds limit of 1000" } },
      1000,
      35247,
    ],
    [
      "SGLang: the input (N tokens) longer than the model's context length (M tokens)",
      {
        error: {
          message: "The input (61709 tokens) is longer than the model's context length (40960 tokens).",
        },
      },
      40960,
      61709,
    ],
    [
      "Mistral: prompt contains N tokens and 0 draft tokens, too large for model with M maximum context length",
      {
        error: {
          message:
            "Prompt contains 152960 tokens and 0 draft tokens, too large for model with 131072 maximum context length",
        },
      },
      131072,
      152960,
    ],
    [
      "TGI (Hugging Face): inputs + max_new_tokens must be <= M, given N inputs tokens and K max_new_tokens",
      {
        error: {
          message:
            "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 65537. Given: 79993 `inputs` tokens and 1024 `max_new_tokens`",
        },
      },
      65537,
      79993,
    ],
    [
      "Together (TGI): the same wording, the prompt under the window",
      {
        error: {
          message: readFixture("errors/together/tgi-input-validation-context.message.txt").trim(),
        },
      },
      2048,
      2019,
    ],
    [
      // n_keep is the part of the prompt kept when truncating, not the prompt: only n_ctx is read.
      "LM Studio: cannot truncate prompt with n_keep (N) >= n_ctx (M)",
      {
        error: {
          message: readFixture("errors/lmstudio/cannot-truncate-prompt-n-keep-ge-n-ctx.message.txt").trim(),
        },
      },
      7424,
      undefined,
    ],
    [
      // The current length may count the reply asked for too: it is not read as the prompt.
      "Cerebras: current length is N while limit is M",
      {
        error: {
          message:
            "Please reduce the length of the messages or completion. Current length is 42328 while limit is 40000",
        },
      },
      40000,
      undefined,
    ],
    [
      // A limit on the input alone is not the window.
      "Azure OpenAI: input tokens exceed the configured limit",
      {
        error: {
          message:
            "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 509178 tokens. Please reduce the length of the messages.",
        },
      },
      undefined,
      509178,
    ],
    [
      "GitHub Copilot: prompt token count exceeds the limit",
      { error: { message: "prompt token count of 93854 exceeds the limit of 90000" } },
      undefined,
      undefined,
    ],
  ])("%s", async (_name, body, window, prompt) => {
    const error = await refusal({ type: "error", status: 400, body });
    expect(isOverflow(error)).toBe(true);
    const overflow = ContextOverflow.fromError(error);
    expect(overflow.window).toBe(window);
    expect(overflow.promptTokens).toBe(prompt);
  });

  it("leaves both unset where the refusal names no number, and a ContextOverflow made by hand keeps what it is given", async () => {
    const ollama = ContextOverflow.fromError(
      await refusal({
        type: "error",
        status: 400,
        body: { error: { message: "prompt too long; exceeded max context length by 4 tokens" } },
      }),
    );
    expect(ollama.window).toBeUndefined();
    expect(ollama.promptTokens).toBeUndefined();
    expect("window" in ollama).toBe(false);
    const made = new ContextOverflow("too big", { window: 1024, promptTokens: 1100 });
    expect([made.window, made.promptTokens]).toEqual([1024, 1100]);
    // Nothing that is not a count of tokens is kept.
    const odd = new ContextOverflow("too big", { window: -3, promptTokens: Number.NaN });
    expect([odd.window, odd.promptTokens]).toEqual([undefined, undefined]);
  });
});
