// Review round 82 (redis): what a watcher that ends for good tells onError, and a failure told once
// while it lasts though another kind of command goes through meanwhile. Each describe starts its own
// redis-server.
import { modelCapabilitiesFor } from "@loopwright/negotiate";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, createRedisCapabilityStore, RedisStoreError } from "./index.js";
import { quoted } from "./tell.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const PASSWORD = "r82-s3cret-pw-9a7b";

describe.skipIf(!HAS_REDIS)("R82", () => {
  let server: RedisServer;
  let raw: ReturnType<typeof createClient>;
  let url: string;
  beforeAll(async () => {
    server = await RedisServer.start();
    raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    await raw.sendCommand(["CONFIG", "SET", "requirepass", PASSWORD]);
    url = `redis://:${PASSWORD}@127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    raw.destroy();
    await server.kill();
  });

  it("R82-1: a watcher ended by WRONGTYPE tells a RedisStoreError naming the URL (password hidden) and the run", async () => {
    const told: unknown[] = [];
    const bus = await createRedisBus({ url, prefix: "wt:", onError: (e) => told.push(e) });
    try {
      bus.emit("swapped", { kind: "output", text: "a" });
      await bus.flushed();
      const watcher = bus.watch("swapped");
      expect((await watcher.next()).value).toMatchObject({ seq: 1 });
      await raw.sendCommand(["DEL", "wt:run:swapped"]);
      await raw.sendCommand(["SET", "wt:run:swapped", "something else"]);
      const ended = await Promise.race([watcher.next().then(() => true), pause(3000).then(() => false)]);
      expect(ended).toBe(true);
      const wrong = told.filter((e) => /WRONGTYPE/.test(String(e)));
      // Before: the client's bare ErrorReply 'WRONGTYPE Operation against a key holding the wrong kind of value'.
      expect(wrong).toHaveLength(1);
      const error = wrong[0] as RedisStoreError;
      expect(RedisStoreError.isInstance(error), String(error)).toBe(true);
      expect(error.code).toBe("refused");
      expect(error.message).toMatch(/Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:\d+/);
      expect(error.message).toContain('"swapped"');
      expect(error.message).not.toContain(PASSWORD);
      expect(error.cause).toBeInstanceOf(Error);
    } finally {
      await bus.close();
    }
  });

  it("R82-2: Redis out of memory refuses a tenant's latch writes while it takes their expiry renewals: told once, not each cycle", async () => {
    const told: unknown[] = [];
    const caps = await createRedisCapabilityStore({
      url,
      prefix: "renew:",
      onError: (e) => told.push(e),
      syncMs: 50,
      // Renewed every 100 ms while the tenant is used.
      retainTenantMs: 1000,
    });
    try {
      const record = caps.capabilitiesFor("http://llm.test/v1", "sk-1");
      record.usageInStream = false;
      await caps.sync();
      expect(told).toHaveLength(0);
      await raw.sendCommand(["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "1"]);
      modelCapabilitiesFor(caps.capabilitiesFor("http://llm.test/v1", "sk-1"), "m").toolChoice = false;
      for (let i = 0; i < 40; i++) {
        // Each request reads the tenant's flags: its expiry is renewed (Redis takes PEXPIRE out of memory).
        caps.capabilitiesFor("http://llm.test/v1", "sk-1");
        await pause(50);
      }
      // Before: the same OOM told again after each renewal went through (about 15 in 2 s).
      expect(told.map(String)).toHaveLength(1);
      expect((told[0] as RedisStoreError).code).toBe("refused");
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      // A comparison a tick started before Redis had memory again may still fail: sync() waits for it.
      await pause(200);
      await caps.sync().catch(() => caps.sync());
      expect(told).toHaveLength(1);
    } finally {
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      await caps.close();
    }
  }, 15_000);

  it("R82-4: history hands out frozen copies: a reader writing one, or the emitter reusing its objects, changes nothing another reads", async () => {
    const bus = await createRedisBus({ url, prefix: "frozen:" });
    try {
      const usage = { prompt: 5, completion: 1 };
      const returned = bus.emit("f", { kind: "usage", usage, text: "a" } as never);
      // The emitter reuses its object for the next turn (before: history showed 9).
      usage.prompt = 9;
      const first = bus.history("f")[0] as unknown as { text: string; usage: { prompt: number } };
      expect(first.usage.prompt).toBe(5);
      // A reader (a display) writing what it was handed (before: the next history() read "x" and 0).
      expect(() => {
        first.text = "x";
      }).toThrow(TypeError);
      expect(() => {
        first.usage.prompt = 0;
      }).toThrow(TypeError);
      expect(() => {
        (returned as unknown as { text: string }).text = "y";
      }).toThrow(TypeError);
      const again = bus.history("f")[0] as unknown as { text: string; usage: { prompt: number } };
      expect(again).toMatchObject({ seq: 1, text: "a", usage: { prompt: 5 } });
      // What history holds is what Redis holds.
      await bus.flushed();
      expect(await bus.readHistory("f")).toEqual(bus.history("f"));
      // The emitter's own objects are never frozen.
      usage.prompt = 10;
      expect(usage.prompt).toBe(10);
    } finally {
      await bus.close();
    }
  });
});

describe("the client's error as a RedisStoreError quotes it", () => {
  it("cuts a long message before a character, never inside one, and writes no lone surrogate", () => {
    // 499 characters, then an emoji (two UTF-16 units) across the 500-character cut.
    const text = `${"x".repeat(499)}\u{1F600}${"y".repeat(100)}`;
    const shown = quoted(new Error(text));
    expect(shown).toBe(`${"x".repeat(499)}… (102 more characters)`);
    expect(shown.isWellFormed()).toBe(true);
    expect(quoted(new Error("a\ud800b"))).toBe("a\ufffdb");
  });
});
