import { protoless } from "./protoless.js";
import type { Turn } from "./turn.js";

const SILENT_MARKER = Symbol.for("@loopwright/stream.EndpointSilent");
const STREAM_MARKER = Symbol.for("@loopwright/stream.StreamError");

function hasMarker(value: unknown, marker: symbol): boolean {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
}

/**
 * A server's value as JSON text for a message, whatever it holds: one nested deeper than
 * `JSON.stringify` can walk (a hostile `{"a":{"a":…}}` a hundred thousand deep) is named, not thrown
 * on — its `RangeError` escaped the read as a lost connection, or as a caller's exception.
 */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return "[a value nested too deep to write out]";
  }
}

/** The most of a server's words an error message quotes: a 1 MB error page is not a sentence. */
const QUOTED_CHARS = 300;

/**
 * A server's words as an error message quotes them: on one line (each run of blanks holding a
 * line break is one space), cut to 300 characters and `…`, never inside a character, and well
 * formed (a lone surrogate half is U+FFFD). The whole error stays where the error keeps it.
 */
export function quotedText(words: string): string {
  // Only the head is read: the blanks are collapsed in time bound by it, however long the text.
  const head = words.length > 4 * QUOTED_CHARS ? words.slice(0, 4 * QUOTED_CHARS) : words;
  const line = head.replace(/\s*[\r\n]\s*/g, " ").trim();
  if (line.length <= QUOTED_CHARS && head === words) return line.toWellFormed();
  let end = Math.min(line.length, QUOTED_CHARS);
  const last = line.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${line.slice(0, end).trimEnd()}…`.toWellFormed();
}

/** Which allowance ran out: the wait for the first chunk that carried something, or a later gap. */
export type EndpointSilentCode = "first-chunk" | "idle";

/**
 * The endpoint stopped talking: no chunk arrived within the watchdog's allowance.
 *
 * `code` is `"first-chunk"` when the wait before anything was produced (prefill) ran past
 * `firstChunkMs`, and `"idle"` when a stream that had started went quiet for `idleMs`. `waitedMs`
 * is the silence measured, `partial` the turn as read until then, `produced` whether any text,
 * reasoning or tool-call piece had arrived (a retry is then visible to the user).
 * `EndpointSilent.isInstance(value)` works across two installed copies of the package.
 */
export class EndpointSilent extends Error {
  override readonly name = "EndpointSilent";
  readonly code: EndpointSilentCode;
  readonly waitedMs: number;
  readonly limitMs: number;
  readonly partial: Turn;
  readonly produced: boolean;

  constructor(
    code: EndpointSilentCode,
    limitMs: number,
    waitedMs: number,
    partial: Turn,
    produced: boolean,
    options?: { cause?: unknown },
  ) {
    const what =
      code === "first-chunk"
        ? `The endpoint sent nothing within ${limitMs} ms of the request (still in prefill, queued behind other requests on a server whose slots are all busy, or wedged).`
        : `The endpoint went silent for ${limitMs} ms in the middle of a streamed reply.`;
    super(
      `${what} The request was abandoned and its connection closed; retry it, or raise ${
        code === "first-chunk" ? "firstChunkMs" : "idleMs"
      } for a slow server.`,
      options,
    );
    this.code = code;
    this.limitMs = limitMs;
    this.waitedMs = waitedMs;
    this.partial = partial;
    this.produced = produced;
    Object.defineProperty(this, SILENT_MARKER, protoless({ value: true }));
  }

  /** True when `value` is an EndpointSilent from any copy of this package. */
  static isInstance(value: unknown): value is EndpointSilent {
    return hasMarker(value, SILENT_MARKER);
  }
}

/** What went wrong while a stream was being read, as `StreamError.code`. */
export type StreamErrorCode =
  /** The server sent an error object inside the stream (`data: {"error": …}`). */
  | "server-error"
  /** A line of the stream was not JSON the client could parse. */
  | "malformed-chunk"
  /** The connection failed before the stream ended (reset, dropped, truncated body). */
  | "connection-lost"
  /** The client's `create()` answered with something that is not an async-iterable stream. */
  | "not-a-stream"
  /** `streamTurn` was called with an argument it cannot use (named in the message). */
  | "invalid-argument";

/**
 * A streamed turn that could not be read to its end, for a reason other than silence or abort.
 *
 * `code` says which (see {@link StreamErrorCode}); `cause` is the underlying failure (the SDK's
 * error, a `SyntaxError`, a socket error). For `"server-error"`, `serverError` is the error value
 * the server put in the stream, and the message quotes its text so wording-based checks still
 * match. `partial` is the turn as read until the failure and `produced` says whether anything had
 * been produced, so a caller can tell a retry the user will notice from one they will not.
 * `StreamError.isInstance(value)` works across two installed copies of the package.
 */
export class StreamError extends Error {
  override readonly name = "StreamError";
  readonly code: StreamErrorCode;
  readonly serverError: unknown;
  readonly partial: Turn | undefined;
  readonly produced: boolean;

  constructor(
    code: StreamErrorCode,
    message: string,
    options: { cause?: unknown; serverError?: unknown; partial?: Turn; produced?: boolean } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.serverError = options.serverError;
    this.partial = options.partial;
    this.produced = options.produced ?? false;
    Object.defineProperty(this, STREAM_MARKER, protoless({ value: true }));
  }

  /** True when `value` is a StreamError from any copy of this package. */
  static isInstance(value: unknown): value is StreamError {
    return hasMarker(value, STREAM_MARKER);
  }
}
