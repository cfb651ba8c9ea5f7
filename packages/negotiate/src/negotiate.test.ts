import { type RecordedRequest, readFixture, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { clientFor, fixtureError, rejection, streamText } from "../test/wire.js";
import { createCapabilityStore, effortFor } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { buildBody, type ModelParams, type ToolDefinition } from "./request-body.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

const ok = { type: "turn", content: "fine" } as const;
const messages = [{ role: "user", content: "hi" }];
const bodies = (): Record<string, unknown>[] =>
  server.chatRequests.map((r: RecordedRequest) => r.body as Record<string, unknown>);

/** One turn the way a host writes it: negotiate around buildBody and a stream read over HTTP. */
function turn(
  store: ReturnType<typeof createCapabilityStore>,
  config: ModelParams,
  options: { tools?: ToolDefinition[]; droppable?: string[]; notices?: string[]; apiKey?: string } = {},
): Promise<string> {
  const supports = store.capabilitiesFor(server.baseUrl, options.apiKey ?? "sk-test");
  const client = clientFor(server.baseUrl);
  return negotiate(
    supports,
    (supports, produced, model) =>
      streamText(client, buildBody(config, supports, model, messages, options.tools ?? []), produced),
    {
      model: config.model,
      droppable: options.droppable ?? Object.keys(config.extraBody ?? {}),
      onNotice: (text) => options.notices?.push(text),
    },
  );
}

describe("model-level refusals latch per (endpoint, model)", () => {
  it("drops reasoning_effort for gpt-4o after its refusal, and gpt-5 on the same endpoint still gets it", async () => {
    const store = createCapabilityStore();
    const notices: string[] = [];
    server.enqueue(
      fixtureError("openai/unrecognized-argument-reasoning-effort-gpt-4o-mini.json", 400),
      ok,
      ok,
      ok,
    );

    await expect(turn(store, { model: "gpt-4o", reasoningEffort: "high" }, { notices })).resolves.toBe(
      "fine",
    );
    expect(bodies()[0]?.reasoning_effort).toBe("high");
    expect(bodies()[1]).not.toHaveProperty("reasoning_effort");
    expect(notices.join("\n")).toMatch(/gpt-4o does not take reasoning_effort/);

    await turn(store, { model: "gpt-5", reasoningEffort: "high" });
    expect(bodies()[2]?.reasoning_effort).toBe("high");
    // And gpt-4o is not asked again.
    await turn(store, { model: "gpt-4o", reasoningEffort: "high" });
    expect(bodies()[3]).not.toHaveProperty("reasoning_effort");
    expect(server.chatRequests).toHaveLength(4);
  });

  it("climbs from a refused 'none' to the cheapest listed rung and says it costs tokens", async () => {
    const store = createCapabilityStore();
    const notices: string[] = [];
    server.enqueue(fixtureError("moonshot/kimi-code-reasoning-effort-none-unsupported.json", 400), ok);
    await turn(store, { model: "kimi-for-coding", reasoningEffort: "none" }, { notices });
    expect(bodies().map((b) => b.reasoning_effort)).toEqual(["none", "minimal"]);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/"none".*"minimal".*reasoning tokens/);
  });

  it("skips rungs the refusal did not list (codex: none → low, never minimal)", async () => {
    const store = createCapabilityStore();
    server.enqueue(
      fixtureError("openai/reasoning-effort-none-unsupported-gpt-5.1-codex-responses.json", 400),
      ok,
    );
    await turn(store, { model: "gpt-5.1-codex", reasoningEffort: "none" });
    expect(bodies().map((b) => b.reasoning_effort)).toEqual(["none", "low"]);
    const model = store.modelCapabilitiesFor(
      store.capabilitiesFor(server.baseUrl, "sk-test"),
      "gpt-5.1-codex",
    );
    expect(effortFor(model, "minimal")).toBe("low");
    expect(effortFor(model, "high")).toBe("high");
  });

  it("walks the ladder one rung per refusal when the refusal lists nothing", async () => {
    const store = createCapabilityStore();
    // The recorded OpenAI sentence without its list of supported values (written for this test).
    const refuse = (value: string) => ({
      type: "error" as const,
      status: 400,
      body: {
        error: {
          message: `Unsupported value: 'reasoning_effort' does not support '${value}' with this model.`,
        },
      },
    });
    server.enqueue(refuse("minimal"), refuse("low"), ok);
    await turn(store, { model: "m", reasoningEffort: "minimal" });
    expect(bodies().map((b) => b.reasoning_effort)).toEqual(["minimal", "low", "medium"]);
  });

  it("passes on an effort refusal it cannot climb from (null, or the top of the ladder)", async () => {
    const store = createCapabilityStore();
    // Only the message was recorded; served as the body's error message.
    const message = readFixture("errors/openai/reasoning-effort-null-unsupported-gpt-5.1.message.txt").trim();
    server.enqueue({ type: "error", status: 400, body: { error: { message } } });
    const error = await rejection(turn(store, { model: "gpt-5.1", reasoningEffort: "none" }));
    expect((error as { status?: number }).status).toBe(400);
    expect(server.chatRequests).toHaveLength(1);

    const top = {
      type: "error" as const,
      status: 400,
      body: {
        error: { message: "Unsupported value: 'reasoning_effort' does not support 'high' with this model." },
      },
    };
    server.enqueue(top);
    await rejection(turn(store, { model: "gpt-5.1", reasoningEffort: "high" }));
    expect(server.chatRequests).toHaveLength(2);
  });

  it("re-spells the ceiling max_completion_tokens for that model only", async () => {
    const store = createCapabilityStore();
    server.enqueue(fixtureError("openai/max-tokens-unsupported-use-max-completion-tokens.json", 400), ok, ok);
    await turn(store, { model: "o3-mini", maxTokens: 500 });
    expect(bodies()[0]).toMatchObject({ max_tokens: 500 });
    expect(bodies()[1]).toMatchObject({ max_completion_tokens: 500 });
    expect(bodies()[1]).not.toHaveProperty("max_tokens");
    await turn(store, { model: "gpt-4o", maxTokens: 500 });
    expect(bodies()[2]).toMatchObject({ max_tokens: 500 });
  });

  it("stops sending a temperature the model will not take", async () => {
    const store = createCapabilityStore();
    server.enqueue(fixtureError("openai/temperature-0-unsupported-value.json", 400), ok);
    await turn(store, { model: "gpt-5", temperature: 0 });
    expect(bodies()[0]).toMatchObject({ temperature: 0 });
    expect(bodies()[1]).not.toHaveProperty("temperature");
  });

  it("drops a refused field the caller called droppable, at its top-level name, with a notice", async () => {
    const store = createCapabilityStore();
    const notices: string[] = [];
    server.enqueue(fixtureError("groq/property-unsupported-did-you-mean.json", 400), ok);
    const config = {
      model: "qwen/qwen3-32b",
      extraBody: { chat_template_kwargs: { enable_thinking: false }, top_k: 20 },
    };
    await turn(store, config, { notices });
    expect(bodies()[0]).toMatchObject({ chat_template_kwargs: { enable_thinking: false }, top_k: 20 });
    expect(bodies()[1]).not.toHaveProperty("chat_template_kwargs");
    expect(bodies()[1]).toMatchObject({ top_k: 20 });
    expect(notices[0]).toMatch(/chat_template_kwargs/);

    // A nested name ("Unknown parameter" wording) is dropped at its top-level field.
    server.enqueue(
      { type: "error", status: 400, body: { error: { message: "Unknown parameter: 'top_k.value'." } } },
      ok,
    );
    await turn(store, { model: "other", extraBody: { top_k: { value: 3 } } });
    expect(bodies()[3]).not.toHaveProperty("top_k");
  });

  it("passes on a refused field nobody said was droppable, after one request", async () => {
    const store = createCapabilityStore();
    server.enqueue(fixtureError("groq/property-unsupported-did-you-mean.json", 400));
    const error = await rejection(
      turn(store, { model: "qwen/qwen3-32b", extraBody: { chat_template_kwargs: {} } }, { droppable: [] }),
    );
    expect((error as Error).message).toMatch(/chat_template_kwargs/);
    expect(server.chatRequests).toHaveLength(1);
  });

  it("needs a model name for model-level latches: without one the refusal goes to the caller", async () => {
    const store = createCapabilityStore();
    server.enqueue(fixtureError("openai/max-tokens-unsupported-use-max-completion-tokens.json", 400));
    const supports = store.capabilitiesFor(server.baseUrl);
    const client = clientFor(server.baseUrl);
    await rejection(
      negotiate(supports, (s, produced, model) =>
        streamText(client, buildBody({ model: "o3", maxTokens: 9 }, s, model, messages), produced),
      ),
    );
    expect(server.chatRequests).toHaveLength(1);
  });
});

