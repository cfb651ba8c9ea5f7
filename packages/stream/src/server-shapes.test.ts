import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import type { ChunkLike, DeltaLike } from "./chunk.js";
import type { ToolCallProgress } from "./tool-call-assembler.js";
import { normalizeFinishReason } from "./turn.js";
import { chunkError, TurnReader } from "./turn-reader.js";

// Chunk shapes from servers and proxies beyond the recorded fixtures. Each case cites where the
// shape was seen; the JSON is quoted or reduced from there (names and values may be shortened).

const delta = (d: unknown, finish: string | null = null): ChunkLike => ({
  choices: [{ index: 0, delta: d as DeltaLike, finish_reason: finish }],
});

function read(chunks: readonly ChunkLike[], progress?: ToolCallProgress[]) {
  const reader = new TurnReader({ onToolCallDelta: progress ? (p) => progress.push(p) : undefined });
  for (const c of chunks) reader.read(c);
  return reader.finish();
}

const calls = (chunks: readonly ChunkLike[]) =>
  read(chunks).toolCalls.map((c) => [c.id, c.function.name, c.function.arguments]);

describe("tool calls from servers that stray from OpenAI's delta shape", () => {
  it("reads a call sent as a bare object instead of an array, with arguments as an object (older TGI)", () => {
    // huggingface/text-generation-inference#2949: "TGI outputs singular tool call" in the stream and
    // "arguments ... TGI seems to output a JSON" (fixed by #3086 / #3076).
    expect(
      calls([
        delta({
          role: "assistant",
          tool_calls: {
            index: 0,
            id: "",
            type: "function",
            function: { description: null, name: "get_weather", arguments: { location: "Paris" } },
          },
        }),
        delta({}, "eos_token"),
      ]),
    ).toEqual([["call_0", "get_weather", '{"location":"Paris"}']]);
  });

  it("keeps the arguments once when a provider resends everything so far on every piece", () => {
    // NousResearch/hermes-agent#35718: DeepSeek / Baidu Qianfan "resend the full arguments-so-far in
    // every stream chunk instead of the new fragment".
    const piece = (args: string) => ({ index: 0, function: { arguments: args } });
    const progress: ToolCallProgress[] = [];
    const turn = read(
      [
        delta({
          tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "search_files" } }],
        }),
        delta({ tool_calls: [piece('{"pattern":')] }),
        delta({ tool_calls: [piece('{"pattern":"*.ts",')] }),
        delta({ tool_calls: [piece('{"pattern":"*.ts","path":"src"}')] }),
        delta({ tool_calls: [piece('{"pattern":"*.ts","path":"src"}')] }, "tool_calls"),
      ],
      progress,
    );
    expect(turn.toolCalls[0]?.function.arguments).toBe('{"pattern":"*.ts","path":"src"}');
    expect(progress.map((p) => p.argumentsDelta).join("")).toBe('{"pattern":"*.ts","path":"src"}');
  });

  it("does not add a finished call's arguments twice when a proxy repeats them whole, re-serialised", () => {
    // elizaOS/eliza#16973: argument deltas, then the consolidated call repeating the full
    // (re-serialised) arguments; anomalyco/opencode#17339: GLM-style streams resend the full JSON.
    expect(
      calls([
        delta({ tool_calls: [{ index: 0, id: "t1", function: { name: "shell", arguments: "" } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: '{"command": ' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: '"ls -la"}' } }] }),
        delta({
          tool_calls: [
            { index: 0, id: "t1", function: { name: "shell", arguments: '{"command":"ls -la"}' } },
          ],
        }),
      ]),
    ).toEqual([["t1", "shell", '{"command": "ls -la"}']]);
  });

  it("still joins fragments that happen to repeat the text before them", () => {
    // VicBilibily/GCMP#194: "100" then "00" must read "10000", and "-step" twice stays twice.
    expect(
      calls([
        delta({ tool_calls: [{ index: 0, id: "a", function: { name: "f", arguments: '{"n":100' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: "00" } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: ',"s":"-step' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: "-step" } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: '"}' } }] }),
      ]),
    ).toEqual([["a", "f", '{"n":10000,"s":"-step-step"}']]);
  });

  it("splits a second call whose whole arguments arrive under the first call's index", () => {
    // dyedd/lens#49 (gemini-3.1-pro through a relay): frame 3 carries the second glob call's
    // arguments with "index":0 and "name":"" — concatenating gave {"pattern":"**/*"}{"path":…}.
    expect(
      calls([
        delta({
          tool_calls: [
            { index: 0, id: "toolu_1", type: "function", function: { name: "glob", arguments: "" } },
          ],
        }),
        delta({
          tool_calls: [{ index: 0, function: { name: "", arguments: '{"path":"","pattern":"**/*"}' } }],
        }),
        delta({
          tool_calls: [
            { index: 0, function: { name: "", arguments: '{"path":"content/wiki","pattern":""}' } },
          ],
        }),
      ]),
    ).toEqual([
      ["toolu_1", "glob", '{"path":"","pattern":"**/*"}'],
      ["call_1", "glob", '{"path":"content/wiki","pattern":""}'],
    ]);
  });

  it("reads parallel calls with no index, each whole, with a metadata-only piece between (Gemini)", () => {
    // open-webui/computer#224 and THU-MAIC/OpenMAIC#1556: Gemini's OpenAI-compatible stream omits
    // tool_calls[].index and sends extra_content.google.thought_signature, also as its own piece.
    const sig = { extra_content: { google: { thought_signature: "c2ln" } } };
    expect(
      calls([
        delta({
          role: "assistant",
          tool_calls: [
            {
              ...sig,
              function: { arguments: '{"offset":1,"path":"/a.md"}', name: "read" },
              id: "call_297140",
              type: "function",
            },
          ],
        }),
        delta({ tool_calls: [sig] }),
        delta({
          tool_calls: [
            {
              function: { arguments: '{"path":"/b.md"}', name: "read" },
              id: "call_297141",
              type: "function",
            },
          ],
        }),
        delta({}, "stop"),
      ]),
    ).toEqual([
      ["call_297140", "read", '{"offset":1,"path":"/a.md"}'],
      ["call_297141", "read", '{"path":"/b.md"}'],
    ]);
  });

  it("keeps two whole calls apart when a proxy sends them with empty ids and no index", () => {
    // AstrBotDevs/AstrBot#6661: a Gemini proxy's piece {'id': '', 'function': {'arguments': …}, 'type': ''}.
    expect(
      calls([
        delta({
          tool_calls: [{ id: "", type: "", function: { name: "memory_save", arguments: '{"content":"a"}' } }],
        }),
        delta({
          tool_calls: [{ id: "", type: "", function: { name: "memory_save", arguments: '{"content":"b"}' } }],
        }),
      ]),
    ).toEqual([
      ["call_0", "memory_save", '{"content":"a"}'],
      ["call_1", "memory_save", '{"content":"b"}'],
    ]);
  });

  it("keeps parallel calls apart when vLLM or SGLang number every call 0", () => {
    // InternLM/lmdeploy#3412 quotes both: vLLM sends each call's first piece with a fresh id and its
    // name, then pieces with id ''; SGLang repeats the call's id ('0', '1') on every piece.
    const vllm = [
      { index: 0, id: "chatcmpl-tool-c9Z", type: "function", function: { arguments: "", name: "func_name" } },
      { index: 0, id: "", type: "function", function: { arguments: '{"x":1}', name: null } },
      { index: 0, id: "chatcmpl-tool-HfZ", type: "function", function: { arguments: "", name: "func_name" } },
      { index: 0, id: "", type: "function", function: { arguments: '{"x":2}', name: null } },
    ];
    const sglang = [
      { index: 0, id: "0", type: "function", function: { arguments: "", name: "func_name" } },
      { index: 0, id: "0", type: "function", function: { arguments: '{"x":1}', name: null } },
      { index: 0, id: "1", type: "function", function: { arguments: "", name: "func_name" } },
      { index: 0, id: "1", type: "function", function: { arguments: '{"x":2}', name: null } },
    ];
    expect(calls(vllm.map((p) => delta({ tool_calls: [p] })))).toEqual([
      ["chatcmpl-tool-c9Z", "func_name", '{"x":1}'],
      ["chatcmpl-tool-HfZ", "func_name", '{"x":2}'],
    ]);
    expect(calls(sglang.map((p) => delta({ tool_calls: [p] })))).toEqual([
      ["0", "func_name", '{"x":1}'],
      ["1", "func_name", '{"x":2}'],
    ]);
  });

  it("reads a call whose index starts at 1 after a text block (Anthropic's OpenAI-compatible endpoint)", () => {
    // vercel/ai packages/openai-compatible/src/chat/__fixtures__/anthropic-fallback-tool-call.sse:
    // text first, then the tool call under "index":1 (the content-block number), arguments "" twice.
    const turn = read([
      delta({ role: "assistant" }),
      delta({ content: "Reading" }),
      delta({ content: " it." }),
      delta({
        tool_calls: [
          {
            index: 1,
            id: "toolu_sanitized",
            type: "function",
            function: { name: "read_file", arguments: "" },
          },
        ],
      }),
      delta({ tool_calls: [{ index: 1, function: { arguments: "" } }] }),
      delta({ tool_calls: [{ index: 1, function: { arguments: '{"pa' } }] }),
      delta({ tool_calls: [{ index: 1, function: { arguments: 'th": "a.txt"}' } }] }),
      delta({}, "tool_calls"),
    ]);
    expect(turn.content).toBe("Reading it.");
    expect(turn.toolCalls).toEqual([
      {
        id: "toolu_sanitized",
        type: "function",
        function: { name: "read_file", arguments: '{"path": "a.txt"}' },
      },
    ]);
  });

  it("ignores empty tool_calls arrays sent beside reasoning and text", () => {
    // vercel/ai packages/openai-compatible/src/chat/__fixtures__/issue-20203-empty-tool-calls.chunks.txt
    const turn = read([
      delta({ role: "assistant", content: "", reasoning_content: "Think ", tool_calls: [] }),
      delta({ content: "", reasoning_content: "more...", tool_calls: [] }),
      delta({ content: "Hello", reasoning_content: "", tool_calls: [] }, "stop"),
    ]);
    expect(turn).toMatchObject({
      content: "Hello",
      reasoning: "Think more...",
      toolCalls: [],
      finishReason: "stop",
    });
  });

  it("keeps one call together when a server mints a new id on every piece of it", () => {
    // Proxies mint ids per piece they translate (BerriAI/litellm#11558: `id=f"call_{uuid4()}"` on
    // every Gemini part, all under one index). There each part was a whole named call, which starts
    // a new call here; a piece without a name is a continuation, whatever its id.
    expect(
      calls([
        delta({
          tool_calls: [
            { index: 0, id: "call_a1", type: "function", function: { name: "lookup", arguments: '{"q":' } },
          ],
        }),
        delta({
          tool_calls: [{ index: 0, id: "call_b2", type: "function", function: { arguments: '"x"}' } }],
        }),
      ]),
    ).toEqual([["call_a1", "lookup", '{"q":"x"}']]);
  });

  it("reads a legacy function_call streamed in pieces as one tool call", () => {
    // OpenAI's deprecated `functions` API: delta.function_call {name, arguments} then
    // finish_reason "function_call" (openai/openai-node src/resources/chat/completions types).
    const turn = read([
      delta({ role: "assistant", content: null, function_call: { name: "get_time", arguments: "" } }),
      delta({ function_call: { arguments: '{"tz":' } }),
      delta({ function_call: { arguments: '"UTC"}' } }),
      delta({}, "function_call"),
    ]);
    expect(turn.toolCalls).toEqual([
      { id: "call_0", type: "function", function: { name: "get_time", arguments: '{"tz":"UTC"}' } },
    ]);
    expect(turn.finishReason).toBe("function_call");
  });
});

