import { createHash } from "node:crypto";
import { CapabilitySnapshotError } from "./errors.js";
import { own, ownOptions } from "./own.js";
import { protoless } from "./protoless.js";

/**
 * What one endpoint (base URL and API key) turned out to take.
 *
 * Both flags start `true`
 * and are latched `false` by `negotiate` when the endpoint refuses them; the object is live, so a
 * request body rebuilt from it after a refusal is the lesser body.
 */
export interface EndpointCapabilities {
  /** Tool schemas may be sent strict; `false` after a strict-schema or grammar refusal. */
  strictSchemas: boolean;
  /** `stream_options: { include_usage: true }` may be sent; `false` once the endpoint refused it. */
  usageInStream: boolean;
}

/**
 * What one model on one endpoint turned out to take.
 *
 * Keyed by (endpoint, model name as that endpoint knows it), never by the model name alone: one key reaches every model a provider offers,
 * and the same name behind a proxy need not be the same weights.
 */
export interface ModelCapabilities {
  /** `reasoning_effort` values this model refused; `effortFor` climbs past them. */
  refusedEfforts: string[];
  /** `true` (the start): spell the ceiling `max_tokens`; `false`: `max_completion_tokens`. */
  legacyTokenLimit: boolean;
  /** The temperature is the caller's to pick; `false` once the model said only its default goes. */
  chosenTemperature: boolean;
  /** A trailing assistant message is continued (a prefill); latched only by a continuation. */
  assistantPrefill: boolean;
  /**
   * The server may repeat the prefill before the new text (llama.cpp b9749 does): a continuation
   * that begins with the whole answer so far has that repeat taken off. `false` once a continuation
   * from this model came back as a plain continuation (it neither repeated the answer so far nor
   * started it over), which shows the server does not: from then on such a repeat is the model's
   * own text. Latched only by a continuation (`continueTurn` in `@loopwright/loop`).
   */
  prefillEcho: boolean;
  /** `response_format` is honoured; `false` once the model refused the field. */
  structuredOutput: boolean;
  /** Top-level body fields this model refused and the caller said were droppable. */
  droppedFields: string[];
  /**
   * `tool_choice` is sent with the tools; `false` once the endpoint said no provider of this model
   * takes it (a step that asked for `"none"` then goes without tools).
   */
  toolChoice: boolean;
  /**
   * Tool-call ids go on the wire as the transcript has them (the start). `false` once the model
   * refused one that is not exactly nine ASCII letters and digits (Mistral's tokenizer and chat
   * templates), or one too long (Azure's 40): `buildBody` then sends each such id as the nine
   * characters `shortToolCallIds` derives from it.
   */
  anyToolCallIds: boolean;
  /**
   * A `system` message goes as it is (the start). `false` once the model's chat template refused
   * one (Gemma 2's "System role not supported", Mistral v0.1's "Only user and assistant roles are
   * supported"): `buildBody` then sends the system text at the head of the first user message.
   */
  systemRole: boolean;
  /**
   * A `user` message may follow a `tool` message (the start). `false` once the model refused that
   * order (Mistral's "Unexpected role 'user' after role 'tool'", its API and `mistral_common` behind
   * vLLM): `buildBody` then sends a short assistant message between the two.
   */
  userAfterTool: boolean;
  /**
   * An assistant message may carry several tool calls (the start). `false` once the model's chat
   * template refused one that does (Llama 3.1's "This model only supports single tool-calls at
   * once!"): `buildBody` then sends each such message as one assistant message per call, each
   * followed by that call's result.
   */
  parallelCalls: boolean;
}

/** The ladder `reasoning_effort` is climbed on, cheapest first: one rung per refusal, upward only. */
export const EFFORT_LADDER: readonly string[] = Object.freeze(["none", "minimal", "low", "medium", "high"]);

/** The version `exportCapabilities` writes and the only one `importCapabilities` reads. */
export const CAPABILITY_SNAPSHOT_VERSION = 1;

