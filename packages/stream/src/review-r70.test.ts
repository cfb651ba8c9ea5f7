import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ChunkLike } from "./chunk.js";
import { openReply } from "./reply-body.js";
import { streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";
import { splitAt } from "./test-support/rechunk.js";
import { TurnReader } from "./turn-reader.js";

// Review r70 (second round on stream): defects a host would notice, each over real HTTP to the testkit.

const event = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

const STREAM = `${event({ role: "assistant", content: "" })}${event({ content: "Hello," })}${event({ content: " world" })}${event({}, "stop")}data: [DONE]\n\n`;

describe("R70N-1: events under another content type whose first network read stops before the colon", () => {
  for (const [type, cut] of [
    ["text/plain", 1],
    ["application/json", 3],
    ["text/plain", 4],
    ["application/octet-stream", 5],
  ] as const) {
    it(`are read as the stream they are (${type}, first read ${JSON.stringify(STREAM.slice(0, cut))}), not refused as not-a-stream`, async () => {
      const { client } = await harness([
        {
          type: "raw",
          headers: { "content-type": type },
          chunks: [STREAM.slice(0, cut), STREAM.slice(cut)],
          chunkDelayMs: 20,
        },
      ]);
      const told: string[] = [];
      const turn = await streamTurn(client, body(), { onOutput: (text) => told.push(text) });
      expect(turn.content).toBe("Hello, world");
      expect(told.join("")).toBe("Hello, world");
      expect(turn.finishReason).toBe("stop");
    });
  }

  it("still names a short body that only begins like a field as not-a-stream", async () => {
    const { client } = await harness([
      { type: "raw", headers: { "content-type": "text/plain" }, chunks: ["da", "ta"], chunkDelayMs: 20 },
    ]);
    await expect(streamTurn(client, body())).rejects.toMatchObject({
      code: "not-a-stream",
      message: expect.stringContaining('"data"'),
    });
  });

  it("reads the same turn however the bytes are cut, under any content type (property)", async () => {
    const bytes = new TextEncoder().encode(`\n${STREAM}`);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom("text/plain", "application/json", "", "text/event-stream"),
        fc.array(fc.integer({ min: 1, max: 12 }), { maxLength: 4 }),
        fc.array(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 6 }),
        async (type, early, anywhere) => {
          const pieces = splitAt(bytes, [...early, ...anywhere]);
          const response = new Response(
            new ReadableStream<Uint8Array>({
              start(controller) {
                for (const piece of pieces) controller.enqueue(piece);
                controller.close();
              },
            }),
            type === "" ? {} : { headers: { "content-type": type } },
          );
          if (type === "") response.headers.delete("content-type");
          const chunks: ChunkLike[] = [];
          for await (const c of await openReply({
            withResponse: async () => ({ data: undefined, response }),
          })) {
            chunks.push(c);
          }
          const reader = new TurnReader();
          for (const c of chunks) reader.read(c);
          const turn = reader.finish();
          expect([turn.content, turn.finishReason]).toEqual(["Hello, world", "stop"]);
        },
      ),
      { numRuns: 200 },
    );
  }, 60_000);
});

describe("R70N-2: a tool-call index written as a string of digits", () => {
  it('numbers the call as that number: two calls keep their own names ("0", "1")', async () => {
    const piece = (index: unknown, fn: Record<string, unknown>, id?: string) => ({
      tool_calls: [{ index, ...(id === undefined ? {} : { id }), type: "function", function: fn }],
    });
    const { client } = await harness([
      {
        type: "raw",
        chunks: [
          event(piece("0", { name: "get_weather", arguments: "" })),
          event(piece("0", { arguments: '{"city":' })),
          event(piece("0", { arguments: '"Paris"}' })),
          event(piece("1", { name: "get_time", arguments: "" })),
          event(piece("1", { arguments: '{"tz":"CET"}' }), "tool_calls"),
          "data: [DONE]\n\n",
        ],
      },
    ]);
    const progress: string[] = [];
    const turn = await streamTurn(client, body(), {
      onToolCallDelta: (p) => progress.push(`${p.index}:${p.name}`),
    });
    expect(turn.toolCalls.map((c) => [c.function.name, c.function.arguments])).toEqual([
      ["get_weather", '{"city":"Paris"}'],
      ["get_time", '{"tz":"CET"}'],
    ]);
    expect(new Set(turn.toolCalls.map((c) => c.id)).size).toBe(2);
    expect(progress.at(-1)).toBe("1:get_time");
  });

  it("reads a string that is no number as no index, as before", () => {
    const reader = new TurnReader();
    for (const index of ["first", "first"]) {
      reader.read({
        choices: [{ delta: { tool_calls: [{ index, id: "a", function: { name: "f", arguments: "{}" } }] } }],
      });
    }
    expect(reader.finish().toolCalls.map((c) => c.function.name)).toEqual(["f"]);
  });
});
