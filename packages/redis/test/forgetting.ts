import { createRedisCalibration } from "../src/calibration.js";
import { createRedisCapabilityStore } from "../src/capabilities.js";

/**
 * Each store that marks its forgets in Redis, with a forget as it makes one (the capability store:
 * a tenant; calibration: an endpoint) and the set its marks go under (`<prefix><set>:forgotten`).
 */
export const forgetting = [
  {
    store: "capability store",
    make: createRedisCapabilityStore,
    set: "caps",
    forget: (store: { forget(url: string, key?: string): boolean }, n: string) =>
      store.forget(`http://tenant-${n}.example/v1`, `key-${n}`),
  },
  {
    store: "calibration store",
    make: createRedisCalibration,
    set: "calibration",
    forget: (store: { forget(endpoint: string): boolean }, n: string) =>
      store.forget(`http://endpoint-${n}.example/v1`),
  },
] as const;
