import fc from "fast-check";
import { _iterSSEMessages } from "openai/core/streaming";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import type { ChunkLike } from "./chunk.js";
import { openReply } from "./reply-body.js";
import { streamTurn } from "./stream-turn.js";
import { body, harness } from "./test-support/http.js";
import { splitAt } from "./test-support/rechunk.js";

// The text/event-stream reader decodes bytes as they arrive: characters and broken UTF-8 cut between
// two network reads, a byte order mark, NUL in a comment. What comes out must be what the openai SDK's reader
// (which decodes each whole line) makes of the same bytes.

/** A reply body of `pieces`, as the SDK's `withResponse()` hands it over. */
function sdkAnswer(pieces: readonly Uint8Array[]) {
  const response = () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const piece of pieces) controller.enqueue(piece);
          controller.close();
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    );
  return { withResponse: async () => ({ data: undefined, response: response() }), response };
}

async function ours(pieces: readonly Uint8Array[]): Promise<ChunkLike[]> {
  const out: ChunkLike[] = [];
  for await (const chunk of await openReply(sdkAnswer(pieces))) out.push(chunk);
  return out;
}

async function sdks(pieces: readonly Uint8Array[]): Promise<ChunkLike[]> {
  const out: ChunkLike[] = [];
  for await (const sse of _iterSSEMessages(sdkAnswer(pieces).response(), new AbortController())) {
    if (sse.data.startsWith("[DONE]")) break;
    out.push(JSON.parse(sse.data) as ChunkLike);
  }
  return out;
}

function cutBytes(bytes: Uint8Array, at: readonly number[]): Uint8Array[] {
  return splitAt(
    bytes,
    at.map((f) => Math.floor(f * bytes.length)),
  );
}

const encode = (text: string) => new TextEncoder().encode(text);
const concat = (parts: readonly Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

/** Bytes that may stand inside a JSON string: whole characters, and broken or stray UTF-8. */
const stringBytes = fc
  .array(
    fc.oneof(
      fc.constantFrom("a", " ", "é", "€", "🙂", "\\u0000", "\\n").map(encode),
      fc
        .constantFrom([0xe2, 0x82], [0xf0, 0x9f, 0x99], [0x80], [0xff], [0xc3], [0xed, 0xa0, 0x80])
        .map((b) => new Uint8Array(b)),
    ),
    { maxLength: 12 },
  )
  .map(concat);

describe("the event-stream reader on bytes", () => {
  it(
    "decodes characters and broken UTF-8 cut anywhere between reads as the openai SDK's reader does",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(stringBytes, { minLength: 1, maxLength: 5 }),
          fc.constantFrom("\n", "\r", "\r\n"),
          fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 10 }),
          async (contents, end, at) => {
            const bytes = concat([
              // Each event after a comment of the same bytes and NUL, which no reader may trip on.
              ...contents.flatMap((c) => [
                encode(": \u0000"),
                c,
                encode(end),
                encode('data: {"c":"'),
                c,
                encode(`"}${end}${end}`),
              ]),
              encode(`data: [DONE]${end}${end}`),
            ]);
            const pieces = cutBytes(bytes, at);
            const expected = await sdks(pieces);
            expect(expected).toHaveLength(contents.length);
            expect(await ours(pieces)).toEqual(expected);
            // One byte at a time: every character of more than one byte is cut.
            expect(await ours([...bytes].map((b) => new Uint8Array([b])))).toEqual(expected);
          },
        ),
        propertyRuns(150),
      );
    },
    propertyTimeout(60_000),
  );

  it("reads a stream that opens with a byte order mark, its three bytes arriving apart", async () => {
    const text = `\uFEFFdata: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`;
    const bytes = encode(text);
    const { client } = await harness([
      { type: "raw", chunks: [bytes.slice(0, 1), bytes.slice(1, 2), bytes.slice(2, 4), bytes.slice(4)] },
    ]);
    const turn = await streamTurn(client, body());
    expect(turn).toMatchObject({ content: "hi", finishReason: "stop" });
  });
});
