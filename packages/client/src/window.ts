import {
  apiKeyOf,
  checkedBaseUrl,
  checkedHeaders,
  endpointField,
  ownFields,
  timeoutMs,
  type WindowSettings,
} from "./endpoint.js";
import { EndpointConfigError, ModelListingError } from "./errors.js";
import { type Pattern, patternsOf, redactText } from "./redact.js";
import { sameOriginRedirects } from "./redirects.js";

/** One entry of a `GET /models` listing: an `id` and whatever else the server put beside it. */
export interface ModelEntry {
  id: string;
  [field: string]: unknown;
}

/** The option every window lookup takes; `null`, here or in place of the object, reads as none. */
export interface LookupOptions {
  /** Stops the lookup: it rejects with the signal's reason, closes its request, remembers nothing. */
  signal?: AbortSignal | null | undefined;
}

/** Settings of the window lookups of one pool. */
export interface WindowDiscoveryOptions {
  /** The bound on one whole lookup, listing and native routes together (default 10 000 ms; 1 to 2147483647). */
  lookupBoundMs?: number | undefined;
  /** How long `/api/v0/models` is left alone after an error other than 404/405/501 (default 60 000 ms). */
  listingMissMs?: number | undefined;
  /** The clock, for `listingMissMs` (default `Date.now`). */
  now?: (() => number) | undefined;
  /** Servers whose route latches are kept (least recently used dropped first); default `DEFAULT_MAX_ROUTES`. */
  maxRoutes?: number | undefined;
  /**
   * The most a lookup reads of one response body (default `DEFAULT_MAX_LOOKUP_BODY_BYTES`, 16 MiB;
   * a whole number from 1). A body past it is not read further and its response is closed: a
   * listing that big is a `"malformed"` `ModelListingError` for `listModels`, and no answer from
   * that route for `contextLimitFor` and `servedWindow` (nothing latched).
   */
  maxLookupBodyBytes?: number | undefined;
  /**
   * Where the route latches are kept, by native base URL (default: a `Map` of this pool's own).
   * A store shared between processes (such as `@loopwright/redis`'s) hands back objects whose
   * changes it shares; the lookups read and mutate them as they would a `Map`'s.
   */
  routeLatches?: RouteLatchStore | undefined;
}

/** Which native window routes one server lacks, as the lookups learned it. */
export interface RouteLatches {
  /** Both native routes answered 404/405/501: never asked again. */
  neither: boolean;
  /** `/api/v0/models` answered 404/405/501: dropped for the process. */
  lmstudioGone: boolean;
  /** `/api/v0/models` failed otherwise: not asked again before this time (epoch ms). */
  lmstudioMissUntil: number;
  /**
   * `/props` answered 200 without a window (a proxy or a server answering every path, LM Studio's
   * 200 "Unexpected endpoint", a llama-server build without `n_ctx`): not asked again before this
   * time (epoch ms), `listingMissMs` after. Optional: a store that does not keep it (a shared one
   * made before it) leaves each pool to learn it for itself.
   */
  propsMissUntil?: number | undefined;
}

/**
 * The part of a `Map<string, RouteLatches>` the lookups use; insertion order is recency (a lookup
 * deletes and sets its server again, and the first key is dropped past `maxRoutes`).
 */
export interface RouteLatchStore {
  get(base: string): RouteLatches | undefined;
  set(base: string, latches: RouteLatches): unknown;
  delete(base: string): unknown;
  clear(): void;
  readonly size: number;
  keys(): IterableIterator<string>;
}

/** How many servers' window-route latches a pool keeps. */
export const DEFAULT_MAX_ROUTES = 1024;

/**
 * The most a window lookup reads of one response body, 16 MiB: about 25 times OpenRouter's whole
 * model listing (338 models at about 1.8 KB each, 0.6 MB), so a hostile or broken server cannot
 * make the process hold an endless body.
 */
export const DEFAULT_MAX_LOOKUP_BODY_BYTES: number = 16 * 1024 * 1024;

/**
 * Top-level keys of a listing entry that name the window being served, in the order they are read.
 *
 * The seed's five (`context_length` at OpenRouter, Together, Moonshot, xAI; `max_context_window`;
 * `max_model_len` at vLLM and SGLang; `context_window` at Groq; `n_ctx`), then the spellings other
 * servers use for the same number: `max_context_length` (Mistral), `max_input_tokens` (a LiteLLM
 * proxy), `contextLength` (Fireworks), `inputTokenLimit` (Gemini). LM Studio's
 * `loaded_context_length`, where an entry has it, is read before all of them: it is the window the
 * model was loaded with, where `max_context_length` beside it is only what the model could take.
 */
