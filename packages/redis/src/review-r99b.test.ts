// Round 99 (b): the late-write rule compares an entry's `t` (when its event was emitted, by Redis's
// clock as the emitter's bus reckons it from the lead it learnt) with when the watcher subscribed
// (Redis's `TIME` then). r98b made the watcher see a clock stepped back; this is a clock stepped
// forward after an emitter learnt it: until the emitter learnt it again (a minute at most), its
// bound on each send read up to the step early, and so did every entry's `t`.

import { describe, expect, it } from "vitest";
import { busFixture } from "../test/bus-fixture.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { ClockRelay } from "../test/relay.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)(
  "a watcher resuming after a seq, Redis's clock stepped forward after the emitter learnt it (r99b)",
  () => {
    const redis = busFixture();
    const { bus, subscribed, newRun, earlierRunGone } = redis;

    it("a new run's events, emitted after the watcher subscribed, still end it with the notice", {
      timeout: 30_000,
    }, async () => {
      const relay = await ClockRelay.start(redis.server.port);
      try {
        // The emitter learns Redis's clock 5 s behind where it reads from now on: as if the server's
        // clock stepped 5 s forward after the emitter's bus learnt it.
        relay.behindUs = 5_000_000;
        const a = await bus("r99b-forward:", relay.url);
        const b = await bus("r99b-forward:");
        await earlierRunGone("r99b-forward:", 3);
        // Longer than the second a learnt clock is kept for a run's first write (never asserted on).
        await pause(1500);
        relay.behindUs = 0;
        const { reading } = await subscribed(b, 3);
        // A new run under the id, started after the watcher came: every entry emitted since.
        await newRun(a);
        // Was { seen: ["4:output", "5:output", "6:done"] }: stamped up to 5 s early, the new run's
        // events counted as emitted before the watcher subscribed — its reader's run's own, landing late.
        expect(await reading).toEqual({ seen: ["4:notice"], stopped: false });
      } finally {
        await relay.close();
      }
    });
  },
);
