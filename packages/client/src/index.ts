import type OpenAI from "openai";
import type { Endpoint, WindowSettings } from "./endpoint.js";
import { type ClientPool, createClientPool } from "./pool.js";
import type { LookupOptions, ModelEntry } from "./window.js";

export type { KeyedEndpoint } from "./api-key.js";
export { resolveApiKey } from "./api-key.js";
export type { Endpoint, WindowSettings } from "./endpoint.js";
export {
  DEFAULT_FIRST_TOKEN_SECONDS,
  DEFAULT_REQUEST_TIMEOUT_SECONDS,
  firstTokenMs,
  NO_KEY,
  timeoutMs,
} from "./endpoint.js";
export { keepErrorBodies, MAX_ERROR_BODY_BYTES } from "./error-bodies.js";
export type { ModelListingErrorCode } from "./errors.js";
export { EndpointConfigError, ModelListingError } from "./errors.js";
export type { ClientLogEntry, ClientPool, ClientPoolOptions } from "./pool.js";
export { createClientPool, DEFAULT_MAX_CLIENTS, NO_TIMEOUT_MS } from "./pool.js";
export type { SecretBearer, UnwrittenRedaction } from "./redact.js";
export {
  CUT_SHORT_FROM,
  credentialRedactor,
  isCredentialParam,
  MIN_SECRET_LENGTH,
  REDACTED,
  redactor,
  SHORTEST_PIECE,
  STRING_OBJECT_NAMES_UP_TO,
  secretsOf,
  unwrittenRedactions,
  WHOLE_WORD_BELOW,
} from "./redact.js";
export { redactingFetch } from "./redact-fetch.js";
export type {
  LookupOptions,
  ModelEntry,
  RouteLatches,
  RouteLatchStore,
  WindowDiscoveryOptions,
} from "./window.js";
export {
  DEFAULT_MAX_LOOKUP_BODY_BYTES,
  DEFAULT_MAX_ROUTES,
  findEntry,
  listedWindow,
  listingEntries,
  WINDOW_KEYS,
} from "./window.js";

/** The pool the top-level functions use; `createClientPool()` makes another. */
export const defaultClientPool: ClientPool = createClientPool();

/**
 * The pooled `openai` client for an endpoint.
 *
 * One per (base URL, API key, headers, timeout), made on first use; the base URL in one spelling
 * per server (scheme and host case, a default port and trailing slashes do not count). An absent
 * or empty key is sent as `NO_KEY` (never `$OPENAI_API_KEY`); the timeout is
 * `requestTimeoutSeconds` (absent: `DEFAULT_REQUEST_TIMEOUT_SECONDS`; written as 0: none). The
 * client never retries on its own (`maxRetries: 0`): retrying is the caller's, with `isTransient`
 * and `backoffMs`. Throws `EndpointConfigError` for an endpoint without a usable base URL (missing,
 * not http(s), carrying credentials, a query or a fragment), a key or headers that are not strings.
 */
export function getClient(endpoint: Endpoint): OpenAI {
  return defaultClientPool.getClient(endpoint);
}

/**
 * The endpoint's `GET /models` entries.
 *
 * The listing's entries (`{ data: [...] }`, a bare array or `{ models: [...] }`), asked with the
 * endpoint's key and headers as the pooled client sends them, handed back with the endpoint's
 * credentials (key, auth-scheme tokens, headers under a credential's name) replaced by `REDACTED`;
 * an ordinary header word in an id is left whole. Bounded like `contextLimitFor`: past
 * the bound it rejects with a `TimeoutError`; a signal rejects with its reason. Rejects with
 * `ModelListingError` for an error status, a body that is not a listing or is longer than
 * `DEFAULT_MAX_LOOKUP_BODY_BYTES` (16 MiB; never read past it, the response closed) or a server it
 * cannot reach, and `EndpointConfigError` for an endpoint it cannot use.
 */
export function listModels(settings: WindowSettings, options?: LookupOptions | null): Promise<ModelEntry[]> {
  return defaultClientPool.listModels(settings, options);
}

/**
 * The context a local server says it allocated, or `undefined`.
 *
 * Asks llama.cpp's `/props` (`default_generation_settings.n_ctx`, asked with `?model=`), then LM Studio's `/api/v0/models`
 * (`loaded_context_length`); `undefined` when neither says. A server with neither route is
 * remembered and not asked again; `/api/v0/models` is dropped for the process on 404/405/501 and
 * for `listingMissMs` after any other error but a refused credential (401, 403: one tenant's). A
 * body longer than `DEFAULT_MAX_LOOKUP_BODY_BYTES` is no answer from its route and latches nothing.
 * A signal rejects with its reason and remembers nothing.
 */
export function servedWindow(
  settings: WindowSettings,
  options?: LookupOptions | null,
): Promise<number | undefined> {
  return defaultClientPool.servedWindow(settings, options);
}

/**
 * The context window to size a request against; `0` when nothing says.
 *
 * The operator's number wins outright when it is
 * positive (no I/O). Otherwise: the window the model's `/v1/models` entry states (`listedWindow`:
 * `loaded_context_length`, the `WINDOW_KEYS` such as `context_length`, `max_model_len`,
 * `context_window`, then the nested places servers put it); else `servedWindow`; else the
 * listing's `meta.n_ctx`, then `meta.n_ctx_train`; else `0`.
 *
 * Bounded at ten seconds across all of it, or the endpoint's `requestTimeoutSeconds` where that is
 * shorter, and answers `0` past the bound or for a server it cannot reach. Reads at most
 * `DEFAULT_MAX_LOOKUP_BODY_BYTES` of any body: one longer is not read further and is no answer from
 * its route (nothing latched). A signal rejects with
 * its reason, closes the open request and remembers nothing; nothing else makes it reject except an
 * endpoint it cannot use (a base URL, key or headers `getClient` would refuse), a `model` that is
 * not a string (a listing entry in place of its id), an operator's
 * number that is not a number (a string such as `"8192"`, or `NaN`) or is past 2^53 − 1 (`Infinity`), or options whose `signal` is not an
 * `AbortSignal` (`EndpointConfigError`). Leaves no timer or listener behind.
 */
export function contextLimitFor(
  settings: WindowSettings,
  operatorNumber?: number | null,
  options?: LookupOptions | null,
): Promise<number> {
  return defaultClientPool.contextLimitFor(settings, operatorNumber, options);
}

/**
 * Drops one tenant's entries from the default pool: its clients (any timeout; given `headers`, only
 * those sent exactly them, else any headers) and its server's window-route latches. Answers how
 * many clients went. Throws `EndpointConfigError` for an unusable base URL or headers.
 */
export function forgetClients(endpoint: Pick<Endpoint, "baseUrl" | "apiKey" | "headers">): number {
  return defaultClientPool.forget(endpoint);
}

/** Drops every pooled client and window-route latch of the default pool. */
export function resetClients(): void {
  defaultClientPool.reset();
}