/**
 * Sets `record[key]` as its own property whatever the key: a model named `__proto__` set with `=`
 * would replace the record's prototype instead, and be missing from the snapshot's JSON.
 */
function setOwn<V>(record: Record<string, V>, key: string, value: V): void {
  Object.defineProperty(
    record,
    key,
    protoless({ value, enumerable: true, writable: true, configurable: true }),
  );
}

/** A capability snapshot: every latch of a store as plain JSON (see `exportCapabilities`). */
export interface CapabilitySnapshot {
  /** Always `CAPABILITY_SNAPSHOT_VERSION`. */
  version: number;
  /** One entry per endpoint the store has met. */
  endpoints: CapabilitySnapshotEndpoint[];
}

/** One endpoint in a snapshot. The API key is never written: `keyId` is a digest of it. */
export interface CapabilitySnapshotEndpoint {
  /**
   * The base URL in the store's one spelling per server (as `@loopwright/client` spells it: scheme
   * and host lower-cased, a default port and trailing slashes dropped), without credentials.
   */
  baseUrl: string;
  /** A SHA-256 prefix of the API key; `""` for no key (absent and empty are one key). */
  keyId: string;
  /** See `EndpointCapabilities.strictSchemas`. */
  strictSchemas: boolean;
  /** See `EndpointCapabilities.usageInStream`. */
  usageInStream: boolean;
  /** Model facts by the name the endpoint knows each model by. */
  models: Record<string, ModelCapabilities>;
}

/** A set of capability latches: what each endpoint and each model on it refused. */
export interface CapabilityStore {
  /**
   * The live capabilities of the endpoint at `baseUrl` reached with `apiKey` (absent = empty) and
   * sent `headers` (absent = none; names in any case): one tenant each.
   */
  capabilitiesFor(
    baseUrl: string,
    apiKey?: string,
    headers?: Readonly<Record<string, string>>,
  ): EndpointCapabilities;
  /**
   * The live capabilities `capabilitiesFor` hands out for this tenant (same arguments), if the store
   * holds them; `undefined` if it does not. Never creates an endpoint, never forgets one to make
   * room and never changes which is least recently used — for finding what to forget (the loop's
   * `runtime.forget` calibrates against this object) without pushing another tenant out. A store
   * shared between processes may answer, for a tenant it does not hold here, a detached object it
   * names as that tenant, so what other processes keep under that name can be forgotten too; it is
   * never stored. Optional, so a store written before it still fits; throws as `capabilitiesFor`.
   */
  peekCapabilities?(
    baseUrl: string,
    apiKey?: string,
    headers?: Readonly<Record<string, string>>,
  ): EndpointCapabilities | undefined;
  /** The live capabilities of `model` on the endpoint `supports` describes. */
  modelCapabilitiesFor(supports: EndpointCapabilities, model: string): ModelCapabilities;
  /** Every latch as a versioned JSON-safe snapshot. */
  exportCapabilities(): CapabilitySnapshot;
  /** Lays a snapshot over the store; throws `CapabilitySnapshotError` and changes nothing if bad. */
  importCapabilities(snapshot: unknown): void;
  /**
   * Forgets one tenant: the endpoint at `baseUrl` reached with `apiKey` and sent `headers` (as
   * `capabilitiesFor` was given them), and its models. Answers whether it was held. The object
   * handed out earlier keeps its values.
   */
  forget(baseUrl: string, apiKey?: string, headers?: Readonly<Record<string, string>>): boolean;
  /** How many endpoints the store holds. */
  readonly size: number;
  /** Forgets every endpoint and model (objects handed out earlier keep their values). */
  reset(): void;
}

/** How many endpoints a capability store keeps before it forgets the least recently used. */
export const DEFAULT_MAX_ENDPOINTS = 1024;

/** Options of `createCapabilityStore`. */
export interface CapabilityStoreOptions {
  /** Endpoints kept (least recently used forgotten first); default `DEFAULT_MAX_ENDPOINTS`. */
  maxEndpoints?: number | undefined;
}

