import { modelCapabilitiesFor } from "@loopwright/negotiate";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisCalibration } from "./calibration.js";
import { createRedisCapabilityStore, type RedisCapabilityStore } from "./capabilities.js";
import { RedisStoreError } from "./errors.js";
import { createRedisRouteLatches } from "./route-latches.js";
import { createRedisStores } from "./stores.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (bounded) for `check`; the assertion after it decides. */
async function until(check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check()) && Date.now() < end) await pause(10);
}

describe.skipIf(!HAS_REDIS)("tenant keys in Redis: written whole, retired by expiry", () => {
  let server: RedisServer;
  let raw: ReturnType<typeof createClient>;
  const closing: { close(): Promise<void> }[] = [];
  let made = 0;
  const fresh = () => `tk${made++}:`;
  const caps = async (
    prefix: string,
    extra: { retainTenantMs?: number; onError?: (e: unknown) => void } = {},
  ) => {
    const store = await createRedisCapabilityStore({ url: server.url, prefix, ...extra });
    closing.push(store);
    return store;
  };
  const calibrationOn = async (
    prefix: string,
    endpointIdOf: RedisCapabilityStore["endpointIdOf"],
    extra: { retainTenantMs?: number } = {},
  ) => {
    const calibration = await createRedisCalibration({ url: server.url, prefix, endpointIdOf, ...extra });
    closing.push(calibration);
    return calibration;
  };
  const routeLatches = async (prefix: string, extra: { retainTenantMs?: number } = {}) => {
    const routes = await createRedisRouteLatches({ url: server.url, prefix, ...extra });
    closing.push(routes);
    return routes;
  };
  /** One instance's capability store, calibration (keyed by that store) and route latches on `prefix`. */
  const tenantStores = async (prefix: string, extra: { retainTenantMs?: number } = {}) => {
    const capabilities = await caps(prefix, extra);
    const calibration = await calibrationOn(prefix, capabilities.endpointIdOf, extra);
    return { capabilities, calibration, routes: await routeLatches(prefix, extra) };
  };
  const send = async <T>(args: string[]) => (await raw.sendCommand(args)) as T;
  /** Every tenant key of `kind` under `prefix` (the index, the forgotten set and the generation aside). */
  const tenantKeys = async (prefix: string, kind: string) =>
    (await send<string[]>(["KEYS", `${prefix}${kind}:*`])).filter(
      (key) => !/:(?:index|forgotten|generation)$/.test(key),
    );
  const indexed = async (prefix: string, kind: string) =>
    new Set(await send<string[]>(["SMEMBERS", `${prefix}${kind}:index`]));
  /** Waits (bounded) until `prefix` holds `count` tenant keys of `kind`; the assertion after it decides. */
  const untilKeys = (prefix: string, kind: string, count: number, ms?: number) =>
    until(async () => (await tenantKeys(prefix, kind)).length === count, ms);
  /** Lets `store`'s writes reach Redis, and what it hears back settle: sync, wait, sync again, wait. */
  const settle = async (store: RedisCapabilityStore) => {
    await store.sync();
    await pause(300);
    await store.sync();
    await pause(200);
  };

  beforeAll(async () => {
    server = await RedisServer.start();
    raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
  });
  afterAll(async () => {
    await Promise.all(closing.map((store) => store.close()));
    raw.destroy();
    await server.kill();
  });

  const base = "http://llm.example/v1";
  /** The tenants (by number) whose `usageInStream` is latched on `store`, among the first `count`. */
  const holding = (store: RedisCapabilityStore, count: number): number[] => {
    const held: number[] = [];
    for (let k = 0; k < count; k++) {
      if (store.peekCapabilities?.(base, `sk-t${k}`)?.usageInStream === false) held.push(k);
    }
    return held;
  };

  it("a reset racing another instance's latch writes leaves no latch outside the index, and a fresh host holds what the latching host holds, nothing from before the reset", async () => {
    const prefix = fresh();
    const a = await caps(prefix);
    const b = await caps(prefix);
    let i = 0;
    let stop = false;
    // Host A latches tenants steadily, as a busy host does; B resets three times meanwhile.
    const latcher = (async () => {
      while (!stop) {
        for (let k = 0; k < 20; k++) a.capabilitiesFor(base, `sk-t${i++}`).usageInStream = false;
        await pause(1);
      }
    })();
    let lastReset = 0;
    for (let round = 0; round < 3; round++) {
      await pause(150);
      lastReset = i;
      b.reset();
    }
    await until(async () => Number(await send<string | null>(["GET", `${prefix}caps:generation`])) >= 3);
    await pause(20);
    stop = true;
    await latcher;
    await settle(a);

    const index = await indexed(prefix, "caps");
    const outside = (await tenantKeys(prefix, "caps")).filter(
      (key) => !index.has(key.slice(`${prefix}caps:`.length)),
    );
    expect(outside).toEqual([]);
    const late = await caps(prefix);
    const aHolds = holding(a, i);
    const lateHolds = holding(late, i);
    expect(lateHolds).toEqual(aHolds);
    expect(lateHolds.filter((k) => k < lastReset)).toEqual([]);
    // The latching went on after the resets, and what was latched then is shared.
    expect(aHolds.length).toBeGreaterThan(0);
  }, 20_000);

  it("forgets racing another instance's latch writes of those tenants: Redis holds what the latching host holds, every key indexed", async () => {
    const prefix = fresh();
    const a = await caps(prefix);
    const b = await caps(prefix);
    const tenants = Array.from({ length: 40 }, (_, k) => `sk-x${k}`);
    let model = 0;
    let stop = false;
    // Host A learns a refusal of every tenant, model after model; B forgets each tenant once meanwhile.
    const latcher = (async () => {
      while (!stop) {
        const name = `m${model++}`;
        for (const key of tenants)
          modelCapabilitiesFor(a.capabilitiesFor(base, key), name).toolChoice = false;
        await pause(1);
      }
    })();
    for (const key of tenants) {
      await pause(8);
      b.forget(base, key);
    }
    await pause(30);
    stop = true;
    await latcher;
    // One latch more of every tenant, learned after every forget was made: it stays, on A and in
    // Redis, however late A hears a forget. (Whether a tenant still held an earlier latch depends on
    // when A heard its forget against its last pass: under load, often after it.)
    for (const key of tenants) modelCapabilitiesFor(a.capabilitiesFor(base, key), "final").toolChoice = false;
    await settle(a);

    const keys = await tenantKeys(prefix, "caps");
    const index = await indexed(prefix, "caps");
    expect(keys.filter((key) => !index.has(key.slice(`${prefix}caps:`.length)))).toEqual([]);
    const models = (store: RedisCapabilityStore) =>
      Object.fromEntries(
        store.exportCapabilities().endpoints.map((endpoint) => [
          endpoint.keyId,
          Object.entries(endpoint.models)
            .filter(([, caps]) => !caps.toolChoice)
            .map(([name]) => name)
            .sort(),
        ]),
      );
    const late = await caps(prefix);
    expect(models(late)).toEqual(models(a));
    expect(Object.keys(models(a))).toHaveLength(tenants.length);
    for (const held of Object.values(models(a))) expect(held).toContain("final");
  }, 20_000);

  it("keeps a latch learned after another instance's forget (or reset) was made and before it was heard: on it and in Redis", async () => {
    // Learned in the same tick as the forget (a millisecond later, the event loop held meanwhile), so
    // before any instance can have heard of it. The forget was made first: the refusal met after it
    // is still a refusal (as for a forget read after a reconnect). It used to be dropped with the
    // tenant when the announcement came. (One of the same millisecond goes with the forget.)
    /** Holds the event loop until the clock has passed the millisecond it reads now. */
    const afterThisMillisecond = () => {
      const now = Date.now();
      while (Date.now() <= now) {}
    };
    const prefix = fresh();
    const a = await caps(prefix);
    const b = await caps(prefix);
    /** The tenant's keyId, as an export names it: read off a store of its own on another prefix. */
    const keyIdOf = async (key: string) => {
      const probe = await caps(fresh());
      modelCapabilitiesFor(probe.capabilitiesFor(base, key), "probe").toolChoice = false;
      return probe.exportCapabilities().endpoints[0]?.keyId;
    };
    const ids = { "sk-f": await keyIdOf("sk-f"), "sk-r": await keyIdOf("sk-r") };
    /** The models whose tool_choice refusal `store` holds for the tenant of `key`. */
    const held = (store: RedisCapabilityStore, key: "sk-f" | "sk-r") =>
      Object.entries(store.exportCapabilities().endpoints.find((e) => e.keyId === ids[key])?.models ?? {})
        .filter(([, caps]) => caps.toolChoice === false)
        .map(([name]) => name);
    modelCapabilitiesFor(a.capabilitiesFor(base, "sk-f"), "before").toolChoice = false;
    modelCapabilitiesFor(a.capabilitiesFor(base, "sk-r"), "before").toolChoice = false;
    await settle(a);
    await settle(b);
    expect(held(b, "sk-f")).toEqual(["before"]);

    b.forget(base, "sk-f");
    afterThisMillisecond();
    modelCapabilitiesFor(a.capabilitiesFor(base, "sk-f"), "after").toolChoice = false;
    await settle(b);
    await settle(a);
    expect(held(a, "sk-f")).toEqual(["after"]);
    expect(held(await caps(prefix), "sk-f")).toEqual(["after"]);

    b.reset();
    afterThisMillisecond();
    modelCapabilitiesFor(a.capabilitiesFor(base, "sk-r"), "after").toolChoice = false;
    await settle(b);
    await settle(a);
    expect(held(a, "sk-r")).toEqual(["after"]);
    expect(held(a, "sk-f")).toEqual([]);
    expect(held(await caps(prefix), "sk-r")).toEqual(["after"]);
  });

  it("calibration: an instance counts its own readings once, so it divides by what every other instance does", async () => {
    const prefix = fresh();
    const capsA = await caps(prefix);
    const capsB = await caps(prefix);
    const calA = await calibrationOn(prefix, capsA.endpointIdOf);
    const calB = await calibrationOn(prefix, capsB.endpointIdOf);
    const body = { messages: [{ role: "user", content: "z".repeat(700) }] };
    const onA = capsA.capabilitiesFor(base, "sk-cal");
    // Each reading lower than the last, its announcement heard back before the next is taken.
    for (const tokens of [100, 120, 140, 160, 180]) {
      calA.calibrate(onA, "m", body, tokens);
      await pause(50);
    }
    const onB = capsB.capabilitiesFor(base, "sk-cal");
    const capsLate = await caps(prefix);
    const calLate = await calibrationOn(prefix, capsLate.endpointIdOf);
    const onLate = capsLate.capabilitiesFor(base, "sk-cal");
    // The last four readings: those of 120..180 tokens, the highest of them the 120's.
    expect(calA.charsPerTokenFor(onA, "m")).toBe(calB.charsPerTokenFor(onB, "m"));
    expect(calLate.charsPerTokenFor(onLate, "m")).toBe(calB.charsPerTokenFor(onB, "m"));
    expect(calA.charsPerTokenFor(onA, "m")).toBeLessThan(calA.calibrate(onA, "m", body, 100) as number);
  });

  it("a burst of forgets on a connected instance, past the bound on owed work, reaches Redis whole", async () => {
    const prefix = fresh();
    const errors: unknown[] = [];
    const a = await caps(prefix, { onError: (error) => errors.push(error) });
    const N = 12_000;
    // A key-rotation sweep, yielding now and then; the link never drops.
    for (let k = 0; k < N; k++) {
      a.forget(base, `sk-rotated-${k}`);
      if (k % 4000 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await until(async () => (await send<number>(["ZCARD", `${prefix}caps:forgotten`])) >= N, 15_000);
    expect(await send<number>(["ZCARD", `${prefix}caps:forgotten`])).toBe(N);
    expect(errors).toEqual([]);
  }, 30_000);

  it("gives caps:, calibration: and routes: keys (and their indexes) the retention as expiry, renewed when written and when used", async () => {
    const prefix = fresh();
    const retainTenantMs = 4000; // renewed on use at most every 400 ms
    const { capabilities: a, calibration, routes } = await tenantStores(prefix, { retainTenantMs });

    const supports = a.capabilitiesFor(base, "sk-ttl");
    supports.usageInStream = false;
    await a.sync();
    const body = { messages: [{ role: "user", content: "x".repeat(400) }] };
    calibration.calibrate(supports, "m", body, 100);
    routes.set("http://routes.example", { neither: true, lmstudioGone: false, lmstudioMissUntil: 0 });
    await untilKeys(prefix, "routes", 1);

    const [capsKey] = await tenantKeys(prefix, "caps");
    const [calibrationKey] = await tenantKeys(prefix, "calibration");
    const [routesKey] = await tenantKeys(prefix, "routes");
    const pttl = (key: string | undefined) => send<number>(["PTTL", key as string]);
    for (const key of [capsKey, calibrationKey, routesKey]) {
      expect(await pttl(key)).toBeGreaterThan(3000);
      expect(await pttl(key)).toBeLessThanOrEqual(retainTenantMs);
    }
    for (const kind of ["caps", "calibration", "routes"]) {
      expect(await pttl(`${prefix}${kind}:index`)).toBeGreaterThan(3000);
    }

    await pause(1500);
    for (const key of [capsKey, calibrationKey, routesKey]) expect(await pttl(key)).toBeLessThan(2700);
    // Used for a request on this instance: each expiry is renewed.
    a.capabilitiesFor(base, "sk-ttl");
    calibration.charsPerTokenFor(supports, "m");
    routes.get("http://routes.example");
    await until(async () => (await pttl(routesKey)) > 3000 && (await pttl(calibrationKey)) > 3000);
    for (const key of [capsKey, calibrationKey, routesKey]) expect(await pttl(key)).toBeGreaterThan(3000);

    // Used again at once: not renewed again (a tenth of the retention has not passed).
    const scriptCalls = async () =>
      [...String(await send<string>(["INFO", "commandstats"])).matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)]
        .map((m) => Number(m[1]))
        .reduce((x, y) => x + y, 0);
    const before = await scriptCalls();
    for (let k = 0; k < 100; k++) {
      a.capabilitiesFor(base, "sk-ttl");
      calibration.charsPerTokenFor(supports, "m");
      routes.get("http://routes.example");
    }
    await pause(50);
    expect((await scriptCalls()) - before).toBe(0);

    // Written again on another instance: renewed there too.
    await pause(600);
    const b = await caps(prefix, { retainTenantMs });
    modelCapabilitiesFor(b.capabilitiesFor(base, "sk-ttl"), "m").toolChoice = false;
    await b.sync();
    expect(await pttl(capsKey)).toBeGreaterThan(3500);
  }, 20_000);

  it("drops from each index, on reload, the tenants whose key expired; a key written again keeps its entry", async () => {
    const prefix = fresh();
    const retainTenantMs = 400;
    const { capabilities: a, calibration, routes } = await tenantStores(prefix, { retainTenantMs });
    for (let k = 0; k < 3; k++) {
      const supports = a.capabilitiesFor(base, `sk-old-${k}`);
      supports.usageInStream = false;
      calibration.calibrate(supports, "m", { messages: [{ role: "user", content: "y".repeat(400) }] }, 100);
      routes.set(`http://old-${k}.example`, { neither: true, lmstudioGone: false, lmstudioMissUntil: 0 });
    }
    await a.sync();
    await until(async () => (await indexed(prefix, "routes")).size === 3);
    for (const kind of ["caps", "calibration", "routes"]) expect((await indexed(prefix, kind)).size).toBe(3);
    // The index outlives its keys by a little: stretch it, as a longer-lived tenant's write would.
    for (const kind of ["caps", "calibration", "routes"]) {
      await send(["PEXPIRE", `${prefix}${kind}:index`, "60000"]);
    }
    await pause(700);
    expect(await tenantKeys(prefix, "caps")).toEqual([]);
    // One tenant is latched again (by a host with the default retention) before anyone reloads.
    const b = await caps(prefix);
    b.capabilitiesFor(base, "sk-new").strictSchemas = false;
    await b.sync();

    await a.reload();
    await calibration.reload();
    await routes.reload();
    expect((await indexed(prefix, "caps")).size).toBe(1);
    expect((await indexed(prefix, "calibration")).size).toBe(0);
    expect((await indexed(prefix, "routes")).size).toBe(0);
    const late = await caps(prefix);
    expect(late.peekCapabilities?.(base, "sk-new")?.strictSchemas).toBe(false);
  }, 20_000);

  it("refuses a retainTenantMs that is not a positive number of ms, naming it", async () => {
    for (const bad of [0, -1, Number.NaN, "30d"]) {
      await expect(
        createRedisCapabilityStore({ url: server.url, retainTenantMs: bad as number }),
      ).rejects.toSatisfy((e: unknown) => RedisStoreError.isInstance(e) && /retainTenantMs/.test(String(e)));
      await expect(
        createRedisRouteLatches({ url: server.url, retainTenantMs: bad as number }),
      ).rejects.toThrow(/retainTenantMs/);
      await expect(
        createRedisCalibration({ url: server.url, retainTenantMs: bad as number }),
      ).rejects.toThrow(/retainTenantMs/);
    }
  });

  it("gives the keys an older version wrote with no expiry (and their index) the retention at the next reload, so they are retired and none outlives its index", async () => {
    const prefix = fresh();
    const { capabilities: a, calibration, routes } = await tenantStores(prefix);
    const supports = a.capabilitiesFor(base, "sk-old");
    supports.strictSchemas = false;
    await a.sync();
    calibration.calibrate(supports, "m", { messages: [{ role: "user", content: "z".repeat(400) }] }, 100);
    routes.set("http://old-routes.example", { neither: true, lmstudioGone: false, lmstudioMissUntil: 0 });
    await untilKeys(prefix, "routes", 1);
    await untilKeys(prefix, "calibration", 1);
    const kinds = ["caps", "calibration", "routes"];
    // What the version before tenant keys expired left: every key and index with no expiry.
    const old: string[] = [];
    for (const kind of kinds) old.push(...(await tenantKeys(prefix, kind)), `${prefix}${kind}:index`);
    expect(old).toHaveLength(6);
    for (const key of old) await send(["PERSIST", key]);
    const pttl = (key: string) => send<number>(["PTTL", key]);

    // The upgraded hosts start (each start is a reload), with a short retention.
    const retainTenantMs = 1500;
    await tenantStores(prefix, { retainTenantMs });
    for (const key of old) {
      expect(await pttl(key), key).toBeGreaterThan(0);
      expect(await pttl(key), key).toBeLessThanOrEqual(retainTenantMs);
    }
    for (const kind of kinds) {
      const [key] = await tenantKeys(prefix, kind);
      expect(await pttl(`${prefix}${kind}:index`)).toBeGreaterThanOrEqual(await pttl(key as string));
    }
    // Nobody uses them: retired, index and all, and a fresh host reads nothing of them.
    await pause(retainTenantMs + 300);
    for (const kind of kinds) {
      expect(await tenantKeys(prefix, kind)).toEqual([]);
      expect(await send<number>(["EXISTS", `${prefix}${kind}:index`])).toBe(0);
    }
    const late = await caps(prefix);
    expect(late.peekCapabilities?.(base, "sk-old")?.strictSchemas).toBe(true);
  }, 20_000);

  it("capabilities: a tenant whose key expired under an instance that holds it is written again whole, so a fresh host reads everything that instance holds", async () => {
    const prefix = fresh();
    const retainTenantMs = 1000;
    const a = await caps(prefix, { retainTenantMs });
    a.capabilitiesFor(base, "sk-lapse").strictSchemas = false;
    await a.sync();
    expect(await tenantKeys(prefix, "caps")).toHaveLength(1);
    await untilKeys(prefix, "caps", 0, 3000);
    expect(await tenantKeys(prefix, "caps")).toEqual([]);
    // Used again on A (the renewal finds the key gone), then another field learned.
    a.capabilitiesFor(base, "sk-lapse");
    await pause(100);
    a.capabilitiesFor(base, "sk-lapse").usageInStream = false;
    await a.sync();
    await pause(300);
    const held = a.peekCapabilities?.(base, "sk-lapse");
    expect([held?.strictSchemas, held?.usageInStream]).toEqual([false, false]);
    const late = await caps(prefix);
    const read = late.peekCapabilities?.(base, "sk-lapse");
    expect([read?.strictSchemas, read?.usageInStream]).toEqual([false, false]);
  }, 20_000);

  it("calibration: a list that expired under an instance that holds readings is written again with all of them at the next reading", async () => {
    const prefix = fresh();
    const retainTenantMs = 1000;
    const a = await caps(prefix);
    const supports = a.capabilitiesFor(base, "sk-cal-lapse");
    const calibration = await calibrationOn(prefix, a.endpointIdOf, { retainTenantMs });
    calibration.calibrate(supports, "m", { messages: [{ role: "user", content: "w".repeat(700) }] }, 100);
    await untilKeys(prefix, "calibration", 1);
    const high = calibration.charsPerTokenFor(supports, "m");
    await untilKeys(prefix, "calibration", 0, 3000);
    expect(await tenantKeys(prefix, "calibration")).toEqual([]);
    // Read for a request (the renewal finds the list gone), then a lower reading taken.
    calibration.charsPerTokenFor(supports, "m");
    await pause(100);
    calibration.calibrate(supports, "m", { messages: [{ role: "user", content: "w".repeat(250) }] }, 100);
    await untilKeys(prefix, "calibration", 1);
    await pause(50);
    expect(calibration.charsPerTokenFor(supports, "m")).toBe(high);
    const late = await calibrationOn(prefix, a.endpointIdOf);
    expect(late.charsPerTokenFor(supports, "m")).toBe(high);
  }, 20_000);

  it("route latches: a server whose key expired under an instance that holds it is written again when it is used", async () => {
    const prefix = fresh();
    const retainTenantMs = 1000;
    const routes = await routeLatches(prefix, { retainTenantMs });
    routes.set("http://lapse.example", { neither: false, lmstudioGone: true, lmstudioMissUntil: 0 });
    await untilKeys(prefix, "routes", 1);
    await untilKeys(prefix, "routes", 0, 3000);
    expect(await tenantKeys(prefix, "routes")).toEqual([]);
    expect(routes.get("http://lapse.example")?.lmstudioGone).toBe(true);
    await untilKeys(prefix, "routes", 1, 1500);
    const late = await routeLatches(prefix);
    expect(late.get("http://lapse.example")?.lmstudioGone).toBe(true);
  }, 20_000);

  it("refuses retainTenantMs saying the rule and what was given, naming the function called", async () => {
    const refusal = async (made: Promise<unknown>): Promise<string> => {
      const error = await made.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(RedisStoreError.isInstance(error) && error.code === "invalid-option", String(error)).toBe(true);
      return (error as Error).message;
    };
    const rule =
      "`retainTenantMs` must be a finite number of ms greater than 0 (one longer than a century is held to a century; leave it out for the default, 30 days)";
    expect(await refusal(createRedisCapabilityStore({ url: server.url, retainTenantMs: Infinity }))).toBe(
      `createRedisCapabilityStore: ${rule}, and was given Infinity.`,
    );
    expect(
      await refusal(createRedisCalibration({ url: server.url, retainTenantMs: null as unknown as number })),
    ).toBe(`createRedisCalibration: ${rule}, and was given null.`);
    expect(
      await refusal(createRedisRouteLatches({ url: server.url, retainTenantMs: "30d" as unknown as number })),
    ).toBe(`createRedisRouteLatches: ${rule}, and was given the string "30d".`);
    expect(await refusal(createRedisStores({ url: server.url, retainTenantMs: Infinity }))).toBe(
      `createRedisStores: ${rule}, and was given Infinity.`,
    );
    expect(await refusal(createRedisStores({ url: server.url, retainTenantMs: 0 }))).toBe(
      `createRedisStores: ${rule}, and was given 0.`,
    );
    expect(await refusal(createRedisStores(null as unknown as { url: string }))).toMatch(
      /^createRedisStores needs/,
    );
  });
});
