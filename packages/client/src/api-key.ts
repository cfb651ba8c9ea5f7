import { endpointField, NO_KEY, withoutTrailingSlashes } from "./endpoint.js";

/** The parts of an endpoint `resolveApiKey` reads. */
export interface KeyedEndpoint {
  baseUrl?: string | undefined;
  apiKey?: string | undefined;
}

function comparable(baseUrl: string): string {
  const trimmed = withoutTrailingSlashes(baseUrl.trim());
  try {
    const url = new URL(trimmed);
    // URL lower-cases scheme and host and drops a default port; keep everything else exact.
    const path = withoutTrailingSlashes(url.pathname);
    return `${url.protocol}//${url.username}:${url.password}@${url.host}${path}${url.search}${url.hash}`;
  } catch {
    return trimmed;
  }
}

/**
 * A base URL as given: `""` when absent or blank, a string's text, a `URL` object's `href` (the SDK
 * takes one as readily as a string), `undefined` for anything else that is there.
 */
function urlText(value: unknown): string | undefined {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value.trim();
  if (value instanceof URL) return value.href;
  return undefined;
}

/**
 * The key an endpoint should be sent, by the conservative rule.
 *
 * Its own key wins; an endpoint that
 * names a base URL of its own, different from the settings it inherits from, gets `NO_KEY` — never
 * the inherited (operator's) key; anything else inherits the settings' key (or `NO_KEY`).
 *
 * Reads only the two base URLs and two keys given. Never reads `$OPENAI_API_KEY` or any other
 * environment. Base URLs are compared after normalising case of scheme and host, a default port
 * and trailing slashes; any other difference (path, port, user info, query, a look-alike host) is
 * a different endpoint. A `URL` object is read by its `href`; a base URL of any other type is
 * another endpoint (`NO_KEY`), never none.
 */
export function resolveApiKey(endpoint: KeyedEndpoint, settings: KeyedEndpoint): string {
  // Fields each holds itself (or its class): never one a polluted Object.prototype holds.
  const ownKey = endpointField(endpoint, "apiKey");
  const own = typeof ownKey === "string" ? ownKey.trim() : "";
  if (own) return ownKey as string;
  const ownUrl = urlText(endpointField(endpoint, "baseUrl"));
  // A base URL that is there but cannot be read names some server: not the operator's to assume.
  if (ownUrl === undefined) return NO_KEY;
  const inheritedUrl = urlText(endpointField(settings, "baseUrl")) ?? "";
  if (ownUrl && (!inheritedUrl || comparable(ownUrl) !== comparable(inheritedUrl))) return NO_KEY;
  const settingsKey = endpointField(settings, "apiKey");
  const inherited = typeof settingsKey === "string" ? settingsKey.trim() : "";
  return inherited ? (settingsKey as string) : NO_KEY;
}
