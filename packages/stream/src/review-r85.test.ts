import { withPollutedPrototype } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { DEFAULT_FENCES, FenceSplitter } from "./fences.js";
import { streamTurn } from "./stream-turn.js";
import { body, chunk, harness, sse } from "./test-support/http.js";

// Review r85 (the lead's sweep): the fence table and a reader's options were read through a
// polluted Object.prototype. An inherited `resume` or `implicitOpen` that is no string/boolean made
// every table refused ("Each fence needs …"), the default one too, so every streamed turn failed;
// an inherited `onThinking` string was called as the reader's callback.

function polluted<T>(name: string, value: unknown, body: () => T | Promise<T>): Promise<T> {
  return Promise.resolve(withPollutedPrototype({ [name]: value }, body));
}

/** A turn streaming a scratchpad in its content, then the answer. */
async function thinkingTurn() {
  const { client } = await harness([
    {
      type: "raw",
      headers: sse,
      chunks: [
        chunk([{ index: 0, delta: { role: "assistant", content: "<think>plan</think>Hi" } }]),
        chunk([{ index: 0, delta: {}, finish_reason: "stop" }]),
        "data: [DONE]\n\n",
      ],
    },
  ]);
  // A table of its own (a host's, as the loop passes): one already checked is not checked again.
  return streamTurn(client, body(), { fences: [...DEFAULT_FENCES] });
}

describe("R85S-1: fences and reader options are read by the fields they hold", () => {
  it("a streamed turn reads the same with implicitOpen, fences, startInReasoning or onThinking set on Object.prototype", async () => {
    const clean = await thinkingTurn();
    expect({ content: clean.content, reasoning: clean.reasoning }).toEqual({
      content: "Hi",
      reasoning: "plan",
    });
    // Not `resume`: Node's own streams read that name too (a socket's listener threw on it), so it
    // is checked on a FenceSplitter alone, below, with no connection open.
    const fields: [string, unknown][] = [
      ["implicitOpen", "P0LLUTED"],
      ["fences", "P0LLUTED"],
      ["startInReasoning", true],
      ["onThinking", "P0LLUTED"],
      ["onOutput", "P0LLUTED"],
    ];
    for (const [name, value] of fields) {
      const read = await polluted(name, value, () => thinkingTurn().catch((error: Error) => error.message));
      const seen = typeof read === "string" ? read : { content: read.content, reasoning: read.reasoning };
      expect({ name, seen }).toEqual({ name, seen: { content: "Hi", reasoning: "plan" } });
    }
  });

  it("a FenceSplitter's default table is its own: an inherited implicitOpen or resume refuses nothing", async () => {
    for (const [name, value] of [
      ["implicitOpen", "P0LLUTED"],
      ["resume", 1],
    ] as const) {
      const split = await polluted(name, value, () => {
        const splitter = new FenceSplitter();
        return [splitter.push("<think>a</think>b<think>c"), splitter.flush()];
      });
      expect({ name, answer: split.map((part) => part.content).join("") }).toEqual({ name, answer: "b" });
    }
  });
});
