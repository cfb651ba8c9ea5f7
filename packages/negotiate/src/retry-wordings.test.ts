/**
 * Real wordings from servers our recorded fixtures do not cover, each quoted from the issue or
 * repository named beside it (bodies as pasted there; a message-only quote is wrapped in the
 * server's usual `{ error: { message } }`). Every row is classified twice: as a plain
 * `{ status, body }` a fetch wrapper would hand over, and as the real `openai` client's APIError
 * after the body crossed HTTP from the testkit.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientFor, rejection } from "../test/wire.js";
import { ContextOverflow } from "./errors.js";
import { readRefusal } from "./refusal.js";
import { backoffMs, isModelLoading, isOverflow, isTransient } from "./retry.js";

interface Row {
  source: string;
  status: number;
  body: unknown;
  overflow?: boolean;
  transient?: boolean;
  loading?: boolean;
  refusal?: Record<string, unknown>;
  /** The body has no `error` member: the bare SDK drops it, so only the plain form is classified. */
  plainOnly?: boolean;
}

const message = (text: string, extra: Record<string, unknown> = {}) => ({
  error: { message: text, ...extra },
});

const OVERFLOWS: Record<string, Row> = {
  "vLLM V1: decoder prompt longer than the maximum model length": {
    source: "https://github.com/Gabesarch/grounded-rl/issues/16",
    status: 400,
    body: {
      object: "error",
      message:
        "The decoder prompt (length 10127) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens. For image inputs, the number of image tokens depends on the number of images, and possibly their aspect ratios as well.",
      type: "BadRequestError",
      param: null,
      code: 400,
    },
    plainOnly: true,
  },
  "vLLM V1: prompt length longer than the maximum model length": {
    source: "https://github.com/hiyouga/LlamaFactory/issues/7723",
    status: 400,
    body: message("Prompt length of 5016 is longer than the maximum model length of 4096."),
  },
  "vLLM: prompt too long to fit into the model": {
    source: "https://github.com/vllm-project/vllm/issues/12165",
    status: 400,
    body: message(
      "The prompt (total length 25938) is too long to fit into the model (context length 4096). Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal tokens.",
    ),
  },
  "vLLM scheduler: input prompt too long and exceeds limit": {
    source: "https://github.com/vllm-project/vllm/issues/10440",
    status: 400,
    body: message("Input prompt (35247 tokens) is too long and exceeds limit of 1000"),
  },
  "SGLang: input longer than the model's context length": {
    source: "https://github.com/QwenLM/Qwen3/issues/1321",
    status: 400,
    body: {
      object: "error",
      message: "The input (61709 tokens) is longer than the model's context length (40960 tokens).",
      type: "BadRequestError",
      param: null,
      code: 400,
    },
    plainOnly: true,
  },
  "SGLang: input length exceeds the maximum allowed length": {
    source: "https://github.com/sgl-project/sglang/issues/4048",
    status: 400,
    body: message("Input length (160062 tokens) exceeds the maximum allowed length (59862 tokens)."),
  },
  "llama.cpp (2025): exceed_context_size_error with the 'try increasing' sentence": {
    source: "https://github.com/oobabooga/textgen/issues/7257",
    status: 400,
    body: {
      error: {
        code: 400,
        message:
          "the request exceeds the available context size. try increasing the context size or enable context shift",
        type: "exceed_context_size_error",
        n_prompt_tokens: 14429,
        n_ctx: 8192,
      },
    },
  },
  "llama.cpp (2024, context shift off): input too large to process, a 500": {
    source: "https://github.com/ggml-org/llama.cpp/pull/9544",
    status: 500,
    body: {
      error: {
        code: 500,
        message: "Input is too large to process. Either enable context shift or increase context length. ",
        type: "server_error",
      },
    },
  },
  "llama.cpp embeddings: input larger than the max context size, a 500": {
    source: "https://github.com/ggml-org/llama.cpp/pull/10030",
    status: 500,
    body: {
      error: {
        code: 500,
        message: "input is larger than the max context size. skipping",
        type: "server_error",
      },
    },
  },
  "ik_llama.cpp: prompt too big compared to KV size": {
    source: "https://github.com/ikawrakow/ik_llama.cpp/issues/1619",
    status: 400,
    body: message("Input prompt is too big compared to KV size. Please try increasing KV size"),
  },
  "llama-cpp-python: requested tokens exceed context window": {
    source: "https://github.com/fedora-copr/logdetective-website/pull/193",
    status: 400,
    body: message("Requested tokens (2285) exceed context window of 2048"),
  },
  "Mistral: too large for model with N maximum context length": {
    source: "https://github.com/jupyterlite/ai/issues/291",
    status: 400,
    body: message(
      "Prompt contains 152960 tokens and 0 draft tokens, too large for model with 131072 maximum context length",
    ),
  },
  "Fireworks: the prompt is too long": {
    source: "https://github.com/warpdotdev/warp/issues/15402",
    status: 400,
    body: {
      object: "error",
      type: "invalid_request_error",
      code: "invalid_request_error",
      message: "The prompt is too long: 264613, model maximum context length: 262141",
    },
    plainOnly: true,
  },
  "Groq: reduce the length, code context_length_exceeded": {
    source: "https://github.com/ScrapeGraphAI/Scrapegraph-ai/issues/411",
    status: 400,
    body: {
      error: {
        message: "Please reduce the length of the messages or completion.",
        type: "invalid_request_error",
        param: "messages",
        code: "context_length_exceeded",
      },
    },
  },
  "Cerebras: current length while limit": {
    source: "https://github.com/cline/cline/issues/5140",
    status: 400,
    body: message(
      "Please reduce the length of the messages or completion. Current length is 42328 while limit is 40000",
    ),
  },
  "DeepSeek: OpenAI's sentence under code invalid_request_error": {
    source: "https://github.com/FoundationAgents/OpenManus/issues/79",
    status: 400,
    body: {
      error: {
        message:
          "This model's maximum context length is 65536 tokens. However, you requested 66343 tokens (62247 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.",
        type: "invalid_request_error",
        param: null,
        code: "invalid_request_error",
      },
    },
  },
  "Gemini: input token count exceeds the maximum number of tokens allowed (array body)": {
    source: "https://github.com/google-gemini/gemini-cli/issues/6678",
    status: 400,
    body: [
      {
        error: {
          code: 400,
          message: "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
          errors: [
            {
              message:
                "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
              domain: "global",
              reason: "badRequest",
            },
          ],
          status: "INVALID_ARGUMENT",
        },
      },
    ],
    plainOnly: true,
  },
  "Anthropic-compatible: prompt is too long": {
    source: "https://github.com/OpenHands/OpenHands/issues/5350",
    status: 400,
    body: {
      type: "error",
      error: { type: "invalid_request_error", message: "prompt is too long: 209303 tokens > 200000 maximum" },
    },
  },
  "Bedrock via a proxy: input is too long for requested model": {
    source: "https://github.com/continuedev/continue/issues/9592",
    status: 400,
    body: message("The model returned the following errors: Input is too long for requested model."),
  },
  "Azure OpenAI: input tokens exceed the configured limit": {
    source: "https://github.com/BerriAI/litellm/issues/15968",
    status: 400,
    body: message(
      "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 509178 tokens. Please reduce the length of the messages.",
    ),
  },
  "OpenRouter: this endpoint's maximum context length": {
    source: "https://github.com/refly-ai/refly/issues/1177",
    status: 400,
    body: message(
      'This endpoint\'s maximum context length is 32768 tokens. However, you requested about 42832 tokens (42832 of text input). Please reduce the length of either one, or use the "middle-out" transform to compress your prompt automatically.',
    ),
  },
  "OpenRouter relaying DeepInfra's vLLM overflow under code 502": {
    source: "https://github.com/ai-christianson/RA.Aid/issues/41",
    status: 502,
    body: {
      error: {
        message:
          'ConnectionError: {"object": "error", "message": "This model\'s maximum context length is 16000 tokens. However, you requested 17165 tokens (13069 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "param": null, "code": 400}',
        code: 502,
        metadata: { provider_name: "DeepInfra", raw: { error_type: "validation_error" } },
      },
    },
  },
  "GitHub Copilot: prompt token count exceeds the limit": {
    source: "https://github.com/jjleng/copilot-more/issues/35",
    status: 400,
    body: {
      error: {
        message: "prompt token count of 93854 exceeds the limit of 90000",
        param: "",
        code: "",
        type: "",
      },
    },
  },
  "LiteLLM proxy: ContextWindowExceededError in the relayed message": {
    source: "https://github.com/BerriAI/litellm/issues/10431",
    status: 400,
    body: message(
      'litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: DeepseekException - {"error":{"message":"This model\'s maximum context length is 65536 tokens. However, you requested 68161 tokens (68161 in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}',
      { type: null, param: null, code: "400" },
    ),
  },
  "xAI: maximum prompt length … but the request contains": {
    source: "https://github.com/cline/cline/issues/3120",
    status: 400,
    body: message("This model's maximum prompt length is 131072 but the request contains 136973 tokens."),
  },
  "xAI (gRPC era): [input_too_large] exceeds budget": {
    source: "https://github.com/UKGovernmentBEIS/inspect_ai/pull/5208",
    status: 400,
    body: message(
      "Failed to start sampling: [input_too_large] Current message (1149677 tokens) exceeds budget (975424 tokens)",
    ),
  },
  "Moonshot (Kimi): request exceeded model token limit": {
    source: "https://github.com/MoonshotAI/kimi-cli/issues/2011",
    status: 400,
    body: {
      error: {
        message: "Invalid request: Your request exceeded model token limit: 262144 (requested: 269030)",
        type: "invalid_request_error",
      },
    },
  },
  "Moonshot (2024): model max length exceeded": {
    source: "https://github.com/MoonshotAI/MoonshotAI-Cookbook/issues/18",
    status: 400,
    body: message("model max length exceeded, max length:8192"),
  },
  "Qwen / DashScope: range of input length": {
    source: "https://github.com/agentscope-ai/QwenPaw/issues/6255",
    status: 400,
    body: {
      error: {
        code: "invalid_parameter_error",
        message: "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 983616]",
        param: null,
        type: "invalid_request_error",
      },
      request_id: "81a373d6-28bd-9968-8335-e22a2127c41b",
    },
  },
  "Zhipu GLM: prompt exceeds max length (code 1261)": {
    source: "https://github.com/zeroclaw-labs/zeroclaw/issues/4124",
    status: 400,
    body: { error: { code: "1261", message: "Prompt exceeds max length" } },
  },
  "Ollama (truncate off): llama.cpp's error object as a JSON string in `error`": {
    source: "https://github.com/ollama/ollama/issues/16800",
    status: 400,
    body: {
      error:
        '{"error":{"code":400,"message":"request (351 tokens) exceeds the available context size (256 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":351,"n_ctx":256}}',
    },
  },
  "Volcano Ark: input length exceeds the maximum length": {
    source: "https://github.com/langgenius/dify/issues/32221",
    status: 400,
    body: {
      error: { code: "InvalidParameter", message: "Input length 203743 exceeds the maximum length 202752" },
    },
  },
  "Ollama: prompt too long, exceeded max context length by N tokens": {
    source: "openclaw/openclaw sanitizer test quoting Ollama's 400 body",
    status: 400,
    body: {
      StatusCode: 400,
      Status: "400 Bad Request",
      error: "prompt too long; exceeded max context length by 4 tokens",
    },
  },
  "TGI: `inputs` must have less than N tokens": {
    source: "huggingface/text-generation-inference router/src/validation.rs (InputLength)",
    status: 422,
    body: {
      error: "Input validation error: `inputs` must have less than 4096 tokens. Given: 5120",
      error_type: "validation",
    },
  },
};

