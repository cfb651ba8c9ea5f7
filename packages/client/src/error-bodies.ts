/**
 * openai-node reads an error response's `error` member and nothing else, so a server that answers
 * with the error at the top level — vLLM's legacy `{"object":"error","message":…}`, Mistral's 422,
 * a bare JSON string — reaches the caller as "400 status code (no body)", with the words every
 * classifier (overflow, refusal, loading) needs thrown away. This fetch wraps such a body as
 * `{"error": …}` before the SDK reads it, so the server's own words survive: a top-level error
 * object, a bare JSON string, Gemini's one-element array, and an `error` that is a plain string
 * (whose siblings, such as Hugging Face's `estimated_time`, would otherwise be lost; beside a
 * `message` of its own, as Fastify and NestJS send, it is the status text and the message stays).
 * Successful responses and bodies whose `error` is already an object pass through untouched. An
 * error body is read up to `MAX_ERROR_BODY_BYTES` and cut there.
 */

import { sameOriginRedirects } from "./redirects.js";

type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** Statuses a response never has a body with (a `Response` made with one throws). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

function wrapped(text: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined; // not JSON: the SDK keeps the text as the message itself
  }
  if (typeof body === "string") return JSON.stringify({ error: { message: body } });
  // Gemini's OpenAI-compatible endpoint answers a one-element array: [{ "error": { … } }].
  if (Array.isArray(body)) {
    const first: unknown = body[0];
    if (typeof first !== "object" || first === null || Array.isArray(first)) return undefined;
    return wrapped(JSON.stringify(first)) ?? JSON.stringify(first);
  }
  if (typeof body !== "object" || body === null) return undefined;
  const { error: _error, ...rest } = body as { error?: unknown } & Record<string, unknown>;
  // The body's own `error` and `message`, never a polluted Object.prototype's: an inherited `message`
  // put the server's words aside as a status text, an inherited `error` string became the message.
  const error = Object.hasOwn(body, "error") ? _error : undefined;
  if (typeof error === "object" && error !== null && !Array.isArray(error)) return undefined;
  // Hugging Face / LM Studio: { "error": "Model … is currently loading", "estimated_time": 20 }.
  // The SDK keeps only `error`, so the words go in as its message and the siblings beside them.
  // Fastify and NestJS put the status text there and the words in `message`:
  // { "statusCode": 400, "error": "Bad Request", "message": "model 'm' is not loaded" } keeps its
  // message, with the status text beside it.
  if (typeof error === "string" && error !== "") {
    const message = Object.hasOwn(rest, "message") ? rest.message : undefined;
    if (message === undefined || message === null || message === "") {
      return JSON.stringify({ error: { ...rest, message: error } });
    }
    return JSON.stringify({ error: { ...rest, error } });
  }
  // No `error`, or one that says nothing of its own (`true`, `false`, a number, `""`, an array, as in
  // { "error": true, "message": "model not found" }): the whole body is the error.
  return JSON.stringify({ error: body });
}

/**
 * The body as the SDK should read it: `wrapped`, or the text as sent where it needs no wrapping or
 * is nested deeper than `JSON.stringify` can walk (a hostile server's `{"a":{"a":…}}` a hundred
 * thousand deep threw `RangeError` inside the fetch, and the SDK reported the refusal as
 * "Connection error." with no status, which a caller retries as a network failure).
 */
function rewritten(text: string): string {
  try {
    return wrapped(text) ?? text;
  } catch (error) {
    if (error instanceof RangeError) return text;
    throw error;
  }
}

/**
 * The most of an error body `keepErrorBodies` reads: 1 MiB. The rest is not read, the response is
 * closed, and the text handed on ends with a note of the cut.
 */
export const MAX_ERROR_BODY_BYTES = 1_048_576;

/** A character a key or token may be written with. */
const TOKEN_CHAR = /[A-Za-z0-9+/=_.~%-]/;

/** What ends a body cut at `MAX_ERROR_BODY_BYTES`. */
const CUT_NOTE = `… [error body cut at ${MAX_ERROR_BODY_BYTES} bytes]`;

