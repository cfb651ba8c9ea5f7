import { busLimits, openBus, type RedisBusOptions, type RedisEventBus } from "./bus.js";
import { openCalibration, type RedisCalibration } from "./calibration.js";
import { openCapabilityStore, type RedisCapabilityStore, syncMsOption } from "./capabilities.js";
import { resolveOptions } from "./connection.js";
import { openRouteLatches, type RedisRouteLatches } from "./route-latches.js";
import { retainTenantOption, type TenantKeyOptions } from "./tenant-keys.js";

/** Options for {@link createRedisStores}: one Redis for all three stores, and the bus's limits. */
export interface RedisStoresOptions extends RedisBusOptions, TenantKeyOptions {
  /** See `RedisCapabilityStoreOptions.syncMs`. */
  syncMs?: number | undefined;
}

/** The Redis-backed stores a runtime reads, made together so calibration can name endpoints. */
export interface RedisStores {
  /** Capability latches shared by every instance. */
  readonly capabilities: RedisCapabilityStore;
  /** Characters-per-token readings shared by every instance. */
  readonly calibration: RedisCalibration;
  /** Run events on Redis Streams, watchable from any instance. */
  readonly bus: RedisEventBus;
  /** Window-route latches for `createClientPool({ routeLatches })`, shared by every instance. */
  readonly routeLatches: RedisRouteLatches;
  /**
   * Resolves once the capability store, calibration and the route latches are each connected and
   * have written to Redis what they hold (see their `writtenBack`): after Redis restarted empty,
   * the moment a host started now reads what the running ones hold. One bound for the three:
   * `timeoutMs`, default four times `connectTimeoutMs` (20 s); past it, rejects with the first
   * store's `RedisStoreError` (`connect`). The bus's events have `bus.flushed()`.
   */
  writtenBack(timeoutMs?: number): Promise<void>;
  /** Closes all four (the bus first writes what is pending, if Redis is there). */
  close(): Promise<void>;
}

/**
 * Connects the capability store, the calibration store, the bus and the route latches to one Redis.
 *
 * Throws `RedisStoreError` for bad options or an unreachable server, closing whatever it had opened.
 */
export async function createRedisStores(options: RedisStoresOptions): Promise<RedisStores> {
  // Every option checked here first, before any store connects; and each store is opened as
  // `createRedisStores`, so any refusal (or connect failure) names the function the host called,
  // and the option as the host wrote it, not a factory it never called.
  const where = "createRedisStores";
  resolveOptions(options, where);
  retainTenantOption(options.retainTenantMs, where);
  syncMsOption(options.syncMs, where);
  busLimits(options, where);
  const opened: { close(): Promise<void> }[] = [];
  const track = <T extends { close(): Promise<void> }>(store: T): T => {
    opened.push(store);
    return store;
  };
  try {
    const capabilities = track(await openCapabilityStore(options, where));
    const calibration = track(
      await openCalibration({ ...options, endpointIdOf: capabilities.endpointIdOf }, where),
    );
    const routeLatches = track(await openRouteLatches(options, where));
    const bus = track(await openBus(options, where));
    return {
      capabilities,
      calibration,
      bus,
      routeLatches,
      async writtenBack(timeoutMs) {
        await Promise.all([
          capabilities.writtenBack(timeoutMs),
          calibration.writtenBack(timeoutMs),
          routeLatches.writtenBack(timeoutMs),
        ]);
      },
      async close() {
        await bus.close();
        await Promise.all([capabilities.close(), calibration.close(), routeLatches.close()]);
      },
    };
  } catch (error) {
    await Promise.all(opened.map((store) => store.close()));
    throw error;
  }
}
