// The marks of forgets an instance knows of (its own, those it heard or read) go by age while Redis
// stays reachable, not only after a reconnect; and letting one go does not make its record, still in
// Redis, read as a forget this instance missed. Real redis-server; the clock is moved with a spy on
// Date.now (the stores read no other clock), only while nothing is on its way to Redis.
import { createClient } from "@redis/client";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { CutProxy } from "../test/cut-proxy.js";
import { forgetting } from "../test/forgetting.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisCapabilityStore } from "./capabilities.js";
import { marksKnown } from "./forgets.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const DAY = 24 * 60 * 60 * 1000;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (bounded) for `check`; the assertion after it decides. */
async function until(check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end && !(await check()); ) await pause(20);
}

/** Moves this process's clock `ms` on (Date.now only). */
function later(ms: number): void {
  const real = Date.now.bind(Date);
  vi.spyOn(Date, "now").mockImplementation(() => real() + ms);
}

describe.skipIf(!HAS_REDIS)("the marks of forgets an instance knows of", () => {
  let server: RedisServer;
  let raw: ReturnType<typeof createClient>;
  const closers: { close(): Promise<void> }[] = [];
  let prefixes = 0;

  beforeAll(async () => {
    server = await RedisServer.start();
    raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });
  afterAll(async () => {
    await Promise.all(closers.map((c) => c.close()));
    raw.destroy();
    await server.kill();
  });

  it.each(forgetting)(
    "a $store with Redis healthy lets its own and heard marks go once they are past 8 days, not only after a reconnect",
    async ({ make: create, set, forget }) => {
      const prefix = `marks${prefixes++}:`;
      const a = await create({ url: server.url, prefix });
      const b = await create({ url: server.url, prefix });
      closers.push(a, b);
      const forgotten = async () => Number(await raw.sendCommand(["ZCARD", `${prefix}${set}:forgotten`]));
      const N = 200;
      for (let i = 0; i < N; i++) forget(a, String(i));
      await until(async () => (await forgotten()) === N && marksKnown(b) === N);
      expect(await forgotten()).toBe(N);
      // Made here, and heard there: every one known on both while they are young.
      expect(marksKnown(a)).toBe(N);
      expect(marksKnown(b)).toBe(N);

      // Eight days and two hours on, Redis reachable throughout: one more forget each way.
      later(8 * DAY + 2 * 60 * 60 * 1000);
      forget(a, "later-a");
      forget(b, "later-b");
      await until(() => marksKnown(a) === 2 && marksKnown(b) === 2);
      // The old marks went on both (each holds its own new mark and the one it heard), and Redis
      // trimmed their record at the first forget past 7 days.
      expect(marksKnown(a)).toBe(2);
      expect(marksKnown(b)).toBe(2);
      expect(await forgotten()).toBe(2);
    },
    20_000,
  );

  it("a capability store's own forget, let go here by age while its record is still in Redis, is not carried out again by a reload", async () => {
    const prefix = `marks${prefixes++}:`;
    const a = await createRedisCapabilityStore({ url: server.url, prefix });
    const b = await createRedisCapabilityStore({ url: server.url, prefix });
    closers.push(a, b);
    const tenant = "http://kept.example/v1";
    expect(a.forget(tenant, "k")).toBe(false);
    await until(async () => Number(await raw.sendCommand(["ZCARD", `${prefix}caps:forgotten`])) === 1);
    // Learned after the forget, on the object the loop holds, and shared.
    const held = a.capabilitiesFor(tenant, "k");
    held.strictSchemas = false;
    await a.sync();
    await until(() => b.capabilitiesFor(tenant, "k").strictSchemas === false);
    expect(b.capabilitiesFor(tenant, "k").strictSchemas).toBe(false);

    // Eight days and two hours on. A forget heard from a host whose clock is behind (its cutoff
    // leaves the old record in Redis) is what makes this instance look at its marks' ages.
    later(8 * DAY + 2 * 60 * 60 * 1000);
    await raw.sendCommand([
      "PUBLISH",
      `${prefix}caps`,
      JSON.stringify({ id: "http://other.example/v1\u0000k", forget: true, mark: "elsewhere\u0000x" }),
    ]);
    await until(() => marksKnown(a) === 1);
    // Its own old mark went here; the record of that forget has not been trimmed from Redis.
    expect(marksKnown(a)).toBe(1);
    expect(Number(await raw.sendCommand(["ZCARD", `${prefix}caps:forgotten`]))).toBe(1);

    // The reload a reconnect makes reads that record: past 7 days, it is passed over, not taken for
    // a forget this instance missed, which would put a fresh object in place of the one the loop
    // holds (what is learned on it no longer shared).
    await a.reload();
    expect(a.capabilitiesFor(tenant, "k")).toBe(held);
    held.usageInStream = false;
    await a.sync();
    await until(() => b.capabilitiesFor(tenant, "k").usageInStream === false);
    expect(b.capabilitiesFor(tenant, "k").usageInStream).toBe(false);
  }, 20_000);

  it("a forget owed through an outage longer than marks are kept is still known as its own when it is sent and echoed back", async () => {
    const proxy = await CutProxy.start(server.port);
    const prefix = `marks${prefixes++}:`;
    const a = await createRedisCapabilityStore({ url: proxy.url, prefix, onError: () => {} });
    const b = await createRedisCapabilityStore({ url: server.url, prefix });
    closers.push(a, b);
    const tenant = "http://away.example/v1";
    try {
      a.capabilitiesFor(tenant, "k").strictSchemas = false;
      await a.sync();
      await until(() => b.capabilitiesFor(tenant, "k").strictSchemas === false);
      await proxy.cut();
      await pause(100);
      // Forgotten while Redis is out of reach (owed), then a latch learned on the tenant's new object.
      expect(a.forget(tenant, "k")).toBe(true);
      const held = a.capabilitiesFor(tenant, "k");
      held.usageInStream = false;
      // The outage lasts past 8 days; another forget made then has this instance look at its marks'
      // ages, and the first forget's mark goes (it was made 8 days ago).
      later(8 * DAY + 2 * 60 * 60 * 1000);
      a.forget("http://other.example/v1", "k");
      expect(marksKnown(a)).toBe(1);
      await proxy.restore();
      // Sent once the link is back: its echo is known as this instance's own forget, carried out
      // when it was made, so the latch learned since stays here and is shared.
      await until(() => b.capabilitiesFor(tenant, "k").usageInStream === false, 15_000);
      await pause(300);
      expect(a.capabilitiesFor(tenant, "k")).toBe(held);
      expect(held.usageInStream).toBe(false);
      expect(b.capabilitiesFor(tenant, "k").usageInStream).toBe(false);
      // What it held from before the forget stays forgotten, there too.
      expect(b.capabilitiesFor(tenant, "k").strictSchemas).toBe(true);
    } finally {
      await proxy.cut();
    }
  }, 30_000);
});
