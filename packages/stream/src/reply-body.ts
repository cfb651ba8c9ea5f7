import type { ChunkLike } from "./chunk.js";
import { jsonText, StreamError } from "./errors.js";
import { SseDecoder } from "./sse.js";

/** How much of a reply that is not a stream is read to say what it was. */
const NOT_STREAM_BYTES = 64 * 1024;
/**
 * How much of a reply that opens as JSON is read, to parse it whole: a whole completion from a server
 * that ignored `stream: true` is as long as its answer (a long file written out can be megabytes).
 */
const JSON_REPLY_CHARS = 64 * 1024 * 1024;
/** How much of it the error quotes. */
const QUOTED_CHARS = 200;

/** What the openai SDK's `APIPromise` adds: the raw `Response` beside the parsed stream. */
interface WithResponse {
  withResponse(): PromiseLike<{ data: unknown; response: Response }>;
}

function hasWithResponse(value: unknown): value is WithResponse {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Partial<WithResponse>).withResponse === "function"
  );
}

/**
 * How a stream opens: a field or a comment — or old llama.cpp's `error: {…}` line (its mid-stream
 * error, which `SseDecoder` reads as `event: error`), first in the body when the request failed at
 * once (a context overflow), so a proxy that relabelled the stream does not lose the server's error.
 * Only one holding JSON: a plain-text body opening `error: upstream …` is not taken for a stream.
 */
