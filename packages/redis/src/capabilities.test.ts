import { type EndpointCapabilities, modelCapabilitiesFor } from "@loopwright/negotiate";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CutProxy } from "../test/cut-proxy.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisCapabilityStore, type RedisCapabilityStore } from "./capabilities.js";
import { RedisStoreError } from "./errors.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

/** Waits (bounded) for another instance's copy to catch up; the assertion after it decides. */
async function settled(check: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe.skipIf(!HAS_REDIS)("the Redis capability store", () => {
  let server: RedisServer;
  const stores: RedisCapabilityStore[] = [];
  let prefixes = 0;
  const pair = async (): Promise<[RedisCapabilityStore, RedisCapabilityStore]> => {
    const prefix = `caps${prefixes++}:`;
    const a = await createRedisCapabilityStore({ url: server.url, prefix });
    const b = await createRedisCapabilityStore({ url: server.url, prefix });
    stores.push(a, b);
    return [a, b];
  };

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await server.kill();
  });

  it("lays a refusal latched on one instance onto the objects the other already holds", async () => {
    const [a, b] = await pair();
    const onB = b.capabilitiesFor("http://llm.test/v1/", "sk-1");
    const modelOnB = modelCapabilitiesFor(onB, "m");
    const onA = a.capabilitiesFor("http://llm.test/v1", "sk-1");
    onA.usageInStream = false;
    const modelOnA = modelCapabilitiesFor(onA, "m");
    modelOnA.refusedEfforts.push("minimal");
    modelOnA.legacyTokenLimit = false;
    modelOnA.toolChoice = false;
    await a.sync();
    await settled(() => modelOnB.refusedEfforts.length > 0 && !onB.usageInStream);
    expect(onB.usageInStream).toBe(false);
    expect(onB.strictSchemas).toBe(true);
    expect(modelOnB.refusedEfforts).toEqual(["minimal"]);
    expect(modelOnB.legacyTokenLimit).toBe(false);
    expect(modelOnB.toolChoice).toBe(false);
    // Another key is another endpoint: nothing of this reaches it.
    expect(b.capabilitiesFor("http://llm.test/v1", "sk-2").usageInStream).toBe(true);
  });

  it("shares a model's refusal of tool-call ids, so the other instance sends nine-character ids too", async () => {
    const [a, b] = await pair();
    const modelOnB = modelCapabilitiesFor(
      b.capabilitiesFor("http://mistral.test/v1", "sk-1"),
      "mistral-small",
    );
    const modelOnA = modelCapabilitiesFor(
      a.capabilitiesFor("http://mistral.test/v1", "sk-1"),
      "mistral-small",
    );
    modelOnA.anyToolCallIds = false;
    await a.sync();
    await settled(() => !modelOnB.anyToolCallIds);
    expect(modelOnB.anyToolCallIds).toBe(false);
    // Another model on the endpoint still sends its ids as they are.
    expect(
      modelCapabilitiesFor(b.capabilitiesFor("http://mistral.test/v1", "sk-1"), "other").anyToolCallIds,
    ).toBe(true);
    // And a store that connects later loads it.
    const late = await createRedisCapabilityStore({ url: server.url, prefix: `caps${prefixes - 1}:` });
    stores.push(late);
    const onLate = late.capabilitiesFor("http://mistral.test/v1", "sk-1");
    expect(modelCapabilitiesFor(onLate, "mistral-small").anyToolCallIds).toBe(false);
  });

  it("shares a closed prefillEcho (a server that does not echo the prefill); laying it again never reopens it", async () => {
    const [a, b] = await pair();
    const modelOnB = modelCapabilitiesFor(b.capabilitiesFor("http://vllm.test/v1", "sk-1"), "qwen");
    const modelOnA = modelCapabilitiesFor(a.capabilitiesFor("http://vllm.test/v1", "sk-1"), "qwen");
    expect(modelOnB.prefillEcho).toBe(true);
    modelOnA.prefillEcho = false;
    await a.sync();
    await settled(() => !modelOnB.prefillEcho);
    expect(modelOnB.prefillEcho).toBe(false);
    // Only this model on this endpoint: another model may sit behind a server that echoes.
    expect(modelCapabilitiesFor(b.capabilitiesFor("http://vllm.test/v1", "sk-1"), "llama").prefillEcho).toBe(
      true,
    );
    expect(b.exportCapabilities().endpoints[0]?.models.qwen?.prefillEcho).toBe(false);
    // A snapshot that still has it open (written before it closed) laid on either store reopens nothing.
    const older = a.exportCapabilities();
    for (const endpoint of older.endpoints)
      for (const m of Object.values(endpoint.models)) m.prefillEcho = true;
    b.importCapabilities(older);
    a.importCapabilities(older);
    await Promise.all([a.sync(), b.sync()]);
    expect(modelOnA.prefillEcho).toBe(false);
    expect(modelOnB.prefillEcho).toBe(false);
    // And a store that connects later loads it closed.
    const late = await createRedisCapabilityStore({ url: server.url, prefix: `caps${prefixes - 1}:` });
    stores.push(late);
    expect(
      modelCapabilitiesFor(late.capabilitiesFor("http://vllm.test/v1", "sk-1"), "qwen").prefillEcho,
    ).toBe(false);
  });

  it("notices a latch from the next read of the endpoint, as a request makes, without sync()", async () => {
    const [a, b] = await pair();
    const onA = a.capabilitiesFor("http://quiet.test");
    onA.strictSchemas = false;
    const onB = b.capabilitiesFor("http://quiet.test");
    await settled(() => !onB.strictSchemas);
    expect(onB.strictSchemas).toBe(false);
  });

  it("loads what was latched before it connected, and exports it with the key as a digest", async () => {
    const [a] = await pair();
    modelCapabilitiesFor(a.capabilitiesFor("http://late.test", "sk-secret"), "m").droppedFields.push("seed");
    await a.sync();
    const late = await createRedisCapabilityStore({ url: server.url, prefix: `caps${prefixes - 1}:` });
    stores.push(late);
    const snapshot = late.exportCapabilities();
    expect(JSON.stringify(snapshot)).not.toContain("sk-secret");
    const endpoint = snapshot.endpoints.find((e) => e.baseUrl === "http://late.test");
    expect(endpoint?.keyId).toMatch(/^[0-9a-f]{32}$/);
    expect(endpoint?.models.m?.droppedFields).toEqual(["seed"]);
    expect(
      modelCapabilitiesFor(late.capabilitiesFor("http://late.test", "sk-secret"), "m").droppedFields,
    ).toEqual(["seed"]);
  });

  it("shares an imported snapshot and rejects a malformed one without changing anything", async () => {
    const [a, b] = await pair();
    const source = await pair();
    source[0].capabilitiesFor("http://import.test").usageInStream = false;
    a.importCapabilities(source[0].exportCapabilities());
    const onB = b.capabilitiesFor("http://import.test");
    await settled(() => !onB.usageInStream);
    expect(onB.usageInStream).toBe(false);
    expect(() => a.importCapabilities({ version: 1, endpoints: [{ baseUrl: "" }] })).toThrow(/malformed/);
  });

  it("forgets one tenant on every instance: its latches go from Redis and from each copy", async () => {
    const [a, b] = await pair();
    a.capabilitiesFor("http://tenant.test", "k1").usageInStream = false;
    a.capabilitiesFor("http://other.test", "k2").usageInStream = false;
    await a.sync();
    await settled(() => b.size === 2);
    expect(b.size).toBe(2);
    expect(a.forget("http://tenant.test", "k1")).toBe(true);
    await settled(() => b.size === 1);
    expect(b.size).toBe(1);
    expect(b.capabilitiesFor("http://tenant.test", "k1").usageInStream).toBe(true);
    expect(b.capabilitiesFor("http://other.test", "k2").usageInStream).toBe(false);
    await b.reload();
    expect(b.capabilitiesFor("http://tenant.test", "k1").usageInStream).toBe(true);
    expect(a.forget("http://never.test")).toBe(false);
  });

  it("keeps a latch learned right after its own forget when that forget's announcement comes back to it", async () => {
    const [a, b] = await pair();
    a.capabilitiesFor("http://echo.test", "k").strictSchemas = false;
    await a.sync();
    await settled(() => b.size === 1);
    expect(a.forget("http://echo.test", "k")).toBe(true);
    // Learned after the forget, before its announcement is back: the tenant's new latch.
    a.capabilitiesFor("http://echo.test", "k").usageInStream = false;
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The echo was known as its own forget: what was learned since stays here, and is shared.
    expect(a.size).toBe(1);
    expect(a.capabilitiesFor("http://echo.test", "k").usageInStream).toBe(false);
    await a.sync();
    await settled(() => b.capabilitiesFor("http://echo.test", "k").usageInStream === false);
    expect(b.capabilitiesFor("http://echo.test", "k").usageInStream).toBe(false);
    expect(b.capabilitiesFor("http://echo.test", "k").strictSchemas).toBe(true);
  });

  it("keys an endpoint as negotiate does: any spelling of the server, and its headers, on every instance", async () => {
    const [a, b] = await pair();
    const azure = (key: string) => ({ "api-key": key });
    a.capabilitiesFor("HTTP://Azure.test:80/v1/", undefined, azure("tenant-a")).usageInStream = false;
    a.capabilitiesFor("http://azure.test/v1", undefined, azure("tenant-b")).strictSchemas = false;
    await a.sync();
    await settled(() => b.size === 2);
    const onB = (key: string) => b.capabilitiesFor("http://azure.test/v1", undefined, { "API-Key": key });
    expect(onB("tenant-a")).toMatchObject({ usageInStream: false, strictSchemas: true });
    expect(onB("tenant-b")).toMatchObject({ usageInStream: true, strictSchemas: false });
    expect(JSON.stringify(b.exportCapabilities())).not.toContain("tenant-a");
    // Forgotten under another spelling, with its header: only that tenant goes, everywhere.
    expect(a.forget("http://AZURE.test/v1", undefined, azure("tenant-a"))).toBe(true);
    await settled(() => b.size === 1);
    expect(onB("tenant-a").usageInStream).toBe(true);
    expect(onB("tenant-b").strictSchemas).toBe(false);
  });

  it("serves every read from its local copy: a thousand requests' reads send Redis nothing", async () => {
    const [a] = await pair();
    const supports = a.capabilitiesFor("http://hot.test", "k");
    supports.usageInStream = false;
    await a.sync();
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    try {
      const processed = async () =>
        Number(/total_commands_processed:(\d+)/.exec(String(await raw.sendCommand(["INFO", "stats"])))?.[1]);
      const before = await processed();
      for (let i = 0; i < 1000; i++) {
        const caps = a.capabilitiesFor("http://hot.test", "k");
        if (caps.strictSchemas && !caps.usageInStream) modelCapabilitiesFor(caps, "m");
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Only the INFO command itself was processed in between.
      expect((await processed()) - before).toBe(1);
    } finally {
      raw.destroy();
    }
  });

  it("fails to start with a RedisStoreError naming an unreachable URL or a bad option", async () => {
    const error = await createRedisCapabilityStore({ url: "redis://127.0.0.1:1" }).catch((e: unknown) => e);
    expect(RedisStoreError.isInstance(error)).toBe(true);
    expect((error as RedisStoreError).code).toBe("connect");
    expect((error as Error).message).toContain("redis://127.0.0.1:1");
    await expect(createRedisCapabilityStore({ url: "http://x" })).rejects.toThrow(
      /redis:\/\/ or rediss:\/\/ URL/,
    );
  });

  it("writes its latches again after Redis restarts empty, so an instance that joins later still learns them", async () => {
    const [a] = await pair();
    const prefix = `caps${prefixes - 1}:`;
    a.capabilitiesFor("http://restart.test").usageInStream = false;
    await a.sync();
    await server.kill();
    await server.start();
    const late = await createRedisCapabilityStore({ url: server.url, prefix });
    stores.push(late);
    const onLate = late.capabilitiesFor("http://restart.test");
    await settled(() => !onLate.usageInStream);
    expect(onLate.usageInStream).toBe(false);
  });

  it("a tenant forgotten while the link to Redis is down stays forgotten once it is back, here and everywhere", async () => {
    const proxy = await CutProxy.start(server.port);
    const prefix = `caps${prefixes++}:`;
    const a = await createRedisCapabilityStore({ url: proxy.url, prefix, onError: () => {} });
    const b = await createRedisCapabilityStore({ url: server.url, prefix });
    stores.push(a, b);
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    try {
      a.capabilitiesFor("http://tenant.test/v1", "sk-t").usageInStream = false;
      await a.sync();
      const onB = b.capabilitiesFor("http://tenant.test/v1", "sk-t");
      await settled(() => !onB.usageInStream);
      expect(onB.usageInStream).toBe(false);
      await proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(a.forget("http://tenant.test/v1", "sk-t")).toBe(true);
      await proxy.restore();
      const keys = async () => (await raw.sendCommand(["KEYS", `${prefix}caps:http*`])) as string[];
      for (let i = 0; i < 30 && (await keys()).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
      // Redis kept the latch through the drop: the forget, owed until the link came back, removed it.
      expect(await keys()).toEqual([]);
      expect(b.size).toBe(0);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(a.capabilitiesFor("http://tenant.test/v1", "sk-t").usageInStream).toBe(true);
    } finally {
      raw.destroy();
      await proxy.cut();
    }
  }, 20_000);
  it("a tenant forgotten while only the command connection is down (Redis closed it as idle) is forgotten everywhere once it reconnects", async () => {
    const prefix = `caps${prefixes++}:`;
    const a = await createRedisCapabilityStore({ url: server.url, prefix, onError: () => {} });
    const b = await createRedisCapabilityStore({ url: server.url, prefix, onError: () => {} });
    stores.push(a, b);
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    try {
      a.capabilitiesFor("http://idle.test/v1", "sk-i").usageInStream = false;
      await a.sync();
      const onB = b.capabilitiesFor("http://idle.test/v1", "sk-i");
      await settled(() => !onB.usageInStream);
      expect(onB.usageInStream).toBe(false);
      // What Redis's `timeout` does to an idle client: command connections go, subscribers stay.
      await raw.sendCommand(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
      expect(a.forget("http://idle.test/v1", "sk-i")).toBe(true);
      const keys = async () => (await raw.sendCommand(["KEYS", `${prefix}caps:http*`])) as string[];
      for (let i = 0; i < 30 && (await keys()).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(await keys()).toEqual([]);
      await settled(() => b.size === 0);
      expect(b.size).toBe(0);
    } finally {
      raw.destroy();
    }
  }, 20_000);

  describe("a forget or reset made while another instance's link is down", () => {
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    /** What `store` holds of a tenant, without making it there. */
    const peek = (store: RedisCapabilityStore, baseUrl: string, apiKey: string) =>
      store.peekCapabilities?.(baseUrl, apiKey) as EndpointCapabilities;
    /** A through a link that can be cut, B direct, and a raw client to look at Redis. */
    const cutPair = async () => {
      const proxy = await CutProxy.start(server.port);
      const prefix = `caps${prefixes++}:`;
      const a = await createRedisCapabilityStore({ url: proxy.url, prefix, onError: () => {} });
      const b = await createRedisCapabilityStore({ url: server.url, prefix });
      stores.push(a, b);
      const raw = createClient({ url: server.url, RESP: 2 });
      await raw.connect();
      const keys = async () => (await raw.sendCommand(["KEYS", `${prefix}caps:http*`])) as string[];
      const done = async () => {
        raw.destroy();
        await proxy.cut();
      };
      return { proxy, a, b, raw, keys, done };
    };
    /** Waits (up to 5 s: the reconnect's backoff, then its reads) for `check`; the assertions decide. */
    const until = async (check: () => boolean) => {
      for (let i = 0; i < 100 && !check(); i++) await pause(50);
    };

    it("stays forgotten on both once the link is back: the instance that was away does not write its copy back", async () => {
      const { proxy, a, b, keys, done } = await cutPair();
      try {
        a.capabilitiesFor("http://away.test/v1", "sk-t").usageInStream = false;
        await a.sync();
        await settled(() => !peek(b, "http://away.test/v1", "sk-t").usageInStream);
        expect(peek(b, "http://away.test/v1", "sk-t").usageInStream).toBe(false);
        await proxy.cut();
        await pause(100);
        expect(b.forget("http://away.test/v1", "sk-t")).toBe(true);
        await pause(200);
        expect(await keys()).toEqual([]);
        await proxy.restore();
        await until(() => a.size === 0);
        await pause(300);
        expect(await keys()).toEqual([]);
        expect(peek(b, "http://away.test/v1", "sk-t").usageInStream).toBe(true);
        expect(a.capabilitiesFor("http://away.test/v1", "sk-t").usageInStream).toBe(true);
        await a.sync();
        await pause(200);
        expect(await keys()).toEqual([]);
        expect(b.size).toBe(0);
      } finally {
        await done();
      }
    }, 20_000);

    it("still shares a latch the instance that was away learned after the forget", async () => {
      const { proxy, a, b, raw, keys, done } = await cutPair();
      try {
        const onA = a.capabilitiesFor("http://later.test/v1", "sk-l");
        onA.usageInStream = false;
        await a.sync();
        await settled(() => !peek(b, "http://later.test/v1", "sk-l").usageInStream);
        await proxy.cut();
        await pause(100);
        expect(b.forget("http://later.test/v1", "sk-l")).toBe(true);
        await pause(100);
        // Learned by A after the forget, on the object it still holds, while its link is down.
        modelCapabilitiesFor(onA, "m").toolChoice = false;
        await pause(400);
        await proxy.restore();
        await until(() => b.size === 1);
        const onB = peek(b, "http://later.test/v1", "sk-l");
        await until(() => modelCapabilitiesFor(onB, "m").toolChoice === false);
        await pause(300);
        expect(modelCapabilitiesFor(onB, "m").toolChoice).toBe(false);
        // What A held from before the forget stays forgotten, here and there.
        expect(onB.usageInStream).toBe(true);
        const again = a.capabilitiesFor("http://later.test/v1", "sk-l");
        expect(again.usageInStream).toBe(true);
        expect(modelCapabilitiesFor(again, "m").toolChoice).toBe(false);
        const [key] = await keys();
        expect(await raw.sendCommand(["HKEYS", key as string])).toEqual(["m\u0000m\u0000toolChoice"]);
      } finally {
        await done();
      }
    }, 20_000);

    it("a reset stays a reset on both once the link is back, and reaches an instance that is connected", async () => {
      const { proxy, a, b, keys, done } = await cutPair();
      try {
        a.capabilitiesFor("http://reset-a.test/v1", "sk-1").usageInStream = false;
        b.capabilitiesFor("http://reset-b.test/v1", "sk-2").strictSchemas = false;
        await a.sync();
        await b.sync();
        await settled(() => a.size === 2 && b.size === 2);
        expect([a.size, b.size]).toEqual([2, 2]);
        await proxy.cut();
        await pause(100);
        b.reset();
        await pause(200);
        expect(await keys()).toEqual([]);
        await proxy.restore();
        await until(() => a.size === 0);
        await pause(300);
        expect(await keys()).toEqual([]);
        expect(a.size).toBe(0);
        expect(b.size).toBe(0);
        expect(a.capabilitiesFor("http://reset-a.test/v1", "sk-1").usageInStream).toBe(true);
        // A connected instance is told of a reset as of a forget, and drops its copy.
        a.capabilitiesFor("http://reset-a.test/v1", "sk-1").usageInStream = false;
        await a.sync();
        await settled(() => b.size === 1);
        expect(b.size).toBe(1);
        a.reset();
        await settled(() => b.size === 0);
        expect(b.size).toBe(0);
        expect(await keys()).toEqual([]);
      } finally {
        await done();
      }
    }, 20_000);
  });
});
