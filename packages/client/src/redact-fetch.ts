import {
  exactPatterns,
  heldBack,
  type Pattern,
  redactDeep,
  redactText,
  replaced,
  stretchesOf,
} from "./redact.js";
import { sameOriginRedirects } from "./redirects.js";

/** Content types whose bodies are text a server could echo a secret into. */
const TEXTUAL = /^text\/|json|event-stream|xml|javascript|x-www-form-urlencoded/i;

type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

function redactedBody(
  body: ReadableStream<Uint8Array>,
  secrets: readonly Pattern[],
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let carry = "";
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const text = carry + decoder.decode(chunk, { stream: true });
        const stretches = stretchesOf(text, secrets);
        // What could be the start of a secret waits for the next piece, and so does a secret found
        // running into it or ending the text (the next piece may show it runs on into a longer
        // word): it is looked for again, whole, with that piece.
        let cut = text.length - heldBack(text, secrets);
        for (const [start, end] of stretches) {
          if ((start < cut && end > cut) || end === text.length) cut = Math.min(cut, start);
        }
        carry = text.slice(cut);
        if (cut > 0) controller.enqueue(encoder.encode(replaced(text, stretches, cut)));
      },
      flush(controller) {
        const text = redactText(carry + decoder.decode(), secrets);
        if (text) controller.enqueue(encoder.encode(text));
      },
    }),
  );
}

/**
 * A `fetch` that takes the given secrets out of everything a server sends back — every error
 * body whatever its content type, every text response body (streams alike, piece by piece as they
 * arrive; a successful binary body such as audio passes untouched) and every response header value — and out of the error a failed
 * request throws, so a server that echoes the key or a header
 * cannot put it into an SDK error, an event or a log line. `secrets` are the strings `secretsOf`
 * answers for the endpoint, each looked for exactly as given (a pooled client looks for an endpoint's
 * secrets as `redactor` does, cut short and wrapped too); with none it is `inner` itself. Without an
 * `inner` it asks the global fetch and, as a pooled client does, follows no redirect to another
 * origin (the 3xx is answered as it is): fetch would drop `Authorization` there and send every other
 * header on, an `api-key` included. Throws `TypeError` for `secrets` that
 * are not an array of non-empty strings, or an `inner` that is not a function.
 */
export function redactingFetch(
  secrets: readonly string[],
  inner: FetchLike = sameOriginRedirects(),
): FetchLike {
  checkSecrets(secrets);
  return splitRedactingFetch(exactPatterns(secrets), exactPatterns(secrets), inner);
}

function checkSecrets(list: unknown): void {
  if (!Array.isArray(list) || !list.every((s) => typeof s === "string" && s !== "")) {
    throw new TypeError(
      "redactingFetch: secrets must be an array of non-empty strings (secretsOf(endpoint)).",
    );
  }
}

/**
 * `redactingFetch` with a narrower list for the body of a successful (2xx) response: what a model
 * answers — its text and the arguments of its tool calls — loses only `replySecrets` (the pool
 * passes `credentialsOf`), so a routing header's value (`x-portkey-provider: openai`, an `X-Title`)
 * the model happens to write stays whole. Error bodies, every response header and a thrown error
 * lose all of `secrets`. `replySecrets` must be a subset of `secrets`.
 */
export function splitRedactingFetch(
  secrets: readonly Pattern[],
  replySecrets: readonly Pattern[],
  inner: FetchLike = globalThis.fetch,
): FetchLike {
  if (typeof inner !== "function") throw new TypeError("redactingFetch: inner must be a fetch function.");
  if (secrets.length === 0) return inner;
  return async (input, init) => {
    let response: Response;
    try {
      response = await inner(input, init);
    } catch (error) {
      throw redactDeep(error, secrets);
    }
    const headers = new Headers();
    let headersChanged = false;
    for (const [name, value] of response.headers) {
      const clean = redactText(value, secrets);
      if (clean !== value) headersChanged = true;
      headers.append(name, clean);
    }
    const bodySecrets = response.ok ? replySecrets : secrets;
    // A successful body is searched only when it is text: a binary one (audio, a file) would be
    // corrupted by decoding it. An error body is searched whatever its type says: the SDK reads
    // every error body as text into `APIError.message`, so a 401 that echoes the key under
    // `application/octet-stream` (nginx's default type) would otherwise carry it there.
    const type = response.headers.get("content-type");
    const textual = !response.ok || !type || TEXTUAL.test(type);
    const searched = textual && bodySecrets.length > 0;
    if ((!response.body || !searched) && !headersChanged) return response;
    if (searched) headers.delete("content-length");
    return new Response(
      response.body && searched ? redactedBody(response.body, bodySecrets) : response.body,
      {
        status: response.status,
        statusText: redactText(response.statusText, secrets),
        headers,
      },
    );
  };
}