export const WINDOW_KEYS: readonly string[] = Object.freeze([
  "context_length",
  "max_context_window",
  "max_model_len",
  "context_window",
  "n_ctx",
  "max_context_length",
  "max_input_tokens",
  "contextLength",
  "inputTokenLimit",
]);

type RouteState = RouteLatches;

/** A change to the route latches, applied only when the lookup was not stopped by its caller. */
type Latch = (state: RouteState) => void;

const ABSENT = new Set([404, 405, 501]);

/** A refusal of the credential that asked: says nothing about the server, so nothing is latched. */
const REFUSED = new Set([401, 403]);

function positive(value: unknown): number | undefined {
  // A window under one token is no window (0.5 would floor to 0), nor one past 2^53 - 1 (1e308, which
  // no server has and every token count would be measured against).
  return typeof value === "number" && value >= 1 && value <= Number.MAX_SAFE_INTEGER
    ? Math.floor(value)
    : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A field of what a server sent (a listing, an entry, a `/props` body) or of an entry a host
 * passed: where the object (or a prototype of its own) holds it, never where only a polluted
 * `Object.prototype` does; `undefined` for anything that is not an object (or is an array).
 */
function field(value: unknown, key: string): unknown {
  return isRecord(value) ? endpointField(value, key) : undefined;
}

/** The names an entry may go by besides its `id`, read in this order. */
const NAME_KEYS = ["name", "model", "key", "canonical_slug"] as const;

/** The server's own origin (the base URL without a trailing `/v1`), where `/props` and `/api/v0` live. */
function nativeBase(baseUrl: string): string {
  return baseUrl.replace(/\/v1$/, "");
}

/**
 * What a lookup sends, as the pooled client would: the key as a bearer token, unless the
 * endpoint's own headers carry an `Authorization` (in any case), which wins as it does in the SDK.
 */
function authHeaders(settings: WindowSettings): Record<string, string> {
  return {
    authorization: `Bearer ${apiKeyOf(settings)}`,
    accept: "application/json",
    ...checkedHeaders(endpointField(settings, "headers")),
  };
}

/** `models/gemini-2.5-flash` and `gemini-2.5-flash` name one model (Gemini lists the prefixed form). */
function bareName(name: string): string {
  return name.replace(/^models\//, "");
}

/**
 * A lookup's options: absent or `null` are none; anything else must be an object whose `signal`,
 * where given, is an `AbortSignal` (`EndpointConfigError` naming it otherwise). A `null` signal is
 * none: what comes back holds a signal only where one was given, so no `null` reaches the deadline.
 * Its `signal` is always set (`undefined` for none): an object without one, destructured, read a
 * polluted `Object.prototype.signal`.
 */
function lookupOptions(given: LookupOptions | null | undefined): { signal: AbortSignal | undefined } {
  if (given == null) return { signal: undefined };
  if (typeof given !== "object") {
    throw new EndpointConfigError("options", "The lookup options must be an object ({ signal? }).");
  }
  // Its own signal, never a polluted Object.prototype's.
  const signal = endpointField(given, "signal");
  if (
    signal != null &&
    !(
      typeof signal === "object" &&
      typeof (signal as AbortSignal).throwIfAborted === "function" &&
      typeof (signal as AbortSignal).addEventListener === "function"
    )
  ) {
    throw new EndpointConfigError("signal", "The lookup's signal must be an AbortSignal.");
  }
  return { signal: signal == null ? undefined : (signal as AbortSignal) };
}

/**
 * The entry for `model` (by id, alias or name), or the only entry when no model is named. Throws
 * `TypeError` for `entries` that are not an array.
 */
export function findEntry(entries: readonly ModelEntry[], model: string | undefined): ModelEntry | undefined {
  if (!Array.isArray(entries)) {
    throw new TypeError("findEntry: entries must be an array of model entries (as listingEntries answers).");
  }
  if (!model) return entries.length === 1 ? entries[0] : undefined;
  // One pass, allocating nothing per entry (a 10^5-entry listing was read three times over, two
  // arrays made per entry per pass, and the model's bare name worked out again for every name):
  // the first entry whose id is the model wins, else the first naming it, else the first naming it
  // once `models/` is taken off both.
  const bareModel = bareName(model);
  let named: ModelEntry | undefined;
  let bare: ModelEntry | undefined;
  const consider = (entry: ModelEntry, name: unknown): void => {
    if (typeof name !== "string") return;
    if (named === undefined && name === model) named = entry;
    else if (bare === undefined && (name.startsWith("models/") ? name.slice(7) : name) === bareModel)
      bare = entry;
  };
  for (const entry of entries) {
    // The entry's own fields: a polluted Object.prototype's `name` or `aliases` named every entry.
    const id = field(entry, "id");
    if (id === model) return entry;
    if (named !== undefined) continue;
    consider(entry, id);
    const aliases = field(entry, "aliases");
    if (Array.isArray(aliases)) for (const alias of aliases) consider(entry, alias);
    for (const name of NAME_KEYS) consider(entry, field(entry, name));
    const instances = field(entry, "loaded_instances");
    if (Array.isArray(instances)) for (const instance of instances) consider(entry, field(instance, "id"));
  }
  return named ?? bare;
}

/** A positive whole number at `path` under `entry`, if there is one. */
function at(entry: Record<string, unknown>, ...path: string[]): number | undefined {
  let value: unknown = entry;
  for (const key of path) value = isRecord(value) ? field(value, key) : undefined;
  return positive(value);
}

/**
 * The window LM Studio loaded the model with: `loaded_context_length` (`/api/v0/models`), or the
 * first loaded instance's `config.context_length` (`/api/v1/models`).
 */
function loadedWindow(entry: Record<string, unknown>): number | undefined {
  const loaded = positive(field(entry, "loaded_context_length"));
  if (loaded !== undefined) return loaded;
  const listed = field(entry, "loaded_instances");
  const instances = Array.isArray(listed) ? listed : [];
  for (const instance of instances) {
    const n = isRecord(instance) ? at(instance, "config", "context_length") : undefined;
    if (n !== undefined) return n;
  }
  return undefined;
}

/**
 * Ollama's `/api/show`: a `num_ctx` set in the Modelfile's `parameters` is the window it serves.
 * (`model_info["<arch>.context_length"]` beside it is the trained window, and is not read.)
 */
function ollamaNumCtx(entry: Record<string, unknown>): number | undefined {
  const parameters = field(entry, "parameters");
  if (typeof parameters !== "string") return undefined;
  // Within one line only: `\s*` at each line start would run on through every blank line after it.
  const n = /^[ \t]*num_ctx[ \t]+(\d+)[ \t]*\r?$/m.exec(parameters)?.[1];
  return n === undefined ? undefined : positive(Number(n));
}

/** The `--ctx-size` / `-c` a llama.cpp router will start (or started) the model with. */
function routerCtxSize(entry: Record<string, unknown>): number | undefined {
  const args = field(field(entry, "status"), "args");
  if (!Array.isArray(args)) return undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (typeof arg !== "string") continue;
    const inline = /^--ctx-size=(\d+)$/.exec(arg);
    if (inline) return positive(Number(inline[1]));
    if ((arg === "--ctx-size" || arg === "-c") && typeof args[i + 1] === "string") {
      return positive(Number(args[i + 1]));
    }
  }
  return undefined;
}

/**
 * The served window a listing entry states, if any.
 *
 * Read in this order: the window LM Studio loaded the model with (`loaded_context_length`, or
 * `loaded_instances[].config.context_length` in its newer listing); the `WINDOW_KEYS` at the top of the
 * entry; then the places servers nest it — OpenRouter's `top_provider.context_length` (only where
 * the top level has none), DeepInfra's `metadata.context_length`, GitHub Copilot's
 * `capabilities.limits` (`max_prompt_tokens`, else `max_context_window_tokens`), a LiteLLM
 * `model_info.max_input_tokens`, the `--ctx-size` in a llama.cpp router's `status.args`, and a
 * `num_ctx` in an Ollama `/api/show` body's `parameters` (never its trained `model_info` window).
 * An LM Studio entry (one with a load `state` or `loaded_instances`) that is not loaded states no
 * window: its `max_context_length` is only what the model could take.
 * `meta.n_ctx` / `meta.n_ctx_train` (llama.cpp) are not read here: `contextLimitFor` asks the
 * server's native routes before it settles for those. Zero, negative, null and non-numbers are no
 * window.
 */
export function listedWindow(entry: ModelEntry | undefined): number | undefined {
  if (!entry) return undefined;
  const loaded = loadedWindow(entry);
  if (loaded !== undefined) return loaded;
  // LM Studio's entries (a load `state`, or `loaded_instances`) give `max_context_length` as what the
  // model could take: a model it has not loaded has no window yet (it loads with its own default).
  const lmstudio =
    typeof field(entry, "state") === "string" || Array.isArray(field(entry, "loaded_instances"));
  for (const key of WINDOW_KEYS) {
    if (lmstudio && key === "max_context_length") continue;
    const n = positive(field(entry, key));
    if (n !== undefined) return n;
  }
  return (
    at(entry, "top_provider", "context_length") ??
    at(entry, "metadata", "context_length") ??
    at(entry, "capabilities", "limits", "max_prompt_tokens") ??
    at(entry, "capabilities", "limits", "max_context_window_tokens") ??
    at(entry, "model_info", "max_input_tokens") ??
    routerCtxSize(entry) ??
    ollamaNumCtx(entry)
  );
}

/**
 * The entries of a model listing body, whatever its shape; `undefined` for a body that is no listing.
 *
 * Reads `{ data: [...] }` (OpenAI and most servers), a bare array (Together), or `{ models: [...] }`
 * (Gemini's native listing, Ollama's tags). An entry without an `id` is given its `name` or `model`
 * as one; entries with none of them are left out.
 */
export function listingEntries(body: unknown): ModelEntry[] | undefined {
  // The body's and each entry's own fields: a polluted Object.prototype's `data` or `name` is none.
  const data = field(body, "data");
  const models = field(body, "models");
  const list = Array.isArray(body)
    ? body
    : Array.isArray(data)
      ? data
      : Array.isArray(models)
        ? models
        : undefined;
  if (!list) return undefined;
  const entries: ModelEntry[] = [];
  for (const item of list) {
    if (!isRecord(item)) continue;
    const own = field(item, "id");
    const id = [own, field(item, "key"), field(item, "name"), field(item, "model")].find(
      (v): v is string => typeof v === "string" && v !== "",
    );
    // Copied only to give it an id: 10^5 entries that have one were each copied whole.
    if (id !== undefined) entries.push(own === id ? (item as ModelEntry) : { ...item, id });
  }
  return entries;
}

/** Window discovery state and lookups for one pool. */
export interface WindowDiscovery {
  listModels(settings: WindowSettings, options?: LookupOptions | null): Promise<ModelEntry[]>;
  servedWindow(settings: WindowSettings, options?: LookupOptions | null): Promise<number | undefined>;
  contextLimitFor(
    settings: WindowSettings,
    operatorNumber?: number | null,
    options?: LookupOptions | null,
  ): Promise<number>;
  /** Drops the route latches of the server behind this (checked) base URL. */
  forget(baseUrl: string): void;
  reset(): void;
}

/**
 * The lookups' fetch: a redirect to another origin would carry the endpoint's headers there. What
 * it reads is not redacted: a window is found in the body as the server sent it (redacting first
 * turned `mistral-large-latest` into `[redacted]-large-latest` for a `mistral` header, and the entry
 * was no longer found). Only what `listModels` hands back is redacted, and a failed lookup's error
 * by the pool, as a pooled client's are.
 */
const followSameOrigin = sameOriginRedirects((input, init) => fetch(input, init));

/** The longest timer Node holds; a longer bound would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/** The lookups waiting on one caller's signal, and how to take its one listener off again. */
interface Waiting {
  callbacks: Set<() => void>;
  detach: () => void;
}

const waitingOn = new WeakMap<AbortSignal, Waiting>();

/**
 * Calls `onAbort` when `signal` aborts; answers the function that stops listening. However many
 * lookups wait on one signal at once (a host's shutdown signal handed to every run), it carries one
 * `abort` listener, removed when the last of them stops: a listener each printed Node's
 * `MaxListenersExceededWarning` into the host's log from the eleventh concurrent lookup on.
 */
function listenOnce(signal: AbortSignal, onAbort: () => void): () => void {
  let entry = waitingOn.get(signal);
  if (!entry) {
    const callbacks = new Set<() => void>();
    const fire = (): void => {
      waitingOn.delete(signal);
      for (const callback of [...callbacks]) callback();
      callbacks.clear();
    };
    signal.addEventListener("abort", fire, { once: true });
    entry = { callbacks, detach: () => signal.removeEventListener("abort", fire) };
    waitingOn.set(signal, entry);
  }
  const { callbacks, detach } = entry;
  callbacks.add(onAbort);
  return () => {
    if (!callbacks.delete(onAbort) || callbacks.size > 0) return;
    detach();
    if (waitingOn.get(signal)?.callbacks === callbacks) waitingOn.delete(signal);
  };
}

/**
 * One lookup's bound and its caller's signal as one signal. Its timer and its listener on the
 * caller's signal go with `dispose`, when the lookup answers: nothing of a finished lookup is left
 * armed (an `AbortSignal.timeout` would stay held, with what it reaches, for the whole bound).
 */
class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: ReturnType<typeof setTimeout>;
  private readonly onStop = (): void => this.controller.abort(this.caller?.reason);
  private readonly stopListening: (() => void) | undefined;
  /** Set once the bound has passed: the `TimeoutError` the lookup answers with. */
  reason: DOMException | undefined;

  constructor(
    readonly caller: AbortSignal | undefined,
    ms: number,
    /** Whether `ms` is the pool's `lookupBoundMs`, not the endpoint's shorter request timeout. */
    readonly poolBound: boolean,
  ) {
    this.timer = setTimeout(() => {
      this.reason = new DOMException("The operation was aborted due to timeout", "TimeoutError");
      this.controller.abort(this.reason);
    }, ms);
    this.timer.unref?.();
    this.stopListening = caller ? listenOnce(caller, this.onStop) : undefined;
  }
  /** Aborts when the bound passes or the caller stops the lookup. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }
  /** Whether the bound has passed. */
  get expired(): boolean {
    return this.reason !== undefined;
  }
  /** Rethrows the caller's reason when the caller stopped the lookup. */
  throwIfStopped(): void {
    if (this.caller?.aborted) throw this.caller.reason;
  }
  /** Clears the timer and the listener on the caller's signal. */
  dispose(): void {
    clearTimeout(this.timer);
    this.stopListening?.();
  }
}

