import { EndpointConfigError } from "./errors.js";
import { isCredentialParam } from "./redact.js";

/**
 * The endpoint fields this package reads.
 *
 * Any settings row, resolved agent or zod-inferred config
 * with these fields satisfies it structurally.
 */
export interface Endpoint {
  /** The OpenAI-compatible base URL, e.g. `http://127.0.0.1:8080/v1` or `https://api.openai.com/v1`. */
  baseUrl: string;
  /** The API key; absent or empty sends `NO_KEY` (never `$OPENAI_API_KEY`). */
  apiKey?: string | undefined;
  /** Extra headers sent on every request to this endpoint. */
  headers?: Record<string, string> | undefined;
  /**
   * How long a non-streamed call may take, and the silence allowed between chunks of a stream.
   * Absent: `DEFAULT_REQUEST_TIMEOUT_SECONDS` (120). `0` waits forever.
   */
  requestTimeoutSeconds?: number | undefined;
  /**
   * How long the response headers and the first chunk carrying something may take (prefill).
   * Absent: five times `requestTimeoutSeconds` where that is written, else
   * `DEFAULT_FIRST_TOKEN_SECONDS` (120). `0` waits forever.
   */
  firstTokenSeconds?: number | undefined;
}

/** An endpoint plus the model whose window is asked for (`contextLimitFor`, `servedWindow`). */
export interface WindowSettings extends Endpoint {
  /** The model's name at the endpoint; absent (or `null`) matches a listing with exactly one model. */
  model?: string | null | undefined;
}

/**
 * The API key sent to a keyless server, so the SDK never falls back to `$OPENAI_API_KEY`.
 *
 * Explicit, so the `openai` client never falls back
 * to `$OPENAI_API_KEY` and sends the operator's key somewhere it was not meant to go.
 */
export const NO_KEY = "no-key";

/** What an absent `requestTimeoutSeconds` means: two minutes of silence, or for a non-streamed call. */
export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 120;

/** What `firstTokenSeconds` means when neither it nor `requestTimeoutSeconds` is written: two minutes of prefill. */
export const DEFAULT_FIRST_TOKEN_SECONDS = 120;

/**
 * The longest timer Node holds: 2,147,483,647 ms (about 24.8 days). A longer one fires after 1 ms
 * instead, so every timeout is clamped to this.
 */
const MAX_TIMER_MS = 2_147_483_647;

/** Milliseconds, clamped to what a Node timer can hold (see {@link MAX_TIMER_MS}). */
function timerMs(ms: number): number {
  return Math.min(ms, MAX_TIMER_MS);
}

/** How deep a prototype chain {@link endpointField} follows: a Proxy's trap can make one endless. */
const MAX_CHAIN = 64;

/**
 * `endpoint[name]` where the endpoint holds it itself or a prototype of its own does (a class's
 * getter); `undefined` where only `Object.prototype` does. Some code in the process setting
 * `Object.prototype.apiKey` (prototype pollution) otherwise sent that key, as a bearer token, to
 * every endpoint given none; `.headers` went with every request.
 */
export function endpointField(endpoint: unknown, name: string): unknown {
  if (typeof endpoint !== "object" || endpoint === null) return undefined;
  let at: object | null = endpoint;
  for (let depth = 0; at !== null && at !== Object.prototype && depth < MAX_CHAIN; depth++) {
    if (Object.hasOwn(at, name)) return (endpoint as Record<string, unknown>)[name];
    at = Object.getPrototypeOf(at) as object | null;
  }
  return undefined;
}

/**
 * An options object's fields `names`, each read once as {@link endpointField} reads it, in an object
 * with no prototype (a field absent or `undefined` is left out; `null` and a non-object are no
 * options). A pool's options so read take no `maxClients`, `logLevel`, `now` or `routeLatches` some
 * code set on a polluted `Object.prototype` (each refused every pool made without its own).
 */
export function ownFields<T extends object>(
  given: T | null | undefined,
  names: readonly (keyof T & string)[],
): T {
  const pairs = names.map((name) => [name, endpointField(given, name)] as const);
  return Object.assign(
    Object.create(null),
    Object.fromEntries(pairs.filter(([, value]) => value !== undefined)),
  );
}

