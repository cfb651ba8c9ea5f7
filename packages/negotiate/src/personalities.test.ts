/**
 * negotiate as the seed writes a turn — around the real `streamTurn` and the real `openai` client —
 * against the testkit's server personalities, which refuse with the recorded bodies.
 */
import { keepErrorBodies } from "@loopwright/client";
import { streamTurn, type Turn } from "@loopwright/stream";
import {
  llamacppPersonality,
  openaiPersonality,
  type RecordedRequest,
  startServer,
  type TestServer,
} from "@loopwright/testkit";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { clientFor, rejection } from "../test/wire.js";
import { type CapabilityStore, createCapabilityStore } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { buildBody, type ModelParams, type ToolDefinition } from "./request-body.js";
import { isModelLoading, isOverflow, isTransient } from "./retry.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const ok = { type: "turn", content: "done" } as const;
const question = [{ role: "user", content: "What is the weather in Paris?" }];
const bodies = () =>
  (server?.chatRequests ?? []).map((r: RecordedRequest) => r.body as Record<string, unknown>);

const weather: ToolDefinition = {
  type: "function",
  function: {
    name: "weather",
    strict: true,
    parameters: {
      // Not strict-valid: no additionalProperties: false, and "units" is not required.
      type: "object",
      properties: { city: { type: "string" }, units: { type: "string", enum: ["c", "f"] } },
      required: ["city"],
    },
  },
};

function turn(
  store: CapabilityStore,
  config: ModelParams,
  tools: ToolDefinition[] = [],
  notices: string[] = [],
): Promise<Turn> {
  if (!server) throw new Error("no server");
  const supports = store.capabilitiesFor(server.baseUrl, "sk-test");
  const client = clientFor(server.baseUrl);
  return negotiate(
    supports,
    (supports, produced, model) =>
      streamTurn(client, buildBody(config, supports, model, question, tools), { produced, idleMs: 5_000 }),
    { model: config.model, droppable: Object.keys(config.extraBody ?? {}), onNotice: (n) => notices.push(n) },
  );
}

