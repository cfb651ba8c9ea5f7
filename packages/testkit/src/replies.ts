import { validateHeaderName, validateHeaderValue } from "node:http";
import { TestkitError } from "./errors.js";
import { ownFields } from "./own-body.js";

/** One tool call a scripted turn streams. */
export interface ScriptedToolCall {
  /** Tool-call id; default `call_sim<n>_<i>` (n counts completions on this server, i the call). Sent only in the first delta. */
  id?: string | undefined;
  /** Function name. */
  name: string;
  /** Arguments exactly as the model would stream them (usually a JSON string). */
  arguments: string;
}

/** Usage numbers a scripted turn reports; any number left out is computed (see README). */
export interface ScriptedUsage {
  prompt_tokens?: number | undefined;
  completion_tokens?: number | undefined;
  cached_tokens?: number | undefined;
  reasoning_tokens?: number | undefined;
}

/** A scripted assistant turn: text, reasoning and tool calls, plus how to misbehave while sending it. */
export interface TurnReply {
  type?: "turn" | undefined;
  /** Assistant text. */
  content?: string | undefined;
  /** Reasoning text, sent before the content. */
  reasoning?: string | undefined;
  /** Where reasoning goes: the `reasoning_content` field (default), the `reasoning` field, or `<think>…</think>` in content. */
  reasoningAs?: "reasoning_content" | "reasoning" | "fence" | undefined;
  /** Tool calls, streamed after the content. */
  toolCalls?: ScriptedToolCall[] | undefined;
  /** Usage to report, `false` for none. Omitted numbers are computed from the request and reply. */
  usage?: ScriptedUsage | false | undefined;
  /** `finish_reason`; default `"tool_calls"` when there are tool calls, else `"stop"`. `null`: none sent. */
  finishReason?: string | null | undefined;
  /** Characters per delta (default 8); splits reasoning, content, tool names and arguments. */
  chunkChars?: number | undefined;
  /** Split tool names by `chunkChars` too (default true); false sends each name whole in its call's first delta. */
  splitNames?: boolean | undefined;
  /** Interleave the deltas of parallel tool calls round-robin instead of one call after another. */
  interleave?: boolean | undefined;
  /** Wait this long before sending the response headers. */
  firstByteDelayMs?: number | undefined;
  /** Open with a content-free `{"role":"assistant"}` delta (default true). */
  roleChunk?: boolean | undefined;
  /** Wait this long between chunks. */
  chunkDelayMs?: number | undefined;
  /** Pause once, for `ms`, after chunk number `afterChunk` (1-based). */
  pause?: { afterChunk: number; ms: number } | undefined;
  /** Send nothing more after chunk N, leaving the connection open (0: headers only). */
  silentAfterChunk?: number | undefined;
  /** Destroy the socket after chunk N (0: right after the headers). */
  dropAfterChunk?: number | undefined;
  /** Leave out the final `data: [DONE]`. */
  noDone?: boolean | undefined;
  /** After chunk N send `data: {"error": error}` and end the stream. */
  errorMidStream?: { afterChunk: number; error: unknown } | undefined;
}

/** An HTTP error: `body` is sent as JSON, or verbatim when it is a string. */
export interface ErrorReply {
  type: "error";
  status: number;
  body: unknown;
  headers?: Record<string, string> | undefined;
}

/**
 * A recorded stream from the fixtures folder, sent byte for byte (split at blank lines when delayed).
 *
 * A `curl -i` capture (`llamacpp-live/*.response.txt`) sends its recorded status and content type
 * and then its body bytes.
 */
export interface ReplayReply {
  type: "replay";
  /** Path under the fixtures folder, e.g. `"wire/openai/gpt-4.1-nano-text-usage-chunk.sse"`. */
  fixture: string;
  /** Wait this long between SSE frames. */
  chunkDelayMs?: number | undefined;
  /** Response status (default 200, or the capture's). */
  status?: number | undefined;
  /** Response headers (default `content-type: text/event-stream`, or the capture's content type). */
  headers?: Record<string, string> | undefined;
}

/** Exact bytes: each chunk is written as given. */
export interface RawReply {
  type: "raw";
  status?: number | undefined;
  /** Response headers (default `content-type: text/event-stream`). */
  headers?: Record<string, string> | undefined;
  chunks: (string | Uint8Array)[];
  chunkDelayMs?: number | undefined;
}