/** The field as written: `undefined` when absent, the number (0 included) otherwise. */
function seconds(
  endpoint: Partial<Endpoint>,
  field: "requestTimeoutSeconds" | "firstTokenSeconds",
): number | undefined {
  const value = endpointField(endpoint, field);
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new EndpointConfigError(
      field,
      `${field} must be a number of seconds (0 or more), got ${String(value)}.`,
    );
  }
  return value;
}

/** Seconds to ms; `0`, which only a user writes, is "forever": `undefined`. */
function toMs(s: number): number | undefined {
  return s === 0 ? undefined : timerMs(s * 1000);
}

/**
 * `requestTimeoutSeconds` in milliseconds: the silence a stream may keep between chunks, and how
 * long a non-streamed call may take. Absent: `DEFAULT_REQUEST_TIMEOUT_SECONDS` (120 s), so an
 * endpoint that stalls never holds a run for ever. `undefined` (wait forever) only where the
 * field is written as `0`. Reads only that field; clamped to about 24.8 days, the longest timer
 * Node can hold. Throws `EndpointConfigError` for a negative or non-numeric value.
 */
export function timeoutMs(endpoint: Pick<Endpoint, "requestTimeoutSeconds">): number | undefined {
  return toMs(seconds(endpoint, "requestTimeoutSeconds") ?? DEFAULT_REQUEST_TIMEOUT_SECONDS);
}

/**
 * How long the response headers and the first chunk of a stream may take, in ms.
 *
 * `firstTokenSeconds`, else five times `requestTimeoutSeconds` where that is written, else
 * `DEFAULT_FIRST_TOKEN_SECONDS` (120 s). Prefill of a long prompt on a local GPU takes tens of
 * seconds, so the first wait gets its own allowance. `undefined` (wait forever) only where the
 * governing field is written as `0`. Clamped, as `timeoutMs` is, to what a Node timer holds.
 * Throws `EndpointConfigError` for a negative or non-numeric value.
 */
export function firstTokenMs(
  endpoint: Pick<Endpoint, "requestTimeoutSeconds" | "firstTokenSeconds">,
): number | undefined {
  const first = seconds(endpoint, "firstTokenSeconds");
  if (first !== undefined) return toMs(first);
  const request = seconds(endpoint, "requestTimeoutSeconds");
  return toMs(request === undefined ? DEFAULT_FIRST_TOKEN_SECONDS : request * 5);
}

/**
 * `text` without the slashes it ends in. A walk back, not `replace(/\/+$/, "")`: that regex is tried
 * from every slash of a run that does not reach the end, so a base URL holding a long run of them
 * (40 000 took 2.7 s, and twice as many four times as long) stalled every `getClient` call.
 */
export function withoutTrailingSlashes(text: string): string {
  let end = text.length;
  while (end > 0 && text.charCodeAt(end - 1) === 47) end--;
  return text.slice(0, end);
}

/** A character no HTTP header value can carry: NUL, a line break, or one beyond Latin-1. */
const UNSENDABLE = /[\0\r\n]|[^\0-\xff]/;

/** What a header name must be: an HTTP token. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Why a value cannot be sent, in words that never quote it. */
const UNSENDABLE_WORDS =
  "has a character HTTP cannot send (a line break, a NUL, or one beyond Latin-1 such as a pasted dash or quote); the value is not shown";

/**
 * The endpoint's API key as the client sends it: the key without the whitespace around it (a key
 * read from a file keeps its newline; HTTP would drop the trailing part and send a leading space
 * inside the header) when it has something in it, `NO_KEY` when it is absent, `null` or blank. A
 * key HTTP cannot send (a line break or NUL inside it, a character beyond Latin-1), or of another
 * type than a string, is refused with an `EndpointConfigError` on `apiKey` that never quotes the
 * value (it may be a key).
 */
export function apiKeyOf(endpoint: { apiKey?: unknown } | undefined): string {
  const apiKey = endpointField(endpoint, "apiKey");
  if (apiKey === undefined || apiKey === null) return NO_KEY;
  if (typeof apiKey !== "string") {
    const kind = Array.isArray(apiKey) ? "an array" : `a ${typeof apiKey}`;
    throw new EndpointConfigError("apiKey", `The endpoint's apiKey must be a string; it is ${kind}.`);
  }
  const key = apiKey.trim();
  if (UNSENDABLE.test(key)) {
    // The SDK's own TypeError would quote the whole Authorization header, key and all.
    throw new EndpointConfigError("apiKey", `The endpoint's apiKey ${UNSENDABLE_WORDS}.`);
  }
  return key || NO_KEY;
}

