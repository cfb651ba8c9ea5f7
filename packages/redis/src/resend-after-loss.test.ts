import type { Socket } from "node:net";
import type { SequencedEvent } from "@loopwright/events";
import { describe, type ExpectStatic, it } from "vitest";
import { busFixture } from "../test/bus-fixture.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { Relay } from "../test/relay.js";
import type { RedisEventBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

/**
 * A TCP relay on loopback in front of a real Redis that, once armed, lets the next script call
 * (`EVALSHA`/`EVAL`, an emitter's append) reach Redis but drops Redis's answer and cuts the
 * connection — as when Redis goes down right after applying a write — and refuses connections until
 * `reopen()`. The emitter gets no answer, so it sends the batch again once it reconnects.
 */
class AnswerLossRelay extends Relay {
  private armed = false;
  private refusing = false;
  /** Resolves once an armed script call has reached Redis and its connection was cut. */
  cut: Promise<void> = Promise.resolve();
  private onCut: () => void = () => {};

  static async start(target: number): Promise<AnswerLossRelay> {
    const relay = new AnswerLossRelay(await Relay.port(), target);
    await relay.listen();
    return relay;
  }

  arm(): void {
    this.armed = true;
    this.cut = new Promise((resolve) => {
      this.onCut = resolve;
    });
  }

  reopen(): void {
    this.refusing = false;
  }

  protected override admit(): boolean {
    return !this.refusing;
  }

  protected override onChunk(chunk: Buffer, upstream: Socket, client: Socket): void {
    if (this.armed && /\r\nEVAL(SHA)?\r\n/.test(chunk.toString("latin1").toUpperCase())) {
      this.armed = false;
      this.refusing = true;
      // Redis runs the script; its answer never reaches the emitter.
      upstream.unpipe(client);
      upstream.write(chunk);
      setTimeout(() => {
        upstream.destroy();
        client.destroy();
        this.onCut();
      }, 200);
      return;
    }
    upstream.write(chunk);
  }
}

/**
 * A relay in front of the file's Redis for one reader bus, counting the `XREAD`s its connections
 * send: a watcher sends its first once its look at subscribe (is the stream there, whose entries)
 * is done, so a test can write what the watcher must meet after subscribing, however loaded the
 * machine (a fixed pause was met too early under load).
 */
class ReadCountRelay extends Relay {
  private reads = 0;
  private readonly waiters: { past: number; resolve: () => void }[] = [];

  static async start(target: number): Promise<ReadCountRelay> {
    const relay = new ReadCountRelay(await Relay.port(), target);
    await relay.listen();
    return relay;
  }

  /** How many `XREAD`s have been sent so far. */
  get sent(): number {
    return this.reads;
  }

  /** Resolves once more than `past` `XREAD`s have been sent. */
  readsPast(past: number): Promise<void> {
    if (this.reads > past) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ past, resolve }));
  }

  protected override onChunk(chunk: Buffer, upstream: Socket): void {
    this.reads += chunk.toString("latin1").toUpperCase().split("\r\nXREAD\r\n").length - 1;
    for (const waiter of this.waiters.filter((w) => this.reads > w.past)) {
      this.waiters.splice(this.waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    upstream.write(chunk);
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Each test has its own key prefix (and its own relay) on the file's Redis, and mostly waits for an
// idle look or a reconnect: the tests run side by side, asserting with their context's `expect`.
describe.skipIf(!HAS_REDIS)(
  "a watcher resuming past the stream's top while the run's emitter sends again a batch Redis lost",
  { concurrent: true },
  () => {
    const redis = busFixture();
    const { bus, closing } = redis;

    /** Each reader bus's relay (see `readerBus`). */
    const relays = new WeakMap<RedisEventBus, ReadCountRelay>();

    /** A bus on `prefix` connected through a relay of its own that counts its `XREAD`s. */
    const readerBus = async (prefix: string) => {
      const relay = await ReadCountRelay.start(redis.server.port);
      closing.push(relay);
      const reader = await bus(prefix, relay.url);
      relays.set(reader, relay);
      return reader;
    };

    const ids = async (key: string) =>
      ((await redis.raw.sendCommand(["XRANGE", key, "-", "+"])) as [string, string[]][]).map((e) => e[0]);

    /**
     * An emitter (through the relay) writes seq 1–`answered` (3 unless told), then the rest up to 6
     * in a batch whose answer is lost: Redis applied it, so a reader read up to 6. Redis then comes
     * back holding the stream's entries up to `keep` (an older snapshot, AOF `everysec`, a replica
     * one batch behind: the stream's last id is `keep`-0; none at all after a restart without
     * persistence), as `DEL` and `XADD` of the kept entries with their own fields leave it. Answers
     * the emitter, not yet let back in.
     */
    const lostBatch = async (
      expect: ExpectStatic,
      prefix: string,
      keep: number,
      answered = 3,
      beforeLoss: () => Promise<void> = async () => {},
    ) => {
      // The file's Redis holds the bus's scripts before the batch whose answer is lost, so that batch
      // is applied (EVALSHA), not answered NOSCRIPT with nothing written. Run one after another, an
      // earlier test loaded them; side by side, or alone, this one may be the first to write.
      const warm = await bus(`${prefix}warm:`);
      warm.emit("warm", { kind: "output", text: "w" });
      await warm.flushed();
      const relay = await AnswerLossRelay.start(redis.server.port);
      closing.push(relay);
      const emitter = await bus(prefix, relay.url);
      for (let i = 1; i <= answered; i++) emitter.emit("job", { kind: "output", text: `e${i}` });
      await emitter.flushed();
      relay.arm();
      for (let i = answered + 1; i <= 6; i++) emitter.emit("job", { kind: "output", text: `e${i}` });
      await relay.cut;
      const key = `${prefix}run:job`;
      expect(await ids(key)).toEqual(["1-0", "2-0", "3-0", "4-0", "5-0", "6-0"]);
      await beforeLoss();
      await loseAllBut(key, keep);
      return { emitter, relay, key };
    };

    /** Redis comes back (again) holding the stream's entries up to `keep` only (none: no stream). */
    const loseAllBut = async (key: string, keep: number) => {
      const kept = (await redis.raw.sendCommand(["XRANGE", key, "-", `${keep}-0`])) as [string, string[]][];
      await redis.raw.sendCommand(["DEL", key]);
      for (const [id, fields] of keep > 0 ? kept : [])
        await redis.raw.sendCommand(["XADD", key, id, ...fields]);
      if (keep > 0 && kept.length > 0) await redis.raw.sendCommand(["PEXPIRE", key, "3600000"]);
    };

    /** Reads `after: 6` (or the id `after`) until the watcher ends or `ms` pass. */
    const watchAfter6 = (reader: RedisEventBus, ms: number, after: number | string = 6) => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), ms);
      const seen: SequencedEvent[] = [];
      const relay = relays.get(reader);
      const before = relay?.sent ?? 0;
      const ended = (async () => {
        for await (const event of reader.watch("job", controller.signal, { after })) seen.push(event);
        clearTimeout(timer);
      })();
      // Its look at subscribe done: its first XREAD sent (a reader made without a relay: a pause).
      const subscribed = relay ? relay.readsPast(before) : pause(300);
      return { seen, ended, subscribed, aborted: () => controller.signal.aborted };
    };

    /**
     * The emitter is let back in and sends its lost batch again; then it writes seq 7 and its `done`.
     * The reader, resuming `after: 6`, reads those two and ends — not "started afresh under its id by
     * another emitter": it is the same run going on. `stored` is what the stream holds after the resend.
     */
    const readsOnAfterResend = async (
      expect: ExpectStatic,
      setup: { emitter: RedisEventBus; relay: AnswerLossRelay; key: string },
      reader: RedisEventBus,
      stored: string[],
      meanwhile: () => Promise<void> = async () => {},
      after: number | string = 6,
    ) => {
      const { emitter, relay, key } = setup;
      const watching = watchAfter6(reader, 12_000, after);
      await watching.subscribed;
      await meanwhile();
      relay.reopen();
      // The emitter reconnects and sends its batch again; let the reader's idle look see it.
      await pause(2500);
      expect(await ids(key)).toEqual(stored);
      emitter.emit("job", { kind: "output", text: "e7" });
      emitter.emit("job", { kind: "done" });
      await emitter.flushed();
      await watching.ended;
      expect(watching.aborted()).toBe(false);
      expect(watching.seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["7:output", "8:done"]);
    };

    const six = ["1-0", "2-0", "3-0", "4-0", "5-0", "6-0"];

    for (const [name, keep] of [
      ["restored from an older snapshot", 3],
      ["lost with a restart without persistence", 0],
    ] as const) {
      it(`reads the run's next events after its resent batch, the stream ${name}`, {
        timeout: 20_000,
      }, async ({ expect }) => {
        const prefix = `resend-${keep}:`;
        const stored = [...(keep > 0 ? ["1-0", "2-0", "3-0"] : []), "4-0", "5-0", "6-0"];
        await readsOnAfterResend(
          expect,
          await lostBatch(expect, prefix, keep),
          await readerBus(prefix),
          stored,
        );
      });
    }

    /** Writes entries as the bus does (event, emitter token, resend mark), straight to Redis. */
    const writeRaw = async (key: string, token: string, resent: "0" | "1", seqs: number[]) => {
      for (const seq of seqs) {
        const event = { kind: seq === 8 ? "done" : "output", text: `${token} ${seq}`, seq };
        const done = seq === 8 ? ["end", "1"] : [];
        await redis.raw.sendCommand([
          "XADD",
          key,
          `${seq}-0`,
          "e",
          JSON.stringify(event),
          "o",
          token,
          "r",
          resent,
          ...done,
        ]);
      }
    };

    /**
     * `reader` resumes `after: 6`; once it waits, `then` writes. The reader ends with one notice at
     * seq 7 that the run was started afresh (not the written seq 7 and `done` read as its run's).
     */
    const endsStartedAfresh = async (
      expect: ExpectStatic,
      reader: RedisEventBus,
      then: () => Promise<void>,
      after: number | string = 6,
    ) => {
      const watching = watchAfter6(reader, 12_000, after);
      await watching.subscribed;
      await then();
      await watching.ended;
      expect(watching.aborted()).toBe(false);
      expect(watching.seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["7:notice"]);
      expect((watching.seen[0] as { text?: string }).text).toMatch(
        /started afresh under its id by another emitter/,
      );
    };

    it("ends with a notice when, the stream missing at subscribe and its run not read here, a new run's first batch comes marked as sent again (r44 #3)", {
      timeout: 20_000,
    }, async ({ expect }) => {
      const prefix = "resend-new-missing:";
      // Another emitter's new run, whose first write got no answer: it sends seq 1–8 again.
      await endsStartedAfresh(expect, await readerBus(prefix), () =>
        writeRaw(`${prefix}run:job`, "tok-new", "1", [1, 2, 3, 4, 5, 6, 7, 8]),
      );
    });

    it("ends with a notice when the batch Redis lost (a restart without persistence) was the run's first, sent again from 1-0, though this process read the run (r43, r47 F2)", {
      timeout: 20_000,
    }, async ({ expect }) => {
      const prefix = "resend-first:";
      const reader = await readerBus(prefix);
      // A watcher of the reader's process reads the run to seq 6, then its page goes (and comes back).
      const readTo6 = (async () => {
        const seqs: number[] = [];
        for await (const event of reader.watch("job")) {
          seqs.push(event.seq);
          if (event.seq === 6) break;
        }
        return seqs;
      })();
      const { emitter, relay } = await lostBatch(expect, prefix, 0, 0, async () => {
        expect(await readTo6).toEqual([1, 2, 3, 4, 5, 6]);
      });
      // From a bare position the watcher cannot tell this batch from a new run's first batch sent
      // again (see the next test): it ends rather than risk reading another run as its reader's.
      await endsStartedAfresh(expect, reader, async () => {
        relay.reopen();
        await emitter.flushed();
      });
    });

    it("ends with a notice when, the stream missing at subscribe, another run this process read sends its first batch again past the reader's position (r47 F2)", {
      timeout: 20_000,
    }, async ({ expect }) => {
      const prefix = "resend-other-read:";
      const key = `${prefix}run:job`;
      const reader = await readerBus(prefix);
      // Run B is read here to seq 7 by one page; then Redis loses its stream.
      await writeRaw(key, "tok-B", "0", [1, 2, 3, 4, 5, 6, 7]);
      const readB: number[] = [];
      for await (const event of reader.watch("job")) {
        readB.push(event.seq);
        if (event.seq === 7) break;
      }
      expect(readB).toEqual([1, 2, 3, 4, 5, 6, 7]);
      await redis.raw.sendCommand(["DEL", key]);
      // Another page resumes after seq 6 of run A (its Last-Event-ID from another instance, or an
      // earlier run); run B's emitter sends its first batch again, with its done.
      // Not run B's seq 7 and `done` read as run A's next events.
      await endsStartedAfresh(expect, reader, () => writeRaw(key, "tok-B", "1", [1, 2, 3, 4, 5, 6, 7, 8]));
    });

    it("ends with a notice when a new run's batch marked as sent again carries another token than the old run's entries it subscribed to (r44 #4)", {
      timeout: 20_000,
    }, async ({ expect }) => {
      const prefix = "resend-new-held:";
      const key = `${prefix}run:job`;
      // The stream holds the old run's seq 1–3 (say restored from a snapshot); its reader read to 6.
      await writeRaw(key, "tok-old", "0", [1, 2, 3]);
      // The old run is over; another emitter starts the id afresh, its first write sent again.
      await endsStartedAfresh(expect, await readerBus(prefix), async () => {
        await redis.raw.sendCommand(["DEL", key]);
        await writeRaw(key, "tok-new", "1", [1, 2, 3, 4, 5, 6, 7, 8]);
      });
    });

    it("reads on when the stream held only the run's seq 1 at subscribe and the run sends its lost batch after it", {
      timeout: 20_000,
    }, async ({ expect }) => {
      const prefix = "resend-after-1:";
      await readsOnAfterResend(expect, await lostBatch(expect, prefix, 1, 1), await readerBus(prefix), six);
    });

    it("reads on when Redis lost the stream once more after the watcher subscribed, before the batch came again", {
      timeout: 20_000,
    }, async ({ expect }) => {
      const prefix = "resend-twice:";
      const setup = await lostBatch(expect, prefix, 3);
      // The watcher subscribes to seq 1–3 (a snapshot); then a second restart loses those too.
      await readsOnAfterResend(expect, setup, await readerBus(prefix), ["4-0", "5-0", "6-0"], () =>
        loseAllBut(setup.key, 0),
      );
    });

    it("still ends with a notice when another emitter's run written since passes its position", {
      timeout: 20_000,
    }, async ({ expect }) => {
      const prefix = "resend-other:";
      const { relay, key } = await lostBatch(expect, prefix, 3);
      const reader = await readerBus(prefix);
      const watching = watchAfter6(reader, 12_000);
      await watching.subscribed;
      // The old run ends and another emitter starts the id afresh before the first one is back.
      await redis.raw.sendCommand(["DEL", key]);
      const other = await bus(prefix);
      for (let i = 1; i <= 7; i++) other.emit("job", { kind: "output", text: `NEW ${i}` });
      other.emit("job", { kind: "done" });
      await other.flushed();
      await watching.ended;
      relay.reopen();
      expect(watching.aborted()).toBe(false);
      expect(watching.seen.map((e) => e.kind)).toEqual(["notice"]);
      expect((watching.seen[0] as { text?: string }).text).toMatch(
        /started afresh under its id by another emitter/,
      );
    });

    /** A watcher of `reader` reads the run from its start to seq `to`; answers the id of that event. */
    const idAt = async (reader: RedisEventBus, to: number) => {
      const stream = reader.watch("job");
      for await (const event of stream) if (event.seq === to) return stream.idOf(event);
      throw new Error(`the run ended before seq ${to}`);
    };

    it("reads on through the run's first batch sent again from 1-0 after Redis lost the stream, resuming from the event id a watcher handed out (r43)", {
      timeout: 20_000,
    }, async ({ expect }) => {
      const prefix = "resend-first-id:";
      let id = "";
      const setup = await lostBatch(expect, prefix, 0, 0, async () => {
        // Another process's watcher read the run to seq 6; its page keeps the id of seq 6.
        id = await idAt(await bus(prefix), 6);
      });
      expect(id).toMatch(/^6:[A-Za-z0-9_-]+$/);
      await readsOnAfterResend(expect, setup, await readerBus(prefix), six, async () => {}, id);
    });

    it("ends with a notice when the run's first batch is sent again from 1-0 and the reader resumes from a bare seq given as a string (the old rule)", {
      timeout: 20_000,
    }, async ({ expect }) => {
      const prefix = "resend-first-bare:";
      const { emitter, relay } = await lostBatch(expect, prefix, 0, 0);
      await endsStartedAfresh(
        expect,
        await readerBus(prefix),
        async () => {
          relay.reopen();
          await emitter.flushed();
        },
        "6",
      );
    });

    for (const [name, token] of [
      ["another run's", "tok-A"],
      ["a made-up", "Zm9yZ2VkLXRva2Vu"],
    ] as const) {
      it(`ends with a notice when, the stream missing at subscribe, a new run sends its first batch again and the reader's id names ${name} token (r44 #3, r47 F2)`, {
        timeout: 20_000,
      }, async ({ expect }) => {
        const prefix = `resend-id-${token}:`;
        const key = `${prefix}run:job`;
        const reader = await readerBus(prefix);
        // This process reads run B to 7; Redis loses its stream; B sends its first batch again.
        await writeRaw(key, "tok-B", "0", [1, 2, 3, 4, 5, 6, 7]);
        expect(await idAt(reader, 7)).toBe("7:tok-B");
        await redis.raw.sendCommand(["DEL", key]);
        await endsStartedAfresh(
          expect,
          reader,
          () => writeRaw(key, "tok-B", "1", [1, 2, 3, 4, 5, 6, 7, 8]),
          `6:${token}`,
        );
      });
    }

    it("ends with a notice when the stream holds, at subscribe, another run's entries below the position and that run's batch sent again carries their token, not the id's (r44 #4)", {
      timeout: 20_000,
    }, async ({ expect }) => {
      const prefix = "resend-id-held:";
      const key = `${prefix}run:job`;
      // A new run (tok-new) has written seq 1–3; the reader read run tok-old to 6.
      await writeRaw(key, "tok-new", "0", [1, 2, 3]);
      await endsStartedAfresh(
        expect,
        await readerBus(prefix),
        async () => {
          // The new run's next batch got no answer after a restart kept its seq 1–3: sent again.
          await writeRaw(key, "tok-new", "1", [4, 5, 6, 7, 8]);
        },
        "6:tok-old",
      );
    });
  },
);