/** What the server sends for one `POST /v1/chat/completions`. */
export type Reply = TurnReply | ErrorReply | ReplayReply | RawReply;

/**
 * How a bad value is quoted in a message: strings in quotes, objects as JSON (cut to 200
 * characters), everything else as `String` gives it. Never throws: a value JSON cannot write (a
 * bigint inside, a cycle) is named by its kind.
 */
function shown(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "object" && value !== null) {
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch {
      text = undefined;
    }
    if (text === undefined)
      return Array.isArray(value) ? "an array JSON cannot write" : "an object JSON cannot write";
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  }
  return String(value);
}

function invalid(message: string): TestkitError {
  return new TestkitError("invalid-reply", message);
}

/** A wait in milliseconds: a finite number >= 0 (any length: long waits are taken in steps). */
function nonNegative(value: unknown, field: string): void {
  if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value) || value < 0)) {
    throw invalid(`Reply field ${field} must be a non-negative number of milliseconds, got ${shown(value)}.`);
  }
}

/** `value`, which a reply must give: a missing (or null) one throws naming `field`. */
function present(value: unknown, field: string): unknown {
  if (value === undefined || value === null) throw invalid(`Reply field ${field} is missing.`);
  return value;
}

/** A count (a chunk number, a token number): a whole number >= `min`. */
function wholeNumber(value: unknown, field: string, min = 0): void {
  if (value !== undefined && (typeof value !== "number" || !Number.isInteger(value) || value < min)) {
    throw invalid(`Reply field ${field} must be a whole number of at least ${min}, got ${shown(value)}.`);
  }
}

/** An HTTP status, 100-599 (optional unless `required`). */
function httpStatus(value: unknown, what: string, required = false): void {
  if (value === undefined && !required) return;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 100 || value > 599) {
    throw invalid(`${what} needs an HTTP status 100-599, got ${shown(value)}.`);
  }
}

/**
 * The `headers` of an error, replay or raw reply: an object of names and values Node can send. A
 * bad one would otherwise fail only when the reply is sent, as a 500 the test did not script.
 */
function replyHeaders(value: unknown, what: string): void {
  if (value === undefined) return;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalid(`${what} headers must be an object of header names and values, got ${kindOf(value)}.`);
  }
  for (const [name, v] of Object.entries(value)) {
    try {
      validateHeaderName(name);
      validateHeaderValue(name, v);
    } catch (cause) {
      throw new TestkitError(
        "invalid-reply",
        `${what} header ${JSON.stringify(name)} cannot be sent: ${cause instanceof Error ? cause.message : String(cause)}.`,
        { cause },
      );
    }
  }
}

/** What a value is, for a message: `null`, `an array`, `an object`, or its type and value (`number 5`). */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `${typeof value} ${shown(value)}`;
}

const USAGE_FIELDS = ["prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens"] as const;

/** The fields each kind of reply has (see the interfaces above); `type` is every kind's. */
const FIELDS: {
  turn: readonly (keyof TurnReply)[];
  error: readonly (keyof ErrorReply)[];
  replay: readonly (keyof ReplayReply)[];
  raw: readonly (keyof RawReply)[];
} = {
  turn: [
    "type",
    "content",
    "reasoning",
    "reasoningAs",
    "toolCalls",
    "usage",
    "finishReason",
    "chunkChars",
    "splitNames",
    "interleave",
    "firstByteDelayMs",
    "roleChunk",
    "chunkDelayMs",
    "pause",
    "silentAfterChunk",
    "dropAfterChunk",
    "noDone",
    "errorMidStream",
  ],
  error: ["type", "status", "body", "headers"],
  replay: ["type", "fixture", "chunkDelayMs", "status", "headers"],
  raw: ["type", "status", "headers", "chunks", "chunkDelayMs"],
};

/** Every field any kind of reply has. */
const ALL_FIELDS: readonly string[] = [...new Set(Object.values(FIELDS).flat())];
const CALL_FIELDS = ["id", "name", "arguments"] as const;

