// Review round 70: what r68's review left — the write loop while writes fail for long, key parts
// holding lone surrogates, calls after close().
import { queryObjects } from "node:v8";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, RedisStoreError } from "./index.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How many promises are alive (after a full collection: `queryObjects` runs one). */
function livePromises(): number {
  return queryObjects(Promise, { format: "count" }) as number;
}

describe.skipIf(!HAS_REDIS)("the bus while Redis refuses writes for a long time", () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server.kill();
  });

  it("holds no more memory per try: thousands of tries (a second apart, days of refusals) leave the heap as it was", async () => {
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    let refusals = 0;
    const realSetTimeout = globalThis.setTimeout;
    const bus = await createRedisBus({
      url: server.url,
      prefix: "tries:",
      onError: (error) => {
        if (/OOM/.test(String(error))) refusals++;
      },
    });
    try {
      await raw.sendCommand(["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "1"]);
      // Only the flush's pause between tries (25 ms growing to a second) is cut to nothing: Redis
      // answers over the real socket, and the write's own bound (5 s) is left alone.
      // (Not a spy: it would keep every call's arguments.)
      globalThis.setTimeout = ((fn: () => void, ms?: number) =>
        realSetTimeout(fn, ms !== undefined && ms >= 25 && ms <= 1000 ? 0 : ms)) as typeof setTimeout;
      bus.emit("refused", { kind: "output", text: "waits" });
      const tryOnce = async () => {
        const seen = refusals;
        for (let i = 0; i < 100_000 && refusals === seen; i++) await new Promise((r) => setImmediate(r));
        if (refusals === seen) throw new Error(`the bus did not try again (${refusals} tries)`);
      };
      for (let i = 0; i < 200; i++) await tryOnce();
      const before = livePromises();
      for (let i = 0; i < 2000; i++) await tryOnce();
      // Each try left four promises (two races and their reactions, about 600 bytes) held by one
      // that settles only at close(): 8 000 more here, growing for as long as Redis refuses.
      expect(livePromises() - before).toBeLessThan(400);
      expect(bus.pending).toBe(1);
    } finally {
      globalThis.setTimeout = realSetTimeout;
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      raw.destroy();
      await bus.close();
    }
  }, 60_000);
});