const NOT_OVERFLOWS: Record<string, Row> = {
  "Groq 413: request too large on tokens per minute (a rate limit, and it never fits)": {
    source: "https://github.com/ITSpecialist111/ai_automation_suggester/issues/61",
    status: 413,
    body: {
      error: {
        message:
          "Request too large for model `llama-3.3-70b-versatile` in organization `org_01jp8byqwpfx9sp1m0dbhb6a1e` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 14810, please reduce your message size and try again. Visit https://console.groq.com/docs/rate-limits for more information.",
        type: "tokens",
        code: "rate_limit_exceeded",
      },
    },
  },
  "Groq 429: rate limit reached on tokens per minute": {
    source: "https://github.com/elizaOS/eliza/issues/4040",
    status: 429,
    body: message(
      "Rate limit reached for model `llama-3.1-8b-instant` in organization `org_01j5b4pz9jff492fq686vypsx6` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Used 5034, Requested 1443. Please try again in 4.77s. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing",
      { type: "tokens", code: "rate_limit_exceeded" },
    ),
    transient: true,
  },
  "Hugging Face: model is currently loading, with estimated_time": {
    source: "https://github.com/huggingface/transformers/issues/32665",
    status: 503,
    body: { error: "Model meta-llama/Llama-2-13b-chat is currently loading", estimated_time: 20.0 },
    transient: true,
    loading: true,
  },
  "LM Studio: no models loaded (needs the operator, not a wait)": {
    source: "https://github.com/canopyai/Orpheus-TTS/issues/229",
    status: 404,
    body: {
      error: {
        message: "No models loaded. Please load a model in the developer page or use the `lms load` command.",
        type: "invalid_request_error",
        param: "model",
        code: "model_not_found",
      },
    },
  },
  "llama-swap: the model's server would not start (the same every time)": {
    source: "https://github.com/mostlygeek/llama-swap/issues/218",
    status: 502,
    body: message("unable to start process: upstream command exited prematurely but successfully"),
  },
  "DeepSeek: json_object needs the word json in the prompt (the caller's to fix)": {
    source: "https://github.com/browserbase/stagehand/issues/1204",
    status: 400,
    body: message(
      "Prompt must contain the word 'json' in some form to use 'response_format' of type 'json_object'",
    ),
  },
  "Groq: a max_tokens value above the model's ceiling that names the context window": {
    source: "https://github.com/RooCodeInc/Roo-Code/issues/5729",
    status: 400,
    body: message(
      "max_tokens must be less than or equal to 16384, the maximum value for max_tokens is less than the context_window for this model",
      { type: "invalid_request_error" },
    ),
  },
};