describe("against the openai personality", () => {
  it("answers a plain turn in one request, with usage in the stream", async () => {
    server = await startServer({
      personality: openaiPersonality(),
      replies: [{ ...ok, usage: { prompt_tokens: 7 } }],
    });
    const result = await turn(createCapabilityStore(), { model: "gpt-4o" });
    expect(result.usage.prompt).toBe(7);
    expect(bodies()).toHaveLength(1);
  });

  it("walks gpt-5 down to a body it takes, one refusal at a time, and sends that body at once next turn", async () => {
    server = await startServer({ personality: "openai", replies: [ok, ok] });
    const store = createCapabilityStore();
    const config = { model: "gpt-5", maxTokens: 200, temperature: 0.2, reasoningEffort: "minimal" };
    const notices: string[] = [];
    const first = await turn(store, config, [weather], notices);
    expect(first.content).toBe("done");
    const sent = bodies();
    const last = sent.at(-1);
    expect(last).toMatchObject({ max_completion_tokens: 200, reasoning_effort: "low" });
    expect(last).not.toHaveProperty("max_tokens");
    expect(last).not.toHaveProperty("temperature");
    expect(last?.tools).toHaveLength(1);
    expect((last?.tools as ToolDefinition[] | undefined)?.[0]?.function).not.toHaveProperty("strict");
    // One request per refusal: max_tokens, effort, temperature, strict schema, then the answer.
    expect(sent).toHaveLength(5);

    await turn(store, config, [weather]);
    expect(bodies()).toHaveLength(6);
    expect(bodies()[5]).toEqual(last);
  });

  it("reads temperature: null (a config from JSON) as absent: gpt-5 answers the one request, no latch learned", async () => {
    server = await startServer({ personality: "openai", replies: [ok, ok] });
    const store = createCapabilityStore();
    const config: ModelParams = JSON.parse('{"model":"gpt-5","temperature":null,"maxTokens":null}');
    const notices: string[] = [];
    expect((await turn(store, config, [], notices)).content).toBe("done");
    expect(bodies()).toHaveLength(1);
    expect(bodies()[0]).not.toHaveProperty("temperature");
    expect(server.chatRequests[0]?.raw).not.toContain("temperature");
    expect(notices).toEqual([]);
    // The model may still be given a temperature: nothing was refused.
    const supports = store.capabilitiesFor(server.baseUrl, "sk-test");
    expect(store.modelCapabilitiesFor(supports, "gpt-5").chosenTemperature).toBe(true);
    // Directly too, on a model that takes one.
    const gpt4o = store.modelCapabilitiesFor(supports, "gpt-4o");
    expect(
      buildBody(JSON.parse('{"model":"gpt-4o","temperature":null}'), supports, gpt4o, question),
    ).not.toHaveProperty("temperature");
    expect(buildBody({ model: "gpt-4o", temperature: 0.2 }, supports, gpt4o, question)).toHaveProperty(
      "temperature",
      0.2,
    );
  });

  it("keeps gpt-5's latches off gpt-4o's requests, and gpt-4o's off gpt-5's", async () => {
    server = await startServer({ personality: "openai", replies: [ok, ok, ok] });
    const store = createCapabilityStore();
    const notices: string[] = [];
    // gpt-4o is not a reasoning model here: its effort is refused as an unknown argument.
    await turn(store, { model: "gpt-4o", maxTokens: 100, reasoningEffort: "high" }, [], notices);
    expect(bodies()[0]).toMatchObject({ reasoning_effort: "high", max_tokens: 100 });
    expect(bodies()[1]).not.toHaveProperty("reasoning_effort");
    expect(bodies()[1]).toMatchObject({ max_tokens: 100 });
    expect(notices.some((n) => n.includes("gpt-4o does not take reasoning_effort"))).toBe(true);

    await turn(store, { model: "gpt-5", maxTokens: 100, reasoningEffort: "high" });
    // gpt-5 is still asked to reason, and only its own ceiling refusal is learned.
    expect(bodies()[2]).toMatchObject({ reasoning_effort: "high", max_tokens: 100 });
    expect(bodies()[3]).toMatchObject({ reasoning_effort: "high", max_completion_tokens: 100 });
    await turn(store, { model: "gpt-4o", maxTokens: 100, reasoningEffort: "high" });
    expect(bodies()[4]).toMatchObject({ max_tokens: 100 });
    expect(bodies()[4]).not.toHaveProperty("reasoning_effort");
  });

  it("drops a droppable extra field the server does not know, and passes on one that is not droppable", async () => {
    server = await startServer({ personality: "openai", replies: [ok] });
    const store = createCapabilityStore();
    await turn(store, { model: "gpt-4o", extraBody: { min_p: 0.05 } });
    expect(bodies()[0]).toHaveProperty("min_p", 0.05);
    expect(bodies()[1]).not.toHaveProperty("min_p");

    if (!server) throw new Error("no server");
    const supports = store.capabilitiesFor(server.baseUrl, "sk-test");
    const client = clientFor(server.baseUrl);
    const error = await rejection(
      negotiate(
        supports,
        (s, produced, model) =>
          streamTurn(client, buildBody({ model: "gpt-4o", extraBody: { top_k: 3 } }, s, model, question), {
            produced,
          }),
        { model: "gpt-4o" },
      ),
    );
    expect((error as Error).message).toMatch(/top_k/);
    expect(bodies()).toHaveLength(3);
  });

  it("survives a restart: the imported snapshot makes the first request the lesser one", async () => {
    server = await startServer({ personality: "openai", replies: [ok, ok] });
    const store = createCapabilityStore();
    const config = { model: "gpt-5", maxTokens: 50, temperature: 0 };
    await turn(store, config, [weather]);
    const learned = bodies().length;
    const restarted = createCapabilityStore();
    restarted.importCapabilities(JSON.stringify(store.exportCapabilities()));
    await turn(restarted, config, [weather]);
    expect(bodies()).toHaveLength(learned + 1);
  });
});

