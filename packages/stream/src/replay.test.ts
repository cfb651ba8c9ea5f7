import { readFixtureBytes, readRecordedResponse } from "@loopwright/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { StreamError } from "./errors.js";
import { streamTurn } from "./stream-turn.js";
import { fixtureChunks, toSse, wireStreams } from "./test-support/fixtures.js";
import { harness } from "./test-support/http.js";
import { random, rechunk } from "./test-support/rechunk.js";
import type { Turn } from "./turn.js";

/** Text checked by hand: whole when short, else its length and both ends. */
type Text = string | { length: number; starts: string; ends: string };

interface Expected {
  content: Text;
  reasoning: Text;
  toolCalls: [id: string, name: string, args: string][];
  usage: Turn["usage"];
  finishReason: string;
  /** The stream ends in an error object: `streamTurn` rejects with this code, the rest is `partial`. */
  error?: string;
}

/**
 * What each recorded stream holds, written down once and checked by hand against the raw file
 * (texts recounted independently from the `data:` lines; usage read off the last usage object).
 */
const EXPECTED: Record<string, Expected> = {
  "wire/alibaba/qwen3-max-reasoning-content.sse": {
    content: {
      length: 816,
      starts: 'The word **"strawberry"** cont',
      ends: "returns `3`).  \n\n**Answer: 3**",
    },
    reasoning: {
      length: 3301,
      starts: "We are asked: \"How many 'r's a",
      ends: " 3.\n\nYes.\n\nSo final answer: 3.",
    },
    toolCalls: [],
    usage: { prompt: 24, completion: 1355, total: 1379, cached: 0, uncached: 24, reasoningTokens: 1084 },
    finishReason: "stop",
  },
  "wire/alibaba/qwen3-max-text.sse": {
    content: {
      length: 3771,
      starts: "## The Festival of Shared Stor",
      ends: 'ters. We are woven together."*',
    },
    reasoning: "",
    toolCalls: [],
    usage: { prompt: 18, completion: 779, total: 797, cached: 0, uncached: 18 },
    finishReason: "stop",
  },
  "wire/azure-openai/deepseek-v4-pro-reasoning-nulls.sse": {
    content: {
      length: 2665,
      starts: "Exciting news, Knicks fans—the",
      ends: " April 4—from the logo! 🎯🧡💙",
    },
    reasoning: {
      length: 3832,
      starts: "We need to invent a new holida",
      ends: "ms fun. I'll craft a response.",
    },
    toolCalls: [],
    usage: { prompt: 19, completion: 1720, total: 1739, cached: 0, reasoningTokens: 0 },
    finishReason: "stop",
  },
  "wire/azure-openai/model-router-gpt-5-nano-text.sse": {
    content: "Capital of Denmark.",
    reasoning: "",
    toolCalls: [],
    usage: { prompt: 15, completion: 78, total: 93, cached: 0, uncached: 15, reasoningTokens: 64 },
    finishReason: "stop",
  },
  "wire/deepseek/deepseek-chat-text-finish-length.sse": {
    content: {
      length: 1855,
      starts: "## **Holiday Name:** Starlight",
      ends: "5 minutes of silent looking at",
    },
    reasoning: "",
    toolCalls: [],
    usage: { prompt: 13, completion: 400, total: 413, cached: 0, uncached: 13 },
    finishReason: "length",
  },
  "wire/deepseek/deepseek-reasoner-reasoning-content.sse": {
    content: 'The word "strawberry" contains three "r"s.',
    reasoning: {
      length: 606,
      starts: "We need to count the number of",
      ends: "es, 3.\n\nThus, the answer is 3.",
    },
    toolCalls: [],
    usage: { prompt: 18, completion: 219, total: 237, cached: 0, uncached: 18, reasoningTokens: 205 },
    finishReason: "stop",
  },
  "wire/deepseek/deepseek-reasoner-reasoning-then-tool-call.sse": {
    content: "",
    reasoning: {
      length: 191,
      starts: "The user is asking for the wea",
      ends: 'ameter set to "San Francisco".',
    },
    toolCalls: [["call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", '{"location": "San Francisco"}']],
    usage: { prompt: 339, completion: 83, total: 422, cached: 320, uncached: 19, reasoningTokens: 39 },
    finishReason: "tool_calls",
  },
  "wire/groq/gpt-oss-120b-reasoning-then-single-delta-tool-call.sse": {
    content: "",
    reasoning: {
      length: 92,
      starts: "We need to call the function w",
      ends: 'ovide a name, e.g., "example".',
    },
    toolCalls: [["fc_bfb39741-3748-4def-9886-a93fc9c64a90", "get_something_by_name", '{"name":"example"}']],
    usage: { prompt: 304, completion: 49, total: 353, cached: 0, reasoningTokens: 23 },
    finishReason: "tool_calls",
  },
  "wire/groq/llama-3.3-70b-tool-call-single-delta.sse": {
    content: "",
    reasoning: "",
    toolCalls: [["tk85n1k4m", "weather", "{}"]],
    usage: { prompt: 210, completion: 15, total: 225, cached: 0 },
    finishReason: "tool_calls",
  },
  "wire/groq/llama-text-x_groq-usage.sse": {
    content: {
      length: 3189,
      starts: 'Introducing "Luminaria" - a ne',
      ends: "iation for the magic of light.",
    },
    reasoning: "",
    toolCalls: [],
    usage: { prompt: 45, completion: 662, total: 707, cached: 0 },
    finishReason: "stop",
  },
  "wire/groq/qwen3-32b-delta-reasoning.sse": {
    content: {
      length: 347,
      starts: 'The word **"strawberry"** is s',
      ends: "\n**Final Answer**: $\\boxed{3}$",
    },
    reasoning: {
      length: 2952,
      starts: "Okay, let me try to figure out",
      ends: 'R\'s in "strawberry" is three.\n',
    },
    toolCalls: [],
    usage: { prompt: 17, completion: 1107, total: 1124, cached: 0, reasoningTokens: 963 },
    finishReason: "stop",
  },
  "wire/llamacpp/gemma-4-reasoning-content-timings-every-chunk.excerpt.sse": {
    content: "",
    reasoning: " it handles 📡",
    toolCalls: [],
    usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
    finishReason: "",
    // An excerpt: the stream as recorded goes on past its last line, which has no finish reason and
    // no [DONE] after it, so it reads as a stream cut short, this much read.
    error: "connection-lost",
  },
  "wire/mistral/magistral-medium-content-array-thinking.sse": {
    content: "2 + 2 = 4",
    reasoning: "The user is asking for 2+2. This is basic arithmetic. 2+2=4.",
    toolCalls: [],
    usage: { prompt: 10, completion: 46, total: 56, cached: 0 },
    finishReason: "stop",
  },
  "wire/mistral/mistral-small-tool-call-no-index.sse": {
    content: "",
    reasoning: "",
    toolCalls: [["gSIMJiOkT", "weather", '{"location": "San Francisco"}']],
    usage: { prompt: 124, completion: 22, total: 146, cached: 0 },
    finishReason: "tool_calls",
  },
  "wire/mistral/mistral-text.sse": {
    content: "Hello, world! This is a test response.",
    reasoning: "",
    toolCalls: [],
    usage: { prompt: 13, completion: 8, total: 21, cached: 0 },
    finishReason: "stop",
  },
  "wire/mistral/zai-glm-5-2-incremental-tool-call.sse": {
    content: "",
    reasoning: "",
    toolCalls: [["chatcmpl-tool-9f149c74c42f265b", "webSearchTool", '{"query": "current Berlin weather"}']],
    usage: { prompt: 171, completion: 14, total: 185, cached: 128, uncached: 43 },
    finishReason: "tool_calls",
  },
  "wire/openai/gpt-4.1-nano-text-usage-chunk.sse": {
    content: {
      length: 1724,
      starts: "**Holiday Name:** Harmony Day\n",
      ends: "xperiences and mutual respect.",
    },
    reasoning: "",
    toolCalls: [],
    usage: { prompt: 16, completion: 300, total: 316, cached: 0, uncached: 16, reasoningTokens: 0 },
    finishReason: "stop",
  },
  "wire/openai/gpt-4o-parallel-tool-calls-usage-chunk.sse": {
    content: "",
    reasoning: "",
    toolCalls: [
      ["call_q2UyBRP7eXNTzAoR8lEhjc9Z", "get_country", "{}"],
      ["call_b51ijcpFkDiTQG1bQzsrmtW5", "get_product_name", "{}"],
    ],
    usage: { prompt: 364, completion: 40, total: 404, cached: 0, uncached: 364, reasoningTokens: 0 },
    finishReason: "tool_calls",
  },
  "wire/openrouter/claude-sonnet-4.5-via-google-reasoning.sse": {
    content: "2 + 2 = 4",
    reasoning: "This is a simple arithmetic question. 2+2 equals 4.",
    toolCalls: [],
    usage: { prompt: 43, completion: 36, total: 79, cached: 0, uncached: 43, reasoningTokens: 13 },
    finishReason: "stop",
  },
  "wire/openrouter/minimax-m2-length-then-instream-error.sse": {
    error: "server-error",
    content: "",
    reasoning: "We need to respond to a greeting. The user",
    toolCalls: [],
    usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
    finishReason: "length",
  },
  "wire/perplexity/sonar-text-usage-every-chunk.sse": {
    content: "**EcoVista Day**[1][5]",
    reasoning: "",
    toolCalls: [],
    usage: { prompt: 11, completion: 434, total: 445, cached: 0 },
    finishReason: "stop",
  },
  "wire/together/deepseek-r1-think-tags-in-content-via-hf-router.sse": {
    content: {
      length: 2558,
      starts: "Crossing the street safely req",
      ends: "me—it could save your life! 🌟",
    },
    reasoning: {
      length: 1428,
      starts: 'Okay, the user asked "How do I',
      ends: "t sound like a paranoid robot.",
    },
    toolCalls: [],
    usage: { prompt: 10, completion: 955, total: 965, cached: 0, uncached: 10 },
    finishReason: "stop",
  },
  "wire/vllm/crusoe-llama-3.3-70b-vllm-0.24-usage-chunk.sse": {
    content: "1, 2, 3, 4, 5",
    reasoning: "",
    toolCalls: [],
    usage: { prompt: 46, completion: 14, total: 60, cached: 0, uncached: 46 },
    finishReason: "stop",
  },
  "wire/xai/grok-3-mini-reasoning-tool-call.sse": {
    content: "",
    reasoning: "First, the user is",
    toolCalls: [["call_55117580", "weather", '{"location":"San Francisco"}']],
    usage: { prompt: 291, completion: 26, total: 513, cached: 290, uncached: 1, reasoningTokens: 196 },
    finishReason: "tool_calls",
  },
  "wire/xai/grok-3-mini-text-long.sse": {
    content: "Grok",
    reasoning: {
      length: 1455,
      starts: 'First, the user said: "Say a s',
      ends: "just the word.\n\nResponse: Grok",
    },
    toolCalls: [],
    usage: { prompt: 12, completion: 2, total: 354, cached: 11, uncached: 1, reasoningTokens: 340 },
    finishReason: "stop",
  },
};

