import type { Socket } from "node:net";
import type { SequencedEvent } from "@loopwright/events";
import { describe, expect, it } from "vitest";
import { busFixture } from "../test/bus-fixture.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { Relay } from "../test/relay.js";
import type { RedisEventBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

/**
 * A TCP relay on loopback in front of a real Redis that, on each connection, holds back the first
 * `XREVRANGE` sent after an `XREAD` — a watcher's look at the stream's top after an empty
 * `XREAD BLOCK` — until `whileHeld` has run, then relays it and all that came meanwhile. The write
 * `whileHeld` makes lands in that one round trip, every time.
 */
class IdleLookRelay extends Relay {
  /** How many looks have been held so far. */
  held = 0;
  private readonly links = new WeakMap<Socket, { readSent: boolean; done: boolean; queue?: Buffer[] }>();

  private constructor(
    port: number,
    target: number,
    private readonly whileHeld: () => Promise<void>,
  ) {
    super(port, target);
  }

  static async start(target: number, whileHeld: () => Promise<void>): Promise<IdleLookRelay> {
    const relay = new IdleLookRelay(await Relay.port(), target, whileHeld);
    await relay.listen();
    return relay;
  }

  protected override onChunk(chunk: Buffer, upstream: Socket, client: Socket): void {
    let link = this.links.get(client);
    if (!link) {
      link = { readSent: false, done: false };
      this.links.set(client, link);
    }
    if (link.queue) {
      link.queue.push(chunk);
      return;
    }
    const text = chunk.toString("latin1").toUpperCase();
    if (!link.done && link.readSent && text.includes("\r\nXREVRANGE\r\n")) {
      link.done = true;
      this.held++;
      const waiting: Buffer[] = [chunk];
      link.queue = waiting;
      const held = link;
      void this.whileHeld().finally(() => {
        held.queue = undefined;
        for (const part of waiting) upstream.write(part);
      });
      return;
    }
    if (text.includes("\r\nXREAD\r\n")) link.readSent = true;
    upstream.write(chunk);
  }
}

/** Reads a watcher to its end, or until `ms` pass (then says so in `abortedByTest`). */
async function readAll(bus: RedisEventBus, runId: string, ms: number, after: number) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  const seen: SequencedEvent[] = [];
  for await (const event of bus.watch(runId, controller.signal, { after })) seen.push(event);
  clearTimeout(timer);
  return { seen, abortedByTest: controller.signal.aborted };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)(
  "a watcher that has read nothing yet, looking at the stream's top while idle",
  () => {
    const redis = busFixture();
    const { bus, closing } = redis;

    it("reads the live run's next write that lands between its empty XREAD and that look, rather than take it for another run's", {
      timeout: 20_000,
    }, async () => {
      // A live run wrote three events; its stream was then evicted (or lost to a Redis restart).
      const host = await bus("race:");
      for (let i = 1; i <= 3; i++) host.emit("live", { kind: "output", text: `e${i}` });
      await host.flushed();
      await redis.raw.sendCommand(["DEL", "race:run:live"]);
      // A reader resumes after seq 3 (it read that far); the run writes seq 4 while the watcher's
      // first idle look at the top is on its way.
      const relay = await IdleLookRelay.start(redis.server.port, async () => {
        host.emit("live", { kind: "output", text: "e4" });
        await host.flushed();
      });
      closing.push(relay);
      const reader = await bus("race:", relay.url);
      const reading = readAll(reader, "live", 12_000, 3);
      while (relay.held === 0) await pause(50);
      await pause(1500);
      host.emit("live", { kind: "output", text: "e5" });
      host.emit("live", { kind: "done" });
      const { seen, abortedByTest } = await reading;
      expect(relay.held).toBe(1);
      expect(abortedByTest).toBe(false);
      // Was one notice "…was reading a run that ended and was started afresh under its id by another
      // emitter: at least 1 event was skipped" at seq 4, and the watch ended without the run's events.
      expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["4:output", "5:output", "6:done"]);
    });

    it("still ends with a notice when another emitter starts the id afresh below its position", {
      timeout: 20_000,
    }, async () => {
      const host = await bus("below:");
      for (let i = 1; i <= 3; i++) host.emit("job", { kind: "output", text: `old ${i}` });
      await host.flushed();
      await host.close();
      await redis.raw.sendCommand(["DEL", "below:run:job", "below:claim:job"]);
      const reader = await bus("below:");
      const reading = readAll(reader, "job", 12_000, 3);
      await pause(300);
      // Another process runs the id afresh: its entries, from seq 1, stay below the reader's position.
      const other = await bus("below:");
      other.emit("job", { kind: "output", text: "new 1" });
      other.emit("job", { kind: "output", text: "new 2" });
      await other.flushed();
      const { seen, abortedByTest } = await reading;
      expect(abortedByTest).toBe(false);
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ kind: "notice" });
      expect((seen[0] as { text?: string }).text).toMatch(/started afresh under its id by another emitter/);
    });

    /** A run `old:` wrote seq 1–3 and its stream is gone (expired, or evicted); its claim too. */
    const oldRunGone = async (prefix: string) => {
      const old = await bus(prefix);
      for (let i = 1; i <= 3; i++) old.emit("job", { kind: "output", text: `old ${i}` });
      await old.flushed();
      await old.close();
      await redis.raw.sendCommand(["DEL", `${prefix}run:job`, `${prefix}claim:job`]);
    };
    /** Another process's run of the same id, from seq 1, past the reader's position. */
    const newRun = async (other: RedisEventBus) => {
      for (let i = 1; i <= 5; i++) other.emit("job", { kind: "output", text: `NEW ${i}` });
      other.emit("job", { kind: "done" });
      await other.flushed();
    };
    const startedAfresh = (seen: SequencedEvent[]) => {
      expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["4:notice"]);
      expect((seen[0] as { text?: string }).text).toMatch(/started afresh under its id by another emitter/);
    };

    it("ends with a notice when a run started afresh passes its position while the idle look is on its way", {
      timeout: 20_000,
    }, async () => {
      await oldRunGone("fresh-look:");
      const other = await bus("fresh-look:");
      const relay = await IdleLookRelay.start(redis.server.port, () => newRun(other));
      closing.push(relay);
      const reader = await bus("fresh-look:", relay.url);
      const { seen, abortedByTest } = await readAll(reader, "job", 12_000, 3);
      expect(relay.held).toBe(1);
      expect(abortedByTest).toBe(false);
      // Not the new run's seq 4, 5 and done read as the old run's continuation.
      startedAfresh(seen);
    });

    it("ends with a notice when a run started afresh passes its position during its XREAD BLOCK", {
      timeout: 20_000,
    }, async () => {
      await oldRunGone("fresh-block:");
      const other = await bus("fresh-block:");
      const reader = await bus("fresh-block:");
      const reading = readAll(reader, "job", 12_000, 3);
      await pause(200);
      await newRun(other);
      const { seen, abortedByTest } = await reading;
      expect(abortedByTest).toBe(false);
      startedAfresh(seen);
    });

    for (const held of [1, 2]) {
      it(`ends with a notice when the stream it subscribed to held ${held} of a new run's entries below its position, and the new run then passes it`, {
        timeout: 20_000,
      }, async () => {
        const prefix = `fresh-below-${held}:`;
        await oldRunGone(prefix);
        const other = await bus(prefix);
        for (let i = 1; i <= held; i++) other.emit("job", { kind: "output", text: `NEW ${i}` });
        await other.flushed();
        const reader = await bus(prefix);
        const reading = readAll(reader, "job", 12_000, 3);
        await pause(200);
        for (let i = held + 1; i <= 5; i++) other.emit("job", { kind: "output", text: `NEW ${i}` });
        other.emit("job", { kind: "done" });
        await other.flushed();
        const { seen, abortedByTest } = await reading;
        expect(abortedByTest).toBe(false);
        // Not NEW 4, NEW 5 and the new run's `done` read as the old run's seq 4, 5 and 6.
        startedAfresh(seen);
      });
    }

    it("ends with a notice when the process that ran the id starts a new run under it past its position", {
      timeout: 20_000,
    }, async () => {
      const host = await bus("same-host:");
      for (let i = 1; i <= 3; i++) host.emit("job", { kind: "output", text: `old ${i}` });
      await host.flushed();
      // The run is over (its stream and claim deleted); a reader that read it to seq 3 resumes.
      host.endRun("job");
      await host.flushed();
      const reader = await bus("same-host:");
      const reading = readAll(reader, "job", 12_000, 3);
      await pause(200);
      await newRun(host);
      const { seen, abortedByTest } = await reading;
      expect(abortedByTest).toBe(false);
      startedAfresh(seen);
    });

    it("ends with a notice when a new run's first entries were trimmed away (a stream shorter than one flush)", {
      timeout: 20_000,
    }, async () => {
      // Nodes of two entries, so `XADD MAXLEN ~ 4` keeps the last two nodes of a run written at once.
      await redis.raw.sendCommand(["CONFIG", "SET", "stream-node-max-entries", "2"]);
      try {
        // A reader read an earlier run of the id up to seq 8; that run's stream is gone.
        const reader = await bus("fresh-trimmed:");
        const reading = readAll(reader, "job", 12_000, 8);
        await pause(200);
        const other = await bus("fresh-trimmed:", { maxStreamLength: 4 });
        for (let i = 1; i <= 9; i++) other.emit("job", { kind: "output", text: `NEW ${i}` });
        other.emit("job", { kind: "done" });
        await other.flushed();
        expect(
          ((await redis.raw.sendCommand(["XRANGE", "fresh-trimmed:run:job", "-", "+"])) as [string][]).map(
            (e) => e[0],
          ),
        ).toEqual(["7-0", "8-0", "9-0", "10-0"]);
        const { seen, abortedByTest } = await reading;
        expect(abortedByTest).toBe(false);
        // Not NEW 9 and the new run's `done` read as the earlier run's seq 9 and 10.
        expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["9:notice"]);
        expect((seen[0] as { text?: string }).text).toMatch(/started afresh under its id by another emitter/);
      } finally {
        await redis.raw.sendCommand(["CONFIG", "SET", "stream-node-max-entries", "100"]);
      }
    });

    it("tells an earlier version's entries (no resend mark) apart as that version did", {
      timeout: 20_000,
    }, async () => {
      // As an earlier version writes them: the event and the emitter's mark, nothing more.
      const write = async (key: string, token: string, seqs: number[]) => {
        for (const seq of seqs) {
          const event = { kind: seq === 8 ? "done" : "output", text: `e${seq}`, seq };
          await redis.raw.sendCommand(["XADD", key, `${seq}-0`, "e", JSON.stringify(event), "o", token]);
        }
      };
      const reader = await bus("earlier:");
      // A stream missing at subscribe: a batch resent from seq 4 is the run going on...
      const resent = readAll(reader, "resent", 12_000, 6);
      // ...and one whose first entry is 1-0 is a new run's.
      const fresh = readAll(reader, "fresh", 12_000, 6);
      await pause(300);
      await write("earlier:run:resent", "tok-a", [4, 5, 6, 7, 8]);
      await write("earlier:run:fresh", "tok-b", [1, 2, 3, 4, 5, 6, 7, 8]);
      const [onResent, onFresh] = await Promise.all([resent, fresh]);
      expect(onResent.abortedByTest).toBe(false);
      expect(onResent.seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["7:output", "8:done"]);
      expect(onFresh.abortedByTest).toBe(false);
      expect(onFresh.seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["7:notice"]);
    });

    it("reads on when the stream it subscribed to holds its own run's earlier entries only (restored from an older snapshot)", {
      timeout: 20_000,
    }, async () => {
      const host = await bus("restored:");
      for (let i = 1; i <= 5; i++) host.emit("live", { kind: "output", text: `e${i}` });
      await host.flushed();
      // The reader read up to seq 5; Redis came back holding the stream as it was at seq 3.
      await redis.raw.sendCommand(["XDEL", "restored:run:live", "4-0", "5-0"]);
      const reader = await bus("restored:");
      const reading = readAll(reader, "live", 12_000, 5);
      await pause(1500);
      host.emit("live", { kind: "output", text: "e6" });
      host.emit("live", { kind: "done" });
      const { seen, abortedByTest } = await reading;
      expect(abortedByTest).toBe(false);
      expect(seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["6:output", "7:done"]);
    });
  },
);
