// Round 103 (c): r98b's clock-step test failed once under load. The watcher placed when it
// subscribed, by Redis's clock as it reads after the step, at its `TIME` now less the time this
// process saw pass from the subscribe's `TIME` answering to this one being asked: a bound that is
// late by both round trips, the second's whole wait included (a busy host, a slow link, a Redis
// busy with a script). A new run's entry emitted within that much of the subscribe counted as
// emitted before it — its reader's run's write landing late — and was read on, with no notice.

import { describe, expect, it } from "vitest";
import { busFixture } from "../test/bus-fixture.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { ClockRelay } from "../test/relay.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)(
  "a watcher whose Redis clock stepped back, its next TIME slow to reach Redis (r103c)",
  () => {
    const redis = busFixture();
    const { bus, subscribed, newRun, earlierRunGone } = redis;

    it("a new run's events written since still end it with the notice, however long that TIME took", {
      timeout: 30_000,
    }, async () => {
      const relay = await ClockRelay.start(redis.server.port);
      try {
        const prefix = "r103c-slow-time:";
        relay.behindUs = -5_000_000;
        const b = await bus(prefix, relay.url);
        const a = await bus(prefix);
        await earlierRunGone(prefix, 3);
        // Before the watcher asks Redis's clock as it subscribes: all it and the new run do from here
        // on, up to the new run written, takes no longer than `span` below.
        const from = performance.now();
        const { reading } = await subscribed(b, 3);
        relay.behindUs = 0;
        let span: number | undefined;
        // The watcher's next TIME (it asks one as it finds the new run's entries) held on its way to
        // Redis longer than everything since `from`: by the clock it reads then, less the time this
        // process saw pass while it waited, the subscribe came after every entry of the new run.
        relay.arm("TIME", async () => {
          const held = performance.now();
          await pause(1);
          while (span === undefined || performance.now() - held < span + 200) await pause(20);
        });
        await newRun(a);
        span = performance.now() - from;
        // Was { seen: ["4:output", "5:output", "6:done"] }: read on as its reader's run's own writes.
        expect(await reading).toEqual({ seen: ["4:notice"], stopped: false });
      } finally {
        await relay.close();
      }
    });
  },
);