function expectText(actual: string, expected: Text): void {
  if (typeof expected === "string") expect(actual).toBe(expected);
  else {
    expect(actual.length).toBe(expected.length);
    expect(actual.startsWith(expected.starts)).toBe(true);
    expect(actual.endsWith(expected.ends)).toBe(true);
  }
}

/** The turn holds what the recording was written down as holding. */
function expectRecorded(turn: Turn, expected: Omit<Expected, "error">): void {
  expectText(turn.content, expected.content);
  expectText(turn.reasoning, expected.reasoning);
  expect(turn.toolCalls).toEqual(
    expected.toolCalls.map(([id, name, args]) => ({
      id,
      type: "function",
      function: { name, arguments: args },
    })),
  );
  expect(turn.usage).toEqual(expected.usage);
  expect(turn.finishReason).toBe(expected.finishReason);
}

/** The SSE body of a live llama.cpp capture (an HTTP response written with its status line and headers). */
function captureBody(name: string): string {
  return readRecordedResponse(`llamacpp-live/${name}.response.txt`).body;
}

type Outcome = { turn: Turn } | { error: string; partial: Turn | undefined };

async function outcome(run: Promise<Turn>): Promise<Outcome> {
  try {
    return { turn: await run };
  } catch (error) {
    if (!StreamError.isInstance(error)) throw error;
    return { error: error.code, partial: error.partial };
  }
}

