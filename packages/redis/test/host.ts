// What a host above this package writes: the Redis stores, a client pool on the shared route
// latches, and the loop run with them (`runLoop` from @loopwright/loop, the layer above).
import { createClientPool } from "@loopwright/client";
import { createHooks } from "@loopwright/hooks";
import { type AgentLoopOptions, runLoop } from "@loopwright/loop";
import { createRedisStores, type RedisStoresOptions } from "../src/index.js";

export async function redisHost(options: RedisStoresOptions) {
  const stores = await createRedisStores(options);
  const clients = createClientPool({ routeLatches: stores.routeLatches });
  const hooks = createHooks();
  return {
    ...stores,
    clients,
    runAgentLoop: (loop: AgentLoopOptions) =>
      runLoop({ clients, capabilities: stores.capabilities, calibration: stores.calibration, hooks }, loop),
  };
}
