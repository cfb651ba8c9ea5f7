// The sibling types that appear in this package's signatures, so a host installed with only
// @loopwright/redis can name them. scripts/check-reexports.mjs holds this.
export type { RouteLatchStore } from "@loopwright/client";
export type { EventBus, EventStream, EventsSettings, SequencedEvent, SignalLike } from "@loopwright/events";
export type { Calibration } from "@loopwright/ledger";
export type { CapabilityStore } from "@loopwright/negotiate";
export type { RedisBusOptions, RedisEventBus, RedisWatchOptions } from "./bus.js";
export { createRedisBus } from "./bus.js";
export type { RedisCalibration, RedisCalibrationOptions } from "./calibration.js";
export { createRedisCalibration } from "./calibration.js";
export type { RedisCapabilityStore, RedisCapabilityStoreOptions } from "./capabilities.js";
export { createRedisCapabilityStore } from "./capabilities.js";
export type { RedisOptions } from "./connection.js";
export type { RedisStoreErrorCode } from "./errors.js";
export { RedisStoreError } from "./errors.js";
export type { EventId } from "./event-id.js";
export { readEventId } from "./event-id.js";
export type { RedisRouteLatches, RedisRouteLatchesOptions } from "./route-latches.js";
export { createRedisRouteLatches } from "./route-latches.js";
export type { RedisStores, RedisStoresOptions } from "./stores.js";
export { createRedisStores } from "./stores.js";
export type { RedisEventStream } from "./stream-watcher.js";
export { DEFAULT_MISSING_GRACE_MS } from "./stream-watcher.js";
export type { TenantKeyOptions } from "./tenant-keys.js";
