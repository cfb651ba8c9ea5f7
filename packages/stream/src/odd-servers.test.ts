import { describe, expect, it } from "vitest";
import { streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";
import type { ToolCallProgress } from "./tool-call-assembler.js";

// Odd but well-formed server output, sent byte for byte by the testkit and read through the real
// openai client: nothing here may be dropped silently or turned into a transcript an endpoint
// would refuse.

const frame = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`;
const chunk = (delta: unknown, finish: string | null = null) =>
  frame({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] });
const DONE = "data: [DONE]\n\n";

async function read(chunks: string[], progress?: ToolCallProgress[]) {
  const { client } = await harness([{ type: "raw", chunks }]);
  return streamTurn(client, body(), { onToolCallDelta: progress ? (p) => progress.push(p) : undefined });
}

describe("usage in odd places", () => {
  it("keeps the counts when a later chunk carries an empty usage object", async () => {
    const turn = await read([
      chunk({ content: "Hi" }),
      frame({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } }),
      frame({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: {} }),
      DONE,
    ]);
    expect(turn.usage).toEqual({ prompt: 10, completion: 5, total: 15, cached: 0 });
    expect(turn.finishReason).toBe("stop");
  });
});

describe("a whole message inside the stream", () => {
  it("reads a choice that carries `message` instead of `delta`, rather than an empty finished turn", async () => {
    const turn = await read([
      frame({
        object: "chat.completion",
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: "The weather is fine.",
              tool_calls: [{ id: "call_9", type: "function", function: { name: "log", arguments: "{}" } }],
            },
            finish_reason: "tool_calls",
          },
        ],
      }),
      DONE,
    ]);
    expect(turn.content).toBe("The weather is fine.");
    expect(turn.toolCalls).toEqual([
      { id: "call_9", type: "function", function: { name: "log", arguments: "{}" } },
    ]);
    expect(turn.finishReason).toBe("tool_calls");
  });
});

describe("a whole message beside an empty delta", () => {
  it("reads the message when the delta beside it carries nothing, and never twice", async () => {
    const whole = (content: string) =>
      frame({
        choices: [
          {
            index: 0,
            delta: { role: "assistant" },
            message: { role: "assistant", content },
            finish_reason: "stop",
          },
        ],
      });
    expect((await read([whole("All of it."), DONE])).content).toBe("All of it.");
    const repeated = await read([
      chunk({ content: "All of " }),
      chunk({ content: "it." }),
      whole("All of it."),
      DONE,
    ]);
    expect(repeated.content).toBe("All of it.");
    expect(repeated.finishReason).toBe("stop");
  });
});

describe("tool-call pieces whose index moves", () => {
  it("keeps one call when a piece under a new index repeats the call's id without a name", async () => {
    const progress: ToolCallProgress[] = [];
    const turn = await read(
      [
        chunk({
          tool_calls: [
            { index: 0, id: "call_1", type: "function", function: { name: "f", arguments: '{"a":' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 1, id: "call_1", function: { arguments: "1}" } }] }, "tool_calls"),
        DONE,
      ],
      progress,
    );
    expect(turn.toolCalls).toEqual([
      { id: "call_1", type: "function", function: { name: "f", arguments: '{"a":1}' } },
    ]);
    expect(progress.map((p) => p.index)).toEqual([0, 0]);
  });

  it("continues the latest call when a piece under a new index has neither id nor name", async () => {
    const turn = await read([
      chunk({
        tool_calls: [
          { index: 0, id: "call_1", type: "function", function: { name: "f", arguments: '{"a":' } },
        ],
      }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: "1," } }] }),
      chunk({ tool_calls: [{ index: 2, function: { arguments: '"b":2}' } }] }, "tool_calls"),
      DONE,
    ]);
    expect(turn.toolCalls).toEqual([
      { id: "call_1", type: "function", function: { name: "f", arguments: '{"a":1,"b":2}' } },
    ]);
  });

  it("still starts a new call for a new index that names its tool", async () => {
    const turn = await read([
      chunk({
        tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "f", arguments: "{}" } }],
      }),
      chunk({
        tool_calls: [{ index: 1, id: "call_2", type: "function", function: { name: "g", arguments: "{}" } }],
      }),
      DONE,
    ]);
    expect(turn.toolCalls.map((c) => [c.id, c.function.name])).toEqual([
      ["call_1", "f"],
      ["call_2", "g"],
    ]);
  });
});
