// Round 97 (d): the late-write rule of r96c (a watcher resuming `after` a seq its emitter handed out
// takes a first send emitted before it subscribed, landing at or below its position, for its own
// run's), tried where the reader's position is not that run's, and where the emitter's idea of
// Redis's clock is another server's.

import { createClient } from "@redis/client";
import { describe, expect, it } from "vitest";
import { busFixture, until } from "../test/bus-fixture.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { ClockRelay } from "../test/relay.js";
import { createRedisBus, type RedisEventBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)("a watcher resuming after a seq, a run's writes landing late (r97d)", () => {
  const redis = busFixture();
  const { bus, subscribed, earlierRunGone } = redis;

  /**
   * `emitter` emits `inFlight` while Redis holds writes back (`CLIENT PAUSE … WRITE`), `b` resumes
   * `after` meanwhile (100 ms later, as a reconnecting page would); then the writes land, and once
   * the watcher has looked at the stream idle (each `XREAD BLOCK` waits a second) `emitter` emits
   * `later` and its `done`.
   */
  const resumeWhileInFlight = async (
    emitter: RedisEventBus,
    b: RedisEventBus,
    steps: { inFlight: string[]; after: number; later: string[] },
  ) => {
    await redis.raw.sendCommand(["CLIENT", "PAUSE", "20000", "WRITE"]);
    let reading: Promise<{ seen: string[]; stopped: boolean }>;
    try {
      for (const text of steps.inFlight) emitter.emit("job", { kind: "output", text });
      await pause(100);
      ({ reading } = await subscribed(b, steps.after));
    } finally {
      await redis.raw.sendCommand(["CLIENT", "UNPAUSE"]);
    }
    await emitter.flushed();
    await pause(1500);
    for (const text of steps.later) emitter.emit("job", { kind: "output", text });
    emitter.emit("job", { kind: "done" });
    await emitter.flushed();
    return reading;
  };

  it("a position far above anything handed out: the watcher ends with the notice, not waiting past the run's done", {
    timeout: 20_000,
  }, async () => {
    const a = await bus("r97d-far:");
    const b = await bus("r97d-far:");
    a.emit("job", { kind: "output", text: "one" });
    await a.flushed();
    const read = await resumeWhileInFlight(a, b, {
      inFlight: ["two", "three"],
      after: 1_000,
      later: ["four"],
    });
    // Was { seen: [], stopped: true }: the late write of seq 3 was taken for the reader's run, and the
    // watcher waited for seqs above 1000 past the run's done (seq 5), until its caller gave up.
    expect(read).toEqual({ seen: ["1001:notice"], stopped: false });
  });

  it("a position from an earlier, longer run whose stream is gone: the run under way now ends the watcher with the notice", {
    timeout: 20_000,
  }, async () => {
    const a = await bus("r97d-longer:");
    const b = await bus("r97d-longer:");
    await earlierRunGone("r97d-longer:", 8);
    // A new run under the id, under way: two events written, one in flight as the reader comes back.
    for (const text of ["NEW 1", "NEW 2"]) a.emit("job", { kind: "output", text });
    await a.flushed();
    const read = await resumeWhileInFlight(a, b, { inFlight: ["NEW 3"], after: 8, later: ["NEW 4"] });
    // Was { seen: [], stopped: true }: NEW 3 landing late was taken for the reader's run's own write.
    expect(read).toEqual({ seen: ["9:notice"], stopped: false });
  });

  it("the reader's own run written in two batches, the first below its position: it reads on", {
    timeout: 20_000,
  }, async () => {
    const a = await bus("r97d-split:");
    const b = await bus("r97d-split:");
    // A batch holds 512 events at most: the first lands below the position, the second reaches it.
    const texts = Array.from({ length: 600 }, (_, i) => `event ${i + 1}`);
    const read = await resumeWhileInFlight(a, b, { inFlight: texts, after: 550, later: ["more"] });
    const rest = Array.from({ length: 51 }, (_, i) => `${551 + i}:output`);
    expect(read).toEqual({ seen: [...rest, "602:done"], stopped: false });
  });

  it("after a reconnect to a server whose clock runs ahead, a new run's writes before the clock is learnt again still end the watcher", {
    timeout: 20_000,
  }, async () => {
    const relay = await ClockRelay.start(redis.server.port);
    try {
      // The emitter learns the clock of the server it reaches first: 5 s behind Redis's own.
      relay.behindUs = 5_000_000;
      const other = await bus("r97d-clock:", relay.url);
      const b = await bus("r97d-clock:");
      await earlierRunGone("r97d-clock:", 3);
      // A failover: the emitter reconnects to a server on Redis's own clock, whose TIME is slow to answer.
      relay.behindUs = 0;
      let answer = () => {};
      const answered = new Promise<void>((resolve) => {
        answer = resolve;
      });
      relay.arm("TIME", () => answered);
      const sentBeforeDrop = relay.sent.length;
      relay.drop();
      await until(() => relay.sent.slice(sentBeforeDrop).includes("\r\nTIME\r\n"));
      const { reading } = await subscribed(b, 3);
      const sentBefore = relay.sent.length;
      for (let i = 1; i <= 5; i++) other.emit("job", { kind: "output", text: `NEW ${i}` });
      other.emit("job", { kind: "done" });
      // The run's batch goes out behind the held TIME (with what the emitter knew of the clock then).
      await until(() => /EVAL/i.test(relay.sent.slice(sentBefore)));
      answer();
      await other.flushed();
      // Was { seen: ["4:output", "5:output", "6:done"] }: written with the first server's clock, the
      // new run's events counted as emitted 5 s before the watcher subscribed — its reader's own.
      expect(await reading).toEqual({ seen: ["4:notice"], stopped: false });
    } finally {
      await relay.close();
    }
  });
});

describe.skipIf(!HAS_REDIS)("a server that will not run TIME (renamed away) (r97d)", () => {
  it("the bus asks for Redis's clock at connect, not again with every write", {
    timeout: 20_000,
  }, async () => {
    const server = await RedisServer.start(["--rename-command", "TIME", ""]);
    const relay = await ClockRelay.start(server.port);
    const raw = createClient({ url: server.url, RESP: 2 });
    raw.on("error", () => {});
    const bus = await createRedisBus({ url: relay.url, prefix: "r97d-notime:", onError: () => {} });
    try {
      await raw.connect();
      const asked = () => relay.sent.split("\r\nTIME\r\n").length - 1;
      const atConnect = asked();
      for (let i = 1; i <= 20; i++) {
        bus.emit("job", { kind: "output", text: `event ${i}` });
        await bus.flushed();
      }
      // Was 20 more (one a write): finding the clock never learnt, each write asked again, refused.
      expect(asked() - atConnect).toBe(0);
      expect(await raw.sendCommand(["XLEN", "r97d-notime:run:job"])).toBe(20);
    } finally {
      await bus.close();
      raw.destroy();
      await relay.close();
      await server.kill();
    }
  });
});