const SSE_START = /^(?:data|event|id|retry)\s*:|^:|^error[ \t]*:[ \t]*\{/;

/** The fields whose line opens a stream `SSE_START` knows, for a first read cut before its colon. */
const SSE_FIELDS = ["data", "event", "id", "retry", "error"];

/**
 * Whether `start` (the body so far, blank space before it dropped) may still become the opening
 * `SSE_START` looks for: the start of a field's name (`d`, `dat`), or a whole name with only blank
 * space after it so far (`data`). Only a few characters are ever waited for.
 */
function mayOpenField(start: string): boolean {
  if (start.length > 32) return false;
  // `error:` opens a stream only with JSON after it: read on to its first character.
  if (/^error[ \t]*:[ \t]*$/.test(start)) return true;
  const opening = /^([a-z]+)(\s*)$/.exec(start);
  if (!opening) return false;
  const [, name = "", space = ""] = opening;
  return SSE_FIELDS.some((field) => (space === "" ? field.startsWith(name) : field === name));
}

/**
 * The client's answer to a streamed request, read as a chunk stream when the reply is one.
 *
 * Where the answer is the openai SDK's (it has `withResponse`), the raw response is read here rather
 * than through the SDK's stream, whose reader costs the square of one event's length: a
 * `text/event-stream` reply is read by `SseDecoder` (linear), an event whose JSON has a truthy
 * `error` thrown as `makeError` makes it (the SDK's `APIError`), as the SDK would — unless its body
 * opens with JSON or a page, which is read as below. Any other reply would read as a stream with
 * nothing in it — a finished, empty answer — so it is looked at first:
 * server-sent events under another content type are read as a stream all the same; a whole
 * `chat.completion` (a server that ignored `stream: true`) is read as the turn; `{"error": …}` as the
 * error the server sent; and anything else (an HTML page from a proxy or captive portal, broken JSON,
 * an empty body) rejects with `StreamError` `not-a-stream` naming the status, the content type and
 * the start of the body. Any other client's answer is handed on as it is.
 */
export async function openReply(
  answer: unknown,
  makeError: StreamErrorMaker = streamErrorMaker(undefined),
): Promise<AsyncIterable<ChunkLike>> {
  // Not the SDK's: handed on, and streamTurn checks that it is a stream.
  if (!hasWithResponse(answer)) return (await answer) as AsyncIterable<ChunkLike>;
  const { data, response } = await answer.withResponse();
  const type = response.headers.get("content-type") ?? "";
  if (!response.body) return data as AsyncIterable<ChunkLike>;
  const decoder = new TextDecoder();
  const eventStream = /event-stream/i.test(type);
  const reader = response.body.getReader();
  let text = "";
  // Peek until the first characters that say what this is. Blank space before them says nothing and
  // is dropped as it comes, so a long run of it is neither kept nor searched again; a start that may
  // still open an event-stream field (`d`, `dat`, `event`: a first read cut before the colon) is
  // read on until it says, or no longer can.
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    const piece = decoder.decode(next.value, { stream: true });
    if (text === "" && !/\S/.test(piece)) continue;
    text += piece;
    if (!mayOpenField(text.trimStart())) break;
  }
  const start = text.trimStart();
  // Under the stream's own content type only JSON or a page is read otherwise (a proxy that labels
  // whatever it answers as a stream); any other start is read as events, as the type says.
  if (SSE_START.test(start) || (eventStream && !/^[{[<]/.test(start))) {
    return sseChunks(text, reader, decoder, makeError);
  }
  let ended = text.trim() === "";
  // JSON is read to its end (a completion is as long as its answer), anything else only far enough to name it.
  const limit = /^[{[]/.test(start) ? JSON_REPLY_CHARS : NOT_STREAM_BYTES;
  while (!ended && text.length < limit) {
    const next = await reader.read();
    if (next.done) {
      ended = true;
      text += decoder.decode();
    } else text += decoder.decode(next.value, { stream: true });
  }
  if (!ended) reader.cancel().catch(() => {});
  const whole = ended ? parsed(text) : undefined;
  if (isCompletion(whole)) return asChunks(completionChunks(whole));
  if (typeof whole === "object" && whole !== null && "error" in whole) return asChunks([whole as ChunkLike]);
  throw new StreamError("not-a-stream", notAStream(response.status, type, text, ended));
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function notAStream(status: number, type: string, text: string, ended: boolean): string {
  const kind = type ? `content-type ${type.split(";")[0]?.trim()}` : "no content-type";
  const body = text.trim();
  if (body === "") {
    return `The server answered ${status} with an empty body (${kind}) where a stream of chunks was asked for. Check the base URL: a proxy or a server that is not OpenAI-compatible answers this way.`;
  }
  // Only the start names it (a body that opens as JSON may be 64 Mi characters long).
  const start = body.slice(0, NOT_STREAM_BYTES);
  const title = pageTitle(start);
  const plain = pageText(start);
  const quoted = plain.length > QUOTED_CHARS ? `${plain.slice(0, QUOTED_CHARS)}…` : plain;
  const what = /^\s*</.test(body)
    ? `an HTML page${title ? ` titled ${JSON.stringify(title)}` : ""}`
    : parsed(body) !== undefined
      ? "JSON that is not a chat completion"
      : ended
        ? "a body that is neither a stream nor JSON"
        : "a long body that is not a stream";
  return `The server answered ${status} with ${what} (${kind}) where a stream of chunks was asked for: ${JSON.stringify(quoted)}. Check the base URL and any proxy or login page in front of the server.`;
}

/**
 * The text of `<title>…</title>`, or `undefined`. Found by searching on from each place, never by a
 * regex tried again from every `<title` (a body of them with no `>` cost the square of its length).
 */
function pageTitle(html: string): string | undefined {
  const open = /<title\b/i.exec(html);
  if (!open) return undefined;
  const from = html.indexOf(">", open.index);
  if (from === -1) return undefined;
  const to = html.indexOf("<", from);
  if (to === -1 || !/^<\/title>/i.test(html.slice(to, to + 8))) return undefined;
  return html.slice(from + 1, to).trim();
}

/**
 * A page's words: its tags, and what its scripts and styles hold, dropped; blank space made one
 * space. One pass, each search going on from where the last stopped (the regexes this replaces were
 * tried again from every `<`: 64 KiB of `<` took 6 s, and a JSON-looking body is read up to 64 Mi
 * characters). A tag, script or style left open runs to the end, and nothing after it is shown.
 */
function pageText(html: string): string {
  let out = "";
  let at = 0;
  while (at < html.length) {
    const open = html.indexOf("<", at);
    if (open === -1) {
      out += html.slice(at);
      break;
    }
    out += `${html.slice(at, open)} `;
    const close = html.indexOf(">", open);
    if (close === -1) break;
    at = close + 1;
    const hidden = /^<(script|style)\b/i.exec(html.slice(open, open + 8))?.[1];
    if (hidden) {
      const end = new RegExp(`</${hidden}>`, "gi");
      end.lastIndex = at;
      const found = end.exec(html);
      if (!found) break;
      at = found.index + found[0].length;
    }
  }
  return out.replace(/\s+/g, " ").trim();
}

interface CompletionLike {
  id?: string | undefined;
  model?: string | undefined;
  usage?: unknown | undefined;
  choices: {
    index?: number | undefined;
    message: Record<string, unknown>;
    finish_reason?: string | null | undefined;
    error?: unknown;
  }[];
}

function isCompletion(value: unknown): value is CompletionLike {
  if (typeof value !== "object" || value === null) return false;
  const choices = (value as { choices?: unknown }).choices;
  return (
    Array.isArray(choices) &&
    choices.length > 0 &&
    choices.every((c) => typeof c === "object" && c !== null && typeof c.message === "object" && c.message)
  );
}

/** A whole completion as the chunks a stream of it would have carried. */
function completionChunks(completion: CompletionLike): ChunkLike[] {
  const chunks: ChunkLike[] = completion.choices.map((choice, at) => {
    const { tool_calls: calls, ...message } = choice.message;
    const delta: Record<string, unknown> = { ...message };
    if (Array.isArray(calls)) delta.tool_calls = calls.map((call, index) => ({ index, ...call }));
    return {
      id: completion.id,
      model: completion.model,
      choices: [
        {
          index: choice.index ?? at,
          delta,
          finish_reason: choice.finish_reason ?? null,
          // A choice's error (OpenRouter's NonStreamingChoice) is read as it is in a stream.
          ...(choice.error !== undefined ? { error: choice.error } : {}),
        },
      ],
    } as ChunkLike;
  });
  if (completion.usage) chunks.push({ choices: [], usage: completion.usage } as ChunkLike);
  return chunks;
}

async function* asChunks(chunks: ChunkLike[]): AsyncGenerator<ChunkLike> {
  yield* chunks;
}

/** What a server's error inside a stream is thrown as: the SDK's `APIError` where the client has it. */
export type StreamErrorMaker = (error: unknown) => Error;

/** A server's error inside a stream, where the client is not the SDK. `status` is absent: it came in a 200. */
class ServerSentError extends Error {
  override readonly name = "ServerSentError";
  readonly status = undefined;
  constructor(readonly error: unknown) {
    super(`The server sent an error in the stream: ${jsonText(error)}`);
  }
}

/**
 * How a client's server errors are made: the openai SDK's `APIError` (its class hangs on the
 * client's constructor as `OpenAI.APIError`), so a stream's error is the error the SDK's own reader
 * would have thrown; otherwise a plain error with the server's value on `error`.
 */
export function streamErrorMaker(client: unknown): StreamErrorMaker {
  const made = (client as { constructor?: { APIError?: unknown } } | null | undefined)?.constructor?.APIError;
  if (typeof made === "function") {
    const APIError = made as new (
      status: undefined,
      error: unknown,
      message: undefined,
      headers: undefined,
    ) => Error;
    return (error) => {
      try {
        return new APIError(undefined, error, undefined, undefined);
      } catch {
        // The SDK writes an error with no message out whole for its own message, and throws on one
        // nested too deep: the server's error is still its error.
        return new ServerSentError(error);
      }
    };
  }
  return (error) => new ServerSentError(error);
}

/** The error an `event: error` carries: the JSON's truthy `error` member, the JSON itself, or its text. */
function namedError(data: string): unknown {
  const value = parsed(data);
  if (typeof value === "object" && value !== null) return (value as { error?: unknown }).error || value;
  if (typeof value === "string" && value !== "") return value;
  return data.trim() === "" ? "an `event: error` with no text" : data;
}

/** The body ended in the middle of an event: the stream was cut short (read as a lost connection). */
export class CutShort extends Error {
  override readonly name: string = "CutShort";
}

/**
 * The body ended between events without `[DONE]`. A server that ends its turn says so, with a finish
 * reason or `[DONE]` or both; `streamTurn` reads this as the end when a finish reason came (or no
 * chunk at all, which is no stream), and otherwise as a stream cut short: a proxy that ended its own
 * response cleanly when its upstream went away left an unfinished answer that read as a whole one.
 */
export class EndedUnsaid extends CutShort {
  override readonly name: string = "EndedUnsaid";
}

/**
 * The data of an event the body's end left open: a whole chunk when its JSON is whole, else the
 * stream cut short in the middle of it — a connection lost, not a malformed chunk, whoever closed it.
 */
function parseLast(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch (error) {
    const tail = data.length > 40 ? `…${data.slice(-40)}` : data;
    throw new CutShort(
      `the body ended in the middle of an event, its data unfinished: ${JSON.stringify(tail)}`,
      { cause: error },
    );
  }
}

/**
 * Server-sent events read from the body as they arrive (`SseDecoder`: linear however long one event
 * is), until `[DONE]` or the body's end. Each event's data is a chunk; one whose JSON has a truthy
 * `error` member is thrown as `makeError(error)`, as the SDK's reader does, and so is any event named
 * `error`, whatever its data (JSON of another shape, or plain text). An event the body's end left
 * open whose data is not whole JSON throws `CutShort` (the stream was cut in the middle of it).
 */
async function* sseChunks(
  start: string,
  reader: ReadableStreamDefaultReader<Uint8Array>,
  decoder: InstanceType<typeof TextDecoder>,
  makeError: StreamErrorMaker,
): AsyncGenerator<ChunkLike> {
  const sse = new SseDecoder();
  let events = sse.push(start);
  // From this index on, `events` are what the body's end left open (no blank line after them).
  let open = Number.POSITIVE_INFINITY;
  let ended = false;
  // The body has ended and every event in it was read, none of them `[DONE]`.
  let unsaid = false;
  try {
    for (;;) {
      for (const [at, event] of events.entries()) {
        if (event.data.startsWith("[DONE]")) {
          ended = true;
          return;
        }
        // An event the server named `error` is its error whatever the data holds: JSON of any shape, or
        // plain text from a gateway. (Read as a chunk, text was a malformed chunk and an unknown shape
        // was skipped, ending the turn as if nothing had gone wrong.)
        if (event.event === "error") throw makeError(namedError(event.data));
        // A line that is not JSON throws SyntaxError, which streamTurn reports as a malformed chunk —
        // unless the body ended inside it: then the stream was cut short, not malformed.
        const chunk = (at >= open ? parseLast(event.data) : JSON.parse(event.data)) as ChunkLike;
        const error = (chunk as { error?: unknown } | null)?.error;
        if (error) throw makeError(error);
        yield chunk;
      }
      if (unsaid) throw new EndedUnsaid("the body ended with neither [DONE] nor a finish reason");
      if (ended) return;
      const next = await reader.read();
      if (next.done) {
        ended = true;
        // At the end, an event left without its blank line is the last one, not dropped.
        events = sse.push(decoder.decode());
        open = events.length;
        events.push(...sse.end());
        unsaid = true;
      } else events = sse.push(decoder.decode(next.value, { stream: true }));
    }
  } finally {
    // After [DONE], or when the read is abandoned: a server that keeps the connection open is not waited on.
    reader.cancel().catch(() => {});
  }
}