// Model facts hang off the endpoint object itself, so `negotiate` and `modelCapabilitiesFor` need
// only the `supports` a caller holds, whichever store made it (or none).
/** Models kept per endpoint (least recently used forgotten first): a forgotten one starts again at the defaults. */
const MAX_MODELS_PER_ENDPOINT = 1024;

const modelsOf = new WeakMap<EndpointCapabilities, Map<string, ModelCapabilities>>();

function freshModel(): ModelCapabilities {
  return {
    refusedEfforts: [],
    legacyTokenLimit: true,
    chosenTemperature: true,
    assistantPrefill: true,
    prefillEcho: true,
    structuredOutput: true,
    droppedFields: [],
    toolChoice: true,
    anyToolCallIds: true,
    systemRole: true,
    userAfterTool: true,
    parallelCalls: true,
  };
}

function modelsFor(supports: EndpointCapabilities): Map<string, ModelCapabilities> {
  let models = modelsOf.get(supports);
  if (!models) {
    models = new Map();
    modelsOf.set(supports, models);
  }
  return models;
}

/**
 * The live capabilities of one model on the endpoint `supports` describes.
 *
 * Made at the defaults
 * (everything allowed, `legacyTokenLimit: true`) the first time. Works on any `supports` object,
 * including one a caller built by hand. At most 1,024 models are kept per endpoint, the least
 * recently used forgotten first (it starts again at the defaults).
 */
export function modelCapabilitiesFor(supports: EndpointCapabilities, model: string): ModelCapabilities {
  if (typeof model !== "string" || model === "") {
    throw new TypeError("modelCapabilitiesFor: model must be the non-empty name the endpoint knows it by.");
  }
  const models = modelsFor(supports);
  let caps = models.get(model);
  if (caps) {
    // Most recently used last, so the bound below forgets the least recently used.
    models.delete(model);
  } else {
    // Each model name a request names gets a record: bounded, as the endpoints are, so a host that
    // passes names it was given (a gateway) cannot grow the store without end.
    if (models.size >= MAX_MODELS_PER_ENDPOINT) {
      const oldest = models.keys().next().value;
      if (oldest !== undefined) models.delete(oldest);
    }
    caps = freshModel();
  }
  models.set(model, caps);
  return caps;
}

/**
 * The base URL in one spelling per server, without anything that may be a credential — a user
 * name, a password, the values of its query — and those taken out (`""` for none). Only that
 * spelling is ever stored or exported, also for a base URL the URL parser refuses (no scheme, a bad
 * port, a space, a broken bracket: see `looseSpellingOf`); what was taken out tells endpoints apart
 * through the key digest.
 *
 * The spelling is `@loopwright/client`'s (its pool, `forget` and route latches key by it, and a
 * parity property holds the two together): around spaces and trailing slashes gone, and for an
 * http(s) URL the scheme and host lower-cased (the host as the URL standard writes it), a default
 * port dropped and the path percent-encoded as the client sends it. So `HTTP://Host:80/v1/` and
 * `http://host/v1` are one endpoint; a path's case, another port or scheme are another.
 */
function spellingOf(baseUrl: string): { url: string; hidden: string } {
  const trimmed = baseUrl.trim().replace(/\/+$/, "");
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    // No scheme, a bad port, a space in the host, a broken IPv6 bracket: still no credential kept.
    return looseSpellingOf(trimmed);
  }
  // `user:sk-…@host/v1` and `localhost:8080/v1?key=…` parse, as a scheme and an opaque path (no
  // host) that the URL parser finds no user name or password in: read them as text too.
  if (url.host === "" && !url.pathname.startsWith("/")) return looseSpellingOf(trimmed);
  const hidden =
    url.username || url.password || url.search
      ? JSON.stringify([url.username, url.password, url.search])
      : "";
  const web = url.protocol === "http:" || url.protocol === "https:";
  if (!web && !hidden) return { url: trimmed, hidden };
  const query = queryNames(url.searchParams);
  if (!web) {
    // No server the client reaches: only the credentials are taken out.
    url.username = "";
    url.password = "";
    url.search = query;
    return { url: url.toString().replace(/\/+$/, ""), hidden };
  }
  return {
    url: `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}${query}${url.hash}`,
    hidden,
  };
}

