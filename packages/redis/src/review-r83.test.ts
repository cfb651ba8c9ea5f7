// Review round 83 (redis): a run's key holding another type told once per run, not once per watcher;
// a failure of a kind of command that runs once (a reload after reconnecting) does not keep a later,
// separate failure of the same kind from being told. One redis-server for the file.
import { createClient } from "@redis/client";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { frozenFrom, plainFrozen } from "./bus.js";
import { createRedisBus, createRedisRouteLatches, RedisStoreError } from "./index.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits until `check` holds, up to `ms`. */
const until = async (check: () => boolean, ms = 3000): Promise<boolean> => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) return false;
    await pause(10);
  }
  return true;
};

describe.skipIf(!HAS_REDIS)("R83", () => {
  let server: RedisServer;
  let raw: ReturnType<typeof createClient>;
  beforeAll(async () => {
    server = await RedisServer.start();
    raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
  });
  afterAll(async () => {
    raw.destroy();
    await server.kill();
  });

  it("R83-1: five watchers of a run whose key holds another type: told once for the run, not five times", async () => {
    const told: unknown[] = [];
    const bus = await createRedisBus({ url: server.url, prefix: "r83a:", onError: (e) => told.push(e) });
    try {
      bus.emit("swapped", { kind: "output", text: "a" });
      bus.emit("other", { kind: "output", text: "a" });
      await bus.flushed();
      const watchers = Array.from({ length: 5 }, () => bus.watch("swapped"));
      for (const watcher of watchers) expect((await watcher.next()).value).toMatchObject({ seq: 1 });
      const other = bus.watch("other");
      expect((await other.next()).value).toMatchObject({ seq: 1 });
      await raw.sendCommand(["DEL", "r83a:run:swapped", "r83a:run:other"]);
      await raw.sendCommand(["SET", "r83a:run:swapped", "something else"]);
      await raw.sendCommand(["SET", "r83a:run:other", "something else"]);
      const ended = await Promise.all(
        [...watchers, other].map((w) =>
          Promise.race([w.next().then(() => true), pause(3000).then(() => false)]),
        ),
      );
      expect(ended).toEqual([true, true, true, true, true, true]);
      const wrong = told.filter((e) => /WRONGTYPE/.test(String(e))) as RedisStoreError[];
      // Before: five for "swapped" (one per watcher) and one for "other".
      expect(wrong.map((e) => /"swapped"/.test(e.message))).toEqual(expect.arrayContaining([true, false]));
      expect(wrong).toHaveLength(2);
      // A watcher that comes while the key still holds another type adds nothing more.
      const late = bus.watch("swapped");
      expect(await Promise.race([late.next().then(() => true), pause(3000).then(() => false)])).toBe(true);
      expect(told.filter((e) => /WRONGTYPE/.test(String(e)))).toHaveLength(2);
      // Once the key is a run's stream again (it was read), a later swap is another failure: told.
      await raw.sendCommand(["DEL", "r83a:run:swapped"]);
      bus.emit("swapped", { kind: "output", text: "b" });
      await bus.flushed();
      const again = bus.watch("swapped");
      // (a notice first: the stream lost the run's first event)
      expect((await again.next()).done).toBe(false);
      await raw.sendCommand(["DEL", "r83a:run:swapped"]);
      await raw.sendCommand(["SET", "r83a:run:swapped", "something else"]);
      expect(await Promise.race([again.next().then(() => true), pause(3000).then(() => false)])).toBe(true);
      expect(await until(() => told.filter((e) => /WRONGTYPE/.test(String(e))).length === 3)).toBe(true);
    } finally {
      await bus.close();
    }
  });

  it("R83-2: a reload after reconnecting that failed (it runs once) does not keep a later, separate failure of the same kind from being told", async () => {
    const told: unknown[] = [];
    const routes = await createRedisRouteLatches({
      url: server.url,
      prefix: "r83b:",
      onError: (e) => told.push(e),
    });
    /** Waits until the index names `count` servers (their latches written), up to 3 s. */
    const indexed = async (count: number) => {
      for (let i = 0; i < 300; i++) {
        if (Number(await raw.sendCommand(["SCARD", "r83b:routes:index"])) >= count) return true;
        await pause(10);
      }
      return false;
    };
    try {
      routes.set("http://one.test", { neither: true, lmstudioGone: false, lmstudioMissUntil: 0 });
      expect(await indexed(1)).toBe(true);
      // The shared latches read again after a reconnect: Redis refuses the read (an ACL change).
      await raw.sendCommand(["ACL", "SETUSER", "default", "-smembers"]);
      await raw.sendCommand(["CLIENT", "KILL", "TYPE", "pubsub"]);
      // (the connection killed is told too: it is not counted here)
      const refused = () => told.filter((e) => /NOPERM/.test(String(e)));
      expect(await until(() => refused().length === 1)).toBe(true);
      expect(String(refused()[0])).toMatch(/read the shared route latches again after reconnecting.*NOPERM/s);
      await raw.sendCommand(["ACL", "SETUSER", "default", "+@all"]);
      // Redis takes writes again: another latch is written.
      routes.set("http://two.test", { neither: true, lmstudioGone: false, lmstudioMissUntil: 0 });
      expect(await indexed(2)).toBe(true);
      // A later, separate refusal of the same kind (NOPERM), of a write this time.
      await raw.sendCommand(["ACL", "SETUSER", "default", "-evalsha", "-eval"]);
      routes.set("http://three.test", { neither: true, lmstudioGone: false, lmstudioMissUntil: 0 });
      // Before: not told (the reload's failure, never run again, held the kind as told for good).
      expect(await until(() => refused().length === 2), told.map(String).join("\n")).toBe(true);
      expect(RedisStoreError.isInstance(refused()[1])).toBe(true);
      expect(String(refused()[1])).toMatch(/could not send the learned route latches.*NOPERM/s);
    } finally {
      await raw.sendCommand(["ACL", "SETUSER", "default", "+@all"]);
      await routes.close();
    }
  });

  it("R83-5: Redis refusing to read every tenant (an ACL without HGETALL): one report per reload, not one per tenant, and not blamed on the keys", async () => {
    const told: unknown[] = [];
    const routes = await createRedisRouteLatches({
      url: server.url,
      prefix: "r83e:",
      onError: (e) => told.push(e),
    });
    try {
      for (let i = 0; i < 30; i++) {
        routes.set(`http://s${i}.test`, { neither: true, lmstudioGone: false, lmstudioMissUntil: 0 });
      }
      let indexed = 0;
      for (let i = 0; i < 300 && indexed < 30; i++) {
        await pause(10);
        indexed = Number(await raw.sendCommand(["SCARD", "r83e:routes:index"]));
      }
      expect(indexed).toBe(30);
      await raw.sendCommand(["ACL", "SETUSER", "default", "-hgetall"]);
      await routes.reload();
      const refused = told.filter((e) => /NOPERM/.test(String(e)));
      // Before: 30 reports, each saying its key "holds what this store cannot read".
      expect(refused).toHaveLength(1);
      expect(String(refused[0])).toMatch(/30 keys/);
      expect(String(refused[0])).not.toMatch(/holds what this store cannot read/);
    } finally {
      await raw.sendCommand(["ACL", "SETUSER", "default", "+@all"]);
      await routes.close();
    }
  });

  it("R83-6: a run emitting, token by token, into a key something else took: told once for the run while it lasts, not once per batch", async () => {
    const told: unknown[] = [];
    const bus = await createRedisBus({ url: server.url, prefix: "r83f:", onError: (e) => told.push(e) });
    try {
      await raw.sendCommand(["SET", "r83f:run:taken", "not a stream"]);
      for (let i = 0; i < 20; i++) {
        bus.emit("taken", { kind: "output", text: `token ${i}` });
        await bus.flushed();
      }
      // Before: 20, one per batch.
      expect(told.filter((e) => /WRONGTYPE/.test(String(e)))).toHaveLength(1);
      // The key given back: the run's next events are written, and a later refusal is told anew.
      await raw.sendCommand(["DEL", "r83f:run:taken"]);
      bus.emit("taken", { kind: "output", text: "written" });
      await bus.flushed();
      expect((await bus.readHistory("taken")).map((e) => e.seq)).toEqual([21]);
      await raw.sendCommand(["DEL", "r83f:run:taken"]);
      await raw.sendCommand(["SET", "r83f:run:taken", "not a stream"]);
      bus.emit("taken", { kind: "output", text: "refused again" });
      await bus.flushed();
      expect(told.filter((e) => /WRONGTYPE/.test(String(e)))).toHaveLength(2);
    } finally {
      await bus.close();
    }
  });
});