describe("endpoint-level refusals latch per (base URL, key)", () => {
  it("stops asking for usage in the stream for every model on that endpoint and key", async () => {
    const store = createCapabilityStore();
    server.enqueue(
      fixtureError("relay-new-api/unknown-parameter-stream-options-with-request-ids.json", 400),
      ok,
      ok,
    );
    await turn(store, { model: "a" });
    expect(bodies()[0]).toHaveProperty("stream_options");
    expect(bodies()[1]).not.toHaveProperty("stream_options");
    await turn(store, { model: "b" });
    expect(bodies()[2]).not.toHaveProperty("stream_options");
  });

  it("keeps a refusal learned with one key away from another key on the same URL", async () => {
    const store = createCapabilityStore();
    server.enqueue(fixtureError("groq/stream-options-unsupported-2024.json", 400), ok, ok);
    await turn(store, { model: "a" }, { apiKey: "key-one" });
    await turn(store, { model: "a" }, { apiKey: "key-two" });
    expect(bodies()[2]).toHaveProperty("stream_options");
    expect(store.capabilitiesFor(server.baseUrl, "")).toBe(store.capabilitiesFor(`${server.baseUrl}/`));
  });

  it("answers a strict-schema refusal by re-sending relaxed tools, and stays relaxed", async () => {
    const store = createCapabilityStore();
    const tools: ToolDefinition[] = [
      {
        type: "function",
        function: {
          name: "search",
          parameters: {
            type: "object",
            properties: { q: { type: "string", pattern: "[a-z]+", format: "hostname" } },
            required: ["q"],
            additionalProperties: false,
          },
        },
      },
    ];
    server.enqueue(fixtureError("openai/strict-schema-root-additionalproperties-chat.json", 400), ok, ok);
    await turn(store, { model: "gpt-4o" }, { tools });
    expect(store.capabilitiesFor(server.baseUrl, "sk-test").strictSchemas).toBe(false);
    const first = JSON.stringify(bodies()[0]?.tools);
    const second = JSON.stringify(bodies()[1]?.tools);
    expect(first).toContain('"pattern"');
    expect(second).not.toEqual(first);
    await turn(store, { model: "gpt-4.1" }, { tools });
    expect(JSON.stringify(bodies()[2]?.tools)).toEqual(second);
  });

  it("answers llama.cpp's grammar failure the same way", async () => {
    const store = createCapabilityStore();
    server.enqueue(fixtureError("llamacpp/json-schema-conversion-failed-unrecognized-schema.json", 400), ok);
    const tools: ToolDefinition[] = [
      { type: "function", function: { name: "t", parameters: { type: "object", properties: {} } } },
    ];
    await turn(store, { model: "local" }, { tools });
    expect(server.chatRequests).toHaveLength(2);
    expect(store.capabilitiesFor(server.baseUrl, "sk-test").strictSchemas).toBe(false);
  });
});