/** The query's names, values dropped: `?api-key=&api-version=` (`""` for no query). */
function queryNames(params: URLSearchParams): string {
  const names = [...params.keys()];
  return names.length > 0 ? `?${names.map((name) => `${encodeURIComponent(name)}=`).join("&")}` : "";
}

/**
 * `spellingOf` for a base URL the URL parser refuses or reads as an opaque path: the text as given,
 * without what may be a credential — the query's values (from the first `?` before any `#`) and a
 * `userinfo@` before the host (after `scheme://`, or at the start where there is no scheme) — and
 * those taken out. Never normalised otherwise: no client reaches such a URL, but a host that brings
 * its own client may still name the tenant by it, and the store must not keep its key.
 */
function looseSpellingOf(text: string): { url: string; hidden: string } {
  const hashAt = text.indexOf("#");
  const fragment = hashAt < 0 ? "" : text.slice(hashAt);
  const beforeHash = hashAt < 0 ? text : text.slice(0, hashAt);
  const queryAt = beforeHash.indexOf("?");
  const rawQuery = queryAt < 0 ? "" : beforeHash.slice(queryAt + 1);
  const rest = queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt);
  // The host starts after `scheme:` and its slashes; with no slash after the colon (`user:pw@host`,
  // `localhost:8080`) the colon is no scheme's, and the host starts at the beginning.
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:[/\\]+/.exec(rest)?.[0] ?? "";
  let afterScheme = rest.slice(scheme.length);
  // No scheme read, yet an `@`: a scheme mistyped (`https//user:sk-…@host`, `ht!tp://…`) puts the
  // host after a slash. The user info is the segment before the first `@`, from the slash before it.
  const firstAt = scheme === "" ? afterScheme.indexOf("@") : -1;
  const segmentAt = firstAt < 0 ? -1 : afterScheme.slice(0, firstAt).search(/[^/\\]*$/);
  const lead = segmentAt > 0 && segmentAt < firstAt ? afterScheme.slice(0, segmentAt) : "";
  afterScheme = afterScheme.slice(lead.length);
  const slashAt = afterScheme.search(/[/\\]/);
  const authority = slashAt < 0 ? afterScheme : afterScheme.slice(0, slashAt);
  const at = authority.lastIndexOf("@");
  const userinfo = at < 0 ? "" : authority.slice(0, at);
  const colon = userinfo.indexOf(":");
  const username = colon < 0 ? userinfo : userinfo.slice(0, colon);
  const password = colon < 0 ? "" : userinfo.slice(colon + 1);
  const search = rawQuery === "" ? "" : `?${rawQuery}`;
  // The same three pieces, in the same form, as a parsed URL's (`["", "", "?key=…"]`).
  const hidden = username || password || search ? JSON.stringify([username, password, search]) : "";
  const path = `${scheme}${lead}${afterScheme.slice(at + 1)}`.replace(/\/+$/, "");
  return { url: `${path}${queryNames(new URLSearchParams(rawQuery))}${fragment}`, hidden };
}

/** `@loopwright/client`'s `NO_KEY`: what a keyless endpoint is sent, so it reads as no key here too. */
const NO_KEY = "no-key";

/** The key as `@loopwright/client` sends it: without the whitespace around it (a key read from a file). */
function sentKey(apiKey: string | undefined): string {
  const key = apiKey?.trim() ?? "";
  // Absent, empty, blank and NO_KEY are one key: a keyless server is one entry however it is spelled.
  return key === NO_KEY ? "" : key;
}

function keyIdOf(text: string): string {
  if (text === "") return "";
  return createHash("sha256").update(text).digest("hex").slice(0, 32);
}

/**
 * The headers an endpoint is sent, as one text: names lower-cased (HTTP reads them so), sorted;
 * `""` for none (absent, `null` or `{}`). Throws `TypeError` for headers that are not an object of
 * strings, never quoting a value (one may be a key).
 */
