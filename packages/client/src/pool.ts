import { createHash } from "node:crypto";
import OpenAI from "openai";
import {
  apiKeyOf,
  checkedBaseUrl,
  checkedHeaders,
  type Endpoint,
  endpointField,
  NO_KEY,
  ownFields,
  timeoutMs,
  type WindowSettings,
} from "./endpoint.js";
import { keepErrorBodies } from "./error-bodies.js";
import { EndpointConfigError } from "./errors.js";
import { protoless } from "./protoless.js";
import { patternsOf, redactDeep, redactText } from "./redact.js";
import { splitRedactingFetch } from "./redact-fetch.js";
import { sameOriginRedirects } from "./redirects.js";
import { abortWith, releasedWhenRead } from "./shared-abort.js";
import {
  createWindowDiscovery,
  type LookupOptions,
  type ModelEntry,
  WINDOW_OPTIONS,
  type WindowDiscoveryOptions,
} from "./window.js";

/**
 * The longest timer Node accepts: what "no timeout" means for the SDK.
 *
 * About 24.8 days; the SDK's own default would otherwise cut a slow local model off at ten minutes.
 */
export const NO_TIMEOUT_MS = 2_147_483_647;

/** How many clients a pool keeps before it drops the least recently used one. */
export const DEFAULT_MAX_CLIENTS = 256;

/** One line the `openai` SDK logged, with the endpoint's credentials taken out. */
export interface ClientLogEntry {
  level: "error" | "warn" | "info" | "debug";
  message: string;
}

/** Options of `createClientPool`: the window lookups', the pool's bound and where SDK logs go. */
export interface ClientPoolOptions extends WindowDiscoveryOptions {
  /** Clients kept (least recently used dropped first); default `DEFAULT_MAX_CLIENTS`. */
  maxClients?: number | undefined;
  /**
   * Told every line a pooled client's SDK logs (a malformed chunk, a retry), redacted. Absent: the
   * clients log nothing — never to the console.
   */
  onLog?: ((entry: ClientLogEntry) => void) | undefined;
  /** The lowest level passed to `onLog`; default `"warn"`. */
  logLevel?: ClientLogEntry["level"] | undefined;
}

/** A pool of `openai` clients, one per endpoint, and the window lookups with their caches. */
export interface ClientPool {
  /** The pooled client for this endpoint (base URL, key, headers, timeout); made on first use. */
  getClient(endpoint: Endpoint): OpenAI;
  /** The endpoint's `GET /models` entries. */
  listModels(settings: WindowSettings, options?: LookupOptions | null): Promise<ModelEntry[]>;
  /** The window a local server says it serves (llama.cpp `/props`, LM Studio `/api/v0/models`). */
  servedWindow(settings: WindowSettings, options?: LookupOptions | null): Promise<number | undefined>;
  /** The context window to size requests against; `0` when nothing says. */
  contextLimitFor(
    settings: WindowSettings,
    operatorNumber?: number | null,
    options?: LookupOptions | null,
  ): Promise<number>;
  /** How many clients are pooled. */
  readonly size: number;
  /**
   * Drops one tenant's entries: every client made for this base URL and key — given `headers`, only
   * those sent exactly these headers (names in any case; `{}` is the clients sent none), absent or
   * `null`, whatever their headers — whatever its timeout, and the window-route latches of its
   * server. So a tenant told apart only by a header (an `api-key`, no `apiKey`) is forgotten alone.
   * Answers how many clients went. Throws `EndpointConfigError` for a base URL or headers
   * `getClient` would refuse.
   */
  forget(endpoint: Pick<Endpoint, "baseUrl" | "apiKey" | "headers">): number;
  /** Drops every pooled client and every window-route latch. */
  reset(): void;
}

/**
 * The names `OPENAI_CUSTOM_HEADERS` would add, as the SDK reads it (one `Name: value` a line), each
 * set to `null` unless the endpoint sends it itself: a null default header is never sent.
 */
