import { describe, expect, it } from "vitest";
import { streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";

describe("streamTurn over HTTP", () => {
  it("reads a plain answer with usage and the finish reason", async () => {
    const { client } = await harness([
      { content: "Hello there, friend.", usage: { prompt_tokens: 12, completion_tokens: 5 } },
    ]);
    const seen: string[] = [];
    const turn = await streamTurn(client, body(), { onOutput: (t) => seen.push(t) });
    expect(turn.content).toBe("Hello there, friend.");
    expect(seen.join("")).toBe("Hello there, friend.");
    expect(turn.finishReason).toBe("stop");
    expect(turn.toolCalls).toEqual([]);
    expect(turn.usage.prompt).toBe(12);
    expect(turn.usage.completion).toBe(5);
  });

  it("reassembles parallel tool calls split across many deltas", async () => {
    const { client } = await harness([
      {
        toolCalls: [
          { id: "call_a", name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' },
          { id: "call_b", name: "get_time", arguments: '{"zone":"Europe/Paris"}' },
        ],
        chunkChars: 3,
        interleave: true,
      },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn.finishReason).toBe("tool_calls");
    expect(turn.toolCalls).toEqual([
      {
        id: "call_a",
        type: "function",
        function: { name: "get_weather", arguments: '{"city":"Paris","unit":"celsius"}' },
      },
      {
        id: "call_b",
        type: "function",
        function: { name: "get_time", arguments: '{"zone":"Europe/Paris"}' },
      },
    ]);
  });

  it("replays a recorded OpenAI parallel tool-call stream", async () => {
    const { client } = await harness([
      { type: "replay", fixture: "wire/openai/gpt-4o-parallel-tool-calls-usage-chunk.sse" },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn.toolCalls.length).toBe(2);
  });
});

describe("streamTurn abort and silence (skeleton)", () => {
  it("rejects with the signal's reason when aborted mid-stream", async () => {
    const { client } = await harness([
      { content: "a long answer that keeps coming", chunkChars: 2, chunkDelayMs: 20 },
    ]);
    const controller = new AbortController();
    const seen: string[] = [];
    const promise = streamTurn(client, body(), {
      signal: controller.signal,
      onOutput: (t) => {
        seen.push(t);
        if (seen.length === 2) controller.abort(new Error("user stopped"));
      },
    });
    await expect(promise).rejects.toThrow("user stopped");
    expect(seen.length).toBe(2);
  });

  it("raises EndpointSilent when the server stops talking mid-reply", async () => {
    const { client } = await harness([
      { content: "partial answer here", chunkChars: 4, silentAfterChunk: 3 },
    ]);
    const started = Date.now();
    await expect(streamTurn(client, body(), { idleMs: 150 })).rejects.toMatchObject({
      name: "EndpointSilent",
      code: "idle",
    });
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
