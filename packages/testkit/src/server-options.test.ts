/**
 * Options and replies the server cannot honour are refused up front, naming what was wrong: a bad
 * personality or scripted-model option before anything listens, a bad reply from a reply function
 * as a 500 that names the field (never a cut connection or a stream of nulls). Every documented
 * form keeps working, and a delay too long for one timer is still waited for.
 */
import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { TestkitError } from "./errors.js";
import { llamacppPersonality } from "./personalities/llamacpp.js";
import { openaiPersonality } from "./personalities/openai.js";
import type { Reply } from "./replies.js";
import { type ServerOptions, startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const chatBody = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] });

/** Posts a chat request with a time cap; the status and text, or the fetch error's name. */
async function post(s: TestServer, capMs = 5000): Promise<{ status: number; text: string } | string> {
  try {
    const res = await fetch(`${s.baseUrl}/chat/completions`, {
      method: "POST",
      body: chatBody,
      headers: { "content-type": "application/json" },
      signal: AbortSignal.timeout(capMs),
    });
    return { status: res.status, text: await res.text() };
  } catch (error) {
    return (error as Error).name;
  }
}

/** A port nothing listens on right now. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** The error `startServer(options)` rejects with (fails the test when it starts). */
async function refusal(options: ServerOptions): Promise<TestkitError> {
  const error = await startServer(options).then(
    async (started) => {
      await started.close();
      return undefined;
    },
    (e: unknown) => e,
  );
  if (!TestkitError.isInstance(error)) throw new Error(`startServer accepted ${String(options)}`);
  return error;
}

