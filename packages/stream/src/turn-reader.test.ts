import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import type { ChunkLike, DeltaLike } from "./chunk.js";
import { fixtureChunks, wireStreams } from "./test-support/fixtures.js";
import { random, rechunk } from "./test-support/rechunk.js";
import { TurnReader, type TurnReaderOptions } from "./turn-reader.js";

const delta = (d: DeltaLike, finish: string | null = null): ChunkLike => ({
  choices: [{ index: 0, delta: d, finish_reason: finish }],
});

function read(chunks: readonly ChunkLike[], options: TurnReaderOptions = {}) {
  const reader = new TurnReader(options);
  for (const c of chunks) reader.read(c);
  return reader.finish();
}

describe("tool calls reassembled from deltas", () => {
  it("joins a call whose id and name come only in the first delta and whose arguments are split mid-escape", () => {
    const turn = read([
      delta({
        tool_calls: [
          { index: 0, id: "call_1", type: "function", function: { name: "search", arguments: "" } },
        ],
      }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '{"q":"say \\' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '"hi\\"","n":' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: "2}" } }] }, "tool_calls"),
    ]);
    expect(turn.toolCalls).toEqual([
      {
        id: "call_1",
        type: "function",
        function: { name: "search", arguments: '{"q":"say \\"hi\\"","n":2}' },
      },
    ]);
    expect(JSON.parse(turn.toolCalls[0]!.function.arguments)).toEqual({ q: 'say "hi"', n: 2 });
    expect(turn.finishReason).toBe("tool_calls");
  });

  it("keeps parallel calls apart when their deltas are interleaved", () => {
    const turn = read([
      delta({ tool_calls: [{ index: 0, id: "a", function: { name: "get_", arguments: "" } }] }),
      delta({ tool_calls: [{ index: 1, id: "b", function: { name: "put", arguments: '{"x"' } }] }),
      delta({ tool_calls: [{ index: 0, function: { name: "weather", arguments: '{"c":' } }] }),
      delta({ tool_calls: [{ index: 1, function: { arguments: ":1}" } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '"P"}' } }] }),
    ]);
    expect(turn.toolCalls.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([
      ["a", "get_weather", '{"c":"P"}'],
      ["b", "put", '{"x":1}'],
    ]);
  });

  it("reads a server that repeats the id and the whole name on every delta", () => {
    const piece = (args: string) => ({ index: 0, id: "same", function: { name: "lookup", arguments: args } });
    const turn = read([delta({ tool_calls: [piece('{"a"')] }), delta({ tool_calls: [piece(":1}")] })]);
    expect(turn.toolCalls).toEqual([
      { id: "same", type: "function", function: { name: "lookup", arguments: '{"a":1}' } },
    ]);
  });

  it("reads a server that sends index only on the first delta", () => {
    const turn = read([
      delta({ tool_calls: [{ index: 0, id: "c1", function: { name: "f", arguments: "{" } }] }),
      delta({ tool_calls: [{ function: { arguments: '"k":' } }] }),
      delta({ tool_calls: [{ function: { arguments: "true}" } }] }),
    ]);
    expect(turn.toolCalls[0]?.function.arguments).toBe('{"k":true}');
    expect(turn.toolCalls).toHaveLength(1);
  });

  it("reads a whole call sent in one delta, with no index and no type (Mistral)", () => {
    const turn = read(fixtureChunks("wire/mistral/mistral-small-tool-call-no-index.sse"));
    expect(turn.toolCalls).toEqual([
      {
        id: "gSIMJiOkT",
        type: "function",
        function: { name: "weather", arguments: '{"location": "San Francisco"}' },
      },
    ]);
  });

  it("starts a new call when a server numbers every call 0 but gives each its own id", () => {
    const turn = read([
      delta({ tool_calls: [{ index: 0, id: "x", function: { name: "one", arguments: "{}" } }] }),
      delta({ tool_calls: [{ index: 0, id: "y", function: { name: "two", arguments: "{}" } }] }),
    ]);
    expect(turn.toolCalls.map((c) => c.function.name)).toEqual(["one", "two"]);
  });

  it("starts a new call when a server numbers every call 0 and sends no ids, whole or in pieces", () => {
    // Ollama and proxies translating Gemini or the Responses API number every parallel call 0
    // (ollama/ollama#15457, su-kaka/gcli2api#406, mcowger/plexus#691); some send no id either.
    const whole = read([
      delta({ tool_calls: [{ index: 0, id: "", function: { name: "read", arguments: '{"path":"a"}' } }] }),
      delta({ tool_calls: [{ index: 0, id: "", function: { name: "write", arguments: '{"path":"b"}' } }] }),
    ]);
    expect(whole.toolCalls.map((c) => [c.function.name, c.function.arguments])).toEqual([
      ["read", '{"path":"a"}'],
      ["write", '{"path":"b"}'],
    ]);
    const pieces = read([
      delta({ tool_calls: [{ index: 0, function: { name: "read", arguments: "" } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '{"path":' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '"a"}' } }] }),
      delta({ tool_calls: [{ index: 0, function: { name: "write", arguments: "" } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '{"path":"b"}' } }] }),
    ]);
    expect(pieces.toolCalls.map((c) => [c.id, c.function.name, c.function.arguments])).toEqual([
      ["call_0", "read", '{"path":"a"}'],
      ["call_1", "write", '{"path":"b"}'],
    ]);
    // Three calls to one tool, each streamed in pieces under index 0 (mcowger/plexus#691 saw their
    // arguments joined into one call).
    const same = read(
      ["Organize the photos", "Try a new recipe", "Take a walk"].flatMap((title) => [
        delta({ tool_calls: [{ index: 0, function: { name: "add_task", arguments: "" } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: '{"title":' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify(title) } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: "}" } }] }),
      ]),
    );
    expect(same.toolCalls.map((c) => [c.function.name, JSON.parse(c.function.arguments).title])).toEqual([
      ["add_task", "Organize the photos"],
      ["add_task", "Try a new recipe"],
      ["add_task", "Take a walk"],
    ]);
    expect(new Set(same.toolCalls.map((c) => c.id)).size).toBe(3);
    // Arguments a server repeats after they were whole, with no naming piece between (vLLM's GLM
    // repetition, vllm-project/vllm#47504), stay one call: never a second call to run.
    const repeated = read([
      delta({ tool_calls: [{ index: 0, function: { name: "delete_file", arguments: '{"path":"a"}' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '{"path":' } }] }),
      delta({ tool_calls: [{ index: 0, function: { arguments: '"a"}' } }] }),
    ]);
    expect(repeated.toolCalls).toHaveLength(1);
  });

  it("reads the same call named again alone the same way whether its arguments come whole or in pieces", () => {
    // The tool named alone after a whole call starts the next call to it; arguments equal to the
    // last call's are that next call's, not a repeat, however the server cut them.
    const named = (args: string[]) =>
      read([
        delta({ tool_calls: [{ index: 0, function: { name: "ping", arguments: '{"host":"a"}' } }] }),
        delta({ tool_calls: [{ index: 0, function: { name: "ping", arguments: "" } }] }),
        ...args.map((piece) => delta({ tool_calls: [{ index: 0, function: { arguments: piece } }] })),
      ]).toolCalls.map((c) => [c.function.name, c.function.arguments]);
    const twice = [
      ["ping", '{"host":"a"}'],
      ["ping", '{"host":"a"}'],
    ];
    expect(named(['{"host":', '"a"}'])).toEqual(twice);
    expect(named(['{"host":"a"}'])).toEqual(twice);
  });

  it("gives a call an id when the server sent none, so its result can answer it", () => {
    const turn = read([delta({ tool_calls: [{ index: 0, function: { name: "f", arguments: "{}" } }] })]);
    expect(turn.toolCalls[0]?.id).toBe("call_0");
  });

  it("tells onToolCallDelta each piece with the call's progress so far", () => {
    const seen: unknown[] = [];
    read(
      [
        delta({ tool_calls: [{ index: 0, id: "a", function: { name: "f", arguments: "" } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: '{"x":' } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: "1}" } }] }),
      ],
      { onToolCallDelta: (p) => seen.push(p) },
    );
    expect(seen).toEqual([
      { index: 0, id: "a", name: "f", argumentsDelta: "", arguments: "" },
      { index: 0, id: "a", name: "f", argumentsDelta: '{"x":', arguments: '{"x":' },
      { index: 0, id: "a", name: "f", argumentsDelta: "1}", arguments: '{"x":1}' },
    ]);
  });
});

