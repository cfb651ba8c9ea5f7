import fc from "fast-check";
import { _iterSSEMessages } from "openai/core/streaming";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { SseDecoder, type SseEvent } from "./sse.js";
import { splitAt } from "./test-support/rechunk.js";

/** Every event `pieces` make, fed one piece at a time, then the end. */
function decode(pieces: readonly string[]): SseEvent[] {
  const decoder = new SseDecoder();
  const events = pieces.flatMap((piece) => decoder.push(piece));
  return [...events, ...decoder.end()];
}

/** What the openai SDK's own reader makes of the same bytes, cut at the same places. */
async function sdkEvents(pieces: readonly string[]): Promise<SseEvent[]> {
  const bytes = pieces.map((piece) => new TextEncoder().encode(piece));
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const b of bytes) controller.enqueue(b);
      controller.close();
    },
  });
  const out: SseEvent[] = [];
  for await (const sse of _iterSSEMessages(new Response(body), new AbortController())) {
    out.push({ event: sse.event, data: sse.data });
  }
  return out;
}

/**
 * Cuts `text` at the given fractions of its length (any place, inside a CRLF too), never between the
 * two halves of a surrogate pair: the SDK is handed each piece as UTF-8, and a lone half encodes as
 * U+FFFD, which no server's bytes could make.
 */
const cut = (text: string, at: readonly number[]): string[] =>
  splitAt(
    text,
    at.map((f) => {
      const p = Math.floor(f * text.length);
      return /[\uDC00-\uDFFF]/.test(text.charAt(p)) ? p - 1 : p;
    }),
  );

const value = fc.string({ unit: fc.constantFrom("a", "b", " ", ":", "{", "}", '"', "é", "🙂", "[DONE]") });
const otherLine = fc.oneof(
  value.map((v) => `:${v}`), // a comment
  value.map((v) => `id: ${v}`),
  fc.constant("retry: 1000"),
  value.map((v) => `x-${v.replace(/:/g, "")}`), // a field with no colon
  value.map((v) => `event:${v}`),
);
/** One event: some other lines and at least one data line, in any order. */
const event = fc
  .tuple(fc.array(value, { minLength: 1, maxLength: 3 }), fc.array(otherLine, { maxLength: 3 }), fc.boolean())
  .map(([data, others, spaced]) => [...others, ...data.map((d) => (spaced ? `data: ${d}` : `data:${d}`))]);
const lineEnd = fc.constantFrom("\n", "\r", "\r\n");

describe("SseDecoder", () => {
  it(
    "reads the same events as the openai SDK's reader, however the bytes are cut",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(event, { minLength: 1, maxLength: 6 }),
          lineEnd,
          fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 8 }),
          async (events, end, at) => {
            // The SDK drops an event left open at the body's end, so each one here ends in a blank line.
            const text = events.map((lines) => `${lines.join(end)}${end}${end}`).join("");
            const pieces = cut(text, at);
            const expected = await sdkEvents(pieces);
            expect(decode(pieces)).toEqual(expected);
            // One character at a time: every CRLF is cut between its two halves.
            expect(decode([...text])).toEqual(expected);
          },
        ),
        propertyRuns(200),
      );
      // Half a second alone; the allowance is for a machine busy with the rest of the suite.
    },
    propertyTimeout(60_000),
  );

  it("joins several data lines with a newline and keeps the event name", () => {
    expect(decode(['event: delta\ndata: {"a":\ndata:  1}\n\n'])).toEqual([
      { event: "delta", data: '{"a":\n 1}' },
    ]);
  });

  it("ends a line on a CR whose LF arrives in the next piece only once", () => {
    expect(decode(["data: one\r", "\ndata: two\r", "\n\r", "\n"])).toEqual([
      { event: null, data: "one\ntwo" },
    ]);
  });

  it("still reads a CRLF as one line end when an empty read comes between its CR and its LF", () => {
    // A body may hand over a read with no bytes (a proxy flushing, a custom fetch); it is not a line.
    expect(decode(["data: one\r", "", "\ndata: two\r\n", "", "\r", "", "\n"])).toEqual([
      { event: null, data: "one\ntwo" },
    ]);
  });

  it("hands on no event for a bare `event: ping` with no data line", () => {
    expect(decode(["event: ping\n\n", ": keep-alive\n\n", "data: x\n\n"])).toEqual([
      { event: null, data: "x" },
    ]);
  });

  it("reads old llama.cpp's `error:` line as an event named error carrying its value", () => {
    // The SDK's reader drops the unknown field; here it is the server's error, not nothing.
    expect(decode(['data: a\n\nerror: {"code":500,"message":"boom"}\n\n', "error:plain\n\n"])).toEqual([
      { event: null, data: "a" },
      { event: "error", data: '{"code":500,"message":"boom"}' },
      { event: "error", data: "plain" },
    ]);
  });

  it("keeps the last event when the body ends without its blank line, and a last line without its end", () => {
    expect(decode(["data: first\n\ndata: last"])).toEqual([
      { event: null, data: "first" },
      { event: null, data: "last" },
    ]);
  });

  it("reads one event of a million characters cut into 16 KiB pieces whole", () => {
    const payload = "x".repeat(1_000_000);
    const text = `data: ${payload}\n\n`;
    const pieces: string[] = [];
    for (let at = 0; at < text.length; at += 16_384) pieces.push(text.slice(at, at + 16_384));
    const events = decode(pieces);
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toBe(payload);
  });
});