function environmentHeaders(own: Record<string, string>): Record<string, string | null> {
  // Read as the SDK reads it, through `process.env`'s prototype: a polluted
  // `Object.prototype.OPENAI_CUSTOM_HEADERS` string is a header the SDK adds, so its names are
  // nulled too.
  const raw: unknown = typeof process === "undefined" ? undefined : process.env?.OPENAI_CUSTOM_HEADERS;
  if (raw !== undefined && typeof raw !== "string") {
    // Only a polluted Object.prototype gives an environment variable that is not text; the SDK
    // would throw "trim is not a function" reading it (here, "raw?.split is not a function").
    throw new EndpointConfigError(
      "OPENAI_CUSTOM_HEADERS",
      `process.env.OPENAI_CUSTOM_HEADERS reads as a ${typeof raw}, not text (something set it on Object.prototype): the openai SDK cannot read it, so no client can be made.`,
    );
  }
  const nulls: Record<string, string | null> = {};
  for (const line of typeof raw === "string" ? raw.split("\n") : []) {
    const colon = line.indexOf(":");
    const name = colon >= 0 ? line.slice(0, colon).trim() : "";
    // Own keys only, and written as a field: a name such as `constructor` or `__proto__` is a header.
    if (name && !Object.hasOwn(own, name.toLowerCase())) {
      Object.defineProperty(
        nulls,
        name,
        protoless({
          value: null,
          enumerable: true,
          writable: true,
          configurable: true,
        }),
      );
    }
  }
  return nulls;
}

const LEVELS = ["off", "error", "warn", "info", "debug"] as const;

const POOL_OPTIONS = [
  "maxClients",
  "onLog",
  "logLevel",
  ...WINDOW_OPTIONS,
] as const satisfies readonly (keyof ClientPoolOptions)[];

function logLine(args: unknown[]): string {
  return args
    .map((arg) => {
      if (typeof arg === "string") return arg;
      if (arg instanceof Error) return arg.message;
      try {
        return JSON.stringify(arg) ?? String(arg);
      } catch {
        return String(arg);
      }
    })
    .join(" ");
}

function positiveWhole(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new EndpointConfigError(name, `${name} must be a whole number from 1, got ${String(value)}.`);
  }
  return value;
}

/**
 * Makes an independent client pool with its own window-lookup caches.
 *
 * The top-level functions use a
 * default one; a host whose tenants must not share clients makes one each.
 */