describe("against the llamacpp personality", () => {
  const strictish: ToolDefinition = {
    type: "function",
    function: {
      name: "lookup",
      parameters: {
        type: "object",
        properties: { code: { type: "string", pattern: "[A-Z]{3}" } },
        required: ["code"],
        additionalProperties: false,
      },
    },
  };

  it("answers a grammar refusal with relaxed tools, latched for the endpoint", async () => {
    server = await startServer({ personality: "llamacpp", replies: [ok, ok] });
    const store = createCapabilityStore();
    await turn(store, { model: "tiny.gguf" }, [strictish]);
    expect(bodies()).toHaveLength(2);
    expect(JSON.stringify(bodies()[0]?.tools)).toContain("[A-Z]{3}");
    await turn(store, { model: "another.gguf" }, [strictish]);
    expect(bodies()).toHaveLength(3);
    expect(bodies()[2]?.tools).toEqual(bodies()[1]?.tools);
  });

  it("passes an overflow on after one request, and it reads as an overflow", async () => {
    server = await startServer({ personality: llamacppPersonality({ nCtx: 16 }), replies: [ok] });
    const error = await rejection(turn(createCapabilityStore(), { model: "tiny.gguf", maxTokens: 8 }));
    expect(isOverflow(error)).toBe(true);
    expect(isTransient(error)).toBe(false);
    expect(bodies()).toHaveLength(1);
  });

  it("reads the loading 503 as model loading, not as a refusal", async () => {
    server = await startServer({ personality: llamacppPersonality({ loadingMs: 60_000 }), replies: [ok] });
    const error = await rejection(turn(createCapabilityStore(), { model: "tiny.gguf" }));
    expect(isModelLoading(error)).toBe(true);
    expect(isTransient(error)).toBe(true);
    expect(bodies()).toHaveLength(1);
  });

  it("does not re-send tools to a server started without --jinja (a 500 that repeats)", async () => {
    server = await startServer({ personality: llamacppPersonality({ jinja: false }), replies: [ok] });
    const error = await rejection(turn(createCapabilityStore(), { model: "tiny.gguf" }, [strictish]));
    expect(isTransient(error)).toBe(false);
    expect(bodies()).toHaveLength(1);
  });
});

describe("against the vllm personality", () => {
  it("passes vLLM's refusals on untouched (its top-level error body never reaches the SDK's error)", async () => {
    server = await startServer({ personality: "vllm", replies: [ok] });
    const error = await rejection(
      turn(createCapabilityStore(), { model: "meta-llama/Meta-Llama-3.1-8B-Instruct", maxTokens: 100_000 }),
    );
    expect((error as Error).message).toBe("400 status code (no body)");
    expect(bodies()).toHaveLength(1);
  });
});

describe("against the mistral personality", () => {
  it("latches stream_options for the endpoint and the ids for the model, then reads Mistral's whole tool call", async () => {
    server = await startServer({
      personality: "mistral",
      replies: [{ toolCalls: [{ name: "weather", arguments: '{"city": "Paris"}' }] }],
    });
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor(server.baseUrl, "sk-test");
    // The client @loopwright/client's pool makes: Mistral's errors have no `error` member.
    const client = new OpenAI({
      baseURL: server.baseUrl,
      apiKey: "sk-test",
      maxRetries: 0,
      fetch: keepErrorBodies(),
    });
    const transcript = [
      ...question,
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_recovered_0",
            type: "function",
            function: { name: "weather", arguments: '{"city":"Lyon"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_recovered_0", content: "12 C" },
    ];
    const notices: string[] = [];
    const turn: Turn = await negotiate(
      supports,
      (s, produced, model) =>
        streamTurn(client, buildBody({ model: "mistral-small-latest" }, s, model, transcript, [weather]), {
          produced,
          idleMs: 5_000,
        }),
      { model: "mistral-small-latest", onNotice: (n) => notices.push(n) },
    );
    expect(server.chatRequests.length).toBe(3);
    expect(bodies()[0]).toHaveProperty("stream_options");
    expect(bodies()[1]).not.toHaveProperty("stream_options");
    const sent = bodies()[2]?.messages as { tool_calls?: { id: string }[]; tool_call_id?: string }[];
    const wire = sent[1]?.tool_calls?.[0]?.id;
    expect(wire).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(sent[2]?.tool_call_id).toBe(wire);
    expect(transcript[1]).toMatchObject({ tool_calls: [{ id: "call_recovered_0" }] });
    expect(supports.usageInStream).toBe(false);
    // Each latch told as it is made (r91: negotiate tells stream_options itself).
    expect(notices).toEqual([
      expect.stringMatching(/^The server refused stream_options/),
      expect.stringMatching(/refused a tool-call id/),
    ]);
    // Mistral's stream: the call whole in the finish chunk, no index, its own nine-character id.
    expect(turn.toolCalls).toEqual([
      {
        id: expect.stringMatching(/^[A-Za-z0-9]{9}$/),
        type: "function",
        function: { name: "weather", arguments: '{"city": "Paris"}' },
      },
    ]);
    // Its usage rides on the finish chunk, so it is read though stream_options is no longer sent.
    expect(turn.usage.prompt).toBeGreaterThan(0);
    expect(turn.usage.completion).toBeGreaterThan(0);
  });
});
