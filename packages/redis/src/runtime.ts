import { type ClientPool, createClientPool } from "@loopwright/client";
import { type Runtime, runLoop } from "@loopwright/loop";
import { createRedisBus, type RedisBusOptions, type RedisEventBus } from "./bus.js";
import { createRedisCalibration, type RedisCalibration } from "./calibration.js";
import { createRedisCapabilityStore, type RedisCapabilityStore } from "./capabilities.js";

/** Options for {@link createRedisStores}: one Redis for all three stores, and the bus's limits. */
export interface RedisStoresOptions extends RedisBusOptions {
  /** See `RedisCapabilityStoreOptions.syncMs`. */
  syncMs?: number;
}

/** The three Redis-backed stores a runtime reads, made together so calibration can name endpoints. */
export interface RedisStores {
  /** Capability latches shared by every instance. */
  readonly capabilities: RedisCapabilityStore;
  /** Characters-per-token readings shared by every instance. */
  readonly calibration: RedisCalibration;
  /** Run events on Redis Streams, watchable from any instance. */
  readonly bus: RedisEventBus;
  /** Closes all three (the bus first writes what is pending, if Redis is there). */
  close(): Promise<void>;
}

/**
 * Connects the capability store, the calibration store and the bus to one Redis.
 *
 * Throws `RedisStoreError` for bad options or an unreachable server, closing whatever it had opened.
 */
export async function createRedisStores(options: RedisStoresOptions): Promise<RedisStores> {
  const capabilities = await createRedisCapabilityStore(options);
  let calibration: RedisCalibration | undefined;
  try {
    calibration = await createRedisCalibration({ ...options, endpointIdOf: capabilities.endpointIdOf });
    const bus = await createRedisBus(options);
    const made = calibration;
    return {
      capabilities,
      calibration: made,
      bus,
      async close() {
        await bus.close();
        await Promise.all([capabilities.close(), made.close()]);
      },
    };
  } catch (error) {
    await capabilities.close();
    await calibration?.close();
    throw error;
  }
}

/** A loop `Runtime` on Redis-backed stores, with a way to close their connections. */
export interface RedisRuntime extends Runtime {
  readonly capabilities: RedisCapabilityStore;
  readonly calibration: RedisCalibration;
  readonly bus: RedisEventBus;
  /** Closes the stores' connections (the client pool is left as it is). */
  close(): Promise<void>;
}

/**
 * Makes a loop `Runtime` (the shape `createRuntime()` returns) whose latches, calibration and bus live in Redis.
 *
 * The capability latches, calibration and bus are the Redis stores; the client pool (and its window-route latches) stays
 * in this process, `clients` or a fresh pool. `runAgentLoop` runs `runLoop` with these stores;
 * emit the run's events yourself (`onEvent: (e) => runtime.bus.emit(runId, e)`).
 */
export async function createRedisRuntime(
  options: RedisStoresOptions & { clients?: ClientPool },
): Promise<RedisRuntime> {
  const stores = await createRedisStores(options);
  const clients = options.clients ?? createClientPool();
  const { capabilities, calibration, bus } = stores;
  return {
    clients,
    capabilities,
    calibration,
    bus,
    runAgentLoop: (loopOptions) => runLoop({ clients, capabilities, calibration }, loopOptions),
    reset() {
      clients.reset();
      capabilities.reset();
      calibration.reset();
      bus.reset();
    },
    close: stores.close,
  };
}
