import { createHash } from "node:crypto";
import OpenAI from "openai";
import { checkedBaseUrl, type Endpoint, NO_KEY, timeoutMs, type WindowSettings } from "./endpoint.js";
import { keepErrorBodies } from "./error-bodies.js";
import { EndpointConfigError } from "./errors.js";
import {
  createWindowDiscovery,
  type LookupOptions,
  type ModelEntry,
  type WindowDiscoveryOptions,
} from "./window.js";

/**
 * The longest timer Node accepts: what "no timeout" means for the SDK.
 *
 * About 24.8 days; the SDK's own default would otherwise cut a slow local model off at ten minutes.
 */
export const NO_TIMEOUT_MS = 2_147_483_647;

/** Options of `createClientPool`. */
export type ClientPoolOptions = WindowDiscoveryOptions;

/** A pool of `openai` clients, one per endpoint, and the window lookups with their caches. */
export interface ClientPool {
  /** The pooled client for this endpoint (base URL, key, headers, timeout); made on first use. */
  getClient(endpoint: Endpoint): OpenAI;
  /** The endpoint's `GET /models` entries. */
  listModels(settings: WindowSettings, options?: LookupOptions): Promise<ModelEntry[]>;
  /** The window a local server says it serves (llama.cpp `/props`, LM Studio `/api/v0/models`). */
  servedWindow(settings: WindowSettings, options?: LookupOptions): Promise<number | undefined>;
  /** The context window to size requests against; `0` when nothing says. */
  contextLimitFor(
    settings: WindowSettings,
    operatorNumber?: number,
    options?: LookupOptions,
  ): Promise<number>;
  /** How many clients are pooled. */
  readonly size: number;
  /** Drops every pooled client and every window-route latch. */
  reset(): void;
}

function checkedHeaders(headers: unknown): Record<string, string> {
  if (headers === undefined || headers === null) return {};
  if (typeof headers !== "object" || Array.isArray(headers)) {
    throw new EndpointConfigError(
      "headers",
      "The endpoint's headers must be an object of header names to strings.",
    );
  }
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== "string") {
      throw new EndpointConfigError(
        "headers",
        `The endpoint's header ${JSON.stringify(name)} must be a string.`,
      );
    }
    out[name.toLowerCase()] = value;
  }
  return out;
}

/**
 * Makes an independent client pool with its own window-lookup caches.
 *
 * The top-level functions use a
 * default one; a host whose tenants must not share clients makes one each.
 */
export function createClientPool(options: ClientPoolOptions = {}): ClientPool {
  const clients = new Map<string, OpenAI>();
  const windows = createWindowDiscovery(options);
  return {
    getClient(endpoint) {
      const baseURL = checkedBaseUrl(endpoint);
      const apiKey = endpoint.apiKey?.trim() ? endpoint.apiKey : NO_KEY;
      const headers = checkedHeaders(endpoint.headers);
      const timeout = timeoutMs(endpoint) ?? NO_TIMEOUT_MS;
      // The pool key holds a digest of the key, never the key itself.
      const keyDigest = createHash("sha256").update(apiKey).digest("hex");
      const id = JSON.stringify([baseURL, keyDigest, Object.entries(headers).sort(), timeout]);
      let client = clients.get(id);
      if (!client) {
        client = new OpenAI({
          baseURL,
          apiKey,
          defaultHeaders: headers,
          timeout,
          maxRetries: 0,
          fetch: keepErrorBodies(),
        });
        clients.set(id, client);
      }
      return client;
    },
    listModels: windows.listModels,
    servedWindow: windows.servedWindow,
    contextLimitFor: windows.contextLimitFor,
    get size() {
      return clients.size;
    },
    reset() {
      clients.clear();
      windows.reset();
    },
  };
}
