/**
 * openai-node reads an error response's `error` member and nothing else, so a server that answers
 * with the error at the top level — vLLM's legacy `{"object":"error","message":…}`, Mistral's 422,
 * a bare JSON string — reaches the caller as "400 status code (no body)", with the words every
 * classifier (overflow, refusal, loading) needs thrown away. This fetch wraps such a body as
 * `{"error": …}` before the SDK reads it, so the server's own words survive: a top-level error
 * object, a bare JSON string, Gemini's one-element array, and an `error` that is a plain string
 * (whose siblings, such as Hugging Face's `estimated_time`, would otherwise be lost). Successful
 * responses and bodies whose `error` is already an object pass through untouched.
 */

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
  const { error, ...rest } = body as { error?: unknown } & Record<string, unknown>;
  // Hugging Face / LM Studio: { "error": "Model … is currently loading", "estimated_time": 20 }.
  // The SDK keeps only `error`, so the words go in as its message and the siblings beside them.
  if (typeof error === "string") return JSON.stringify({ error: { ...rest, message: error } });
  if (error != null) return undefined;
  return JSON.stringify({ error: body });
}

/**
 * A `fetch` that keeps an error body the `openai` SDK would drop: one with the error at the top level
 * (vLLM's legacy shape, Mistral's 422) or a bare JSON string is handed on as `{"error": …}`, so the
 * server's words reach `APIError.message` and `APIError.error`. `getClient` uses it; pass it as
 * `new OpenAI({ fetch: keepErrorBodies() })` to a client of your own. Gemini's one-element array
 * is unwrapped, and an `error` that is a plain string becomes `{ message, …its siblings }` (so Hugging
 * Face's `estimated_time` survives). Successful responses, statuses without a body (a `304`),
 * non-JSON bodies and bodies whose `error` is already an object pass through untouched.
 */
export function keepErrorBodies(inner: FetchLike = globalThis.fetch): FetchLike {
  return async (input, init) => {
    const response = await inner(input, init);
    // A 304 from a caching proxy has no body to keep: handed on as it is, for the SDK to report.
    if (response.ok || NULL_BODY.has(response.status)) return response;
    // Whatever the content-type says: the SDK parses any error text that happens to be JSON.
    const text = await response.text();
    const body = wrapped(text) ?? text;
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    headers.delete("content-encoding");
    return new Response(body, { status: response.status, statusText: response.statusText, headers });
  };
}
