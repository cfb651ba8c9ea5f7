/**
 * openai-node reads an error response's `error` member and nothing else, so a server that answers
 * with the error at the top level — vLLM's legacy `{"object":"error","message":…}`, Mistral's 422,
 * a bare JSON string — reaches the caller as "400 status code (no body)", with the words every
 * classifier (overflow, refusal, loading) needs thrown away. This fetch wraps such a body as
 * `{"error": …}` before the SDK reads it, so the server's own words survive. Successful responses
 * and bodies that already have an `error` member pass through untouched.
 */

type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

function wrapped(text: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined; // not JSON: the SDK keeps the text as the message itself
  }
  if (typeof body === "string") return JSON.stringify({ error: { message: body } });
  if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined;
  if ("error" in body && (body as { error: unknown }).error != null) return undefined;
  return JSON.stringify({ error: body });
}

/**
 * A `fetch` that keeps an error body the `openai` SDK would drop: one with the error at the top level
 * (vLLM's legacy shape, Mistral's 422) or a bare JSON string is handed on as `{"error": …}`, so the
 * server's words reach `APIError.message` and `APIError.error`. `getClient` uses it; pass it as
 * `new OpenAI({ fetch: keepErrorBodies() })` to a client of your own. Successful responses, non-JSON
 * bodies and bodies that already have an `error` member pass through untouched.
 */
export function keepErrorBodies(inner: FetchLike = globalThis.fetch): FetchLike {
  return async (input, init) => {
    const response = await inner(input, init);
    if (response.ok) return response;
    // Whatever the content-type says: the SDK parses any error text that happens to be JSON.
    const text = await response.text();
    const body = wrapped(text) ?? text;
    const headers = new Headers(response.headers);
    headers.delete("content-length");
    headers.delete("content-encoding");
    return new Response(body, { status: response.status, statusText: response.statusText, headers });
  };
}