/**
 * A checked reply's fields read as the script wrote them, its tool calls', usage's, pause's and
 * errorMidStream's too: what the server sends from. A field only a polluted `Object.prototype`
 * holds is left out (`Object.prototype.id = "forged"` gave every tool call that id).
 */
export function ownReply(reply: Reply): Reply {
  const r = ownFields(reply, ALL_FIELDS) as Record<string, unknown>;
  if (Array.isArray(r.toolCalls)) r.toolCalls = r.toolCalls.map((c: unknown) => ownFields(c, CALL_FIELDS));
  if (r.usage !== undefined) r.usage = ownFields(r.usage, USAGE_FIELDS);
  if (r.pause !== undefined) r.pause = ownFields(r.pause, ["afterChunk", "ms"]);
  if (r.errorMidStream !== undefined) r.errorMidStream = ownFields(r.errorMidStream, ["afterChunk", "error"]);
  return r as unknown as Reply;
}

/** What a script may have meant by a field a reply does not have: the wire's names for the turn's. */
const MEANT: Record<string, string> = {
  tool_calls: "toolCalls",
  finish_reason: "finishReason",
  reasoning_content: "reasoning (with reasoningAs)",
  text: "content",
  delayMs: "firstByteDelayMs or chunkDelayMs",
  total_tokens: "nothing: it is prompt_tokens + completion_tokens",
};

/**
 * Refuses a field `value` does not have (own enumerable keys other than `known`), naming it: a
 * misspelt or wire-named field (`tool_calls`, `finish_reason`) was read as left out, and the reply
 * went out without it.
 */
function onlyKnown(value: object, known: readonly string[], what: string): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const hint = MEANT[key] === undefined ? "" : ` (for ${key}, use ${MEANT[key]})`;
    throw invalid(`${what} has no field ${JSON.stringify(key)}${hint}; its fields are ${known.join(", ")}.`);
  }
}
const REASONING_AS = ["reasoning_content", "reasoning", "fence"];

/**
 * Checks a scripted reply and returns it unchanged.
 *
 * Throws a `TestkitError` (`invalid-reply`) naming the bad field, so a mistake in a test script
 * shows up as a clear message rather than a malformed stream.
 */