/** What a body past the pool's `maxLookupBodyBytes` reads as: neither JSON nor the lack of it. */
const TOO_LARGE: unique symbol = Symbol("too large");

/** What a body cut off before its end (the connection reset mid-way) reads as: the failure kept. */
class Unreadable {
  constructor(readonly cause: unknown) {}
}

/**
 * The body's text, or `TOO_LARGE` once more than `limit` bytes of it have come (a declared
 * `Content-Length` past it is not read at all); the rest is not read and the response is closed.
 * Rejects as reading the body would (a reset, the deadline's abort).
 */
async function cappedText(response: Response, limit: number): Promise<string | typeof TOO_LARGE> {
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (declared > limit) {
    await response.body?.cancel().catch(() => {});
    return TOO_LARGE;
  }
  if (!response.body) return "";
  const reader = response.body.getReader();
  const parts: Uint8Array[] = [];
  let read = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    read += value.byteLength;
    if (read > limit) {
      await reader.cancel().catch(() => {});
      return TOO_LARGE;
    }
    parts.push(value);
  }
  // Decoded once, whole: as fast as `response.text()` (a decode per chunk took half as long again).
  const whole = new Uint8Array(read);
  let at = 0;
  for (const part of parts.splice(0)) {
    whole.set(part, at);
    at += part.byteLength;
  }
  return new TextDecoder().decode(whole);
}

