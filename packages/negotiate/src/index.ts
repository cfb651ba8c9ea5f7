import { type CapabilityStore, createCapabilityStore, type EndpointCapabilities } from "./capabilities.js";

export type {
  CapabilitySnapshot,
  CapabilitySnapshotEndpoint,
  CapabilityStore,
  CapabilityStoreOptions,
  EndpointCapabilities,
  ModelCapabilities,
} from "./capabilities.js";
export {
  CAPABILITY_SNAPSHOT_VERSION,
  createCapabilityStore,
  DEFAULT_MAX_ENDPOINTS,
  EFFORT_LADDER,
  effortFor,
  modelCapabilitiesFor,
} from "./capabilities.js";
export type { CapabilitySnapshotErrorCode, ContextOverflowOptions } from "./errors.js";
export { CapabilitySnapshotError, ContextOverflow } from "./errors.js";
export type { NegotiateOptions, Produced, Send, Sent } from "./negotiate.js";
export { negotiate } from "./negotiate.js";
export type { Refusal, RefusedField } from "./refusal.js";
export { readRefusal } from "./refusal.js";
export type {
  AnyToolDefinition,
  BuildBodyOptions,
  CustomToolDefinition,
  EffortRung,
  KeptMessage,
  ModelParams,
  OwnedBodyField,
  RequestBody,
  ToolChoice,
  ToolDefinition,
  ToolOrder,
} from "./request-body.js";
export {
  buildBody,
  checkExtraBody,
  isToolChoice,
  OWNED_BODY_FIELDS,
  ownedBodyField,
} from "./request-body.js";
export type { BackoffOptions } from "./retry.js";
export { backoffMs, isModelLoading, isOverflow, isTransient, retryAfterMs } from "./retry.js";
export { TOOL_RESULTS_READ, withTemplateRoles } from "./template-roles.js";
export { isShortToolCallId, shortToolCallIds } from "./tool-call-ids.js";

/** The capability store the top-level functions use; `createCapabilityStore()` makes another. */
export const defaultCapabilityStore: CapabilityStore = createCapabilityStore();

/**
 * The live capabilities of the endpoint at `baseUrl` reached with `apiKey` and sent `headers`, in
 * the default store.
 *
 * The key and the headers are part of what an endpoint is (a router may send two keys to two
 * backends; Azure's `api-key` header is the key): absent, empty, blank and `NO_KEY` are one key, and
 * absent, `null` and `{}` are no headers, whose names are read in any case. The base URL is read in
 * `@loopwright/client`'s one spelling per server (`HTTP://Host:80/v1/` is `http://host/v1`). Starts
 * with everything allowed. Only digests of the key and headers are kept. Throws `TypeError` for an
 * empty base URL, a key that is not a string, or headers that are not an object of strings.
 */
export function capabilitiesFor(
  baseUrl: string,
  apiKey?: string,
  headers?: Readonly<Record<string, string>>,
): EndpointCapabilities {
  return defaultCapabilityStore.capabilitiesFor(baseUrl, apiKey, headers);
}

/**
 * Every latch in the default store as a versioned, JSON-safe snapshot.
 *
 * API keys appear only as digests. A consumer stores it so a restart need not learn the refusals
 * again.
 */
export function exportCapabilities(): ReturnType<CapabilityStore["exportCapabilities"]> {
  return defaultCapabilityStore.exportCapabilities();
}

/**
 * Lays a snapshot from `exportCapabilities` (the object or its JSON text) over the default store.
 * Throws `CapabilitySnapshotError` (`code` `"version"` or `"malformed"`) and changes nothing when
 * the snapshot is of another version or not a snapshot's shape.
 */
export function importCapabilities(snapshot: unknown): void {
  defaultCapabilityStore.importCapabilities(snapshot);
}

/**
 * Forgets one tenant's latches in the default store: the endpoint at `baseUrl` (in any spelling of
 * that server) reached with `apiKey` and sent `headers`, as `capabilitiesFor` was given them, and
 * its models. Answers whether it was held.
 */
export function forgetCapabilities(
  baseUrl: string,
  apiKey?: string,
  headers?: Readonly<Record<string, string>>,
): boolean {
  return defaultCapabilityStore.forget(baseUrl, apiKey, headers);
}

/** Forgets every latch in the default store. */
export function resetCapabilities(): void {
  defaultCapabilityStore.reset();
}