function headersText(caller: string, headers: unknown): string {
  if (headers === undefined || headers === null) return "";
  const wrong = () =>
    new TypeError(
      `${caller}: headers must be an object of header names to strings (the endpoint's headers), or absent.`,
    );
  if (typeof headers !== "object" || Array.isArray(headers)) throw wrong();
  const { get, entries } = headers as { get?: unknown; entries?: unknown };
  if (typeof get === "function" && typeof entries === "function") {
    // A `Headers` or a `Map` has no own fields: read as an object, two tenants told apart only by
    // their headers would share one set of latches.
    throw new TypeError(
      `${caller}: headers must be a plain object of header names to strings, not a Headers or a Map ` +
        "(pass Object.fromEntries(headers)).",
    );
  }
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== "string") throw wrong();
    pairs.push([name.toLowerCase(), value]);
  }
  if (pairs.length === 0) return "";
  pairs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(pairs);
}

interface Entry {
  baseUrl: string;
  keyId: string;
  supports: EndpointCapabilities;
}

// Snapshot validation: every field checked before anything is written, so a bad snapshot changes nothing.
function malformed(path: string, what: string): CapabilitySnapshotError {
  return new CapabilitySnapshotError(
    "malformed",
    path,
    `Capability snapshot is malformed at ${path}: ${what}. Pass the value exportCapabilities() returned, unchanged.`,
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// A snapshot's own fields only: JSON's objects inherit from Object.prototype, and a polluted
// `Object.prototype.toolChoice = false` latched tool_choice off for every model of a snapshot
// written before that latch existed.
function readBool(record: Record<string, unknown>, key: string, path: string): boolean {
  const value = own(record, key);
  if (typeof value !== "boolean") throw malformed(`${path}.${key}`, "expected true or false");
  return value;
}

function readStrings(record: Record<string, unknown>, key: string, path: string): string[] {
  const value = own(record, key);
  if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) {
    throw malformed(`${path}.${key}`, "expected an array of strings");
  }
  return [...value];
}

function readModel(value: unknown, path: string): ModelCapabilities {
  if (!isRecord(value)) throw malformed(path, "expected an object");
  return {
    refusedEfforts: readStrings(value, "refusedEfforts", path),
    legacyTokenLimit: readBool(value, "legacyTokenLimit", path),
    chosenTemperature: readBool(value, "chosenTemperature", path),
    assistantPrefill: readBool(value, "assistantPrefill", path),
    structuredOutput: readBool(value, "structuredOutput", path),
    droppedFields: readStrings(value, "droppedFields", path),
    // Absent from a snapshot written before this latch existed: nothing was refused then.
    toolChoice: own(value, "toolChoice") === undefined ? true : readBool(value, "toolChoice", path),
    anyToolCallIds:
      own(value, "anyToolCallIds") === undefined ? true : readBool(value, "anyToolCallIds", path),
    prefillEcho: own(value, "prefillEcho") === undefined ? true : readBool(value, "prefillEcho", path),
    systemRole: own(value, "systemRole") === undefined ? true : readBool(value, "systemRole", path),
    userAfterTool: own(value, "userAfterTool") === undefined ? true : readBool(value, "userAfterTool", path),
    parallelCalls: own(value, "parallelCalls") === undefined ? true : readBool(value, "parallelCalls", path),
  };
}

/** Validates a snapshot completely; throws `CapabilitySnapshotError` naming the first problem. */
export function parseCapabilitySnapshot(snapshot: unknown): CapabilitySnapshot {
  let value = snapshot;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch (cause) {
      throw new CapabilitySnapshotError(
        "malformed",
        "$",
        "Capability snapshot is not valid JSON. Pass the value exportCapabilities() returned, or its JSON text.",
        { cause },
      );
    }
  }
  if (!isRecord(value)) throw malformed("$", "expected an object");
  const version = own(value, "version");
  if (version !== CAPABILITY_SNAPSHOT_VERSION) {
    throw new CapabilitySnapshotError(
      "version",
      "$.version",
      `Capability snapshot version ${JSON.stringify(version)} is not ${CAPABILITY_SNAPSHOT_VERSION}, ` +
        "the only version this package reads. Discard it; the latches are learned again on first use.",
    );
  }
  const listed = own(value, "endpoints");
  if (!Array.isArray(listed)) throw malformed("$.endpoints", "expected an array");
  const endpoints = listed.map((raw: unknown, i): CapabilitySnapshotEndpoint => {
    const path = `$.endpoints[${i}]`;
    if (!isRecord(raw)) throw malformed(path, "expected an object");
    const baseUrl = own(raw, "baseUrl");
    if (typeof baseUrl !== "string" || baseUrl.trim() === "") {
      throw malformed(`${path}.baseUrl`, "expected a non-empty string");
    }
    const keyId = own(raw, "keyId");
    if (typeof keyId !== "string" || !/^([0-9a-f]{32})?$/.test(keyId)) {
      throw malformed(`${path}.keyId`, "expected a key digest or an empty string");
    }
    const held = own(raw, "models");
    if (!isRecord(held)) throw malformed(`${path}.models`, "expected an object");
    const models: Record<string, ModelCapabilities> = {};
    for (const [name, model] of Object.entries(held)) {
      // modelCapabilitiesFor refuses an empty name: caught here, before the first write.
      if (name === "") throw malformed(`${path}.models`, "a model name must be non-empty");
      setOwn(models, name, readModel(model, `${path}.models[${JSON.stringify(name)}]`));
    }
    return {
      baseUrl: spellingOf(baseUrl).url,
      keyId,
      strictSchemas: readBool(raw, "strictSchemas", path),
      usageInStream: readBool(raw, "usageInStream", path),
      models,
    };
  });
  return { version: CAPABILITY_SNAPSHOT_VERSION, endpoints };
}

