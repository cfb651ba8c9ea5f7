/**
 * The text/event-stream reader on hostile streams, fed from a local `Response` body (no network, so
 * only the reader is measured). Reported, never asserted.
 *
 * 1. Keep-alive comments for hours: 64 MiB of `: keep-alive` lines and no event. The heap held after
 *    a collection, at a tenth of the stream and at its end: a reader that keeps nothing holds the same
 *    at both (ratio ~1x); one that kept every comment would hold ten times as much. The line reader's
 *    time against splitting the same text at its line ends, in the same run.
 * 2. One event of 16 MiB and of 64 MiB, in 64 KiB reads: time growth for 4x the size (linear: ~4x),
 *    and the peak heap over the event's size in UTF-16 bytes.
 *
 *   pnpm bench            (node --expose-gc --import tsx bench/sse-reader.bench.ts)
 */
import { openReply } from "../src/reply-body.js";
import { SseDecoder } from "../src/sse.js";

const gc = (globalThis as { gc?: () => void }).gc;
const heap = () => {
  gc?.();
  return process.memoryUsage().heapUsed;
};
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** A reply whose body is `pieces(i)` for i = 0 … count − 1, made as it is read, then `tail`. */
function answer(
  count: number,
  piece: (i: number) => Uint8Array,
  tail: Uint8Array,
  onRead?: (i: number) => void,
) {
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (i < count) {
        onRead?.(i);
        controller.enqueue(piece(i++));
      } else {
        controller.enqueue(tail);
        controller.close();
      }
    },
  });
  const response = new Response(body, { headers: { "content-type": "text/event-stream" } });
  return { withResponse: async () => ({ data: undefined, response }) };
}

const encoder = new TextEncoder();
const DONE = encoder.encode(`data: ${JSON.stringify({ choices: [] })}\n\ndata: [DONE]\n\n`);

// 1. Keep-alives.
{
  const line = ": keep-alive\n\n";
  const piece = encoder.encode(line.repeat(Math.floor(16_384 / line.length)));
  const count = Math.floor((64 * 1024 * 1024) / piece.length);
  const base = heap();
  let atTenth = 0;
  let atEnd = 0;
  const started = performance.now();
  const chunks = await openReply(
    answer(
      count,
      () => piece,
      DONE,
      (i) => {
        if (i === Math.floor(count / 10)) atTenth = heap() - base;
        if (i === count - 1) atEnd = heap() - base;
      },
    ),
  );
  for await (const _ of chunks) {
    // Only the closing chunk arrives.
  }
  const ms = performance.now() - started;
  // Time: the line reader alone against the least a reader must do — split the same text at its line
  // ends — alternating, in the same run, the median of seven rounds each.
  const text = new TextDecoder().decode(piece);
  const rounds = { reader: [] as number[], split: [] as number[] };
  for (let round = 0; round < 7; round++) {
    let started = performance.now();
    const sse = new SseDecoder();
    for (let i = 0; i < 1000; i++) sse.push(text);
    rounds.reader.push(performance.now() - started);
    started = performance.now();
    for (let i = 0; i < 1000; i++) text.split(/\r\n|\r|\n/);
    rounds.split.push(performance.now() - started);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  console.log(
    `keep-alives, 16 MiB of comment lines: SseDecoder ${median(rounds.reader).toFixed(0)} ms, split at line ends ${median(rounds.split).toFixed(0)} ms, ratio ${(median(rounds.reader) / median(rounds.split)).toFixed(2)}x (2.2x when each line was pushed into a fresh array before it was read; 1.4–1.5x since)`,
  );
  console.log(
    `64 MiB of keep-alive comments: ${ms.toFixed(0)} ms; heap held at a tenth ${mb(atTenth)}, at the end ${mb(atEnd)}; ratio end / tenth ${(Math.max(atEnd, 1) / Math.max(atTenth, 1)).toFixed(2)}x (a reader that keeps nothing: ~1x)`,
  );
}

// 2. One long event.
async function oneEvent(mib: number): Promise<{ ms: number; peak: number; chars: number }> {
  const event = encoder.encode(
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "x".repeat(mib * 1024 * 1024) }, finish_reason: "stop" }] })}\n\n`,
  );
  const size = 64 * 1024;
  const count = Math.ceil(event.length / size);
  const base = heap();
  let peak = 0;
  const started = performance.now();
  const chunks = await openReply(
    answer(
      count,
      (i) => event.subarray(i * size, (i + 1) * size),
      encoder.encode("data: [DONE]\n\n"),
      (i) => {
        if (i % 64 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed - base);
      },
    ),
  );
  let chars = 0;
  for await (const chunk of chunks) {
    peak = Math.max(peak, process.memoryUsage().heapUsed - base);
    chars += String((chunk.choices?.[0]?.delta as { content?: string } | undefined)?.content ?? "").length;
  }
  return { ms: performance.now() - started, peak, chars };
}
await oneEvent(4); // warm-up
const small = await oneEvent(16);
const large = await oneEvent(64);
if (large.chars !== 64 * 1024 * 1024) throw new Error(`the 64 MiB event read back ${large.chars} characters`);
console.log(
  `one event, 64 KiB reads: 16 MiB ${small.ms.toFixed(0)} ms, 64 MiB ${large.ms.toFixed(0)} ms, growth ${(large.ms / small.ms).toFixed(1)}x for 4x the size (linear: ~4x); peak heap ${mb(small.peak)} and ${mb(large.peak)}, ${(large.peak / (64 * 1024 * 1024 * 2)).toFixed(1)}x the 64 MiB event in UTF-16`,
);
if (gc === undefined) console.log("(run with --expose-gc for a cleaner heap reading)");