describe("what is never re-sent", () => {
  it("never re-sends once the model started answering, even for a refusal it could answer", async () => {
    const store = createCapabilityStore();
    const refusal = fixtureError("openai/max-tokens-unsupported-use-max-completion-tokens.json", 400);
    server.enqueue({
      type: "turn",
      content: "partial answer that the user already saw",
      chunkChars: 4,
      errorMidStream: { afterChunk: 3, error: (refusal.body as { error: unknown }).error },
    });
    await rejection(turn(store, { model: "o3", maxTokens: 9 }));
    expect(server.chatRequests).toHaveLength(1);
  });

  it("re-sends a refusal that arrives in the stream before anything was produced", async () => {
    const store = createCapabilityStore();
    const refusal = fixtureError("openai/max-tokens-unsupported-use-max-completion-tokens.json", 400);
    server.enqueue(
      {
        type: "turn",
        content: "x",
        errorMidStream: { afterChunk: 0, error: (refusal.body as { error: unknown }).error },
      },
      ok,
    );
    await expect(turn(store, { model: "o3", maxTokens: 9 })).resolves.toBe("fine");
    expect(bodies()[1]).toHaveProperty("max_completion_tokens", 9);
  });

  it("passes a context overflow, a rate limit and a server error through after one request", async () => {
    const store = createCapabilityStore();
    for (const reply of [
      fixtureError("openai/context-length-exceeded-messages-resulted-in.json", 400),
      fixtureError("openai/429-request-too-large-tpm-gpt-4o.json", 429),
      fixtureError("llamacpp/503-loading-model.json", 503),
    ]) {
      const before = server.chatRequests.length;
      server.enqueue(reply);
      await rejection(turn(store, { model: "gpt-4o", maxTokens: 10, reasoningEffort: "low" }));
      expect(server.chatRequests.length - before).toBe(1);
    }
    expect(store.exportCapabilities().endpoints[0]?.models["gpt-4o"]).toMatchObject({
      refusedEfforts: [],
      legacyTokenLimit: true,
      droppedFields: [],
    });
  });

  it("tells a caller with its own retry budget whether the model had started", async () => {
    const store = createCapabilityStore();
    const produced = { value: false };
    server.enqueue({ type: "turn", content: "half an answer", chunkChars: 3, dropAfterChunk: 3 });
    const supports = store.capabilitiesFor(server.baseUrl);
    const client = clientFor(server.baseUrl);
    await rejection(
      negotiate(
        supports,
        (s, box, model) => streamText(client, buildBody({ model: "m" }, s, model, messages), box),
        {
          produced,
        },
      ),
    );
    expect(produced.value).toBe(true);
  });
});