/**
 * Makes an independent set of capability latches.
 *
 * A host whose tenants must not share what one
 * endpoint refused makes one per tenant. The top-level functions use a default store.
 */
export function createCapabilityStore(given: CapabilityStoreOptions = {}): CapabilityStore {
  // A null options object is no options; its own fields only, never a polluted Object.prototype's.
  const options = ownOptions<CapabilityStoreOptions>(given, ["maxEndpoints"]);
  const maxEndpoints = options.maxEndpoints ?? DEFAULT_MAX_ENDPOINTS;
  if (!Number.isInteger(maxEndpoints) || maxEndpoints < 1) {
    throw new RangeError(
      `createCapabilityStore: maxEndpoints must be a whole number from 1, got ${String(maxEndpoints)}.`,
    );
  }
  // Insertion order is recency: a lookup moves its entry to the end; the first is forgotten first.
  const entries = new Map<string, Entry>();

  const entryFor = (baseUrl: string, keyId: string): Entry => {
    const id = `${baseUrl}\n${keyId}`;
    let entry = entries.get(id);
    if (entry) entries.delete(id);
    else entry = { baseUrl, keyId, supports: { strictSchemas: true, usageInStream: true } };
    entries.set(id, entry);
    while (entries.size > maxEndpoints) entries.delete(entries.keys().next().value as string);
    return entry;
  };

  const idOf = (
    caller: string,
    baseUrl: string,
    apiKey: string | undefined,
    headers: Readonly<Record<string, string>> | undefined,
  ): { url: string; keyId: string } => {
    if (apiKey != null && typeof apiKey !== "string") {
      throw new TypeError(`${caller}: apiKey must be the endpoint's key as a string, or absent.`);
    }
    const sent = headersText(caller, headers);
    const { url, hidden } = spellingOf(baseUrl);
    const key = sentKey(apiKey);
    // Headers may carry the credential (Azure's api-key, x-api-key) or pick the backend: they are
    // part of which tenant this is, as the key is, and only their digest is kept.
    if (sent) return { url, keyId: keyIdOf(`${key}\n${hidden}\n${sent}`) };
    return { url, keyId: hidden ? keyIdOf(`${key}\n${hidden}`) : keyIdOf(key) };
  };

  return {
    capabilitiesFor(baseUrl, apiKey, headers) {
      if (typeof baseUrl !== "string" || baseUrl.trim() === "") {
        throw new TypeError("capabilitiesFor: baseUrl must be the endpoint's non-empty base URL.");
      }
      const { url, keyId } = idOf("capabilitiesFor", baseUrl, apiKey, headers);
      return entryFor(url, keyId).supports;
    },
    peekCapabilities(baseUrl, apiKey, headers) {
      if (typeof baseUrl !== "string" || baseUrl.trim() === "") {
        throw new TypeError("peekCapabilities: baseUrl must be the endpoint's non-empty base URL.");
      }
      const { url, keyId } = idOf("peekCapabilities", baseUrl, apiKey, headers);
      return entries.get(`${url}\n${keyId}`)?.supports;
    },
    forget(baseUrl, apiKey, headers) {
      if (typeof baseUrl !== "string") return false;
      const { url, keyId } = idOf("forget", baseUrl, apiKey, headers);
      return entries.delete(`${url}\n${keyId}`);
    },
    get size() {
      return entries.size;
    },
    modelCapabilitiesFor,
    exportCapabilities() {
      const endpoints = [...entries.values()].map(
        ({ baseUrl, keyId, supports }): CapabilitySnapshotEndpoint => {
          const models: Record<string, ModelCapabilities> = {};
          for (const [name, caps] of modelsOf.get(supports) ?? []) {
            setOwn(models, name, {
              ...caps,
              refusedEfforts: [...caps.refusedEfforts],
              droppedFields: [...caps.droppedFields],
            });
          }
          return {
            baseUrl,
            keyId,
            strictSchemas: supports.strictSchemas,
            usageInStream: supports.usageInStream,
            models,
          };
        },
      );
      return { version: CAPABILITY_SNAPSHOT_VERSION, endpoints };
    },
    importCapabilities(snapshot) {
      const parsed = parseCapabilitySnapshot(snapshot);
      // Validated whole above; only now is anything written.
      for (const endpoint of parsed.endpoints) {
        const { supports } = entryFor(endpoint.baseUrl, endpoint.keyId);
        supports.strictSchemas = endpoint.strictSchemas;
        supports.usageInStream = endpoint.usageInStream;
        for (const [name, caps] of Object.entries(endpoint.models)) {
          Object.assign(modelCapabilitiesFor(supports, name), caps);
        }
      }
    },
    reset() {
      entries.clear();
    },
  };
}