const body = { model: "recorded", messages: [{ role: "user", content: "hi" }] };

describe("every recorded stream reads back to what it holds", () => {
  it("has an expectation for every recorded stream", () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(wireStreams());
  });

  for (const [fixture, expected] of Object.entries(EXPECTED)) {
    it(`reads ${fixture}`, async () => {
      const { client } = await harness([{ type: "replay", fixture }]);
      const output: string[] = [];
      const thinking: string[] = [];
      const result = await outcome(
        streamTurn(client, body, { onOutput: (t) => output.push(t), onThinking: (t) => thinking.push(t) }),
      );
      let turn: Turn;
      if ("turn" in result) {
        expect(expected.error).toBeUndefined();
        turn = result.turn;
        expect(output.join("")).toBe(turn.content);
        expect(thinking.join("")).toBe(turn.reasoning);
      } else {
        expect(result.error).toBe(expected.error);
        turn = result.partial!;
      }
      expectRecorded(turn, expected);
    });
  }
});

describe("a recorded stream re-cut or re-chunked reads back the same turn", () => {
  const files = wireStreams();

  it(
    "holds when the bytes arrive cut at arbitrary boundaries (mid-line, mid-UTF-8 character)",
    async () => {
      const { client, server } = await harness();
      const whole = new Map<string, Outcome>();
      for (const fixture of files) {
        server.enqueue({ type: "replay", fixture });
        whole.set(fixture, await outcome(streamTurn(client, body)));
      }
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...files),
          fc.array(fc.nat(), { minLength: 1, maxLength: 24 }),
          async (fixture, cuts) => {
            const bytes = readFixtureBytes(fixture);
            const points = [...new Set(cuts.map((c) => c % bytes.length))].sort((a, b) => a - b);
            const chunks: Uint8Array[] = [];
            let last = 0;
            for (const p of [...points, bytes.length]) {
              if (p > last) chunks.push(bytes.subarray(last, p));
              last = p;
            }
            server.enqueue({ type: "raw", chunks, chunkDelayMs: 1 });
            expect(await outcome(streamTurn(client, body))).toEqual(whole.get(fixture));
          },
        ),
        propertyRuns(60),
      );
    },
    propertyTimeout(120_000),
  );

  it(
    "holds when the deltas are cut differently (more pieces, ids repeated, index sent once, merged text)",
    async () => {
      const { client, server } = await harness();
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...files.filter((f) => !f.includes("minimax") && !f.includes(".excerpt."))),
          fc.integer(),
          fc.boolean(),
          fc.boolean(),
          async (fixture, seed, repeatIds, indexOnce) => {
            server.enqueue({ type: "replay", fixture });
            const original = await streamTurn(client, body);
            const chunks = rechunk(fixtureChunks(fixture), random(seed), { repeatIds, indexOnce });
            server.enqueue({ type: "raw", chunks: [toSse(chunks)] });
            expect(await streamTurn(client, body)).toEqual(original);
          },
        ),
        propertyRuns(60),
      );
    },
    propertyTimeout(120_000),
  );
});