/** The fields of {@link WindowDiscoveryOptions}. */
export const WINDOW_OPTIONS = [
  "lookupBoundMs",
  "listingMissMs",
  "now",
  "maxRoutes",
  "maxLookupBodyBytes",
  "routeLatches",
] as const satisfies readonly (keyof WindowDiscoveryOptions)[];

/** A pool option a lookup reads, checked when the pool is made (`EndpointConfigError` naming it). */
function checkedOptions(options: WindowDiscoveryOptions) {
  const {
    lookupBoundMs = 10_000,
    listingMissMs = 60_000,
    now = Date.now,
    routeLatches,
    maxLookupBodyBytes = DEFAULT_MAX_LOOKUP_BODY_BYTES,
  } = options;
  if (
    typeof maxLookupBodyBytes !== "number" ||
    !Number.isSafeInteger(maxLookupBodyBytes) ||
    maxLookupBodyBytes < 1
  ) {
    throw new EndpointConfigError(
      "maxLookupBodyBytes",
      `maxLookupBodyBytes must be a whole number of bytes from 1, got ${String(maxLookupBodyBytes)}.`,
    );
  }
  if (
    typeof lookupBoundMs !== "number" ||
    !Number.isFinite(lookupBoundMs) ||
    lookupBoundMs < 1 ||
    lookupBoundMs > MAX_TIMER_MS
  ) {
    throw new EndpointConfigError(
      "lookupBoundMs",
      `lookupBoundMs must be a number of milliseconds from 1 to ${MAX_TIMER_MS}, got ${String(lookupBoundMs)}.`,
    );
  }
  if (typeof listingMissMs !== "number" || !Number.isFinite(listingMissMs) || listingMissMs < 0) {
    throw new EndpointConfigError(
      "listingMissMs",
      `listingMissMs must be a number of milliseconds, 0 or more, got ${String(listingMissMs)}.`,
    );
  }
  if (typeof now !== "function") {
    throw new EndpointConfigError("now", "now must be a function answering the time in epoch ms.");
  }
  const store = routeLatches as Partial<Record<keyof RouteLatchStore, unknown>> | undefined;
  if (
    store !== undefined &&
    (typeof store !== "object" ||
      store === null ||
      !(["get", "set", "delete", "clear", "keys"] as const).every((m) => typeof store[m] === "function"))
  ) {
    throw new EndpointConfigError(
      "routeLatches",
      "routeLatches must be a RouteLatchStore (get, set, delete, clear, size, keys), such as a Map.",
    );
  }
  return { boundMs: lookupBoundMs, missMs: listingMissMs, now, maxBodyBytes: maxLookupBodyBytes };
}