const REFUSALS: Record<string, Row> = {
  "Gemini: an unknown top-level field ('google', an extraBody field)": {
    source: "https://github.com/Alishahryar1/free-claude-code/issues/542",
    status: 400,
    body: [
      {
        error: {
          code: 400,
          message: 'Invalid JSON payload received. Unknown name "google": Cannot find field.',
          status: "INVALID_ARGUMENT",
          details: [
            {
              "@type": "type.googleapis.com/google.rpc.BadRequest",
              fieldViolations: [
                { description: 'Invalid JSON payload received. Unknown name "google": Cannot find field.' },
              ],
            },
          ],
        },
      },
    ],
    refusal: { kind: "unknown-field", field: "google", name: "google" },
    plainOnly: true,
  },
  "Gemini: a schema keyword refused inside a tool (answered with relaxed tools)": {
    source: "https://github.com/mnfst/llm-gateway/issues/1858",
    status: 400,
    body: {
      error: {
        code: 400,
        message:
          "Invalid JSON payload received. Unknown name \"ref\" at 'tools[0].function_declarations[0].parameters.properties[0].value.items': Cannot find field.",
        status: "INVALID_ARGUMENT",
      },
    },
    refusal: { kind: "strict-schema" },
  },
  "Gemini (Cody gateway): unknown name 'stream'": {
    source: "https://github.com/sourcegraph/cody/issues/4566",
    status: 400,
    body: {
      error: {
        code: 400,
        message: 'Invalid JSON payload received. Unknown name "stream": Cannot find field.',
        status: "INVALID_ARGUMENT",
      },
    },
    refusal: { kind: "unknown-field", field: "stream", name: "stream" },
  },
  "Bedrock (serde): unknown field `thinking`, expected one of …": {
    source: "https://github.com/BerriAI/litellm/issues/14225",
    status: 400,
    body: message(
      "The model returned the following errors: Failed to deserialize the JSON body into the target type: thinking: unknown field `thinking`, expected one of `messages`, `model`, `store`, `reasoning_effort`, `metadata`, `frequency_penalty`, `logit_bias`, `logprobs`, `top_logprobs`, `max_tokens`, `max_completion_tokens`, `n`, `modalities`, `prediction`, `audio`, `presence_penalty`, `response_format`, `seed`, `service_tier`, `stop`, `stream`, `stream_options`, `temperature`, `top_p`, `tools`, `tool_choice`, `parallel_tool_calls`, `user`, `function_call`, `functions` at line 1 column 212",
    ),
    refusal: { kind: "unknown-field", field: "thinking", name: "thinking" },
  },
  "LiteLLM: does not support parameters ['reasoning_effort']": {
    source: "https://github.com/BerriAI/litellm/issues/10108",
    status: 400,
    body: message(
      "litellm.UnsupportedParamsError: openai does not support parameters: ['reasoning_effort'], for model=o4-mini. To drop these, set `litellm.drop_params=True`",
    ),
    refusal: { kind: "unknown-field", field: "reasoning_effort", name: "reasoning_effort" },
  },
  "Kimi: a temperature only the model's own value goes for": {
    source: "https://github.com/Mai-with-u/MaiBot/issues/1538",
    status: 400,
    body: {
      error: {
        message: "invalid temperature: only 1 is allowed for this model",
        type: "invalid_request_error",
      },
    },
    refusal: { kind: "temperature" },
  },
  "Kimi via OpenRouter: a top_p only the model's own value goes for": {
    source: "https://github.com/microsoft/vscode/issues/312616",
    status: 400,
    body: {
      error: {
        message: "Error from provider (Moonshot AI): invalid top_p: only 0.95 is allowed for this model",
        type: "invalid_request_error",
      },
    },
    refusal: { kind: "unknown-field", field: "top_p", name: "top_p" },
  },
  "xAI: does not support parameter reasoningEffort (camelCase)": {
    source: "https://github.com/chenyme/grok2api/issues/814",
    status: 400,
    body: {
      code: "invalid-argument",
      error: "Model grok-4.20-0309-reasoning does not support parameter reasoningEffort.",
    },
    refusal: { kind: "unknown-field", field: "reasoning_effort", name: "reasoning_effort" },
  },
  "Anthropic: temperature and top_p cannot both be specified": {
    source: "https://github.com/microsoft/vscode/issues/312616",
    status: 400,
    body: {
      type: "error",
      error: {
        type: "invalid_request_error",
        message: "`temperature` and `top_p` cannot both be specified for this model. Please use only one.",
      },
      request_id: "XXX",
    },
    refusal: { kind: "unknown-field", field: "top_p", name: "top_p" },
  },
  "DeepSeek: this response_format type is unavailable (json_schema sent)": {
    source: "https://github.com/llm-exe/llm-exe/issues/662",
    status: 400,
    body: {
      error: {
        message: "This response_format type is unavailable now",
        type: "invalid_request_error",
        param: null,
        code: "invalid_request_error",
      },
    },
    refusal: { kind: "structured-output" },
  },
  "DeepSeek (serde, 422): response_format.type `json_schema` is unavailable": {
    source: "https://github.com/browser-use/browser-use/pull/215",
    status: 422,
    body: message(
      "Failed to deserialize the JSON body into the target type: response_format: response_format.type `json_schema` is unavailable now at line 1 column 12440",
    ),
    refusal: { kind: "structured-output" },
  },
  "OpenAI: unrecognized include_reasoning (relayed by LiteLLM)": {
    source: "https://github.com/BerriAI/litellm/issues/8765",
    status: 400,
    body: {
      error: {
        message: "Unrecognized request argument supplied: include_reasoning",
        type: "invalid_request_error",
        param: null,
        code: null,
      },
    },
    refusal: { kind: "unknown-field", field: "include_reasoning", name: "include_reasoning" },
  },
};

