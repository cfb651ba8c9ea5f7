import { createServer, type Server, Socket } from "node:net";
import type { SequencedEvent } from "@loopwright/events";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, type RedisEventBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

/**
 * A TCP relay on loopback in front of a real Redis that, once armed, lets the next script call
 * (`EVALSHA`/`EVAL`, an emitter's append) reach Redis but drops Redis's answer and cuts the
 * connection — as when Redis goes down right after applying a write — and refuses connections until
 * `reopen()`. The emitter gets no answer, so it sends the batch again once it reconnects.
 */
class AnswerLossRelay {
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  private armed = false;
  private refusing = false;
  /** Resolves once an armed script call has reached Redis and its connection was cut. */
  cut: Promise<void> = Promise.resolve();
  private onCut: () => void = () => {};

  private constructor(
    readonly port: number,
    private readonly target: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(target: number): Promise<AnswerLossRelay> {
    const relay = new AnswerLossRelay(await freePort(), target);
    await new Promise<void>((resolve) => {
      relay.server = createServer((client) => relay.relay(client));
      relay.server.listen(relay.port, "127.0.0.1", () => resolve());
    });
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

  private relay(client: Socket): void {
    if (this.refusing) {
      client.destroy();
      return;
    }
    const upstream = new Socket();
    upstream.connect(this.target, "127.0.0.1");
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => this.sockets.delete(socket));
    }
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    upstream.pipe(client);
    client.on("data", (chunk: Buffer) => {
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
    });
  }

  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    const server = this.server;
    return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)(
  "a watcher resuming past the stream's top while the run's emitter sends again a batch Redis lost",
  () => {
    let server: RedisServer;
    let raw: ReturnType<typeof createClient>;
    const closing: { close(): Promise<void> }[] = [];
    const bus = async (prefix: string, url = server.url) => {
      const made = await createRedisBus({ url, prefix, onError: () => {} });
      closing.push(made);
      return made;
    };

    beforeAll(async () => {
      server = await RedisServer.start();
      raw = createClient({ url: server.url, RESP: 2 });
      raw.on("error", () => {});
      await raw.connect();
    });
    afterAll(async () => {
      await Promise.all(closing.map((c) => c.close()));
      raw?.destroy();
      await server.kill();
    });

    const ids = async (key: string) =>
      ((await raw.sendCommand(["XRANGE", key, "-", "+"])) as [string, string[]][]).map((e) => e[0]);

    /**
     * An emitter (through the relay) writes seq 1–3, then 4–6 whose answer is lost: Redis applied
     * them, so a reader read up to 6. Redis then comes back holding the stream's entries up to
     * `keep` (an older snapshot, AOF `everysec`, a replica one batch behind: the stream's last id is
     * `keep`-0; none at all after a restart without persistence), as `DEL` and `XADD` of the kept
     * entries with their own fields leave it. Answers the emitter, not yet let back in.
     */
    const lostBatch = async (prefix: string, keep: number) => {
      const relay = await AnswerLossRelay.start(server.port);
      closing.push(relay);
      const emitter = await bus(prefix, relay.url);
      for (let i = 1; i <= 3; i++) emitter.emit("job", { kind: "output", text: `e${i}` });
      await emitter.flushed();
      relay.arm();
      for (let i = 4; i <= 6; i++) emitter.emit("job", { kind: "output", text: `e${i}` });
      await relay.cut;
      const key = `${prefix}run:job`;
      expect(await ids(key)).toEqual(["1-0", "2-0", "3-0", "4-0", "5-0", "6-0"]);
      const kept = (await raw.sendCommand(["XRANGE", key, "-", `${keep}-0`])) as [string, string[]][];
      await raw.sendCommand(["DEL", key]);
      for (const [id, fields] of keep > 0 ? kept : []) await raw.sendCommand(["XADD", key, id, ...fields]);
      if (keep > 0) await raw.sendCommand(["PEXPIRE", key, "3600000"]);
      return { emitter, relay, key };
    };

    /** Reads `after: 6` until the watcher ends or `ms` pass. */
    const watchAfter6 = (reader: RedisEventBus, ms: number) => {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), ms);
      const seen: SequencedEvent[] = [];
      const ended = (async () => {
        for await (const event of reader.watch("job", controller.signal, { after: 6 })) seen.push(event);
        clearTimeout(timer);
      })();
      return { seen, ended, aborted: () => controller.signal.aborted };
    };

    for (const [name, keep] of [
      ["restored from an older snapshot", 3],
      ["lost with a restart without persistence", 0],
    ] as const) {
      it(`reads the run's next events after its resent batch, the stream ${name}`, {
        timeout: 20_000,
      }, async () => {
        const prefix = `resend-${keep}:`;
        const { emitter, relay, key } = await lostBatch(prefix, keep);
        const reader = await bus(prefix);
        const watching = watchAfter6(reader, 12_000);
        await pause(300);
        relay.reopen();
        // The emitter reconnects and sends 4–6 again; let the reader's idle look see them.
        await pause(2500);
        expect(await ids(key)).toEqual([...(keep > 0 ? ["1-0", "2-0", "3-0"] : []), "4-0", "5-0", "6-0"]);
        emitter.emit("job", { kind: "output", text: "e7" });
        emitter.emit("job", { kind: "done" });
        await emitter.flushed();
        await watching.ended;
        expect(watching.aborted()).toBe(false);
        // Not "started afresh under its id by another emitter": the run went on.
        expect(watching.seen.map((e) => `${e.seq}:${e.kind}`)).toEqual(["7:output", "8:done"]);
      });
    }

    it("still ends with a notice when another emitter's run written since passes its position", {
      timeout: 20_000,
    }, async () => {
      const prefix = "resend-other:";
      const { relay, key } = await lostBatch(prefix, 3);
      const reader = await bus(prefix);
      const watching = watchAfter6(reader, 12_000);
      await pause(300);
      // The old run ends and another emitter starts the id afresh before the first one is back.
      await raw.sendCommand(["DEL", key]);
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
  },
);