/** Live llama.cpp captures (curl -i output): the SSE body after the response head, checked by hand. */
const LLAMACPP_LIVE: Record<string, Expected> = {
  "05-chat-stream-usage": {
    content: " I",
    reasoning: "",
    toolCalls: [],
    usage: { prompt: 32, completion: 2, total: 34, cached: 5, uncached: 27 },
    finishReason: "stop",
  },
  "06-chat-stream-nousage": {
    content: " I",
    reasoning: "",
    toolCalls: [],
    usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
    finishReason: "stop",
  },
  "09-json-schema-stream": {
    content: { length: 335, starts: '{"name":".$ hello call text v', ends: 'sure result reply"]}' },
    reasoning: "",
    toolCalls: [],
    usage: { prompt: 36, completion: 94, total: 130, cached: 35, uncached: 1 },
    finishReason: "stop",
  },
  "12-tools-required-stream": {
    content: "",
    reasoning: "",
    toolCalls: [
      [
        "hl3RS75nK9Nvyh7HPqbrpDKHVJJaeT4W",
        "get_weather",
        '{\n"location":"+ we loop data text some we agent in is of reply and reply to that you output it no tool call answer the"}',
      ],
    ],
    usage: { prompt: 268, completion: 63, total: 331, cached: 267, uncached: 1 },
    finishReason: "tool_calls",
  },
  "28-tools-required-stream-nousage": {
    content: "",
    reasoning: "",
    toolCalls: [["Z5Lyc3in0XvriFTTTJ8FZJqUZZXmxyAP", "add", '{\n"a" :\n7787699915417431,\n"b" :-379}']],
    usage: { prompt: 0, completion: 0, total: 0, cached: 0 },
    finishReason: "tool_calls",
  },
};