describe("reasoning from every field servers use", () => {
  it("reads reasoning_content, reasoning strings and reasoning objects", () => {
    const thoughts: string[] = [];
    const turn = read(
      [
        delta({ reasoning_content: "one " }),
        delta({ reasoning: "two " }),
        delta({ reasoning: { text: "three " } }),
        delta({ reasoning_details: [{ type: "reasoning.text", text: "four" }] }),
        delta({ content: "answer" }, "stop"),
      ],
      { onThinking: (t) => thoughts.push(t) },
    );
    expect(turn.reasoning).toBe("one two three four");
    expect(thoughts).toEqual(["one ", "two ", "three ", "four"]);
    expect(turn.content).toBe("answer");
  });

  it("does not count a thought twice when a server sends it as reasoning and reasoning_details (OpenRouter)", () => {
    const turn = read(fixtureChunks("wire/openrouter/claude-sonnet-4.5-via-google-reasoning.sse"));
    expect(turn.reasoning).toBe("This is a simple arithmetic question. 2+2 equals 4.");
  });

  it("reads Mistral's content arrays: thinking parts as reasoning, text parts as answer", () => {
    const output: string[] = [];
    const turn = read(fixtureChunks("wire/mistral/magistral-medium-content-array-thinking.sse"), {
      onOutput: (t) => output.push(t),
    });
    expect(turn.reasoning).toBe("The user is asking for 2+2. This is basic arithmetic. 2+2=4.");
    expect(turn.content).toBe("2 + 2 = 4");
    expect(output).toEqual(["2 + 2 = 4"]);
  });

  it("routes fenced text in content to onThinking and never to onOutput", () => {
    const output: string[] = [];
    const thinking: string[] = [];
    const turn = read([delta({ content: "<thi" }), delta({ content: "nk>plan</think>\n\nHi" })], {
      onOutput: (t) => output.push(t),
      onThinking: (t) => thinking.push(t),
    });
    expect(output.join("")).toBe("Hi");
    expect(thinking.join("")).toBe("plan");
    expect(turn).toMatchObject({ content: "Hi", reasoning: "plan" });
  });

  it("with startInReasoning never tells onOutput the scratchpad of a template that opened <think>", () => {
    const output: string[] = [];
    const turn = read([delta({ content: "The user" }), delta({ content: " says hi.</think>Hello!" })], {
      startInReasoning: true,
      onOutput: (t) => output.push(t),
    });
    expect(output).toEqual(["Hello!"]);
    expect(turn).toMatchObject({ content: "Hello!", reasoning: "The user says hi." });
  });

  it("reads content as all answer with fences: []", () => {
    expect(read([delta({ content: "<think>x</think>y" })], { fences: [] }).content).toBe("<think>x</think>y");
  });

  it("leaves content empty for a reply cut off inside its fence", () => {
    const turn = read([delta({ content: "<think>Still deciding whether" }, "length")]);
    expect(turn).toMatchObject({ content: "", reasoning: "Still deciding whether", finishReason: "length" });
  });
});