/**
 * The base URL, checked, in one spelling per server: scheme and host lower-cased, a default port
 * dropped, no trailing slashes (so `HTTP://Host:80/v1/` and `http://host/v1` are one endpoint to
 * the pool, its `forget` and the route latches).
 *
 * Throws `EndpointConfigError` (`field: "baseUrl"`) when it is missing, not an http(s) URL, or
 * carries credentials — a user name or password (`https://user:key@host/v1`) or a credential query
 * parameter (`?api-key=`, `?key=`, `?access_token=`, …): those would be printed by every network
 * error and stored with every latch, so they are refused before anything is sent. Any other query
 * or a fragment is refused too: the SDK appends each path after the whole base URL, so
 * `…/v1?api-version=1` would send `/chat/completions` inside the query. The message never repeats
 * the URL; it names the host and the parameter names, and says where credentials go instead.
 */
export function checkedBaseUrl(endpoint: Partial<Endpoint> | undefined): string {
  const raw = endpointField(endpoint, "baseUrl");
  if (raw !== undefined && raw !== null && typeof raw !== "string") {
    // Given, but not as text: say so (the value is not shown; a URL object may carry credentials).
    const kind = raw instanceof URL ? "a URL object" : Array.isArray(raw) ? "an array" : `a ${typeof raw}`;
    throw new EndpointConfigError(
      "baseUrl",
      `The endpoint's baseUrl must be a string; it is ${kind}. Give the server's base URL as text, e.g. http://127.0.0.1:8080/v1.`,
    );
  }
  if (typeof raw !== "string" || raw.trim() === "") {
    throw new EndpointConfigError(
      "baseUrl",
      "The endpoint has no baseUrl: give the server's base URL, e.g. http://127.0.0.1:8080/v1.",
    );
  }
  const trimmed = withoutTrailingSlashes(raw.trim());
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch (cause) {
    // The text is not quoted: it may hold a key someone pasted in the wrong field.
    throw new EndpointConfigError(
      "baseUrl",
      `The endpoint's baseUrl (${raw.length} characters) is not a URL: give the server's base URL, e.g. http://127.0.0.1:8080/v1.`,
      { cause: new TypeError((cause as Error)?.name ?? "Invalid URL") },
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new EndpointConfigError(
      "baseUrl",
      `The endpoint's baseUrl must be http or https, got a ${JSON.stringify(url.protocol.slice(0, 16))} URL.`,
    );
  }
  if (url.username || url.password) {
    throw new EndpointConfigError(
      "baseUrl",
      `The endpoint's baseUrl for ${url.host} carries a user name or password (user:secret@host), which every network error would print. Put the key in apiKey, or an Authorization header in headers, and give the URL without it.`,
    );
  }
  const carried = [...url.searchParams.keys()].filter(isCredentialParam);
  if (carried.length > 0) {
    throw new EndpointConfigError(
      "baseUrl",
      `The endpoint's baseUrl for ${url.host} carries a credential in its query (${[...new Set(carried)].join(", ")}), which every network error would print. Put it in apiKey or in headers (e.g. { "api-key": … }) and give the URL without it.`,
    );
  }
  // Named only where a name reads as one: written `name=value`, a value after it. A key pasted after
  // the "?" is a parameter name too, with no value (`?sk-1234abcd5678efgh`), or only a base64 key's
  // padding (`?c2stMTIzNA==`); a short one would otherwise be quoted here.
  const names = [...new Set(namedParameters(url.search))].map((n) =>
    n !== undefined && /^[A-Za-z_][A-Za-z0-9_.-]{0,23}$/.test(n) ? `?${n}` : "a parameter not shown",
  );
  if (url.search !== "" || url.hash !== "") {
    const parts = [
      ...(url.search !== "" ? [`a query (${[...new Set(names)].join(", ") || "?"})`] : []),
      ...(url.hash !== "" ? ["a fragment (#…)"] : []),
    ];
    throw new EndpointConfigError(
      "baseUrl",
      `The endpoint's baseUrl for ${url.host} has ${parts.join(" and ")}: every request path would be sent after it, inside the query. Give the URL up to its path only (e.g. https://host/v1).`,
    );
  }
  return `${url.protocol}//${url.host}${withoutTrailingSlashes(url.pathname)}`;
}

/**
 * Each parameter of a query as it may be named in an error: its decoded name where it was written
 * `name=value` with a value that is more than `=` signs, `undefined` where it was not (a bare word,
 * which may be a key pasted after the `?`).
 */
function namedParameters(search: string): (string | undefined)[] {
  return search
    .replace(/^\?/, "")
    .split("&")
    .filter((part) => part !== "")
    .map((part) => {
      const equals = part.indexOf("=");
      if (equals <= 0 || /^=*$/.test(part.slice(equals + 1))) return undefined;
      return [...new URLSearchParams(part).keys()][0];
    });
}

/**
 * Whether `value` holds its entries behind methods (a `Headers`, a `Map`) rather than as its own
 * fields: read as an object it has none. Told by its `get` and `entries`, so a plain object made in
 * another realm (a `vm` context) is still read.
 */
/**
 * A header name as an error may quote it: whole when it is an HTTP token, or a short slip with no
 * colon (`"bad name"`, 16 characters at most: shorter than a key); else only the token it starts
 * with (up to 40 characters) and its length. A longer name that is no token is most often a whole
 * header line pasted as the name (`"Authorization: Bearer sk-…"`), its credential and all.
 */
function shownName(name: string): string {
  if (TOKEN.test(name) || (name.length <= 16 && !name.includes(":"))) return JSON.stringify(name);
  const start = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,40}/.exec(name)?.[0];
  return `${start === undefined ? "" : `starting ${JSON.stringify(start)} `}(${name.length} characters; the rest not shown, as it may hold a credential)`;
}

