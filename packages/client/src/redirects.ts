type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** The statuses whose `Location` a fetch would follow. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** As many hops as fetch itself follows before it gives up. */
const MAX_HOPS = 20;

/**
 * A `fetch` that follows a redirect only within the origin it was sent to.
 *
 * A fetch following a redirect to another origin drops `Authorization` and sends every other
 * header on — an `api-key`, an `x-api-key`, a tenant header — to whatever server the `Location`
 * names. Here such a redirect is not followed: its 3xx response is answered as it is (the SDK
 * raises an `APIError` with that status; a lookup reads an error status). A redirect within the
 * same origin is followed as fetch would follow it, headers and all: a 303, or a 301/302 of a
 * request other than GET or HEAD, is asked again as a GET without a body; a 307/308 keeps method
 * and body, but for a body fetch can send only once (a `ReadableStream`, an async iterable): its
 * 307/308 is answered as it is, as fetch itself could not follow it either. A `Request` object is
 * sent without following anything.
 */
export function sameOriginRedirects(inner: FetchLike = globalThis.fetch): FetchLike {
  return async (input, init) => {
    if (input instanceof Request) return inner(input, { ...init, redirect: "manual" });
    let url = new URL(String(input));
    let asked: RequestInit = { ...init, redirect: "manual" };
    for (let hop = 0; ; hop++) {
      const response = await inner(url, asked);
      const location = response.headers.get("location");
      if (!REDIRECTS.has(response.status) || location === null || hop >= MAX_HOPS) return response;
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        return response;
      }
      if (next.origin !== url.origin) return response;
      const method = (asked.method ?? "GET").toUpperCase();
      const keepsBody =
        response.status === 307 ||
        response.status === 308 ||
        ((response.status === 301 || response.status === 302) && (method === "GET" || method === "HEAD"));
      // The first request read a stream body to its end: asked again, fetch refuses the spent stream
      // (a bare TypeError about a Response), so the 3xx is the answer.
      if (keepsBody && !resendable(asked.body)) return response;
      await response.body?.cancel().catch(() => {});
      if (
        response.status === 303 ||
        ((response.status === 301 || response.status === 302) && method !== "GET" && method !== "HEAD")
      ) {
        const { body: _body, ...rest } = asked;
        const headers = new Headers(rest.headers);
        headers.delete("content-type");
        headers.delete("content-length");
        asked = { ...rest, method: method === "HEAD" ? "HEAD" : "GET", headers };
      }
      url = next;
    }
  };
}

/** True for a request body fetch can send again: none, or one it holds whole (not a stream). */
function resendable(body: RequestInit["body"] | undefined): boolean {
  return (
    body === undefined ||
    body === null ||
    typeof body === "string" ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    body instanceof Blob ||
    body instanceof URLSearchParams ||
    body instanceof FormData
  );
}