describe("the produced box", () => {
  it("is not set by the content-free role chunk, an empty reasoning field, a finish or usage", () => {
    let produced = 0;
    const reader = new TurnReader({ onProduced: () => produced++ });
    reader.read(delta({ role: "assistant", content: "" } as DeltaLike));
    reader.read(delta({ reasoning_content: "", content: null }));
    reader.read({ choices: [], usage: { prompt_tokens: 3 } });
    expect(reader.hasProduced).toBe(false);
    reader.read(delta({ content: "x" }));
    reader.read(delta({ content: "y" }));
    expect(reader.hasProduced).toBe(true);
    expect(produced).toBe(1);
  });

  it("is set by reasoning or by a piece of a tool call", () => {
    const a = new TurnReader();
    a.read(delta({ reasoning: "hm" }));
    expect(a.hasProduced).toBe(true);
    const b = new TurnReader();
    b.read(delta({ tool_calls: [{ index: 0, id: "c", function: { name: "", arguments: "" } }] }));
    expect(b.hasProduced).toBe(true);
  });
});

describe("finish reason and odd chunks", () => {
  it("reports an empty finish reason when the server never said", () => {
    expect(read([delta({ content: "hi" })]).finishReason).toBe("");
  });

  it("reads only the first choice", () => {
    const turn = read([
      { choices: [{ index: 1, delta: { content: "other" }, finish_reason: "length" }] },
      { choices: [{ index: 0, delta: { content: "mine" }, finish_reason: "stop" }] },
    ]);
    expect(turn).toMatchObject({ content: "mine", finishReason: "stop" });
  });

  it("skips chunks of shapes it does not know instead of failing", () => {
    const odd = [
      null,
      7,
      "x",
      { choices: "no" },
      { choices: [null, 3] },
      { choices: [{ delta: { content: 5 } }] },
    ];
    const turn = read([...(odd as unknown as ChunkLike[]), delta({ content: "ok" }, "stop")]);
    expect(turn).toMatchObject({ content: "ok", finishReason: "stop" });
  });
});

describe("re-chunked deltas read back the same turn", () => {
  const files = wireStreams();
  it(
    "holds for every recorded stream, cut into arbitrary deltas",
    () => {
      const baseline = new Map(files.map((f) => [f, read(fixtureChunks(f))]));
      let recut = 0;
      fc.assert(
        fc.property(
          fc.constantFrom(...files),
          fc.integer(),
          fc.boolean(),
          fc.boolean(),
          (file, seed, repeatIds, indexOnce) => {
            const original = fixtureChunks(file);
            const chunks = rechunk(original, random(seed), { repeatIds, indexOnce });
            if (JSON.stringify(chunks) !== JSON.stringify(original)) recut++;
            const output: string[] = [];
            const turn = read(chunks, { onOutput: (t) => output.push(t) });
            expect(turn).toEqual(baseline.get(file));
            expect(output.join("")).toBe(turn.content);
          },
        ),
        propertyRuns(400),
      );
      expect(recut).toBeGreaterThan(300);
    },
    propertyTimeout(60_000),
  );
});
