/**
 * The writers that put each kind of reply on the wire, with its delays, pauses, silences and drops.
 * They stop as soon as the server closes (the shared signal) or the client goes away.
 */
import { setMaxListeners } from "node:events";
import type { ServerResponse } from "node:http";
import { setTimeout as sleepFor } from "node:timers/promises";
import { readFixtureBytes, splitCapture } from "./fixtures.js";
import { ownedOnly } from "./own-body.js";
import type { HttpAnswer, TurnFacts } from "./personalities/personality.js";
import type { RecordedRequest } from "./recorded-request.js";
import type { RawReply, ReplayReply, TurnReply } from "./replies.js";
import { splitFrames, sseFrame, type TurnContext, turnChunks, turnCompletion, turnUsage } from "./sse.js";
import type { CutCall } from "./token-budget.js";

/** The misbehaviour fields the frame writer applies. */
type FramePacing = Pick<
  TurnReply,
  "chunkDelayMs" | "pause" | "silentAfterChunk" | "dropAfterChunk" | "errorMidStream"
>;

/** Writes replies to HTTP responses; one per server, sharing its stop signal. */
export interface Responder {
  /** Sends `body` with `status`: JSON, or verbatim text when a string. */
  answer(res: ServerResponse, answer: HttpAnswer): void;
  /** Sends the `completion`-th scripted turn, streamed when `stream` is true. */
  turn(
    res: ServerResponse,
    turn: TurnReply,
    ctx: TurnContext,
    stream: boolean,
    includeUsage: boolean,
    completion: number,
    request?: RecordedRequest,
    cutCall?: CutCall,
  ): Promise<void>;
  /** Sends a recorded fixture byte for byte. */
  replay(res: ServerResponse, reply: ReplayReply): Promise<void>;
  /** Sends raw chunks exactly. */
  raw(res: ServerResponse, reply: RawReply): Promise<void>;
}

/** The longest single timer Node keeps (2^31 - 1 ms); a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const SSE_HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
};

/** Headers a personality adds to every answer it gives, given the answer's content type. */
export type ServerHeaders = (contentType: string, status: number) => Record<string, string>;

/** A personality's reshaping of a scripted stream's chunk objects (see `Personality.chunks`). */
export type ChunkShaper = (chunks: object[], facts: TurnFacts) => object[];

/** A personality's reshaping of a scripted plain completion's body (see `Personality.completion`). */
export type CompletionShaper = (body: object, facts: TurnFacts) => object;

/**
 * Makes a responder whose waits end early when `signal` aborts. `serverHeaders` (a personality's)
 * are added to JSON, text and scripted-stream answers; an answer's own headers win over them, and
 * replays and raw replies are left exactly as scripted. `shapeChunks` and `shapeCompletion` (a
 * personality's) reshape the chunks of a scripted stream before they are framed and the body of a
 * scripted plain completion before it is sent.
 */