describe("startServer refuses options it cannot honour, before listening", () => {
  it.each<[string, ServerOptions, RegExp]>([
    [
      "llamacpp nCtx -5",
      { personality: { name: "llamacpp", nCtx: -5 } },
      /llamacpp personality option nCtx must be a whole number of at least 1, got -5/,
    ],
    ["llamacpp nCtx NaN", { personality: { name: "llamacpp", nCtx: Number.NaN } }, /option nCtx .*got NaN/],
    [
      "llamacpp nCtx 2048.5",
      { personality: { name: "llamacpp", nCtx: 2048.5 } },
      /option nCtx .*got 2048\.5/,
    ],
    [
      "llamacpp loadingMs -1",
      { personality: { name: "llamacpp", loadingMs: -1 } },
      /option loadingMs must be a number of milliseconds, 0 or more/,
    ],
    [
      "llamacpp jinja as text",
      { personality: { name: "llamacpp", jinja: "no" as never } },
      /option jinja must be true or false, got "no"/,
    ],
    [
      "llamacpp an empty model",
      { personality: { name: "llamacpp", model: "" } },
      /option model must be a non-empty string/,
    ],
    [
      "a misspelt llamacpp option",
      { personality: { name: "llamacpp", nctx: 5 } as never },
      /llamacpp personality has no option "nctx"; its options are nCtx, loadingMs/,
    ],
    [
      "openai reasoningModels as text",
      { personality: { name: "openai", reasoningModels: "gpt" as never } },
      /openai personality option reasoningModels must be a RegExp, got "gpt"/,
    ],
    [
      "openai contextWindow 0",
      { personality: { name: "openai", contextWindow: 0 } },
      /option contextWindow .*got 0/,
    ],
    [
      "openai models as one string",
      { personality: { name: "openai", models: "gpt-4o" as never } },
      /option models must be an array of strings/,
    ],
    [
      "vllm maxModelLen 0",
      { personality: { name: "vllm", maxModelLen: 0 } },
      /vllm personality option maxModelLen .*got 0/,
    ],
    [
      "vllm errorFormat flat",
      { personality: { name: "vllm", errorFormat: "flat" as never } },
      /option errorFormat must be "legacy" or "nested", got "flat"/,
    ],
    [
      "lmstudio contextLength -1",
      { personality: { name: "lmstudio", contextLength: -1 } },
      /lmstudio personality option contextLength .*got -1/,
    ],
    [
      "mistral refuseStreamOptions 1",
      { personality: { name: "mistral", refuseStreamOptions: 1 as never } },
      /mistral personality option refuseStreamOptions must be true or false/,
    ],
    [
      "prefixCache as text",
      { prefixCache: "yes" as never },
      /startServer: prefixCache must be true or false, got "yes"/,
    ],
    [
      "scriptedModel chunkChars 0",
      { scriptedModel: { chunkChars: 0 } },
      /scriptedModel option chunkChars must be a whole number of at least 1, got 0/,
    ],
    [
      "scriptedModel chunkDelayMs -1",
      { scriptedModel: { chunkDelayMs: -1 } },
      /scriptedModel option chunkDelayMs must be a finite number/,
    ],
    [
      "scriptedModel with an unknown option",
      { scriptedModel: { delayMs: 0 } as never },
      /scriptedModel has no option "delayMs"/,
    ],
    ["scriptedModel as text", { scriptedModel: "yes" as never }, /scriptedModel must be true, false or/],
  ])(
    "%s: a TestkitError invalid-option naming it, and nothing left listening",
    async (_label, options, message) => {
      const port = await freePort();
      const error = await refusal({ ...options, port });
      expect(error.code).toBe("invalid-option");
      expect(error.message).toMatch(message);
      // The port is still free: nothing was listening when the option was refused.
      server = await startServer({ port, replies: [{ content: "ok" }] });
      expect(await post(server)).toMatchObject({ status: 200 });
    },
  );

  it("refuses the same bad option given to the personality's factory", () => {
    expect(() => llamacppPersonality({ nCtx: -5 })).toThrow(/llamacpp personality option nCtx/);
    expect(() => openaiPersonality({ reasoningModels: "gpt" as never })).toThrow(TestkitError);
  });

  it("keeps every documented form working: names, names with options, factories, defaults left undefined", async () => {
    const forms: ServerOptions[] = [
      { personality: "llamacpp" },
      {
        personality: {
          name: "llamacpp",
          nCtx: 2048,
          loadingMs: 0,
          model: "qwen.gguf",
          jinja: true,
          thinking: false,
        },
      },
      { personality: { name: "llamacpp", nCtx: undefined } },
      { personality: llamacppPersonality({ nCtx: 2048 }) },
      {
        personality: {
          name: "openai",
          reasoningModels: /^o/,
          models: ["m"],
          contextWindow: 100,
          extraParams: [],
        },
      },
      { personality: { name: "vllm", maxModelLen: 100, errorFormat: "nested", autoToolChoice: false } },
      { personality: { name: "lmstudio", contextLength: 100, model: "m" } },
      { personality: { name: "mistral", refuseStreamOptions: false } },
      { prefixCache: true, scriptedModel: { chunkChars: 1000, chunkDelayMs: 0 } },
      { prefixCache: false, scriptedModel: true },
    ];
    for (const options of forms) {
      const s = await startServer({ replies: [{ content: "ok" }], ...options });
      try {
        const answer = await post(s);
        expect(answer, JSON.stringify(options)).toMatchObject({ status: 200 });
      } finally {
        await s.close();
      }
    }
  });

  it("reads null as the default for every option, as a config read back from JSON has it", async () => {
    const forms: ServerOptions[] = [
      { personality: null, prefixCache: null, scriptedModel: null },
      {
        personality: {
          name: "llamacpp",
          nCtx: null,
          loadingMs: null,
          model: null,
          jinja: null,
          thinking: null,
          legacyOverflow: null,
        },
      },
      {
        personality: {
          name: "openai",
          reasoningModels: null,
          reasoningEffortValues: null,
          extraParams: null,
          unknownParams: null,
          contextWindow: null,
          models: null,
        },
      },
      {
        personality: {
          name: "vllm",
          maxModelLen: null,
          model: null,
          autoToolChoice: null,
          errorFormat: null,
        },
      },
      { personality: { name: "lmstudio", contextLength: null, model: null } },
      { personality: { name: "mistral", refuseStreamOptions: null } },
      { scriptedModel: { chunkChars: null, chunkDelayMs: null } },
    ];
    for (const options of forms) {
      const s = await startServer({ replies: [{ content: "ok" }], ...options });
      try {
        expect(await post(s), JSON.stringify(options)).toMatchObject({ status: 200 });
      } finally {
        await s.close();
      }
    }
    // replies, props, lmstudio and port too: null is the default, never a body of null.
    const scripted = await startServer({ replies: null, scriptedModel: true, port: null });
    try {
      expect(await post(scripted)).toMatchObject({ status: 200 });
    } finally {
      await scripted.close();
    }
    for (const [personality, path, option] of [
      ["llamacpp", "/props", "props"],
      ["lmstudio", "/api/v0/models", "lmstudio"],
    ] as const) {
      const s = await startServer({ personality, [option]: null });
      try {
        const origin = s.baseUrl.replace(/\/v1$/, "");
        const given = await (await fetch(`${origin}${path}`)).json();
        expect(given, `${option}: null`).not.toBeNull();
        expect(given).toMatchObject(
          personality === "llamacpp" ? { default_generation_settings: {} } : { object: "list" },
        );
      } finally {
        await s.close();
      }
    }
    // The defaults, not nothing: a llamacpp window of null is 4096 tokens.
    server = await startServer({
      personality: { name: "llamacpp", nCtx: null },
      replies: [{ content: "ok" }],
    });
    const models = (await (await fetch(`${server.baseUrl}/models`)).json()) as {
      data: { meta?: { n_ctx?: number } }[];
    };
    expect(models.data[0]?.meta?.n_ctx).toBe(4096);
  });

  it("takes loadingMs: Infinity as loading for ever", async () => {
    server = await startServer({ personality: { name: "llamacpp", loadingMs: Number.POSITIVE_INFINITY } });
    expect(await post(server)).toMatchObject({ status: 503, text: expect.stringContaining("Loading model") });
  });
});