describe("the frozen copy emit keeps and hands back (R83-3: without writing the event and reading it back)", () => {
  const asWritten = (event: object) => frozenFrom(JSON.stringify(event));
  const deeplyFrozen = (value: unknown): boolean =>
    typeof value !== "object" ||
    value === null ||
    (Object.isFrozen(value) && Object.values(value).every(deeplyFrozen));

  it("is the event as written and read back, frozen through, for any plain data", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.anything({ withNullPrototype: true, withObjectString: false }), {
          maxKeys: 6,
        }),
        fc.boolean(),
        (fields, proto) => {
          const event: Record<string, unknown> = { kind: "output", ...fields, seq: 3 };
          if (proto) Object.defineProperty(event, "__proto__", { value: { x: 1 }, enumerable: true });
          const copy = plainFrozen(event);
          // fc.anything never makes a toJSON, a class or a BigInt here: always copied.
          expect(copy).toBeDefined();
          expect(JSON.stringify(copy)).toBe(JSON.stringify(event));
          expect(copy).toStrictEqual(asWritten(event));
          expect(deeplyFrozen(copy)).toBe(true);
        },
      ),
      propertyRuns(300),
    );
  });

  it("writes what JSON writes: -0 as 0, NaN and Infinity as null, undefined, functions and holes left out or null", () => {
    const holed: unknown[] = [Infinity, undefined, () => 1];
    // A hole at 3, which JSON writes as null.
    holed[4] = 2;
    const event = {
      kind: "x",
      seq: 1,
      z: -0,
      n: Number.NaN,
      i: holed,
      u: undefined,
      f() {},
    };
    const copy = plainFrozen(event);
    expect(copy).toStrictEqual(asWritten(event));
    expect(Object.is((copy as unknown as { z: number }).z, 0)).toBe(true);
    expect(Object.hasOwn(copy as object, "u")).toBe(false);
  });

  it("leaves to the written text what plain data is not: a toJSON, a Date, a boxed string, a BigInt, a cycle or deep nesting", () => {
    const deep: Record<string, unknown> = {};
    let at = deep;
    for (let i = 0; i < 100; i++) at = at.a = {} as Record<string, unknown>;
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const odd of [
      { toJSON: () => ({ kind: "y", seq: 1 }) },
      { when: new Date(0) },
      { text: new String("s") },
      { big: 1n },
      { deep },
      { cyclic },
    ]) {
      expect(plainFrozen({ kind: "x", seq: 1, ...odd })).toBeUndefined();
    }
  });
});