export function createResponder(
  signal: AbortSignal,
  serverHeaders?: ServerHeaders,
  shapeChunks?: ChunkShaper,
  shapeCompletion?: CompletionShaper,
): Responder {
  // Every paced stream waits on this one signal between its chunks, each wait with an abort
  // listener of its own: any number of open streams is expected, not a leak, so Node is told not
  // to warn past its default of 10. (The server makes its responder as it makes the signal.)
  setMaxListeners(0, signal);

  /**
   * Sleeps; false when the server closed or the client went away meanwhile. A wait longer than a
   * timer can hold (2^31 - 1 ms, about 24.8 days) is taken in steps of at most that, so a huge
   * delay means "not in practice" rather than Node's "at once".
   */
  const sleep = async (ms: number, res: ServerResponse): Promise<boolean> => {
    let left = ms;
    while (left > 0) {
      const step = Math.min(left, MAX_TIMER_MS);
      try {
        await sleepFor(step, undefined, { signal });
      } catch {
        return false;
      }
      if (res.destroyed) return false;
      left -= step;
    }
    return !signal.aborted && !res.destroyed;
  };

  const answer = (res: ServerResponse, a: HttpAnswer): void => {
    const text = typeof a.body === "string" ? a.body : JSON.stringify(a.body);
    const type = typeof a.body === "string" ? "text/plain; charset=utf-8" : "application/json";
    res.writeHead(a.status, { "content-type": type, ...serverHeaders?.(type, a.status), ...a.headers });
    res.end(text);
  };

  /** Writes frames one by one, applying the pacing and misbehaviours between them. */
  const writeFrames = async (res: ServerResponse, frames: (string | Uint8Array)[], pacing: FramePacing) => {
    // True when the stream must not go on once `sent` frames are out.
    const stopAfter = async (sent: number): Promise<boolean> => {
      if (pacing.errorMidStream?.afterChunk === sent) {
        res.end(sseFrame({ error: pacing.errorMidStream.error }));
        return true;
      }
      if (pacing.dropAfterChunk === sent) {
        res.socket?.destroy();
        return true;
      }
      if (pacing.silentAfterChunk === sent) return true; // left open until close() or the client leaves
      if (pacing.pause?.afterChunk === sent && !(await sleep(pacing.pause.ms, res))) return true;
      return false;
    };
    for (const [i, frame] of frames.entries()) {
      if (await stopAfter(i)) return;
      if (i > 0 && pacing.chunkDelayMs && !(await sleep(pacing.chunkDelayMs, res))) return;
      if (res.destroyed) return;
      // Wait until the frame is handed to the socket, so a drop right after it still delivers it.
      // A write made after the client left (its socket destroyed, the response not yet closed)
      // never calls back: the response's close ends the wait instead.
      const written = await new Promise<boolean>((resolve) => {
        const gone = () => resolve(false);
        res.once("close", gone);
        res.write(frame, (error) => {
          res.off("close", gone);
          resolve(!error);
        });
      });
      if (!written) return;
    }
    if (await stopAfter(frames.length)) return;
    res.end();
  };

  const chunks = async (
    res: ServerResponse,
    status: number,
    headers: Record<string, string> | undefined,
    parts: (string | Uint8Array)[],
    chunkDelayMs: number | undefined,
  ) => {
    res.writeHead(status, headers ?? SSE_HEADERS);
    res.flushHeaders();
    await writeFrames(res, parts, { chunkDelayMs });
  };

  return {
    answer,
    async turn(res, turn, ctx, stream, includeUsage, completion, request, cutCall) {
      if (turn.firstByteDelayMs && !(await sleep(turn.firstByteDelayMs, res))) return;
      // A hook reads only what the testkit wrote: its chunks, body and usage are `ownedOnly`, so a
      // field one leaves out (a delta's tool_calls, a usage's details) is absent, not a polluted
      // Object.prototype's.
      const facts = (): TurnFacts => ({
        completion,
        usage: ownedOnly(turnUsage(turn, ctx)),
        ...(request ? { request } : {}),
        ...(cutCall ? { cutCall } : {}),
      });
      if (!stream) {
        if (turn.silentAfterChunk !== undefined) return; // never answers
        if (turn.dropAfterChunk !== undefined) {
          res.socket?.destroy();
          return;
        }
        const body = turnCompletion(turn, ctx);
        answer(res, {
          status: 200,
          body: shapeCompletion ? shapeCompletion(ownedOnly(body), facts()) : body,
        });
        return;
      }
      const made = turnChunks(turn, ctx, { includeUsage });
      const frames = (shapeChunks ? shapeChunks(ownedOnly(made), facts()) : made).map((c) => sseFrame(c));
      if (!turn.noDone) frames.push(sseFrame("[DONE]"));
      res.writeHead(200, { ...SSE_HEADERS, ...serverHeaders?.(SSE_HEADERS["content-type"], 200) });
      res.flushHeaders();
      await writeFrames(res, frames, turn);
    },
    async replay(res, reply) {
      const bytes = readFixtureBytes(reply.fixture);
      // A `curl -i` capture replays its own status and content type, then its body bytes.
      const capture = splitCapture(bytes);
      const body = capture?.body ?? bytes;
      const captured = capture?.headers["content-type"];
      const headers =
        reply.headers ?? (captured ? { "content-type": captured, "cache-control": "no-cache" } : undefined);
      const parts = reply.chunkDelayMs ? splitFrames(body) : [body];
      await chunks(res, reply.status ?? capture?.status ?? 200, headers, parts, reply.chunkDelayMs);
    },
    async raw(res, reply) {
      await chunks(res, reply.status ?? 200, reply.headers, reply.chunks, reply.chunkDelayMs);
    },
  };
}