/**
 * The `reasoning_effort` value to send a model for the configured setting.
 *
 * `""` (send none)
 * for an absent setting, for `"off"`, and for a model that takes no effort at all; otherwise the
 * cheapest rung at or above `asked` this model has not refused. Only climbs, and only from a value
 * on `EFFORT_LADDER`: any other value is sent as asked. Throws `TypeError` for a `model` that is
 * not the store's object or an `asked` that is not a string.
 */
export function effortFor(model: ModelCapabilities | undefined, asked: string | undefined): string {
  if (
    model !== undefined &&
    !(
      typeof model === "object" &&
      model !== null &&
      Array.isArray(model.droppedFields) &&
      Array.isArray(model.refusedEfforts)
    )
  ) {
    throw new TypeError(
      "effortFor: model must be the object modelCapabilitiesFor(supports, model) returned, or undefined.",
    );
  }
  if (asked != null && typeof asked !== "string") {
    throw new TypeError(
      `effortFor: asked must be a reasoning_effort string (or absent); got ${typeof asked}.`,
    );
  }
  if (!asked || asked === "off") return "";
  if (model?.droppedFields.includes("reasoning_effort")) return "";
  const start = EFFORT_LADDER.indexOf(asked);
  if (start < 0 || !model) return asked;
  for (const rung of EFFORT_LADDER.slice(start)) if (!model.refusedEfforts.includes(rung)) return rung;
  return asked;
}
