import { withPollutedPrototype } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { ownChunk } from "./own-chunk.js";
import { streamTurn } from "./stream-turn.js";
import { body, chunk, harness, sse } from "./test-support/http.js";
import { TurnReader } from "./turn-reader.js";

// A chunk parsed from JSON inherits from Object.prototype: a field some code in the process set
// there (prototype pollution) was read as part of every chunk that left it out.

/** A streamed tool call, then an answer chunk, a finish and a usage chunk, over HTTP. */
const STREAM = [
  chunk([{ index: 0, delta: { role: "assistant", content: "Checking." } }]),
  chunk([
    {
      index: 0,
      delta: {
        tool_calls: [
          { index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } },
        ],
      },
    },
  ]),
  chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] } }]),
  chunk([{ index: 0, delta: {}, finish_reason: "tool_calls" }]),
  chunk([], { usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 } }),
  "data: [DONE]\n\n",
];

const polluted = withPollutedPrototype;

describe("a streamed turn reads the chunk's own fields, never a polluted Object.prototype's", () => {
  it("content, refusal, reasoning, a call's name, arguments and id, and usage counts come out as sent", async () => {
    const { client } = await harness([{ type: "raw", headers: sse, chunks: STREAM }]);
    const clean = await streamTurn(client, body());
    const { client: again } = await harness([{ type: "raw", headers: sse, chunks: STREAM }]);
    const turn = await polluted(
      {
        content: "x",
        refusal: "no",
        reasoning_content: "hmm",
        name: "evil",
        arguments: "}",
        id: "forged",
        cached_tokens: 9,
        prompt_tokens_details: { cached_tokens: 9 },
      },
      () => streamTurn(again, body()),
    );
    expect(clean.content).toBe("Checking.");
    expect(clean.toolCalls).toEqual([
      { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
    ]);
    expect({
      content: turn.content,
      reasoning: turn.reasoning,
      calls: turn.toolCalls,
      usage: turn.usage,
    }).toEqual({
      content: clean.content,
      reasoning: clean.reasoning,
      calls: clean.toolCalls,
      usage: clean.usage,
    });
  });

  it("TurnReader alone reads a hand-built chunk's own fields", () => {
    const reader = new TurnReader();
    Object.defineProperty(Object.prototype, "refusal", { value: "no", configurable: true, writable: true });
    try {
      reader.read({ choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: "stop" }] });
    } finally {
      delete (Object.prototype as Record<string, unknown>).refusal;
    }
    const turn = reader.finish();
    expect(turn.content).toBe("Hi");
    expect(turn.finishReason).toBe("stop");
  });

  it("ownChunk copies what is read and hands a copy it made back as it is", () => {
    const sent = {
      choices: [{ index: 0, delta: { content: "Hi", extra: { deep: [1] } } }],
      other: { keep: true },
    };
    const copy = ownChunk(sent as never) as unknown as typeof sent;
    expect(copy).toEqual(sent);
    // No copy reaches Object.prototype: nothing set there is read through one.
    const reachesObject = (value: object) => value instanceof Object;
    expect(reachesObject(copy)).toBe(false);
    expect(reachesObject(copy.choices[0]!)).toBe(false);
    expect(reachesObject(copy.choices[0]!.delta)).toBe(false);
    // What the reader does not read goes by reference.
    expect(copy.other).toBe(sent.other);
    expect(ownChunk(copy as never)).toBe(copy);
  });
});
