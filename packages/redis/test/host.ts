// What a host above this package writes: the Redis stores handed to the loop's `createRuntime`
// (a client pool on the shared route latches), and the loop run with that runtime.
import { createClientPool } from "@loopwright/client";
import { createRuntime } from "@loopwright/loop";
import { createRedisStores, type RedisStoresOptions } from "../src/index.js";

export async function redisHost(options: RedisStoresOptions) {
  const stores = await createRedisStores(options);
  const clients = createClientPool({ routeLatches: stores.routeLatches });
  const runtime = createRuntime({
    stores: { clients, capabilities: stores.capabilities, calibration: stores.calibration, bus: stores.bus },
  });
  return {
    ...stores,
    clients,
    runtime,
    runAgentLoop: (loop: Parameters<typeof runtime.runAgentLoop>[0]) => runtime.runAgentLoop(loop),
  };
}