const ALL = { ...OVERFLOWS, ...NOT_OVERFLOWS, ...REFUSALS };

let server: TestServer;
const viaSdk = new Map<string, unknown>();

beforeAll(async () => {
  server = await startServer();
  const client = clientFor(server.baseUrl);
  for (const [name, row] of Object.entries(ALL)) {
    if (row.plainOnly) continue;
    server.enqueue({ type: "error", status: row.status, body: row.body });
    viaSdk.set(name, await rejection(client.chat.completions.create({ model: "m", messages: [] })));
  }
});
afterAll(() => server.close());

const answers = (error: unknown) => ({
  overflow: isOverflow(error),
  transient: isTransient(error),
  loading: isModelLoading(error),
  refusal: readRefusal(error) as Record<string, unknown> | undefined,
});

function check(name: string, row: Row, expected: ReturnType<typeof answers>): void {
  expect(answers({ status: row.status, body: row.body }), `${name} (${row.source})`).toEqual(expected);
  if (!row.plainOnly) expect(answers(viaSdk.get(name)), `${name} via the SDK`).toEqual(expected);
}

describe("context overflow in every server's words", () => {
  for (const [name, row] of Object.entries(OVERFLOWS)) {
    it(`reads an overflow: ${name}`, () => {
      check(name, row, { overflow: true, transient: false, loading: false, refusal: undefined });
    });
  }
});