describe("a reply the server cannot send is refused, never sent malformed", () => {
  it.each<[string, Reply, RegExp]>([
    [
      "a raw chunk that is a number",
      { type: "raw", chunks: ["data: x\n\n", 5 as never] },
      /chunks\[1\] must be a string or a Uint8Array, got number 5/,
    ],
    [
      "NaN prompt tokens",
      { content: "hi", usage: { prompt_tokens: Number.NaN } },
      /usage\.prompt_tokens must be a whole number of at least 0, got NaN/,
    ],
    [
      "a tool-call id that is a number",
      { toolCalls: [{ id: 7 as never, name: "f", arguments: "{}" }] },
      /toolCalls\[0\]\.id must be a string when given, got number 7/,
    ],
    [
      "an endless first-byte delay",
      { content: "hi", firstByteDelayMs: Number.POSITIVE_INFINITY },
      /firstByteDelayMs must be a non-negative number/,
    ],
    [
      "more cached than prompt tokens",
      { content: "hi", usage: { prompt_tokens: 6, cached_tokens: 12 } },
      /usage\.cached_tokens \(12\) is more than usage\.prompt_tokens \(6\)/,
    ],
  ])(
    "%s from a reply function: a 500 naming the field, and the server keeps serving",
    async (_label, bad, message) => {
      server = await startServer({ replies: (_request, index) => (index === 0 ? bad : { content: "next" }) });
      const answer = await post(server);
      expect(answer).toMatchObject({ status: 500 });
      const { text } = answer as { text: string };
      expect((JSON.parse(text) as { error: { message: string } }).error.message).toMatch(message);
      expect(await post(server)).toMatchObject({ status: 200, text: expect.stringContaining("next") });
    },
  );

  it.each<[string, Reply]>([
    ["a raw chunk that is a number", { type: "raw", chunks: [5 as never] }],
    ["NaN prompt tokens", { content: "hi", usage: { prompt_tokens: Number.NaN } }],
    ["12 cached of 6 prompt tokens", { content: "hi", usage: { prompt_tokens: 6, cached_tokens: 12 } }],
    [
      "9 reasoning of 1 completion token",
      { content: "hi", usage: { completion_tokens: 1, reasoning_tokens: 9 } },
    ],
    ["a tool-call id that is a number", { toolCalls: [{ id: 7 as never, name: "f", arguments: "{}" }] }],
  ])("%s in the queue: startServer and enqueue throw invalid-reply", async (_label, bad) => {
    const error = await refusal({ replies: [bad] });
    expect(error.code).toBe("invalid-reply");
    server = await startServer();
    expect(() => server?.enqueue(bad)).toThrow(TestkitError);
    expect(server.pending).toBe(0);
  });
});

describe("misbehaviour a script may ask for on purpose", () => {
  it("sends a tool call with an empty name and id as given, for a model that names no tool", async () => {
    server = await startServer({ replies: [{ toolCalls: [{ id: "", name: "", arguments: "{}" }] }] });
    const answer = await post(server);
    expect(answer).toMatchObject({ status: 200 });
    const body = JSON.parse((answer as { text: string }).text) as {
      choices: { message: { tool_calls: { id: string; function: { name: string } }[] } }[];
    };
    expect(body.choices[0]?.message.tool_calls[0]).toMatchObject({ id: "", function: { name: "" } });
  });
});

describe("delays longer than one timer can hold", () => {
  it.each([
    ["1e12 ms", 1e12],
    ["2^31 ms, one past the timer limit", 2 ** 31],
  ])("a firstByteDelayMs of %s is not answered at once; close() still ends it", async (_label, delay) => {
    server = await startServer({ replies: [{ content: "hi", firstByteDelayMs: delay }] });
    expect(await post(server, 400)).toBe("TimeoutError");
    await server.close();
  });

  it("a chunkDelayMs past the timer limit holds the stream after its first chunk", async () => {
    server = await startServer({ replies: [{ content: "hello", chunkChars: 1, chunkDelayMs: 2 ** 31 + 5 }] });
    const res = await fetch(`${server.baseUrl}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [], stream: true }),
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"role":"assistant"');
    const second = await Promise.race([
      reader.read().then(() => "more"),
      new Promise((resolve) => setTimeout(() => resolve("held"), 300)),
    ]);
    expect(second).toBe("held");
    await server.close();
    await reader.cancel().catch(() => undefined);
  });
});
