import { describe, expect, it } from "vitest";
import { StreamError } from "./errors.js";
import { streamTurn } from "./stream-turn.js";
import { body, chunk, harness, sse } from "./test-support/http.js";
import type { Turn } from "./turn.js";

// Review r90 (a fast-check model of a turn in each server's dialect, src/turn-model.test.ts).

const opener = chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
const text = (content: string) => chunk([{ index: 0, delta: { content }, finish_reason: null }]);
const finish = (reason: string) => chunk([{ index: 0, delta: {}, finish_reason: reason }]);

async function read(
  chunks: string[],
  options: Parameters<typeof streamTurn>[2] = {},
): Promise<Turn | StreamError> {
  const { client } = await harness([{ type: "raw", headers: sse, chunks }]);
  try {
    return await streamTurn(client, body(), options);
  } catch (error) {
    if (StreamError.isInstance(error)) return error;
    throw error;
  }
}

describe("R90-1: a body that ends between events with neither a finish reason nor [DONE] was cut short", () => {
  // A proxy whose upstream went away mid-answer can end its own response cleanly (the last chunk of
  // a chunked body, a closed HTTP/1.0 body): the answer so far resolved as a whole turn with
  // `finishReason: ""`, and a loop ended the run on half an answer.
  it("is connection-lost, the answer so far as the partial", async () => {
    const result = await read([opener, text("The capital of France is"), text(" Par")]);
    expect(StreamError.isInstance(result)).toBe(true);
    expect(result).toMatchObject({
      code: "connection-lost",
      produced: true,
      partial: { content: "The capital of France is Par", finishReason: "" },
    });
    expect((result as StreamError).message).toContain("neither [DONE] nor a finish reason");
  });

  it("also halfway through a tool call's arguments", async () => {
    const call = (piece: Record<string, unknown>) =>
      chunk([{ index: 0, delta: { tool_calls: [{ index: 0, ...piece }] }, finish_reason: null }]);
    const result = await read([
      opener,
      call({ id: "call_1", type: "function", function: { name: "get_weather", arguments: "" } }),
      call({ function: { arguments: '{"city":' } }),
    ]);
    expect(result).toMatchObject({
      code: "connection-lost",
      partial: {
        toolCalls: [{ function: { name: "get_weather", arguments: '{"city":' } }],
        finishReason: "",
      },
    });
  });

  it("a finish reason without [DONE], or [DONE] without a finish reason, still ends the turn", async () => {
    // Most recorded servers send both; some end after the finish chunk (recordings/wire/mistral), and
    // a server that never names a reason still says it is done with [DONE].
    expect(await read([opener, text("Hi"), finish("stop")])).toMatchObject({
      content: "Hi",
      finishReason: "stop",
    });
    expect(await read([opener, text("Hi"), "data: [DONE]\n\n"])).toMatchObject({
      content: "Hi",
      finishReason: "",
    });
  });

  it("an empty body is still no stream, not a lost connection", async () => {
    expect(await read([])).toMatchObject({ code: "not-a-stream" });
    expect(await read([": keep-alive\n\n"])).toMatchObject({ code: "not-a-stream" });
  });
});

describe("R90-2: `<think>` blocks, pinned: what is answer and what is reasoning", () => {
  // The seed says text "after the last </think>" is the answer: that is where the tool-call recovery
  // looks for call markup. For the turn itself, text between two blocks (interleaved thinking: a
  // block, a sentence to the user, another block) is answer too: it was already shown through
  // onOutput, and taking it back would make the stored answer differ from what the user read.
  it("two blocks: the text outside both is the answer, both blocks the reasoning", async () => {
    const shown: string[] = [];
    const retracted: number[] = [];
    const turn = await read(
      [
        opener,
        text("<think>Check the file.</think>Looking now."),
        text("<think>It is there.</think>Found it."),
        finish("stop"),
      ],
      { onOutput: (t) => shown.push(t), onRetract: (n) => retracted.push(n) },
    );
    expect(turn).toMatchObject({
      content: "Looking now.Found it.",
      reasoning: "Check the file.It is there.",
      finishReason: "stop",
    });
    expect(shown.join("")).toBe("Looking now.Found it.");
    expect(retracted).toEqual([]);
  });

  it("`</think>` inside a tool call's arguments is the arguments, never reasoning", async () => {
    const args = '{"template":"<think>{{r}}</think>{{a}}","end":"</think>"}';
    const call = (piece: Record<string, unknown>) =>
      chunk([{ index: 0, delta: { tool_calls: [{ index: 0, ...piece }] }, finish_reason: null }]);
    const turn = await read([
      opener,
      text("<think>plan</think>"),
      call({ id: "call_1", type: "function", function: { name: "write", arguments: args.slice(0, 20) } }),
      call({ function: { arguments: args.slice(20) } }),
      finish("tool_calls"),
      "data: [DONE]\n\n",
    ]);
    expect(turn).toMatchObject({
      content: "",
      reasoning: "plan",
      toolCalls: [{ function: { name: "write", arguments: args } }],
    });
  });

  it("a `</think>` with no opener: the template opened it, everything before it is reasoning; a later one is text", async () => {
    // Qwen3 / DeepSeek-R1 templates write `<think>` into the prompt, so the reply holds only the closer.
    const pieces = ["Let me think.", "</think>The tag ", "</think> ends a scratchpad."];
    const retracted: number[] = [];
    const turn = await read([opener, ...pieces.map(text), finish("stop")], {
      onRetract: (n) => retracted.push(n),
    });
    expect(turn).toMatchObject({
      content: "The tag </think> ends a scratchpad.",
      reasoning: "Let me think.",
      scratchpadClosed: true,
      rawContent: "Let me think.</think>The tag </think> ends a scratchpad.",
    });
    // "Let me think." had been shown as answer before its closer came: it is taken back.
    expect(retracted).toEqual(["Let me think.".length]);
  });

  it("a closer after a whole block is the answer's text, not a second template-opened scratchpad", async () => {
    const turn = await read([
      opener,
      text("<think>a</think>Use "),
      text("</think> to close."),
      finish("stop"),
    ]);
    expect(turn).toMatchObject({ content: "Use </think> to close.", reasoning: "a" });
    expect(turn).not.toHaveProperty("scratchpadClosed");
  });
});