function isEntriesCollection(value: object): boolean {
  // A `Headers`' or a `Map`'s own methods (its class's), never a polluted Object.prototype's.
  const get = endpointField(value, "get");
  const entries = endpointField(value, "entries");
  return typeof get === "function" && typeof entries === "function";
}

/**
 * The endpoint's headers as the clients send them: names lower-cased (one header, whatever case it
 * was written in), values as given. Absent or `null` is none. Throws `EndpointConfigError`
 * (`field: "headers"`) for headers that are not a plain object of strings (a `Headers` or a `Map`
 * is refused: read as an object it held none), a name that is not an HTTP
 * token, or a value HTTP cannot send (a line break, a NUL, a character beyond Latin-1), naming the
 * header, never its value.
 */
export function checkedHeaders(headers: unknown): Record<string, string> {
  if (headers === undefined || headers === null) return {};
  if (typeof headers !== "object" || Array.isArray(headers)) {
    throw new EndpointConfigError(
      "headers",
      "The endpoint's headers must be an object of header names to strings.",
    );
  }
  if (isEntriesCollection(headers)) {
    // A `Headers` or a `Map` has no own fields: read as an object it was no headers, sent without a word.
    throw new EndpointConfigError(
      "headers",
      "The endpoint's headers must be a plain object of header names to strings, not a Headers or a Map " +
        "(pass Object.fromEntries(headers)).",
    );
  }
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== "string") {
      throw new EndpointConfigError("headers", `The endpoint's header ${shownName(name)} must be a string.`);
    }
    if (!TOKEN.test(name)) {
      throw new EndpointConfigError(
        "headers",
        `The endpoint's header name ${shownName(name)} is not an HTTP token (letters, digits and !#$%&'*+.^_\`|~-, no spaces, no colon: give the name alone, its value as the value).`,
      );
    }
    if (name === "__proto__") {
      // Node's fetch drops a header of this name without a word (and an object assignment would
      // set a prototype instead): refused, rather than an endpoint that never gets it.
      throw new EndpointConfigError(
        "headers",
        `The endpoint's header name "__proto__" cannot be sent: Node's fetch drops a header of that name.`,
      );
    }
    if (UNSENDABLE.test(value)) {
      // The SDK's own TypeError would quote the whole value.
      throw new EndpointConfigError(
        "headers",
        `The endpoint's header ${JSON.stringify(name)} ${UNSENDABLE_WORDS}.`,
      );
    }
    out[name.toLowerCase()] = value;
  }
  return out;
}
