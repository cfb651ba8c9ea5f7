import { createCalibration } from "@loopwright/ledger";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisCalibration, type RedisCalibration } from "./calibration.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const ENDPOINT = "http://r94m.test/v1";
const body = (chars: number) => ({ messages: [{ role: "user" as const, content: "x".repeat(chars) }] });
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Two readings on one instance, then Redis restarted empty (no persistence) before, while or after
// their writes land. A write cut by the restart is held and sent again once the link is back; the
// instance also writes back, after its reload, each list Redis no longer holds. The held write used
// to land first and alone: the reload then found the list, wrote nothing back, and the first reading
// was gone from Redis and, once reloaded, from every instance — a host started after the restart
// divided by the second reading only.
describe.skipIf(!HAS_REDIS)("two readings, then a Redis restart", () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(async () => {
    await redis.kill();
  });

  /**
   * When Redis restarts: `between` runs after the first reading is taken, `settle` after the
   * second. A paused Redis takes the write and never answers it: it is cut on the wire.
   */
  const timings: [
    string,
    (other: RedisCalibration) => Promise<unknown>,
    (other: RedisCalibration) => Promise<unknown>,
  ][] = [
    ["before their writes are sent", async () => {}, async () => {}],
    ["while their writes are on the wire", async () => {}, () => pause(0)],
    [
      "while the second write is unanswered",
      async (other) => {
        await waitFor(() => other.charsPerTokenFor(ENDPOINT, "m") === 8);
        redis.pause();
      },
      async () => {},
    ],
    ["while both writes are unanswered", async () => redis.pause(), async () => {}],
    [
      "after their writes land",
      async () => {},
      () => waitFor(async () => (await listsHeld()).includes("8,2")),
    ],
  ];

  /** The calibration lists Redis holds, each as its readings joined by commas. */
  async function listsHeld(): Promise<string[]> {
    const client = createClient({ url: redis.url, RESP: 2 });
    await client.connect();
    try {
      const keys = (await client.sendCommand(["KEYS", "r94m-*"])) as string[];
      const lists: string[] = [];
      for (const key of keys)
        if (String(await client.sendCommand(["TYPE", key])) === "list")
          lists.push(((await client.sendCommand(["LRANGE", key, "0", "-1"])) as string[]).join(","));
      return lists;
    } finally {
      await client.quit();
    }
  }

  /** Looks every 10 ms, `rounds` looks at most (bounded, never timed). */
  async function waitFor(ready: () => boolean | Promise<boolean>, rounds = 500): Promise<void> {
    for (let i = 0; i < rounds && !(await ready()); i++) await pause(10);
  }

  for (const [when, between, settle] of timings) {
    it(`a host started after the restart divides by both (restart ${when})`, async () => {
      const prefix = `r94m-${timings.findIndex(([w]) => w === when)}:`;
      const first = await createRedisCalibration({ url: redis.url, prefix, onError: () => {} });
      const other = await createRedisCalibration({ url: redis.url, prefix, onError: () => {} });
      const model = createCalibration();
      try {
        // 8 characters a token first (the divisor: the largest of the last four), then 2.
        const readings = [
          [8000, 1000],
          [6000, 3000],
        ] as const;
        for (const [i, [chars, tokens]] of readings.entries()) {
          const wanted = model.calibrate(ENDPOINT, "m", body(chars), tokens);
          expect(first.calibrate(ENDPOINT, "m", body(chars), tokens)).toBe(wanted);
          if (i === 0) await between(other);
        }
        const divisor = model.charsPerTokenFor(ENDPOINT, "m");
        await settle(other);
        await redis.kill();
        await redis.start();
        let seen = 0;
        await waitFor(async () => {
          const late = await createRedisCalibration({ url: redis.url, prefix, onError: () => {} });
          seen = late.charsPerTokenFor(ENDPOINT, "m");
          await late.close();
          return seen === divisor;
        });
        expect(seen, "a host started after the restart").toBe(divisor);
        expect(first.charsPerTokenFor(ENDPOINT, "m"), "the instance that took them").toBe(divisor);
        // Where Redis was paused before the first reading reached it, the other instance has heard
        // neither: it learns them from the writes sent after the restart, a little after the late
        // host reads them (the bound look, as above; a stuck instance still fails).
        await waitFor(() => other.charsPerTokenFor(ENDPOINT, "m") === divisor);
        expect(other.charsPerTokenFor(ENDPOINT, "m"), "another instance").toBe(divisor);
      } finally {
        await first.close();
        await other.close();
      }
    }, 60_000);
  }
});