describe("text, reasoning and usage in other servers' fields", () => {
  it("does not count reasoning twice when a server sends it as both reasoning and reasoning_content", () => {
    // vllm-project/vllm RFC #27755 renamed reasoning_content to reasoning; vllm-project/vllm#34030
    // keeps both in sync on streamed deltas for older clients, so the same text arrives twice.
    const turn = read([
      delta({ reasoning: "Let me", reasoning_content: "Let me" }),
      delta({ reasoning: " think.", reasoning_content: " think." }),
      delta({ content: "42" }, "stop"),
    ]);
    expect(turn).toMatchObject({ reasoning: "Let me think.", content: "42" });
  });

  it("takes no text from encrypted reasoning details (OpenRouter serving OpenAI o-series)", () => {
    // pydantic/pydantic-ai tests/models/cassettes/test_openrouter/test_openrouter_stream_with_reasoning.yaml
    const produced: boolean[] = [];
    const reader = new TurnReader({ onProduced: () => produced.push(true) });
    reader.read(
      delta({
        role: "assistant",
        content: "",
        reasoning: null,
        reasoning_details: [
          {
            type: "reasoning.encrypted",
            data: "gAAAAABpCCSI",
            id: "rs_0aa4",
            format: "openai-responses-v1",
            index: 0,
          },
        ],
      }),
    );
    expect(produced).toEqual([]);
    reader.read(delta({ role: "assistant", content: "I" }));
    reader.read({
      choices: [
        {
          index: 0,
          delta: { role: "assistant", content: "" },
          finish_reason: "stop",
          native_finish_reason: "completed",
        } as never,
      ],
    });
    expect(reader.finish()).toMatchObject({ content: "I", reasoning: "", finishReason: "stop" });
    expect(produced).toEqual([true]);
  });

  it("reads a refusal as the answer, so a refused reply is not empty", () => {
    // OpenAI structured outputs stream the refusal in delta.refusal with content null.
    const turn = read([
      delta({ role: "assistant", content: null, refusal: "" }),
      delta({ refusal: "I'm sorry, I can't help with that." }),
      delta({}, "stop"),
    ]);
    expect(turn.content).toBe("I'm sorry, I can't help with that.");
  });

  it("reads content sent as one part object or as parts without a type", () => {
    const turn = read([
      delta({ content: { type: "text", text: "Hel" } }),
      delta({ content: [{ text: "lo" }, { type: "image_url", image_url: { url: "x" } }] }),
      delta({ content: [{ type: "reasoning", reasoning: "hmm" }] }),
    ]);
    expect(turn).toMatchObject({ content: "Hello", reasoning: "hmm" });
  });

  it("reads usage a server puts on the choice (Moonshot / Kimi), and usage only in x_groq", () => {
    // higress-group/higress#1568 and northes/go-moonshot#17: Moonshot's last chunk, verbatim.
    const onChoice = read([
      delta({ content: "你好" }),
      JSON.parse(
        '{"id":"chatcmpl-67500eb0c51af667d5968f74","object":"chat.completion.chunk","created":1733299889,"model":"moonshot-v1-8k","choices":[{"index":0,"delta":{},"finish_reason":"stop","usage":{"prompt_tokens":10,"completion_tokens":79,"total_tokens":89}}],"system_fingerprint":"fpv0_c26222aa"}',
      ) as ChunkLike,
    ]);
    expect(onChoice.usage).toEqual({ prompt: 10, completion: 79, total: 89, cached: 0 });
    // Groq puts usage in x_groq.usage (fixtures wire/groq duplicate it at the top level too; a
    // relay that drops unknown top-level fields can leave only x_groq).
    const groq = read([
      delta({ content: "hi" }),
      {
        choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
        x_groq: { usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } },
      },
    ]);
    expect(groq.usage).toEqual({ prompt: 5, completion: 1, total: 6, cached: 0 });
  });

  it("reads a final chunk that carries the last text, the finish reason and usage together", () => {
    // DeepSeek and Mistral put usage on the finish chunk (fixtures wire/deepseek, wire/mistral).
    const turn = read([
      delta({ content: "Hi" }),
      {
        choices: [{ index: 0, delta: { content: "!" }, finish_reason: "length" }],
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
      },
    ]);
    expect(turn).toMatchObject({
      content: "Hi!",
      finishReason: "length",
      usage: { prompt: 3, completion: 2, total: 5 },
    });
  });

  it("skips chunks whose choices are null, and choices that are null", () => {
    const turn = read([
      { choices: null },
      { choices: [] },
      delta({ content: "ok" }, "stop"),
      { choices: null, usage: null },
    ]);
    expect(turn).toMatchObject({ content: "ok", finishReason: "stop" });
  });
});