describe("latches survive a restart through export and import", () => {
  it("re-creates every latch in a fresh store, so the first request is already the lesser one", async () => {
    const store = createCapabilityStore();
    server.enqueue(
      fixtureError("openai/stream-options-only-when-stream-enabled.json", 400),
      fixtureError("openai/max-tokens-unsupported-use-max-completion-tokens.json", 400),
      fixtureError("moonshot/kimi-code-reasoning-effort-none-unsupported.json", 400),
      fixtureError("openai/temperature-unsupported-parameter-responses-api.json", 400),
      fixtureError("openai/400-web-search-options-not-supported.json", 400),
      ok,
    );
    const config: ModelParams = {
      model: "gpt-5",
      maxTokens: 100,
      reasoningEffort: "none",
      temperature: 0.2,
      extraBody: { web_search_options: {} },
    };
    await turn(store, config, { apiKey: "sk-secret-operator-key" });
    const lesser = bodies()[5];
    const text = JSON.stringify(store.exportCapabilities());
    expect(text).not.toContain("sk-secret-operator-key");

    const restarted = createCapabilityStore();
    restarted.importCapabilities(JSON.parse(text));
    server.enqueue(ok);
    await turn(restarted, config, { apiKey: "sk-secret-operator-key" });
    expect(bodies()[6]).toEqual(lesser);
    expect(lesser).toMatchObject({ max_completion_tokens: 100, reasoning_effort: "minimal" });
    expect(lesser).not.toHaveProperty("stream_options");
    expect(lesser).not.toHaveProperty("temperature");
    expect(lesser).not.toHaveProperty("web_search_options");
    expect(server.chatRequests).toHaveLength(7);
  });
});

describe("requests running side by side", () => {
  it("re-sends a request whose refusal another request already latched, instead of failing it", async () => {
    const store = createCapabilityStore();
    const refusal = fixtureError("relay-new-api/unknown-parameter-stream-options-with-request-ids.json", 400);
    await server.close();
    server = await startServer({
      replies: (request: RecordedRequest) =>
        (request.body as Record<string, unknown>).stream_options
          ? refusal
          : { type: "turn", content: "fine" },
    });
    // Both bodies are built before either refusal arrives.
    const results = await Promise.all([turn(store, { model: "a" }), turn(store, { model: "b" })]);
    expect(results).toEqual(["fine", "fine"]);
    expect(bodies().filter((b) => "stream_options" in b)).toHaveLength(2);
    expect(bodies()).toHaveLength(4);
  });
});

