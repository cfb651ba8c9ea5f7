import { describe, expect, it } from "vitest";
import { serverWithAdmin } from "../test/admin.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisCapabilityStore } from "./capabilities.js";
import type { RedisStoreError } from "./errors.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const BASE = "http://127.0.0.1:9/v1";

describe.skipIf(!HAS_REDIS)("the capability store's write-back after a reconnect that fails is run again (r95r)", () => {
  const redis = serverWithAdmin();

  // Its read after the write-back failed once (here the index is another type): the store was no
  // longer "away", so nothing ran it again, and `writtenBack()` rejected every time until the next
  // reconnect, long after Redis took the latches again.
  it("the read refused once (the index is another type) is run again once Redis takes it", async () => {
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
});
