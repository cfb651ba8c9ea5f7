import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CutProxy } from "../test/cut-proxy.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisCalibration, type RedisCalibration } from "./calibration.js";
import { createRedisCapabilityStore, type RedisCapabilityStore } from "./capabilities.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

async function settled(check: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** A body of `chars` characters of user text. */
const body = (chars: number) => ({ messages: [{ role: "user", content: "x".repeat(chars) }] });

describe.skipIf(!HAS_REDIS)("the Redis calibration store", () => {
  let server: RedisServer;
  const closers: { close(): Promise<void> }[] = [];
  const instance = async (): Promise<[RedisCapabilityStore, RedisCalibration]> => {
    const capabilities = await createRedisCapabilityStore({ url: server.url, prefix: "cal:" });
    const calibration = await createRedisCalibration({
      url: server.url,
      prefix: "cal:",
      endpointIdOf: capabilities.endpointIdOf,
    });
    closers.push(capabilities, calibration);
    return [capabilities, calibration];
  };

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(closers.map((c) => c.close()));
    await server.kill();
  });

  it("hands a reading taken on one instance to the other, keyed by the endpoint record each holds", async () => {
    const [capsA, calA] = await instance();
    const [capsB, calB] = await instance();
    const onA = capsA.capabilitiesFor("http://cal.test", "k");
    const onB = capsB.capabilitiesFor("http://cal.test", "k");
    expect(calB.charsPerTokenFor(onB, "m")).toBe(4);
    const chars = JSON.stringify(body(3000).messages).length;
    expect(calA.calibrate(onA, "m", body(3000), 1000)).toBeGreaterThan(2.5);
    await settled(() => calB.charsPerTokenFor(onB, "m") !== 4);
    expect(calB.charsPerTokenFor(onB, "m")).toBeCloseTo(calA.charsPerTokenFor(onA, "m"), 6);
    expect(calB.charsPerTokenFor(onB, "m")).toBeGreaterThanOrEqual(3000 / 1000);
    expect(calB.charsPerTokenFor(onB, "m")).toBeLessThanOrEqual(chars / 1000 + 0.5);
    expect(calB.charsPerTokenFor(onB, "other")).toBe(4);
  });

  it("never writes a string endpoint's credentials into Redis", async () => {
    const [, calA] = await instance();
    const [, calB] = await instance();
    const endpoint = "http://user:hunter2-secret@creds.test/v1";
    expect(calA.calibrate(endpoint, "m", body(5000), 1000)).toBeDefined();
    await settled(() => calB.charsPerTokenFor(endpoint, "m") !== 4);
    expect(calB.charsPerTokenFor(endpoint, "m")).toBeGreaterThan(4.9);
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    try {
      const keys = (await raw.sendCommand(["KEYS", "cal:*"])) as string[];
      const members = (await raw.sendCommand(["SMEMBERS", "cal:calibration:index"])) as string[];
      expect(keys.length).toBeGreaterThan(0);
      expect([...keys, ...members].join("\n")).not.toContain("hunter2");
    } finally {
      raw.destroy();
    }
  });

  it("shares no reading ledger would refuse, and keys a string endpoint by the string", async () => {
    const [, calA] = await instance();
    const [, calB] = await instance();
    expect(calA.calibrate("http://s.test", "m", body(100), 0)).toBeUndefined();
    expect(calA.calibrate("http://s.test", "m", body(100_000), 10)).toBeUndefined();
    expect(calA.calibrate("http://s.test", "m", body(5000), 1000)).toBeDefined();
    await settled(() => calB.charsPerTokenFor("http://s.test", "m") !== 4);
    expect(calB.charsPerTokenFor("http://s.test", "m")).toBeGreaterThan(4.9);
  });

  it("takes no reading from Redis that ledger would refuse, whether announced or stored", async () => {
    const { createHash } = await import("node:crypto");
    const [, calA] = await instance();
    const endpoint = "http://poisoned.test/v1";
    const id = `s:${createHash("sha256").update(endpoint).digest("hex").slice(0, 32)}\u0000m`;
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    try {
      await raw.sendCommand(["PUBLISH", "cal:calibration", JSON.stringify({ id, reading: 1e9 })]);
      await raw.sendCommand(["PUBLISH", "cal:calibration", JSON.stringify({ id, reading: -3 })]);
      await raw.sendCommand(["RPUSH", `cal:calibration:${id}`, "1e9", "0.001", "-3"]);
      await raw.sendCommand(["SADD", "cal:calibration:index", id]);
      // A well-formed announcement after the bad ones: once it is here, the bad ones were read too.
      await raw.sendCommand(["PUBLISH", "cal:calibration", JSON.stringify({ id, reading: 5 })]);
      await settled(() => calA.charsPerTokenFor(endpoint, "m") !== 4);
      expect(calA.charsPerTokenFor(endpoint, "m")).toBe(5);
      const [, calB] = await instance();
      expect(calB.charsPerTokenFor(endpoint, "m")).toBe(4);
    } finally {
      raw.destroy();
    }
  });

  it("forgets one endpoint's readings on every instance, and only that endpoint's", async () => {
    const [, calA] = await instance();
    const [, calB] = await instance();
    calA.calibrate("http://gone.test", "m", body(5000), 1000);
    calA.calibrate("http://kept.test", "m", body(5000), 1000);
    await settled(() => calB.charsPerTokenFor("http://kept.test", "m") !== 4);
    expect(calA.forget("http://gone.test")).toBe(true);
    await settled(() => calB.charsPerTokenFor("http://gone.test", "m") === 4);
    expect(calB.charsPerTokenFor("http://gone.test", "m")).toBe(4);
    expect(calB.charsPerTokenFor("http://kept.test", "m")).toBeGreaterThan(4.9);
    await calB.reload();
    expect(calB.charsPerTokenFor("http://gone.test", "m")).toBe(4);
  });

  it("an endpoint forgotten while the link to Redis is down stays forgotten once it is back", async () => {
    const proxy = await CutProxy.start(server.port);
    const a = await createRedisCalibration({ url: proxy.url, prefix: "calcut:", onError: () => {} });
    const b = await createRedisCalibration({ url: server.url, prefix: "calcut:" });
    closers.push(a, b);
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    const keys = async () => (await raw.sendCommand(["KEYS", "calcut:calibration:s:*"])) as string[];
    try {
      expect(a.calibrate("http://forget.test", "m", body(3000), 1000)).toBeGreaterThan(2.5);
      await settled(() => b.charsPerTokenFor("http://forget.test", "m") !== 4);
      expect(b.charsPerTokenFor("http://forget.test", "m")).not.toBe(4);
      await proxy.cut();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(a.forget("http://forget.test")).toBe(true);
      await proxy.restore();
      for (let i = 0; i < 30 && (await keys()).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(await keys()).toEqual([]);
      await settled(() => b.charsPerTokenFor("http://forget.test", "m") === 4);
      expect(b.charsPerTokenFor("http://forget.test", "m")).toBe(4);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(a.charsPerTokenFor("http://forget.test", "m")).toBe(4);
    } finally {
      raw.destroy();
      await proxy.cut();
    }
  }, 20_000);
  it("an endpoint forgotten while only the command connection is down (Redis closed it as idle) is forgotten everywhere once it reconnects", async () => {
    const a = await createRedisCalibration({ url: server.url, prefix: "calidle:", onError: () => {} });
    const b = await createRedisCalibration({ url: server.url, prefix: "calidle:", onError: () => {} });
    closers.push(a, b);
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    const keys = async () => (await raw.sendCommand(["KEYS", "calidle:calibration:s:*"])) as string[];
    try {
      expect(a.calibrate("http://idle.test", "m", body(3000), 1000)).toBeGreaterThan(2.5);
      await settled(() => b.charsPerTokenFor("http://idle.test", "m") !== 4);
      expect(b.charsPerTokenFor("http://idle.test", "m")).not.toBe(4);
      // What Redis's `timeout` does to an idle client: command connections go, subscribers stay.
      await raw.sendCommand(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
      expect(a.forget("http://idle.test")).toBe(true);
      for (let i = 0; i < 30 && (await keys()).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect(await keys()).toEqual([]);
      await settled(() => b.charsPerTokenFor("http://idle.test", "m") === 4);
      expect(b.charsPerTokenFor("http://idle.test", "m")).toBe(4);
    } finally {
      raw.destroy();
    }
  }, 20_000);

  it("an endpoint another instance forgot while this one's link was down is forgotten here too once it is back", async () => {
    const proxy = await CutProxy.start(server.port);
    const a = await createRedisCalibration({ url: proxy.url, prefix: "calaway:", onError: () => {} });
    const b = await createRedisCalibration({ url: server.url, prefix: "calaway:" });
    closers.push(a, b);
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    try {
      expect(a.calibrate("e1", "m", body(600), 100)).toBeGreaterThan(5);
      await settled(() => b.charsPerTokenFor("e1", "m") !== 4);
      expect(b.charsPerTokenFor("e1", "m")).toBe(a.charsPerTokenFor("e1", "m"));
      await proxy.cut();
      await pause(100);
      expect(b.forget("e1")).toBe(true);
      await pause(200);
      await proxy.restore();
      // Waits (up to 5 s: the reconnect's backoff, then its reads); the assertions decide.
      for (let i = 0; i < 100 && a.charsPerTokenFor("e1", "m") !== 4; i++) await pause(50);
      await pause(300);
      // Both divide by the default again: A dropped what B forgot, rather than keep its old readings.
      expect(b.charsPerTokenFor("e1", "m")).toBe(4);
      expect(a.charsPerTokenFor("e1", "m")).toBe(4);
      // And a reading taken after that is shared as before.
      expect(b.calibrate("e1", "m", body(600), 100)).toBeGreaterThan(5);
      await settled(() => a.charsPerTokenFor("e1", "m") !== 4);
      expect(a.charsPerTokenFor("e1", "m")).toBe(b.charsPerTokenFor("e1", "m"));
    } finally {
      await proxy.cut();
    }
  }, 20_000);
});