describe("finish reasons in other servers' vocabulary", () => {
  const cases: [sent: string, read: string, where: string][] = [
    ["eos_token", "stop", "TGI before 2.2.1 (huggingface/text-generation-inference#2296, #2344)"],
    ["stop_sequence", "stop", "TGI and Anthropic stop_reason passed through relays"],
    ["eos", "stop", "end-of-sequence spelled short by small servers"],
    ["end_turn", "stop", "aws-samples/bedrock-access-gateway#11; BerriAI/litellm#12481 (Ollama, Gemini)"],
    ["tool_use", "tool_calls", "Anthropic stop_reason vocabulary, as end_turn leaks through relays"],
    ["max_tokens", "length", "Anthropic / Bedrock stop_reason passed through relays"],
    ["MAX_TOKENS", "length", "Gemini FinishReason enum passed through relays"],
    ["STOP", "stop", "Gemini FinishReason enum passed through relays"],
    ["SAFETY", "content_filter", "Gemini FinishReason enum passed through relays"],
    [
      "sensitive",
      "content_filter",
      "Zhipu GLM's content filter (langgenius/dify#7559, BerriAI/litellm#24373)",
    ],
    [
      "model_context_window_exceeded",
      "length",
      "Anthropic and Z.ai GLM output cut at the window (mozilla-ai/any-llm#1204)",
    ],
    [
      "network_error",
      "network_error",
      "Zhipu GLM's interrupted inference: a failure, kept as sent (NousResearch/hermes-agent#92161)",
    ],
    ["function_call", "function_call", "OpenAI legacy functions"],
    ["tool_calls", "tool_calls", "OpenAI"],
    ["abort", "abort", "vLLM / SGLang aborted request: unknown spellings are kept as sent"],
    ["constructor", "constructor", "a key of Object.prototype is not a known spelling"],
  ];
  for (const [sent, expected, where] of cases) {
    it(`reads "${sent}" as "${expected}" (${where})`, () => {
      expect(normalizeFinishReason(sent)).toBe(expected);
      expect(read([delta({ content: "x" }, sent)]).finishReason).toBe(expected);
    });
  }
});

