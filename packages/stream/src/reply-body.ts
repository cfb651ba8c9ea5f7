import type { ChunkLike } from "./chunk.js";
import { StreamError } from "./errors.js";

/** How much of a reply that is not a stream is read to say what it was. */
const NOT_STREAM_BYTES = 64 * 1024;
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

const SSE_START = /^(?:data|event|id|retry)\s*:|^:/;

/**
 * The client's answer to a streamed request, read as a chunk stream when the reply is one.
 *
 * Where the answer is the openai SDK's (it has `withResponse`), the raw response is looked at first:
 * a `text/event-stream` reply is handed on untouched. Any other reply would read as a stream with
 * nothing in it — a finished, empty answer — so its body is read here instead: server-sent events
 * under another content type are read as a stream all the same; a whole `chat.completion` (a server
 * that ignored `stream: true`) is read as the turn; `{"error": …}` as the error the server sent; and
 * anything else (an HTML page from a proxy or captive portal, broken JSON, an empty body) rejects
 * with `StreamError` `not-a-stream` naming the status, the content type and the start of the body.
 * Any other client's answer is handed on as it is.
 */
export async function openReply(answer: unknown): Promise<AsyncIterable<ChunkLike>> {
  // Not the SDK's: handed on, and streamTurn checks that it is a stream.
  if (!hasWithResponse(answer)) return (await answer) as AsyncIterable<ChunkLike>;
  const { data, response } = await answer.withResponse();
  const type = response.headers.get("content-type") ?? "";
  if (/event-stream/i.test(type) || !response.body) return data as AsyncIterable<ChunkLike>;
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  // Peek until the first character that says what this is. Blank space before it says nothing and
  // is dropped as it comes, so a long run of it is neither kept nor searched again.
  for (;;) {
    const next = await reader.read();
    if (next.done) break;
    const piece = decoder.decode(next.value, { stream: true });
    if (!/\S/.test(piece)) continue;
    text = piece;
    break;
  }
  if (SSE_START.test(text.trimStart())) return sseChunks(text, reader, decoder);
  let ended = text.trim() === "";
  while (!ended && text.length < NOT_STREAM_BYTES) {
    const next = await reader.read();
    if (next.done) ended = true;
    else text += decoder.decode(next.value, { stream: true });
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
  const title = /<title[^>]*>([^<]*)<\/title>/i.exec(body)?.[1]?.trim();
  const plain = body
    .replace(/<(script|style)[^>]*>[\s\S]*?<\/\1>/gi, " ")
    .replace(/<[^>]+>/g, " ")
    .replace(/\s+/g, " ")
    .trim();
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

interface CompletionLike {
  id?: string;
  model?: string;
  usage?: unknown;
  choices: { index?: number; message: Record<string, unknown>; finish_reason?: string | null }[];
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
      choices: [{ index: choice.index ?? at, delta, finish_reason: choice.finish_reason ?? null }],
    } as ChunkLike;
  });
  if (completion.usage) chunks.push({ choices: [], usage: completion.usage } as ChunkLike);
  return chunks;
}

async function* asChunks(chunks: ChunkLike[]): AsyncGenerator<ChunkLike> {
  yield* chunks;
}

/** The `data:` of one event, its lines joined. */
function eventData(frame: string): string {
  return frame
    .split(/\r?\n/)
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(5).replace(/^ /, ""))
    .join("\n");
}

/** The blank line that ends an event. */
const EVENT_END = /\r?\n\r?\n/;

/** Server-sent events read from the body as they arrive, until `[DONE]` or the body's end. */
async function* sseChunks(
  start: string,
  reader: ReadableStreamDefaultReader<Uint8Array>,
  decoder: InstanceType<typeof TextDecoder>,
): AsyncGenerator<ChunkLike> {
  // The text of the event still arriving, kept in pieces and joined only once a blank line shows it
  // is whole: searching one growing text on every read would make a long event cost its square.
  const held: string[] = [];
  /** The held text's last characters, where a blank line cut across two reads begins. */
  let tail = "";
  let incoming = start;
  let finished = false;
  try {
    for (;;) {
      if (EVENT_END.test(tail + incoming)) {
        let buffer = held.join("") + incoming;
        held.length = 0;
        tail = "";
        for (let cut = EVENT_END.exec(buffer); cut; cut = EVENT_END.exec(buffer)) {
          const data = eventData(buffer.slice(0, cut.index));
          buffer = buffer.slice(cut.index + cut[0].length);
          if (data.startsWith("[DONE]")) return;
          // A line that is not JSON throws SyntaxError, which streamTurn reports as a malformed chunk.
          if (data !== "") yield JSON.parse(data) as ChunkLike;
        }
        incoming = buffer;
      }
      if (incoming !== "") {
        held.push(incoming);
        tail = (tail + incoming).slice(-3);
      }
      if (finished) return;
      const next = await reader.read();
      finished = next.done;
      // At the end, whatever is left is the last event even without its blank line.
      incoming = finished ? `${decoder.decode()}\n\n` : decoder.decode(next.value, { stream: true });
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