describe("the overflow's own words", () => {
  it("are the upstream's sentence when a relay put a whole JSON body in a string (Ollama)", () => {
    const name = "Ollama (truncate off): llama.cpp's error object as a JSON string in `error`";
    const row = OVERFLOWS[name] as Row;
    const words = "request (351 tokens) exceeds the available context size (256 tokens), try increasing it";
    expect(ContextOverflow.fromError({ status: row.status, body: row.body }).serverMessage).toBe(words);
    expect(ContextOverflow.fromError(viaSdk.get(name)).serverMessage).toBe(words);
  });
});

describe("what borrows those words, or looks like it, is not an overflow", () => {
  for (const [name, row] of Object.entries(NOT_OVERFLOWS)) {
    it(`is not an overflow: ${name}`, () => {
      check(name, row, {
        overflow: false,
        transient: row.transient ?? false,
        loading: row.loading ?? false,
        refusal: undefined,
      });
    });
  }

  it("waits Hugging Face's estimated_time and Groq's 'try again in 4.77s'", () => {
    const hf = NOT_OVERFLOWS["Hugging Face: model is currently loading, with estimated_time"] as Row;
    expect(backoffMs(0, { status: hf.status, body: hf.body })).toBe(20_000);
    // Through a bare SDK client the sibling of a string `error` is dropped (@loopwright/client's
    // keepErrorBodies keeps it); the loading words still arrive, so it is still a loading 503.
    expect(isModelLoading(viaSdk.get("Hugging Face: model is currently loading, with estimated_time"))).toBe(
      true,
    );
    const groq = NOT_OVERFLOWS["Groq 429: rate limit reached on tokens per minute"] as Row;
    expect(backoffMs(3, viaSdk.get("Groq 429: rate limit reached on tokens per minute"))).toBe(4770);
    expect(backoffMs(0, { status: 429, body: message("Please try again in 1m23.5s.") })).toBe(83_500);
    expect(backoffMs(0, { status: groq.status, body: groq.body })).toBe(4770);
  });
});

describe("refusals of a field in other servers' words", () => {
  for (const [name, row] of Object.entries(REFUSALS)) {
    it(`reads the refusal: ${name}`, () => {
      check(name, row, { overflow: false, transient: false, loading: false, refusal: row.refusal });
    });
  }
});