describe("error chunks the client passes on instead of throwing", () => {
  const cases: [chunk: unknown, error: unknown, where: string][] = [
    [
      {
        object: "error",
        message: "Sampled token IDs exceed the max model length.",
        type: "BadRequestError",
        param: null,
        code: 400,
      },
      "self",
      "vLLM's ErrorResponse without an error wrapper (same shape as fixtures errors/vllm/*-legacy-top-level*.json)",
    ],
    [
      { message: "Overloaded", type: "overloaded_error" },
      "self",
      "an `event: error` line whose data has no error member: the openai SDK yields it as a chunk",
    ],
    [
      {
        error: "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096",
        error_type: "validation",
      },
      "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096",
      "TGI's in-stream error, from a client that does not throw on it",
    ],
  ];
  for (const [chunk, error, where] of cases) {
    it(`recognises ${where}`, () => {
      expect(chunkError(chunk as ChunkLike)).toEqual(error === "self" ? chunk : error);
    });
  }

  it("does not take an ordinary chunk, a usage chunk or a ping for an error", () => {
    for (const chunk of [
      { choices: [], usage: { prompt_tokens: 1 } },
      { choices: [{ index: 0, delta: { content: "error" } }] },
      { type: "ping" },
      {},
      { error: null, choices: [] },
      { object: "chat.completion.chunk", choices: [] },
    ]) {
      expect(chunkError(chunk as ChunkLike)).toBeUndefined();
    }
  });
});

