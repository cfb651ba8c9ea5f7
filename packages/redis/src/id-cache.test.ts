import { randomUUID } from "node:crypto";
import { getHeapSnapshot } from "node:v8";
import { DEFAULT_MAX_ENDPOINTS } from "@loopwright/negotiate";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisCapabilityStore, idCacheSize, type RedisCapabilityStore } from "./capabilities.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

/**
 * Whether `before` followed at once by `text` is anywhere in this process's heap (the snapshot is
 * taken, garbage collected first, before it is read). The two are searched for apart, so the test
 * never makes the string it looks for.
 */
async function inHeap(before: string, text: string): Promise<boolean> {
  const stream = getHeapSnapshot();
  stream.setEncoding("utf8");
  let window = "";
  for await (const chunk of stream as AsyncIterable<string>) {
    window = window.slice(-(before.length + text.length)) + chunk;
    for (let at = window.indexOf(text); at !== -1; at = window.indexOf(text, at + 1)) {
      if (window.slice(Math.max(0, at - before.length), at) === before) {
        stream.destroy();
        return true;
      }
    }
  }
  return false;
}

describe.skipIf(!HAS_REDIS)("the Redis capability store's ids worked out per tenant", () => {
  let server: RedisServer;
  const stores: RedisCapabilityStore[] = [];
  const open = async (prefix: string) => {
    const store = await createRedisCapabilityStore({ url: server.url, prefix });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await server.kill();
  });

  it("keeps at most DEFAULT_MAX_ENDPOINTS of them however many tenants come and go", async () => {
    const store = await open("ids-bound:");
    const first = store.capabilitiesFor("http://tenants.test/v1", "sk-tenant-0");
    first.usageInStream = false;
    for (let i = 1; i <= DEFAULT_MAX_ENDPOINTS + 1; i++) {
      store.capabilitiesFor("http://tenants.test/v1", `sk-tenant-${i}`);
    }
    expect(idCacheSize(store)).toBe(DEFAULT_MAX_ENDPOINTS);
    // The tenant whose id was let go is still the same endpoint, with what it latched.
    const again = store.capabilitiesFor("http://tenants.test/v1", "sk-tenant-0");
    expect(again).toBe(first);
    expect(again.usageInStream).toBe(false);
  });

  it("holds no API key in clear once capabilitiesFor has answered", async () => {
    const store = await open("ids-clear:");
    const marker = randomUUID();
    // Made and dropped inside a function: nothing of the test keeps the key.
    ((key: string) => {
      store.capabilitiesFor("http://clear.test/v1", key).strictSchemas = false;
    })(`sk-live-${marker}`);
    const password = randomUUID();
    ((url: string) => store.capabilitiesFor(url, "k"))(`http://user:${password}@creds.test/v1`);
    await store.sync();
    expect(await inHeap("sk-live-", marker)).toBe(false);
    expect(await inHeap("user:", password)).toBe(false);
    // Still the same endpoint when the key comes again.
    expect(store.capabilitiesFor("http://clear.test/v1", `sk-live-${marker}`).strictSchemas).toBe(false);
  }, 60_000);
});
