// Review round 83 (redis): a run's key holding another type told once per run, not once per watcher;
// a failure of a kind of command that runs once (a reload after reconnecting) does not keep a later,
// separate failure of the same kind from being told. One redis-server for the file.
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, type RedisStoreError } from "./index.js";

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
});