describe("arguments read back whole however a server sends them", () => {
  // Objects whose keys repeat at every depth, including "{", so a piece can start with exactly the
  // text before it (`{"a":` then `{"a":…`) — the case that looks like a cumulative resend once.
  const args = fc
    .object({
      key: fc.constantFrom("a", "q", "{", "path"),
      maxDepth: 2,
      maxKeys: 3,
      values: [fc.string({ maxLength: 6 }), fc.integer(), fc.boolean(), fc.constant(null)],
    })
    .map((o) => JSON.stringify(o));
  const cutsOf = (text: string) =>
    fc
      .uniqueArray(fc.integer({ min: 1, max: Math.max(1, text.length - 1) }), { maxLength: 12 })
      .map((points) => {
        const sorted = points.filter((p) => p < text.length).sort((x, y) => x - y);
        const parts: string[] = [];
        let last = 0;
        for (const p of [...sorted, text.length]) {
          parts.push(text.slice(last, p));
          last = p;
        }
        return parts;
      });
  /** A call streamed as `pieces`, then (with `repeat`) the whole arguments once more, as some proxies do. */
  const stream = (pieces: readonly string[], repeat?: string): ChunkLike[] => [
    delta({
      tool_calls: [{ index: 0, id: "call_p", type: "function", function: { name: "f", arguments: "" } }],
    }),
    ...pieces.map((a) => delta({ tool_calls: [{ index: 0, function: { arguments: a } }] })),
    ...(repeat !== undefined ? [delta({ tool_calls: [{ index: 0, function: { arguments: repeat } }] })] : []),
  ];

  it("holds for pieces sent as new text only, and for everything-so-far resent on each piece", () => {
    fc.assert(
      fc.property(
        args.chain((text) => fc.tuple(fc.constant(text), cutsOf(text), fc.boolean(), fc.boolean())),
        ([text, pieces, cumulative, repeatAtEnd]) => {
          const sent = cumulative ? pieces.map((_, i) => pieces.slice(0, i + 1).join("")) : pieces;
          const progress: ToolCallProgress[] = [];
          const turn = read(stream(sent, repeatAtEnd ? text : undefined), progress);
          expect(turn.toolCalls).toEqual([
            { id: "call_p", type: "function", function: { name: "f", arguments: text } },
          ]);
          expect(progress.at(-1)?.arguments).toBe(text);
        },
      ),
      propertyRuns(1500),
    );
  });

  it("joins an incremental piece that repeats the text before it, once the next piece shows it", () => {
    const text = '{"a":{"a":1,"q":2}}';
    const turn = read(stream(['{"a":', '{"a":1', ',"q":2}}']));
    expect(turn.toolCalls[0]?.function.arguments).toBe(text);
    // …and when that piece is the last one, the reading that is whole JSON wins.
    expect(read(stream(['{"a":', '{"a":1}}'])).toolCalls[0]?.function.arguments).toBe('{"a":{"a":1}}');
  });

  it("joins incremental pieces that each repeat everything before them, however many in a row", () => {
    // Found by the property above (seed -94605746): the second piece repeats the first, and the
    // third repeats both, so a stream of new text only read as a cumulative resend and kept the
    // last piece alone: `{":{"{":…`, which is not JSON, in place of the model's arguments.
    const text = '{"{":{"{":{"{":563074038,"a":true}},"q":")s","path":{"{":-1820329967}}';
    const pieces = ['{"', '{":{"', '{":{"{":563074038,"a":true}},"q":")s","path":{"{":-1820329967}}'];
    expect(pieces.join("")).toBe(text);
    const progress: ToolCallProgress[] = [];
    expect(read(stream(pieces), progress).toolCalls[0]?.function.arguments).toBe(text);
    expect(progress.at(-1)?.arguments).toBe(text);
    // Four in a row: each piece starts with the one before it, and only the whole text is JSON.
    const four = ['{"a":', '{"a":{"a":', '{"a":{"a":{"a":', `{"a":{"a":{"a":1${"}".repeat(9)}`];
    const deep = four.join("");
    expect(JSON.parse(deep)).toBeTypeOf("object");
    expect(read(stream(four)).toolCalls[0]?.function.arguments).toBe(deep);
  });

  it("still reads a server that resends the whole arguments on every piece", () => {
    const text = '{"path":"src/a.ts","body":"x"}';
    const pieces = ['{"pa', '{"path":"src/', '{"path":"src/a.ts","bo', text];
    expect(read(stream(pieces)).toolCalls[0]?.function.arguments).toBe(text);
  });
});