describe("options of the wrong type", () => {
  it("are named before anything is sent; null options are none", async () => {
    const supports = createCapabilityStore().capabilitiesFor("http://127.0.0.1:1/v1");
    let sent = 0;
    const send = async () => {
      sent++;
      return "ok";
    };
    await expect(negotiate(supports, send, null as never)).resolves.toBe("ok");
    const wrong: [string, Record<string, unknown>][] = [
      ["model", { model: 5 }],
      ["droppable", { droppable: "top_k" }],
      ["droppable", { droppable: [1] }],
      ["onNotice", { onNotice: "log" }],
      ["produced", { produced: true }],
      ["maxAttempts", { maxAttempts: 0 }],
      ["maxAttempts", { maxAttempts: Number.NaN }],
    ];
    for (const [name, options] of wrong) {
      const error = await negotiate(supports, send, options as never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as Error).message).toMatch(new RegExp(`^negotiate: ${name} must`));
    }
    expect(sent).toBe(1);
  });
});

describe("a refused tool_choice (OpenRouter: no provider takes it)", () => {
  const tools: ToolDefinition[] = [
    { type: "function", function: { name: "add", parameters: { type: "object", properties: {} } } },
  ];
  // The wording as recorded (the reporter's prefix included), as OpenRouter's 404 body.
  const refused = {
    type: "error",
    status: 404,
    body: readFixture("errors/openrouter/404-no-endpoints-support-tool-choice.message.txt"),
  } as const;

  function choiceTurn(
    store: ReturnType<typeof createCapabilityStore>,
    model: string,
    choice: "none" | "required",
    notices: string[] = [],
  ): Promise<string> {
    const supports = store.capabilitiesFor(server.baseUrl, "sk-test");
    const client = clientFor(server.baseUrl);
    return negotiate(
      supports,
      (s, produced, caps) =>
        streamText(client, buildBody({ model }, s, caps, messages, tools, { toolChoice: choice }), produced),
      { model, onNotice: (text) => notices.push(text) },
    );
  }

  it("is re-sent without it, latched for that model only, and not asked again", async () => {
    const store = createCapabilityStore();
    const notices: string[] = [];
    server.enqueue(refused, ok, ok, ok);
    await expect(choiceTurn(store, "z-ai/glm-4.5-air", "required", notices)).resolves.toBe("fine");
    expect(bodies()[0]?.tool_choice).toBe("required");
    expect(bodies()[1]).not.toHaveProperty("tool_choice");
    expect(bodies()[1]?.tools).toHaveLength(1);
    expect(notices.join("\n")).toMatch(/z-ai\/glm-4\.5-air refused tool_choice/);
    // The next request for that model goes out without it the first time; "none" goes without tools.
    await choiceTurn(store, "z-ai/glm-4.5-air", "none");
    expect(bodies()[2]).not.toHaveProperty("tool_choice");
    expect(bodies()[2]).not.toHaveProperty("tools");
    // Another model on the same endpoint is still asked.
    await choiceTurn(store, "openai/gpt-4o", "none");
    expect(bodies()[3]?.tool_choice).toBe("none");
    expect(server.chatRequests).toHaveLength(4);
  });

  it("passes the refusal on when no model was named (nothing to latch it on)", async () => {
    const supports = createCapabilityStore().capabilitiesFor(server.baseUrl, "sk-test");
    const client = clientFor(server.baseUrl);
    server.enqueue(refused, ok);
    const error = await rejection(
      negotiate(supports, (s, produced, caps) =>
        streamText(
          client,
          buildBody({ model: "m" }, s, caps, messages, tools, { toolChoice: "none" }),
          produced,
        ),
      ),
    );
    expect(String((error as Error).message)).toMatch(/tool_choice/);
    expect(server.chatRequests).toHaveLength(1);
  });
});