export function createClientPool(given: ClientPoolOptions = {}): ClientPool {
  // A null options object is no options. Each field read once, where the options (or their class)
  // hold it: never one a polluted Object.prototype holds (an inherited `maxClients`, `logLevel`,
  // `now` or `routeLatches` refused every pool made without its own).
  const options = ownFields<ClientPoolOptions>(given, POOL_OPTIONS);
  const maxClients = positiveWhole("maxClients", options.maxClients, DEFAULT_MAX_CLIENTS);
  // Insertion order is recency: a hit is moved to the end, the first entry is the one to drop.
  const clients = new Map<string, { client: OpenAI; tenant: string; sent: string }>();
  const windows = createWindowDiscovery(options);
  const { onLog } = options;
  if (onLog !== undefined && onLog !== null && typeof onLog !== "function") {
    // Called only from inside the SDK's logger, where its TypeError would be swallowed line by line.
    throw new EndpointConfigError("onLog", "onLog must be a function taking { level, message }.");
  }
  // Checked whether or not there is an `onLog`: a misspelt level is a mistake either way, and would
  // surface only once an `onLog` is added.
  if (options.logLevel != null && !LEVELS.includes(options.logLevel)) {
    throw new EndpointConfigError("logLevel", `logLevel must be one of ${LEVELS.slice(1).join(", ")}.`);
  }
  const logLevel = onLog ? (options.logLevel ?? "warn") : "off";
  if (!LEVELS.includes(logLevel)) {
    throw new EndpointConfigError("logLevel", `logLevel must be one of ${LEVELS.slice(1).join(", ")}.`);
  }
  const tenantOf = (baseURL: string, apiKey: string | undefined): string => {
    const key = apiKey?.trim() || NO_KEY;
    // The pool keeps a digest of the key, never the key itself (the client holds it, and only it).
    return `${baseURL}\n${createHash("sha256").update(key).digest("hex")}`;
  };
  return {
    getClient(endpoint) {
      const baseURL = checkedBaseUrl(endpoint);
      const apiKey = apiKeyOf(endpoint);
      const headers = checkedHeaders(endpointField(endpoint, "headers"));
      const timeout = timeoutMs(endpoint) ?? NO_TIMEOUT_MS;
      const tenant = tenantOf(baseURL, apiKey);
      const sent = sentText(headers);
      const id = JSON.stringify([tenant, sent, timeout]);
      const hit = clients.get(id);
      if (hit) {
        clients.delete(id);
        clients.set(id, hit);
        return hit.client;
      }
      const secrets = patternsOf({ baseUrl: baseURL, apiKey, headers });
      const write =
        (level: ClientLogEntry["level"]) =>
        (...args: unknown[]) => {
          try {
            onLog?.({ level, message: redactText(logLine(args), secrets) });
          } catch {
            // The host's log sink failing must not fail the request.
          }
        };
      // Every setting the SDK would otherwise read from the environment is given here, explicitly:
      // OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_ADMIN_KEY, OPENAI_ORG_ID, OPENAI_PROJECT_ID,
      // OPENAI_WEBHOOK_SECRET, OPENAI_LOG, and OPENAI_CUSTOM_HEADERS (its names nulled).
      const client = new PooledOpenAI({
        baseURL,
        apiKey,
        adminAPIKey: null,
        organization: null,
        project: null,
        webhookSecret: null,
        // Every other option the SDK reads, set, so that none is read from a polluted
        // Object.prototype through this literal: an inherited `fetchOptions` sent its headers with
        // every request, `defaultQuery` its parameters, and `provider` or `workloadIdentity`
        // refused every client.
        fetchOptions: undefined,
        defaultQuery: undefined,
        dangerouslyAllowBrowser: false,
        workloadIdentity: undefined,
        provider: undefined,
        defaultHeaders: { ...environmentHeaders(headers), ...headers },
        timeout,
        maxRetries: 0,
        logLevel,
        logger: { error: write("error"), warn: write("warn"), info: write("info"), debug: write("debug") },
        // A reply (a model's text, its tool calls' arguments) loses only the endpoint's credentials:
        // a routing header's value is a word the model may write. Error bodies lose every secret.
        fetch: splitRedactingFetch(
          secrets,
          patternsOf({ baseUrl: baseURL, apiKey, headers }, true),
          keepErrorBodies(sameOriginRedirects()),
        ),
      });
      clients.set(id, { client, tenant, sent });
      while (clients.size > maxClients) {
        const oldest = clients.keys().next().value as string;
        clients.delete(oldest);
      }
      return client;
    },
    listModels: (settings, lookup) => redacting(windows.listModels(settings, lookup), settings),
    servedWindow: (settings, lookup) => redacting(windows.servedWindow(settings, lookup), settings),
    contextLimitFor: (settings, operatorNumber, lookup) =>
      redacting(windows.contextLimitFor(settings, operatorNumber, lookup), settings),
    get size() {
      return clients.size;
    },
    forget(endpoint) {
      const baseURL = checkedBaseUrl(endpoint);
      const tenant = tenantOf(baseURL, apiKeyOf(endpoint));
      // Absent or null headers: the tenant is the base URL and key, whatever it was sent besides.
      const given = endpointField(endpoint, "headers");
      const sent = given === undefined || given === null ? undefined : sentText(checkedHeaders(given));
      let dropped = 0;
      for (const [id, entry] of clients) {
        if (entry.tenant === tenant && (sent === undefined || entry.sent === sent)) {
          clients.delete(id);
          dropped++;
        }
      }
      windows.forget(baseURL);
      return dropped;
    },
    reset() {
      clients.clear();
      windows.reset();
    },
  };
}

/**
 * The SDK's client, its requests reaching the caller's signal through one listener a signal
 * (`abortWith`) instead of one per request left on it for good.
 */
class PooledOpenAI extends OpenAI {
  override async fetchWithTimeout(
    url: Parameters<OpenAI["fetchWithTimeout"]>[0],
    init: RequestInit | undefined,
    ms: number,
    controller: AbortController,
  ): Promise<Response> {
    const signal = init?.signal;
    if (!signal) return super.fetchWithTimeout(url, init, ms, controller);
    const release = abortWith(signal, controller);
    let response: Response;
    try {
      response = await super.fetchWithTimeout(url, { ...init, signal: null }, ms, controller);
    } catch (error) {
      release();
      throw error;
    }
    // The listener stays while the body is read (an abort must still stop a stream), and goes with
    // the last request on the signal to settle.
    return releasedWhenRead(response, release);
  }
}

/**
 * Checked headers as one text, sorted by name: the headers part of a client's pool id. Only ever
 * held in the pool's own map, as the client itself holds them.
 */
function sentText(headers: Record<string, string>): string {
  return JSON.stringify(Object.entries(headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The lookup's answer, or its failure with the endpoint's credentials taken out. */
async function redacting<T>(lookup: Promise<T>, settings: WindowSettings): Promise<T> {
  try {
    return await lookup;
  } catch (error) {
    throw redactDeep(error, patternsOf(settings));
  }
}
