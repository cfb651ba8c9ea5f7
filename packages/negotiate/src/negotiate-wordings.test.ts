/**
 * negotiate against refusals in the words of servers outside the recorded fixtures, over HTTP from
 * the testkit through the real `openai` client: each is latched at the right level (endpoint or
 * model), answered by the right re-send, and a refused value is passed on, never latched.
 */
import { type RecordedRequest, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { clientFor, rejection, streamText } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";
import { negotiate } from "./negotiate.js";
import { buildBody, type ModelParams, type ToolDefinition } from "./request-body.js";
import { isOverflow } from "./retry.js";

let server: TestServer;
beforeEach(async () => {
  server = await startServer();
});
afterEach(() => server.close());

const ok = { type: "turn", content: "fine" } as const;
const messages = [{ role: "user", content: "hi" }];
const bodies = (): Record<string, unknown>[] =>
  server.chatRequests.map((r: RecordedRequest) => r.body as Record<string, unknown>);
const refusal = (status: number, body: unknown) => ({ type: "error" as const, status, body });

const tools: ToolDefinition[] = [
  {
    type: "function",
    function: {
      name: "lookup",
      strict: true,
      parameters: {
        type: "object",
        properties: { q: { type: "string" } },
        required: ["q"],
        additionalProperties: false,
      },
    },
  },
];

function turn(
  store: ReturnType<typeof createCapabilityStore>,
  config: ModelParams,
  options: { tools?: ToolDefinition[]; droppable?: string[] } = {},
): Promise<string> {
  const supports = store.capabilitiesFor(server.baseUrl, "sk-test");
  const client = clientFor(server.baseUrl);
  return negotiate(
    supports,
    (supports, produced, model) =>
      streamText(client, buildBody(config, supports, model, messages, options.tools ?? []), produced),
    { model: config.model, droppable: options.droppable ?? [] },
  );
}

describe("endpoint-level: a tool schema refused in Gemini's words", () => {
  it("re-sends relaxed tools, and every model on that endpoint stays relaxed", async () => {
    // https://github.com/mnfst/llm-gateway/issues/1858
    const gemini = {
      error: {
        code: 400,
        message:
          "Invalid JSON payload received. Unknown name \"ref\" at 'tools[0].function_declarations[0].parameters.properties[0].value.items': Cannot find field.",
        status: "INVALID_ARGUMENT",
      },
    };
    server.enqueue(refusal(400, gemini), ok, ok);
    const store = createCapabilityStore();
    await expect(turn(store, { model: "gemini-2.5-flash" }, { tools })).resolves.toBe("fine");
    const sent = (i: number) => ((bodies()[i]?.tools ?? []) as ToolDefinition[])[0]?.function;
    expect(sent(0)?.strict).toBe(true);
    expect(sent(1)?.strict).toBeUndefined();
    await turn(store, { model: "gemini-2.5-pro" }, { tools });
    expect(sent(2)?.strict).toBeUndefined();
    expect(store.capabilitiesFor(server.baseUrl, "sk-test").strictSchemas).toBe(false);
  });
});

describe("model-level: refusals in vLLM's, Bedrock's and llama.cpp's words", () => {
  it("climbs past an effort vLLM's validator refused, for that model only", async () => {
    // vLLM's reasoning_effort Literal (vllm-project/vllm PR #40982) failing validation, in the
    // shape its 400 prints: a pydantic error list inside `message`.
    const vllm = {
      error: {
        message:
          "[{'type': 'literal_error', 'loc': ('body', 'reasoning_effort'), 'msg': \"Input should be 'low', 'medium' or 'high'\", 'input': 'minimal', 'ctx': {'expected': \"'low', 'medium' or 'high'\"}}]",
        type: "BadRequestError",
        param: null,
        code: 400,
      },
    };
    server.enqueue(refusal(400, vllm), ok, ok);
    const store = createCapabilityStore();
    await expect(turn(store, { model: "gpt-oss-20b", reasoningEffort: "minimal" })).resolves.toBe("fine");
    expect(bodies().map((b) => b.reasoning_effort)).toEqual(["minimal", "low"]);
    await turn(store, { model: "qwen3-8b", reasoningEffort: "minimal" });
    expect(bodies()[2]?.reasoning_effort).toBe("minimal");
  });

  it("steps 'none' up to the cheapest rung a refusal saying 'Expected … to be one of …; found …' lists", async () => {
    // qwen3-next behind Ollama, quoted in https://github.com/continuedev/continue/issues/9981.
    const expected = {
      error: {
        message:
          "Expected 'reasoning_effort' to be one of: 'high', 'low', 'medium', 'minimal'; found 'none'.",
      },
    };
    server.enqueue(refusal(400, expected), ok, ok);
    const store = createCapabilityStore();
    const notices: string[] = [];
    const supports = store.capabilitiesFor(server.baseUrl, "sk-test");
    const client = clientFor(server.baseUrl);
    const config = { model: "qwen3-next", reasoningEffort: "none" };
    const send = () =>
      negotiate(
        supports,
        (supports, produced, model) =>
          streamText(client, buildBody(config, supports, model, messages), produced),
        { model: config.model, onNotice: (n) => notices.push(n) },
      );
    await expect(send()).resolves.toBe("fine");
    expect(bodies().map((b) => b.reasoning_effort)).toEqual(["none", "minimal"]);
    expect(notices.join("\n")).toMatch(/"minimal"/);
    await send();
    expect(bodies()[2]?.reasoning_effort).toBe("minimal");
  });

  it("drops a field Bedrock's serde refused when the caller allowed it, and passes it on when not", async () => {
    // https://github.com/BerriAI/litellm/issues/14225
    const bedrock = {
      error: {
        message:
          "The model returned the following errors: Failed to deserialize the JSON body into the target type: thinking: unknown field `thinking`, expected one of `messages`, `model`, `stream_options`, `temperature` at line 1 column 212",
      },
    };
    server.enqueue(refusal(400, bedrock), ok, refusal(400, bedrock));
    const store = createCapabilityStore();
    const config = { model: "openai.gpt-oss-120b", extraBody: { thinking: { type: "enabled" } } };
    await expect(turn(store, config, { droppable: ["thinking"] })).resolves.toBe("fine");
    expect(bodies()[0]).toHaveProperty("thinking");
    expect(bodies()[1]).not.toHaveProperty("thinking");
    const error = await rejection(turn(store, { ...config, model: "other" }));
    expect(String((error as Error).message)).toMatch(/unknown field `thinking`/);
    expect(bodies()).toHaveLength(3);
  });

  it("stops asking one model for a JSON schema when its server cannot take one", async () => {
    // llama.cpp before json_schema support: the response_format check of llamacpp-live/23, with json_schema.
    const llamacpp = {
      error: {
        code: 400,
        message: 'response_format type must be one of "text" or "json_object", but got: json_schema',
        type: "invalid_request_error",
      },
    };
    server.enqueue(refusal(400, llamacpp), ok);
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor(server.baseUrl, "sk-test");
    const client = clientFor(server.baseUrl);
    const seen: boolean[] = [];
    await negotiate(
      supports,
      (_supports, produced, model) => {
        seen.push(model?.structuredOutput ?? true);
        const format = model?.structuredOutput
          ? { response_format: { type: "json_schema", json_schema: { name: "x", schema: {} } } }
          : {};
        return streamText(client, { model: "tiny", messages, ...format }, produced);
      },
      { model: "tiny" },
    );
    expect(seen).toEqual([true, false]);
    expect(bodies()[1]).not.toHaveProperty("response_format");
    expect(store.modelCapabilitiesFor(supports, "other").structuredOutput).toBe(true);
  });
});

describe("model-level: refusals in xAI's and Kimi's words", () => {
  it("stops sending reasoning_effort to a grok model that has no dial, and keeps it for one that has", async () => {
    // https://github.com/chenyme/grok2api/issues/814 (a string `error`, camelCase field name)
    const xai = {
      code: "invalid-argument",
      error: "Model grok-4-1-fast does not support parameter reasoningEffort.",
    };
    server.enqueue(refusal(400, xai), ok, ok);
    const store = createCapabilityStore();
    await expect(turn(store, { model: "grok-4-1-fast", reasoningEffort: "low" })).resolves.toBe("fine");
    expect(bodies()[0]?.reasoning_effort).toBe("low");
    expect(bodies()[1]).not.toHaveProperty("reasoning_effort");
    await turn(store, { model: "grok-4.3", reasoningEffort: "low" });
    expect(bodies()[2]?.reasoning_effort).toBe("low");
  });

  it("leaves the temperature to a Kimi model that allows only its own", async () => {
    // https://github.com/Mai-with-u/MaiBot/issues/1538
    const kimi = {
      error: {
        message: "invalid temperature: only 1 is allowed for this model",
        type: "invalid_request_error",
      },
    };
    server.enqueue(refusal(400, kimi), ok, ok);
    const store = createCapabilityStore();
    await expect(turn(store, { model: "kimi-k2.5", temperature: 0.3 })).resolves.toBe("fine");
    expect(bodies()[0]?.temperature).toBe(0.3);
    expect(bodies()[1]).not.toHaveProperty("temperature");
    await turn(store, { model: "moonshot-v1-8k", temperature: 0.3 });
    expect(bodies()[2]?.temperature).toBe(0.3);
  });
});

describe("a refused value is passed on after one request and never latched", () => {
  const cases: [string, string, Record<string, unknown>, unknown][] = [
    [
      "vLLM: a ceiling too large for the prompt (an overflow, not a spelling refusal)",
      "vLLM serving_engine wording, 0.6+",
      { model: "m", maxTokens: 1000 },
      {
        object: "error",
        message:
          "'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context length is 2048 tokens and your request has 1500 input tokens (1000 > 2048 - 1500).",
        type: "BadRequestError",
        param: "max_tokens",
        code: 400,
      },
    ],
    [
      "Groq: max_tokens above the model's ceiling",
      "https://github.com/RooCodeInc/Roo-Code/issues/5729",
      { model: "m", maxTokens: 32000 },
      {
        error: {
          message:
            "max_tokens must be less than or equal to 16384, the maximum value for max_tokens is less than the context_window for this model",
          type: "invalid_request_error",
        },
      },
    ],
    [
      "an effort above the top of the ladder",
      "OpenAI's 'Unsupported value' wording with a value we never climb to",
      { model: "m", reasoningEffort: "high" },
      {
        error: {
          message:
            "Unsupported value: 'reasoning_effort' does not support 'high' with this model. Supported values are: 'low' and 'medium'.",
          type: "invalid_request_error",
          param: "reasoning_effort",
          code: "unsupported_value",
        },
      },
    ],
  ];
  for (const [name, source, config, body] of cases) {
    it(`${name} (${source})`, async () => {
      const wrapped = (body as { error?: unknown }).error ? body : { error: body };
      server.enqueue(refusal(400, wrapped));
      const store = createCapabilityStore();
      await rejection(turn(store, config as unknown as ModelParams));
      expect(bodies()).toHaveLength(1);
      const supports = store.capabilitiesFor(server.baseUrl, "sk-test");
      const model = store.modelCapabilitiesFor(supports, "m");
      expect(model).toMatchObject({ legacyTokenLimit: true, chosenTemperature: true, droppedFields: [] });
      expect(supports).toMatchObject({ strictSchemas: true, usageInStream: true });
    });
  }

  it("reads vLLM's too-large ceiling as the overflow it is", () => {
    const error = {
      status: 400,
      body: {
        object: "error",
        message:
          "'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context length is 2048 tokens and your request has 1500 input tokens (1000 > 2048 - 1500).",
      },
    };
    expect(isOverflow(error)).toBe(true);
  });
});
