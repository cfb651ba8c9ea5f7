import type { Socket } from "node:net";
import type { SequencedEvent } from "@loopwright/events";
import { describe, expect, it } from "vitest";
import { busFixture } from "../test/bus-fixture.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { Relay } from "../test/relay.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

/**
 * A TCP relay on loopback in front of a real Redis that, once stalled, stops reading what its
 * clients send (their socket buffers fill, so the client keeps later commands unwritten, waiting to
 * drain), until its connections are dropped.
 */
class StallRelay extends Relay {
  private readonly clients = new Set<Socket>();

  static async start(target: number): Promise<StallRelay> {
    const relay = new StallRelay(await Relay.port(), target);
    await relay.listen();
    return relay;
  }

  protected override admit(client: Socket): boolean {
    this.clients.add(client);
    client.on("close", () => this.clients.delete(client));
    return true;
  }

  stall(): void {
    for (const client of this.clients) client.pause();
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)("a write that failed with the connection before the client wrote it", () => {
  const redis = busFixture();
  const { bus, closing } = redis;

  const fields = async (key: string, seq: number) => {
    const [entry] = (await redis.raw.sendCommand(["XRANGE", key, `${seq}-0`, `${seq}-0`])) as [
      string,
      string[],
    ][];
    const list = entry?.[1] ?? [];
    return Object.fromEntries(list.flatMap((value, at) => (at % 2 === 0 ? [[value, list[at + 1]]] : [])));
  };

  it("is stored once, in order, marked as sent again (`r` 1): readers from the start and from an event id see each event once", {
    timeout: 30_000,
  }, async () => {
    const relay = await StallRelay.start(redis.server.port);
    closing.push(relay);
    const emitter = await bus("unwritten:", relay.url);
    for (const run of ["a", "b", "c"]) emitter.emit(run, { kind: "output", text: `${run} 1` });
    await emitter.flushed();
    relay.stall();
    // One batch, one script call per run: run a's 24 MB fills the socket's buffers, so the client
    // keeps runs b's and c's calls in its queue, unwritten, when the connection fails.
    emitter.emit("a", { kind: "output", text: "x".repeat(24 * 1024 * 1024) });
    emitter.emit("b", { kind: "output", text: "b 2" });
    emitter.emit("c", { kind: "output", text: "c 2" });
    await pause(500);
    expect(await fields("unwritten:run:b", 2)).toEqual({});
    relay.drop();
    await emitter.flushed();
    for (const run of ["b", "c"]) {
      // @redis/client rejects a written and an unwritten call with the same socket error: the
      // resend cannot tell them apart, so the first write of seq 2 carries the mark too.
      expect(await fields(`unwritten:run:${run}`, 2)).toMatchObject({ r: "1" });
      const stream = emitter.watch(run);
      const seen: SequencedEvent[] = [];
      for await (const event of stream) {
        seen.push(event);
        if (event.seq === 2) break;
      }
      expect(seen.map((e) => `${e.seq}:${(e as { text?: string }).text}`)).toEqual([
        `1:${run} 1`,
        `2:${run} 2`,
      ]);
      const id = stream.idOf(seen[0] as SequencedEvent);
      emitter.emit(run, { kind: "done" });
      await emitter.flushed();
      const resumed: string[] = [];
      for await (const event of emitter.watch(run, undefined, { after: id }))
        resumed.push(`${event.seq}:${event.kind}`);
      expect(resumed).toEqual(["2:output", "3:done"]);
    }
    expect((await fields("unwritten:run:a", 2)).e?.length).toBeGreaterThan(24 * 1024 * 1024);
  });
});