describe("live llama.cpp streams read back to what they hold", () => {
  for (const [name, expected] of Object.entries(LLAMACPP_LIVE)) {
    it(`reads llamacpp-live/${name}`, async () => {
      const { client } = await harness([{ type: "raw", chunks: [captureBody(name)] }]);
      const turn = await streamTurn(client, body);
      expectRecorded(turn, { ...expected, reasoning: "" });
    });
  }
});

describe("server-measured timings", () => {
  it("reads llama.cpp's last cumulative timings as prefill and decode time, never as usage", async () => {
    const { client } = await harness([{ type: "raw", chunks: [captureBody("05-chat-stream-usage")] }]);
    const turn = await streamTurn(client, body);
    // The last chunk's timings in the capture: prompt_ms 2.481, predicted_ms 2.054.
    expect(turn.timings).toEqual({ prefillMs: 2.481, decodeMs: 2.054 });
  });

  it("reads speculative decoding's drafted and accepted tokens where the server reports them", async () => {
    const { client } = await harness([
      { type: "replay", fixture: "wire/llamacpp/gemma-4-reasoning-content-timings-every-chunk.excerpt.sse" },
    ]);
    // The excerpt ends unfinished (a stream cut short): its timings are on the partial turn.
    const result = await outcome(streamTurn(client, body));
    expect(result).toMatchObject({ error: "connection-lost" });
    const turn = "turn" in result ? result.turn : result.partial!;
    expect(turn.timings).toEqual({
      prefillMs: 251.51,
      decodeMs: 1283.914,
      draftTokens: 94,
      draftAccepted: 41,
    });
    expect(turn.usage).toEqual({ prompt: 0, completion: 0, total: 0, cached: 0 });
  });

  it("has no timings at all for a server that measured none", async () => {
    const { client } = await harness([
      { type: "replay", fixture: "wire/openai/gpt-4.1-nano-text-usage-chunk.sse" },
    ]);
    const turn = await streamTurn(client, body);
    expect(turn).not.toHaveProperty("timings");
  });
});