export function validateReply(reply: unknown): Reply {
  if (typeof reply !== "object" || reply === null) {
    throw new TestkitError("invalid-reply", `A reply must be an object, got ${String(reply)}.`);
  }
  const r = ownFields(reply, ALL_FIELDS) as Record<string, unknown>;
  switch (r.type) {
    case undefined:
    case "turn": {
      onlyKnown(reply, FIELDS.turn, "A turn reply");
      for (const f of ["chunkDelayMs", "firstByteDelayMs"]) nonNegative(r[f], f);
      for (const f of ["silentAfterChunk", "dropAfterChunk"]) wholeNumber(r[f], f);
      wholeNumber(r.chunkChars, "chunkChars", 1);
      if (r.usage !== undefined && r.usage !== false) {
        if (typeof r.usage !== "object" || r.usage === null || Array.isArray(r.usage)) {
          throw invalid("Reply field usage must be an object of token numbers or false.");
        }
        onlyKnown(r.usage, USAGE_FIELDS, "Reply field usage");
        const usage = ownFields(r.usage, USAGE_FIELDS) as Record<string, unknown>;
        for (const f of USAGE_FIELDS) wholeNumber(usage[f], `usage.${f}`);
        // Cached tokens are part of the prompt, reasoning tokens part of the completion: no server
        // reports more of them than of the whole.
        for (const [part, whole, of] of [
          ["cached_tokens", "prompt_tokens", "prompt"],
          ["reasoning_tokens", "completion_tokens", "completion"],
        ] as const) {
          const [p, w] = [usage[part], usage[whole]] as (number | undefined)[];
          if (p !== undefined && w !== undefined && p > w) {
            throw invalid(
              `Reply field usage.${part} (${p}) is more than usage.${whole} (${w}); they are part of the ${of}, so at most ${w}.`,
            );
          }
        }
      }
      if (r.reasoningAs !== undefined && !REASONING_AS.includes(r.reasoningAs as string)) {
        throw invalid(
          `Reply field reasoningAs must be "reasoning_content", "reasoning" or "fence", got ${shown(r.reasoningAs)}.`,
        );
      }
      if (r.finishReason !== undefined && r.finishReason !== null && typeof r.finishReason !== "string") {
        throw new TestkitError("invalid-reply", "Reply field finishReason must be a string or null.");
      }
      for (const f of ["content", "reasoning"]) {
        if (r[f] !== undefined && typeof r[f] !== "string") {
          throw new TestkitError("invalid-reply", `Reply field ${f} must be a string.`);
        }
      }
      if (r.toolCalls !== undefined) {
        if (!Array.isArray(r.toolCalls)) {
          throw new TestkitError("invalid-reply", "Reply field toolCalls must be an array.");
        }
        r.toolCalls.forEach((c: unknown, i) => {
          const call = ownFields(c, CALL_FIELDS) as Record<string, unknown> | null;
          if (!call || typeof call.name !== "string" || typeof call.arguments !== "string") {
            throw invalid(
              `toolCalls[${i}] needs a string name and a string arguments (JSON text), got ${shown(c)}.`,
            );
          }
          // An empty name or id is allowed: it scripts a model that names no tool or gives no id
          // (a personality may refuse it: llamacpp's checkReply does for the name).
          if (call.id !== undefined && typeof call.id !== "string") {
            throw invalid(`toolCalls[${i}].id must be a string when given, got ${kindOf(call.id)}.`);
          }
        });
      }
      for (const f of ["pause", "errorMidStream"]) {
        if (r[f] !== undefined && (typeof r[f] !== "object" || r[f] === null || Array.isArray(r[f]))) {
          const wants = f === "pause" ? "{ afterChunk, ms }" : "{ afterChunk, error }";
          throw invalid(`Reply field ${f} must be ${wants}, got ${kindOf(r[f])}.`);
        }
      }
      if (r.pause !== undefined) {
        onlyKnown(r.pause as object, ["afterChunk", "ms"], "Reply field pause");
        const p = ownFields(r.pause, ["afterChunk", "ms"]) as Record<string, unknown>;
        wholeNumber(present(p.afterChunk, "pause.afterChunk"), "pause.afterChunk");
        nonNegative(present(p.ms, "pause.ms"), "pause.ms");
      }
      if (r.errorMidStream !== undefined) {
        onlyKnown(r.errorMidStream as object, ["afterChunk", "error"], "Reply field errorMidStream");
        const e = ownFields(r.errorMidStream, ["afterChunk", "error"]) as Record<string, unknown>;
        wholeNumber(present(e.afterChunk, "errorMidStream.afterChunk"), "errorMidStream.afterChunk");
      }
      return reply as TurnReply;
    }
    case "error":
      onlyKnown(reply, FIELDS.error, "An error reply");
      httpStatus(r.status, "An error reply", true);
      replyHeaders(r.headers, "An error reply's");
      return reply as ErrorReply;
    case "replay":
      onlyKnown(reply, FIELDS.replay, "A replay reply");
      if (typeof r.fixture !== "string") {
        throw new TestkitError(
          "invalid-reply",
          'A replay reply needs fixture: a path inside the recordings folder (e.g. "wire/openai/gpt-4.1-nano-text-usage-chunk.sse").',
        );
      }
      httpStatus(r.status, "A replay reply");
      replyHeaders(r.headers, "A replay reply's");
      nonNegative(r.chunkDelayMs, "chunkDelayMs");
      return reply as ReplayReply;
    case "raw":
      onlyKnown(reply, FIELDS.raw, "A raw reply");
      if (!Array.isArray(r.chunks)) {
        throw new TestkitError(
          "invalid-reply",
          "A raw reply needs chunks: an array of strings or byte arrays.",
        );
      }
      r.chunks.forEach((chunk: unknown, i) => {
        if (typeof chunk !== "string" && !(chunk instanceof Uint8Array)) {
          throw invalid(`A raw reply's chunks[${i}] must be a string or a Uint8Array, got ${kindOf(chunk)}.`);
        }
      });
      httpStatus(r.status, "A raw reply");
      replyHeaders(r.headers, "A raw reply's");
      nonNegative(r.chunkDelayMs, "chunkDelayMs");
      return reply as RawReply;
    default:
      throw new TestkitError(
        "invalid-reply",
        `Unknown reply type ${shown(r.type)}; use "turn", "error", "replay" or "raw".`,
      );
  }
}