/** What ends an error body whose connection broke before it was all sent. */
const BROKEN_NOTE = "… [error body cut short: the connection ended]";

/**
 * `text` without the run of token characters it ends in (a key may be cut through there, and a
 * piece that short is not recognised as one). A walk back, not a regex anchored at the end: that
 * one is tried from every position.
 */
function withoutLastRun(text: string): string {
  let end = text.length;
  while (end > 0 && TOKEN_CHAR.test(text[end - 1] as string)) end--;
  return text.slice(0, end);
}

/**
 * The response's text, read up to `limit` bytes. A longer body is cut there, its reading stopped and
 * the response closed, so a server that answers an error with an endless or enormous body costs a
 * bounded amount of memory. The cut text loses the run of token characters it ends in (a key may be
 * cut through, and a piece that short is not recognised as one), and ends with `CUT_NOTE`. A body
 * whose connection breaks part way is what arrived, cut the same way and ending with `BROKEN_NOTE`:
 * thrown from here, the break made the SDK report the error status as a "Connection error." with
 * none, which a caller retries as a network failure. Unless `signal` aborted: that is thrown.
 */
async function boundedText(
  response: Response,
  limit: number,
  signal: AbortSignal | null | undefined,
): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let read = 0;
  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>;
    try {
      chunk = await reader.read();
    } catch (error) {
      if (signal?.aborted) throw error;
      return withoutLastRun(text + decoder.decode()) + BROKEN_NOTE;
    }
    const { done, value } = chunk;
    if (done) return text + decoder.decode();
    if (read + value.byteLength > limit) {
      // Decoded without flushing: a character cut through at the limit is left out, not mangled.
      text += decoder.decode(value.subarray(0, limit - read), { stream: true });
      await reader.cancel().catch(() => {});
      return withoutLastRun(text) + CUT_NOTE;
    }
    read += value.byteLength;
    text += decoder.decode(value, { stream: true });
  }
}

/**
 * A `fetch` that keeps an error body the `openai` SDK would drop: one with the error at the top level
 * (vLLM's legacy shape, Mistral's 422) or a bare JSON string is handed on as `{"error": …}`, so the
 * server's words reach `APIError.message` and `APIError.error`. `getClient` uses it; pass it as
 * `new OpenAI({ fetch: keepErrorBodies() })` to a client of your own. Gemini's one-element array
 * is unwrapped, and an `error` that is a plain string becomes `{ message, …its siblings }` (so Hugging
 * Face's `estimated_time` survives) — or, beside a `message` of the body's own (Fastify's and NestJS's
 * `{ statusCode, error: "Bad Request", message }`), stays beside it as the status text; an `error`
 * that says nothing (`true`, `false`, a number, `""`) leaves the whole body as the error, its
 * `message` included. Successful responses, statuses without a body (a `304`), non-JSON bodies and
 * bodies whose `error` is already an object pass through untouched. An error body is read up to
 * `MAX_ERROR_BODY_BYTES` (1 MiB): a longer one is cut there (its last run of token characters
 * dropped, a note of the cut added) and the response closed, so an endless error body cannot grow
 * the host's heap until the request's timeout. Without an `inner` it asks the global fetch and, as a
 * pooled client does, follows no redirect to another origin (the 3xx is answered as it is): fetch
 * would drop `Authorization` there and send every other header on, an `api-key` included.
 */
export function keepErrorBodies(inner: FetchLike = sameOriginRedirects()): FetchLike {
  return async (input, init) => {
    const response = await inner(input, init);
    // A 304 from a caching proxy has no body to keep: handed on as it is, for the SDK to report.
    if (response.ok || NULL_BODY.has(response.status)) return response;
    // Whatever the content-type says: the SDK parses any error text that happens to be JSON.
    const text = await boundedText(response, MAX_ERROR_BODY_BYTES, init?.signal);
    const body = rewritten(text);
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    headers.delete("content-encoding");
    return new Response(body, { status: response.status, statusText: response.statusText, headers });
  };
}
