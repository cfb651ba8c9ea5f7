import { describe, expect, it } from "vitest";
import { serverWithAdmin } from "../test/admin.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisCapabilityStore } from "./capabilities.js";
import type { RedisStoreError } from "./errors.js";
import { createRedisStores } from "./stores.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const BASE = "http://127.0.0.1:9/v1";
const body = (chars: number) => ({ messages: [{ role: "user" as const, content: "x".repeat(chars) }] });

describe.skipIf(!HAS_REDIS)("a write-back after a reconnect that did not finish is run again (r95r)", () => {
  const redis = serverWithAdmin();

  // Its read after the write-back failed once (here the index is another type): the store was no
  // longer "away", so nothing ran it again, and `writtenBack()` rejected every time until the next
  // reconnect, long after Redis took the latches again.
  it("capability store: the read refused once (the index is another type) is run again once Redis takes it", async () => {
    const prefix = "r95r-a:";
    const store = await createRedisCapabilityStore({ url: redis.server.url, prefix });
    try {
      store.capabilitiesFor(BASE, "k").strictSchemas = false;
      await store.writtenBack();
      const keys = (await redis.send(["KEYS", `${prefix}*`])) as string[];
      const index = keys.find((key) => key.endsWith(":index"));
      expect(index).toBeDefined();
      for (const key of keys) await redis.send(["DEL", key]);
      await redis.send(["SET", index as string, "not a set"]);
      await redis.cut("pubsub");
      const refused = await store.writtenBack(1500).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect((refused as RedisStoreError).code).toBe("connect");
      await redis.send(["DEL", index as string]);
      await store.writtenBack(10_000);
      const late = await createRedisCapabilityStore({ url: redis.server.url, prefix });
      try {
        expect(late.capabilitiesFor(BASE, "k").strictSchemas).toBe(false);
      } finally {
        await late.close();
      }
    } finally {
      await store.close();
    }
  }, 30_000);

  // The calibration store's write-back sends one write per model and called itself done once they
  // were sent: the command connection cut while they were on their way (a proxy, a failover) lost
  // them, `writtenBack()` resolved all the same, and a host started then divided by the default
  // for each model whose write was lost, until that model's next reading.
  it("calibration: writes back cut with the command connection are written again before writtenBack() resolves", async () => {
    const prefix = "r95r-b:";
    const models = 3000;
    const stores = await createRedisStores({ url: redis.server.url, prefix });
    try {
      const caps = stores.capabilities.capabilitiesFor(BASE, "k");
      for (let i = 0; i < models; i++) stores.calibration.calibrate(caps, `m${i}`, body(80), 10);
      await stores.calibration.writtenBack();
      const held = async () => ((await redis.send(["KEYS", `${prefix}*`])) as string[]).length;
      const before = await held();
      // Redis's shared state lost, the subscription cut: the write-back starts, and the command
      // connection is cut once its first writes have landed, the rest still on their way.
      for (const key of (await redis.send(["KEYS", `${prefix}*`])) as string[])
        await redis.send(["DEL", key]);
      await redis.cut("pubsub");
      for (let look = 0; look < 10_000 && (await held()) < 10; look++);
      await redis.cut("normal");
      await stores.calibration.writtenBack(20_000);
      expect(await held()).toBe(before);
      const late = await createRedisStores({ url: redis.server.url, prefix });
      try {
        const lateCaps = late.capabilities.capabilitiesFor(BASE, "k");
        let defaulted = 0;
        for (let i = 0; i < models; i++)
          if (late.calibration.charsPerTokenFor(lateCaps, `m${i}`) !== 8) defaulted++;
        expect(defaulted).toBe(0);
      } finally {
        await late.close();
      }
    } finally {
      await stores.close();
    }
  }, 60_000);
});
