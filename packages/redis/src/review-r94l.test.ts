import { modelCapabilitiesFor } from "@loopwright/negotiate";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisCapabilityStore, type RedisCapabilityStore } from "./capabilities.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

/** Waits (bounded) for another instance's copy to catch up; the assertion after it decides. */
async function settled(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe.skipIf(!HAS_REDIS)("every per-model latch negotiate keeps is shared (r94)", () => {
  let server: RedisServer;
  const stores: RedisCapabilityStore[] = [];
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await server.kill();
  });
  const open = async (prefix: string): Promise<RedisCapabilityStore> => {
    const store = await createRedisCapabilityStore({ url: server.url, prefix });
    stores.push(store);
    return store;
  };

  it("shares a template's refusal of several calls in one message (parallelCalls), to a running and a late instance", async () => {
    const a = await open("r94l-a:");
    const b = await open("r94l-a:");
    const onB = modelCapabilitiesFor(b.capabilitiesFor("http://llama.test/v1", "sk-1"), "llama-3.1");
    const onA = modelCapabilitiesFor(a.capabilitiesFor("http://llama.test/v1", "sk-1"), "llama-3.1");
    onA.parallelCalls = false;
    await a.sync();
    await settled(() => !onB.parallelCalls);
    expect(onB.parallelCalls).toBe(false);
    const late = await open("r94l-a:");
    expect(
      modelCapabilitiesFor(late.capabilitiesFor("http://llama.test/v1", "sk-1"), "llama-3.1").parallelCalls,
    ).toBe(false);
    // Another model on the endpoint still sends several calls in one message.
    expect(
      modelCapabilitiesFor(late.capabilitiesFor("http://llama.test/v1", "sk-1"), "other").parallelCalls,
    ).toBe(true);
  });

  it("carries every boolean latch a fresh model record has, so a latch added to negotiate cannot be left out", async () => {
    const a = await open("r94l-b:");
    const fresh = modelCapabilitiesFor(a.capabilitiesFor("http://any.test/v1", "sk-1"), "m");
    const flags = Object.keys(fresh).filter(
      (key) => typeof (fresh as unknown as Record<string, unknown>)[key] === "boolean",
    );
    expect(flags.length).toBeGreaterThanOrEqual(10);
    for (const flag of flags) (fresh as unknown as Record<string, boolean>)[flag] = false;
    await a.sync();
    const late = await open("r94l-b:");
    const read = modelCapabilitiesFor(
      late.capabilitiesFor("http://any.test/v1", "sk-1"),
      "m",
    ) as unknown as Record<string, unknown>;
    const stillOpen = flags.filter((flag) => read[flag] !== false);
    expect(stillOpen).toEqual([]);
  });
});