/** Makes the window lookups and the route latches they keep. */
export function createWindowDiscovery(given: WindowDiscoveryOptions = {}): WindowDiscovery {
  // Its own fields, never a polluted Object.prototype's (an inherited `now` refused every pool).
  const options = ownFields(given, WINDOW_OPTIONS);
  const { boundMs, missMs, now, maxBodyBytes } = checkedOptions(options);
  const maxRoutes = options.maxRoutes ?? DEFAULT_MAX_ROUTES;
  if (!Number.isInteger(maxRoutes) || maxRoutes < 1) {
    throw new EndpointConfigError(
      "maxRoutes",
      `maxRoutes must be a whole number from 1, got ${String(maxRoutes)}.`,
    );
  }
  // Insertion order is recency: a lookup moves its server to the end; the first is dropped first.
  const routes: RouteLatchStore = options.routeLatches ?? new Map<string, RouteState>();

  const markNeither: Latch = (state) => {
    state.neither = true;
  };
  const markGone: Latch = (state) => {
    state.lmstudioGone = true;
  };
  const markMiss: Latch = (state) => {
    state.lmstudioMissUntil = now() + missMs;
  };
  const markPropsMiss: Latch = (state) => {
    state.propsMissUntil = now() + missMs;
  };

  const stateFor = (base: string): RouteState => {
    let state = routes.get(base);
    if (state) routes.delete(base);
    else state = { neither: false, lmstudioGone: false, lmstudioMissUntil: 0, propsMissUntil: 0 };
    routes.set(base, state);
    while (routes.size > maxRoutes) routes.delete(routes.keys().next().value as string);
    return state;
  };

  const deadlineFor = (settings: WindowSettings, signal: AbortSignal | undefined): Deadline => {
    const request = timeoutMs(settings);
    // The endpoint's own shorter timeout is its tenant's choice, not the pool's bound.
    const own = request !== undefined && request < boundMs;
    return new Deadline(signal, own ? request : boundMs, !own);
  };

  /** GET a URL under the deadline: the response, or the failure (the caller's stop is rethrown). */
  const get = async (url: string, settings: WindowSettings, deadline: Deadline): Promise<Response> => {
    try {
      return await followSameOrigin(url, { headers: authHeaders(settings), signal: deadline.signal });
    } catch (error) {
      deadline.throwIfStopped();
      throw error;
    }
  };

  /**
   * The body as JSON (`undefined` for one that is not), with `secrets` taken out of its text first;
   * `TOO_LARGE` for one past `maxBodyBytes`, of which no more is read; an `Unreadable` for one whose
   * reading failed (a reset mid-body), which is a failed connection, not a body that says nothing.
   */
  const readJson = async (
    response: Response,
    deadline: Deadline,
    secrets: readonly Pattern[] = [],
  ): Promise<unknown> => {
    let text: string | typeof TOO_LARGE;
    try {
      text = await cappedText(response, maxBodyBytes);
    } catch (error) {
      deadline.throwIfStopped();
      if (deadline.reason) throw deadline.reason;
      return new Unreadable(error);
    }
    if (text === TOO_LARGE) return TOO_LARGE;
    try {
      return JSON.parse(secrets.length === 0 ? text : redactText(text, secrets));
    } catch {
      return undefined;
    }
  };

  /**
   * The listing's entries. `handBack` redacts the endpoint's credentials (`credentialsOf`) from
   * the body before it is parsed, for a listing handed to the caller; a lookup reads it as sent.
   */
  const list = async (
    settings: WindowSettings,
    deadline: Deadline,
    handBack = false,
  ): Promise<ModelEntry[]> => {
    const url = `${checkedBaseUrl(settings)}/models`;
    const response = await get(url, settings, deadline);
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      throw new ModelListingError("http", url, `GET ${url} answered ${response.status}.`, {
        status: response.status,
      });
    }
    const body = await readJson(response, deadline, handBack ? patternsOf(settings, true) : []);
    if (body === TOO_LARGE) {
      throw new ModelListingError(
        "malformed",
        url,
        `GET ${url} answered a body of more than ${maxBodyBytes} bytes (maxLookupBodyBytes); it was not read further. Raise maxLookupBodyBytes on the pool if the listing is really that big.`,
      );
    }
    if (body instanceof Unreadable) {
      // The connection failed mid-body: a server that could not be heard out, as one that could
      // not be reached (it was "malformed", the word for a server that answers the wrong thing).
      throw new ModelListingError(
        "unreachable",
        url,
        `GET ${url} was cut off before its body ended: ${describeNetworkError(body.cause)}`,
        { cause: body.cause },
      );
    }
    const entries = listingEntries(body);
    if (!entries) {
      throw new ModelListingError(
        "malformed",
        url,
        `GET ${url} did not answer a model listing (a data array, a bare array, or a models array).`,
      );
    }
    return entries;
  };

  /** The native routes, in order; latches are collected, not applied. */
  const served = async (
    settings: WindowSettings,
    deadline: Deadline,
    latches: Latch[],
  ): Promise<number | undefined> => {
    const base = nativeBase(checkedBaseUrl(settings));
    const state = stateFor(base);
    if (state.neither) return undefined;
    let propsAbsent = false;
    // llama.cpp: /props (?model= for a router build, which answers n_ctx 0 without it). Left alone
    // for listingMissMs once it answered 200 without a window: a server answering every path (LM
    // Studio's 200 "Unexpected endpoint", a proxy) was asked it on every lookup.
    if (!((state.propsMissUntil ?? 0) > now())) {
      try {
        const model = endpointField(settings, "model") as string | null | undefined;
        const query = model ? `?model=${encodeURIComponent(model)}` : "";
        const response = await get(`${base}/props${query}`, settings, deadline);
        if (response.ok) {
          const body = await readJson(response, deadline);
          // Its own fields: a polluted Object.prototype's `n_ctx` was every server's window.
          const n = positive(field(field(body, "default_generation_settings"), "n_ctx"));
          if (n !== undefined) return n;
          // Not latched: a body past maxLookupBodyBytes or cut off mid-way (no answer, as a failed
          // connection is none), nor a llama.cpp router answering for itself (`role: "router"`,
          // n_ctx 0), which answers with the model's window once a lookup names the model.
          if (body !== TOO_LARGE && !(body instanceof Unreadable) && field(body, "role") !== "router") {
            latches.push(markPropsMiss);
          }
        } else {
          await response.body?.cancel().catch(() => {});
          propsAbsent = ABSENT.has(response.status);
        }
      } catch {
        deadline.throwIfStopped();
        if (deadline.expired) return undefined;
        // Unreachable or reset: the next route may still answer.
      }
    }
    // LM Studio: /api/v0/models (loaded_context_length of a loaded model).
    if (state.lmstudioGone || state.lmstudioMissUntil > now() || deadline.expired) {
      if (propsAbsent && state.lmstudioGone) latches.push(markNeither);
      return undefined;
    }
    let body: unknown;
    let listed: ModelEntry[] | undefined;
    // Only the server's own failures are caught here: the latch is the server's, for every tenant,
    // so a fault in what this lookup was given must not set it.
    try {
      const response = await get(`${base}/api/v0/models`, settings, deadline);
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        if (ABSENT.has(response.status)) {
          latches.push(markGone);
          if (propsAbsent) latches.push(markNeither);
        } else if (!REFUSED.has(response.status)) {
          // A refused key is only this tenant's.
          latches.push(markMiss);
        }
        return undefined;
      }
      body = await readJson(response, deadline);
      // A body cut off mid-way fails as a failed connection does: left alone for listingMissMs
      // (it was read as an empty listing, and a server resetting every time was asked on every lookup).
      if (body instanceof Unreadable) {
        latches.push(markMiss);
        return undefined;
      }
      // A complete body that is no listing at all (not JSON, an error object, a proxy's page): a
      // server answering every path, not LM Studio, left alone as after an error status. A listing
      // without the model loaded is no miss: LM Studio may load it before the next lookup.
      listed = body === TOO_LARGE ? [] : listingEntries(body);
      if (listed === undefined) {
        latches.push(markMiss);
        return undefined;
      }
    } catch {
      deadline.throwIfStopped();
      // Unreachable, reset, or too slow for the pool's bound: left alone for listingMissMs. Cut off
      // by the endpoint's own shorter requestTimeoutSeconds, it only ran out of one tenant's time
      // (the listing may have used most of it): nothing is latched, as for a refused key.
      if (!deadline.expired || deadline.poolBound) latches.push(markMiss);
      return undefined;
    }
    const entries = listed;
    let entry: ModelEntry | undefined;
    const model = endpointField(settings, "model") as string | null | undefined;
    if (model) entry = findEntry(entries, model);
    else {
      const loaded = entries.filter((e) => loadedWindow(e) !== undefined);
      entry = loaded.length === 1 ? loaded[0] : undefined;
    }
    return entry ? loadedWindow(entry) : undefined;
  };

  const apply = (settings: WindowSettings, latches: Latch[]): void => {
    if (latches.length === 0) return;
    const state = stateFor(nativeBase(checkedBaseUrl(settings)));
    for (const latch of latches) latch(state);
  };

  /** What every lookup checks before anything is sent: its options, the key, the headers and the model. */
  const checked = (
    settings: WindowSettings,
    given: LookupOptions | null | undefined,
  ): { signal: AbortSignal | undefined } => {
    const lookup = lookupOptions(given);
    apiKeyOf(settings);
    checkedHeaders(endpointField(settings, "headers"));
    const model: unknown = endpointField(settings, "model");
    if (model != null && typeof model !== "string") {
      // A listing entry passed in place of its id would be sent as `?model=[object Object]`.
      const kind = Array.isArray(model) ? "an array" : `a ${typeof model}`;
      throw new EndpointConfigError(
        "model",
        `The lookup's model must be a string (the model's id, absent for none); it is ${kind}.`,
      );
    }
    return lookup;
  };

  /** Runs `lookup` under a fresh deadline, disposed (timer cleared, listener removed) when it ends. */
  const bounded = async <T>(
    settings: WindowSettings,
    signal: AbortSignal | undefined,
    lookup: (deadline: Deadline) => Promise<T>,
  ): Promise<T> => {
    signal?.throwIfAborted();
    const deadline = deadlineFor(settings, signal);
    try {
      return await lookup(deadline);
    } finally {
      deadline.dispose();
    }
  };

  return {
    async listModels(settings, given) {
      const { signal } = checked(settings, given);
      return bounded(settings, signal, async (deadline) => {
        try {
          return await list(settings, deadline, true);
        } catch (error) {
          deadline.throwIfStopped();
          if (deadline.reason) throw deadline.reason; // a TimeoutError DOMException
          if (ModelListingError.isInstance(error)) throw error;
          const url = `${checkedBaseUrl(settings)}/models`;
          throw new ModelListingError(
            "unreachable",
            url,
            `GET ${url} got no answer: ${describeNetworkError(error)}`,
            { cause: error },
          );
        }
      });
    },

    async servedWindow(settings, given) {
      const { signal } = checked(settings, given);
      return bounded(settings, signal, async (deadline) => {
        const latches: Latch[] = [];
        const n = await served(settings, deadline, latches);
        deadline.throwIfStopped();
        apply(settings, latches);
        return n;
      });
    },

    async contextLimitFor(settings, operatorNumber, given) {
      const { signal } = checked(settings, given);
      if (operatorNumber != null && typeof operatorNumber !== "number") {
        // A "8192" read from the environment would otherwise be passed over for the server's word.
        throw new EndpointConfigError(
          "operatorNumber",
          `The operator's context length must be a number of tokens (0 or absent for none); it is a ${typeof operatorNumber}.`,
        );
      }
      if (
        typeof operatorNumber === "number" &&
        (Number.isNaN(operatorNumber) || operatorNumber > Number.MAX_SAFE_INTEGER)
      ) {
        // NaN is what `Number("8k")` reads from the environment; Infinity or 1e308 is a "no limit"
        // no window is. Each was passed over for the server's word, without a word said.
        throw new EndpointConfigError(
          "operatorNumber",
          `The operator's context length must be a whole number of tokens up to ${Number.MAX_SAFE_INTEGER} (0 or absent for none); it is ${String(operatorNumber)}.`,
        );
      }
      const own = positive(operatorNumber);
      if (own !== undefined) return own;
      checkedBaseUrl(settings);
      return bounded(settings, signal, async (deadline) => {
        const latches: Latch[] = [];
        let entry: ModelEntry | undefined;
        try {
          entry = findEntry(
            await list(settings, deadline),
            (endpointField(settings, "model") as string | null | undefined) ?? undefined,
          );
        } catch (error) {
          deadline.throwIfStopped();
          if (deadline.expired) return 0;
          // A server that cannot be reached at all has no native routes to ask either.
          if (!ModelListingError.isInstance(error)) return 0;
        }
        const listed = listedWindow(entry);
        if (listed !== undefined) return listed;
        const native = await served(settings, deadline, latches);
        deadline.throwIfStopped();
        apply(settings, latches);
        if (native !== undefined) return native;
        // The allocated context a newer llama.cpp lists under meta, then the trained window.
        const meta = field(entry, "meta");
        return positive(field(meta, "n_ctx")) ?? positive(field(meta, "n_ctx_train")) ?? 0;
      });
    },

    forget(baseUrl) {
      routes.delete(nativeBase(baseUrl));
    },
    reset() {
      routes.clear();
    },
  };
}

/** The most telling words of a network failure: the system code or message under fetch's "fetch failed". */
function describeNetworkError(error: unknown): string {
  let current: unknown = error;
  let words = "";
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    const { code, message } = current as { code?: unknown; message?: unknown };
    if (typeof code === "string" && /^[A-Z][A-Z0-9_]+$/.test(code)) return `${code}.`;
    if (typeof message === "string" && message) words = message;
    current = (current as { cause?: unknown }).cause;
  }
  return `${words || String(error)}.`;
}
