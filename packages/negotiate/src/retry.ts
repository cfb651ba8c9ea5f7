import { readError } from "./error-shape.js";
import { ContextOverflow } from "./errors.js";

// Every server's wording for "the request does not fit the window", from recorded bodies.
const OVERFLOW_WORDINGS = [
  /maximum context length is \d+/i, // OpenAI, vLLM, OpenRouter (lower-cased there)
  /exceeds the available context size/i, // llama.cpp
  /context the overflows|context overflows?\b/i, // LM Studio (its own garbled grammar included)
  /Cannot truncate prompt with n_keep/i, // LM Studio / llama.cpp-derived
  /`inputs` tokens \+ `max_new_tokens` must be <=/i, // TGI (Together, Hugging Face)
  /context length exceeded|context_length_exceeded|exceeds? (?:the )?(?:model'?s? )?context (?:window|length)/i,
  /prompt is too long|input is too long for the model/i,
];

const RATE_LIMIT = /tokens per min|\bTPM\b|requests per min|\bRPM\b|rate.?limit/i;

/**
 * True when the error says the request is too big for the model's context window.
 *
 * Reads every server's wording (OpenAI `context_length_exceeded`, llama.cpp `exceed_context_size_error`, vLLM, LM Studio,
 * TGI, OpenRouter). Never true for a 429, including OpenAI's "Request too large … on tokens per
 * min", which borrows the words and means a rate limit. A `ContextOverflow` is one.
 */
export function isOverflow(error: unknown): boolean {
  if (ContextOverflow.isInstance(error)) return true;
  const facts = readError(error);
  if (facts.status === 429 || facts.code === "rate_limit_exceeded" || RATE_LIMIT.test(facts.text))
    return false;
  if (facts.code === "context_length_exceeded" || facts.type === "exceed_context_size_error") return true;
  return OVERFLOW_WORDINGS.some((re) => re.test(facts.text));
}

/**
 * True for a server still loading the model (llama.cpp's 503 "Loading model").
 *
 * llama.cpp answers 503 "Loading model" (type
 * `unavailable_error`), which a router build also answers while it swaps models, and the
 * "model is (currently) loading" 503 of other servers. A 503 that says nothing about loading is
 * false: it stays on the ordinary backoff.
 */
export function isModelLoading(error: unknown): boolean {
  const facts = readError(error);
  if (facts.status !== 503) return false;
  return /\bloading model\b|\bmodel (?:is )?(?:currently )?loading\b|\bswapping model/i.test(facts.text);
}

// Errors that are the same however often they are sent, though the status says "server error".
const DETERMINISTIC_5XX = [
  /tools param requires --jinja/i, // llama.cpp started without --jinja
  /requires more system memory/i, // Ollama cannot load the model at all
  /json\.exception\.parse_error/i, // the body we sent did not parse
  /JSON schema conversion failed|failed to parse grammar/i, // an older llama.cpp's grammar failure
];

/** An error's kind: its `name`, or its class name where the class left `name` as "Error" (openai-node). */
function kindOf(error: unknown): string {
  if (typeof error !== "object" || error === null) return "";
  const name = (error as { name?: unknown }).name;
  if (typeof name === "string" && name !== "Error") return name;
  const ctor = (error as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof ctor === "string" ? ctor : "";
}

function isAbort(error: unknown): boolean {
  const kind = kindOf(error);
  return kind === "AbortError" || kind === "APIUserAbortError";
}

/**
 * True when sending the same request again may succeed.
 *
 * That is: a lost connection or a timeout (no
 * status), an endpoint that went silent (`EndpointSilent`), 408, 409, 425, 429 (every 429, the
 * "Request too large … tokens per min" one included: it is waited through, never read as an
 * overflow), and 5xx other than a few that are the same every time (llama.cpp's "tools param
 * requires --jinja flag", Ollama's out-of-memory load failure, a body the server could not parse).
 * Never true for an abort, an overflow, or any other 4xx.
 */
export function isTransient(error: unknown): boolean {
  if (isAbort(error) || ContextOverflow.isInstance(error)) return false;
  const kind = kindOf(error);
  if (kind === "EndpointSilent" || kind === "TimeoutError") return true;
  // @loopwright/stream's error for a stream whose connection dropped before it finished.
  if (kind === "StreamError" && (error as { code?: unknown }).code === "connection-lost") return true;
  const facts = readError(error);
  const status = facts.status;
  if (status === undefined) {
    if (typeof error !== "object" || error === null) return false;
    const e = error as { code?: unknown; cause?: { code?: unknown } };
    const code = typeof e.code === "string" ? e.code : typeof e.cause?.code === "string" ? e.cause.code : "";
    return (
      kind === "APIConnectionError" ||
      kind === "APIConnectionTimeoutError" ||
      /^(ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE|EAI_AGAIN|UND_ERR_SOCKET|UND_ERR_CONNECT_TIMEOUT)$/.test(
        code,
      ) ||
      /socket hang up|fetch failed|terminated|other side closed/i.test(facts.text)
    );
  }
  if (status === 429 || status === 408 || status === 409 || status === 425) return true;
  if (status >= 500) {
    if (isOverflow(error)) return false;
    return !DETERMINISTIC_5XX.some((re) => re.test(facts.text));
  }
  return false;
}

/** Options for `backoffMs`. */
export interface BackoffOptions {
  /** The first wait before jitter (default 1000 ms); doubles per attempt. */
  baseMs?: number;
  /** The longest computed wait (default 30 000 ms). */
  maxMs?: number;
  /** The longest wait a server's own hint is honoured up to (default 120 000 ms). */
  maxHintMs?: number;
  /** A source of numbers in [0, 1), for jitter (default `Math.random`). */
  random?: () => number;
  /** The current time in ms, for an HTTP-date `retry-after` (default `Date.now`). */
  now?: () => number;
}

/** The server's own "wait this long" in ms: `retry-after-ms`, `retry-after`, or "try again in 644ms". */
function hintMs(error: unknown, now: () => number): number | undefined {
  const facts = readError(error);
  const ms = facts.headers?.("retry-after-ms");
  if (ms !== undefined && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Number(ms);
  const after = facts.headers?.("retry-after");
  if (after !== undefined) {
    if (/^\s*\d+(\.\d+)?\s*$/.test(after)) return Number(after) * 1000;
    const date = Date.parse(after);
    if (Number.isFinite(date)) return Math.max(0, date - now());
  }
  const said = /try again in (\d+(?:\.\d+)?)\s*(ms|s)\b/i.exec(facts.text);
  if (said?.[1]) return Number(said[1]) * (said[2]?.toLowerCase() === "ms" ? 1 : 1000);
  return undefined;
}

/**
 * How long to wait before a retry, in ms: the server's hint, else exponential backoff with jitter.
 *
 * For retry number `attempt` (0 for the first retry): the server's own hint
 * when the error carries one (`retry-after-ms`, `retry-after` in seconds or as a date, or OpenAI's
 * "Please try again in 644ms"), capped at `maxHintMs`; otherwise exponential from `baseMs` with
 * equal jitter (between half and all of `baseMs · 2^attempt`, capped at `maxMs`).
 */
export function backoffMs(attempt: number, error?: unknown, options: BackoffOptions = {}): number {
  if (!Number.isInteger(attempt) || attempt < 0) {
    throw new RangeError(`backoffMs: attempt must be a whole number from 0, got ${String(attempt)}.`);
  }
  const random = options.random ?? Math.random;
  const hint = error === undefined ? undefined : hintMs(error, options.now ?? Date.now);
  if (hint !== undefined) return Math.min(Math.ceil(hint), options.maxHintMs ?? 120_000);
  const ceiling = Math.min((options.baseMs ?? 1000) * 2 ** attempt, options.maxMs ?? 30_000);
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}
