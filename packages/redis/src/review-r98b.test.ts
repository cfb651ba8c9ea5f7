// Round 98 (b): the late-write rule (r96c, r97d) compares when an entry's event was emitted, by the
// clock of the server that wrote it, with when the watcher subscribed, by the clock of the server it
// asked then. Tried where those two readings are not of one clock: the server's clock stepped back
// after the watcher subscribed (a correction of its time), or the watcher reconnected to a server
// whose clock runs behind the first's (a failover). And a reconnect in the middle of the `TIME`
// round trips a bus asks as it starts (d1a69ada's three), which found the bus half made.

import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { busFixture, until } from "../test/bus-fixture.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { ClockRelay } from "../test/relay.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A `ClockRelay` that drops the connection the bus's second `TIME` comes on (one of the round trips
 * a bus asks as it starts) before sending it, and, once armed (`holdSubscribe`), holds the bus's
 * `SUBSCRIBE` until the command connection is back and has asked `TIME` again (its 'ready'), so
 * the reconnect comes while the bus is still starting.
 */
class DropAtSecondTime extends ClockRelay {
  times = 0;
  holdSubscribe(): void {
    this.arm("SUBSCRIBE", () => until(() => this.times >= 3));
  }
  protected override onChunk(chunk: Buffer, upstream: Socket, client: Socket): void {
    if (/\r\nTIME\r\n/i.test(chunk.toString("latin1")) && ++this.times === 2) {
      client.destroy();
      return;
    }
    super.onChunk(chunk, upstream, client);
  }
}

describe.skipIf(!HAS_REDIS)(
  "a watcher resuming after a seq, Redis's clock behind where it read at subscribe (r98b)",
  () => {
    const redis = busFixture();
    const { bus, subscribed, newRun, earlierRunGone, watcherWaits } = redis;

    const ways = [
      {
        how: "the server's clock set back 5 s after the watcher subscribed",
        prefix: "r98b-step:",
        failover: false,
      },
      {
        how: "the watcher's reconnect to a server whose clock runs 5 s behind",
        prefix: "r98b-failover:",
        failover: true,
      },
    ];
    for (const { how, prefix, failover } of ways) {
      it(`${how}: a new run's events written since still end it with the notice`, {
        timeout: 20_000,
      }, async () => {
        const relay = await ClockRelay.start(redis.server.port);
        try {
          // The watcher's server reads 5 s ahead of Redis's own clock as the watcher subscribes.
          relay.behindUs = -5_000_000;
          const b = await bus(prefix, relay.url);
          const a = await bus(prefix);
          await earlierRunGone(prefix, 3);
          const { reading } = await subscribed(b, 3);
          relay.behindUs = 0;
          if (failover) {
            relay.drop();
            await pause(200);
            await until(watcherWaits);
            expect(await watcherWaits()).toBe(true);
          }
          // A new run under the id, started after the watcher came: every entry emitted since.
          await newRun(a);
          // Was { seen: ["4:output", "5:output", "6:done"] }: stamped by the clock as it reads since, the
          // new run's events counted as emitted before the watcher subscribed — its reader's run's own.
          expect(await reading).toEqual({ seen: ["4:notice"], stopped: false });
        } finally {
          await relay.close();
        }
      });
    }

    it("a reconnect while createRedisBus starts: nothing escapes it as an unhandled rejection, and the bus writes", {
      timeout: 20_000,
    }, async () => {
      const relay = await DropAtSecondTime.start(redis.server.port);
      const escaped: unknown[] = [];
      const onUnhandled = (reason: unknown) => escaped.push(reason);
      process.on("unhandledRejection", onUnhandled);
      try {
        relay.holdSubscribe();
        const emitter = await bus("r98b-start:", relay.url);
        await pause(100);
        // Was a ReferenceError ("Cannot access 'settle' before initialization"), unhandled: the
        // reconnect's 'ready' flushed the bus's owed work before the bus had finished starting. A
        // host's process ends on an unhandled rejection (Node's default).
        expect(escaped.map(String)).toEqual([]);
        for (let i = 1; i <= 3; i++) emitter.emit("job", { kind: "output", text: `event ${i}` });
        await emitter.flushed();
        expect(await redis.raw.sendCommand(["XLEN", "r98b-start:run:job"])).toBe(3);
      } finally {
        process.off("unhandledRejection", onUnhandled);
        await relay.close();
      }
    });
  },
);
