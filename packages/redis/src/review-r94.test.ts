// What the bus model found once it restarted Redis, kept streams short and cut connections while a
// flush was on the wire (redis-model.test.ts): each pinned here, small.

import type { Socket } from "node:net";
import { EventsError } from "@loopwright/events";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serverWithAdmin } from "../test/admin.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { Relay } from "../test/relay.js";
import { createRedisBus } from "./bus.js";
import { RedisStoreError } from "./errors.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)("a run's claim across a Redis restart without persistence", () => {
  const redis = serverWithAdmin();

  it("is claimed again by its host once it reconnects, so another host's claim is refused", async () => {
    const errors: unknown[] = [];
    const onError = (error: unknown) => errors.push(error);
    const a = await createRedisBus({ url: redis.server.url, prefix: "r94-claim:", onError });
    const b = await createRedisBus({ url: redis.server.url, prefix: "r94-claim:", onError });
    try {
      await a.claimRun("job");
      a.emit("job", { kind: "output", text: "before" });
      await a.flushed();
      // Redis comes back empty: the claim and the stream are gone, and A's run goes on.
      await redis.restart();
      // A has reconnected once it answers a read (bounded, never timed).
      for (let look = 0; look < 300; look++) {
        if (
          await a.readHistory("job").then(
            () => true,
            () => false,
          )
        )
          break;
        await pause(10);
      }
      // Its claim is back once it has asked again (looked at a bounded number of times): before the
      // fix it never came back, and B's claim below was granted on the id A was running under.
      for (let look = 0; look < 300 && (await redis.send(["EXISTS", "r94-claim:claim:job"])) !== 1; look++)
        await pause(10);
      const refusal = await b.claimRun("job").then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refusal).toBeInstanceOf(EventsError);
      expect((refusal as EventsError).code).toBe("invalid-run-id");
      // A's run goes on where it was: its next events are written, nobody's are refused.
      a.emit("job", { kind: "output", text: "after" });
      a.emit("job", { kind: "done" });
      await a.flushed();
      expect((await b.readHistory("job")).map((e) => e.seq)).toEqual([2, 3]);
      expect(errors.filter((e) => !(e instanceof RedisStoreError && e.code === "connect"))).toEqual([]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

/**
 * A relay that, once armed, lets the first write carrying `marker` reach Redis and then cuts the
 * connection before Redis's answer gets back: the write is applied and its reply lost, as when a
 * proxy or a failover drops a link mid-flush.
 */
class SwallowReply extends Relay {
  armed = false;
  constructor(
    port: number,
    target: number,
    private readonly marker: string,
  ) {
    super(port, target);
  }
  static async start(target: number, marker: string): Promise<SwallowReply> {
    const relay = new SwallowReply(await Relay.port(), target, marker);
    await relay.listen();
    return relay;
  }
  protected override onChunk(chunk: Buffer, upstream: Socket, client: Socket): void {
    if (this.armed && chunk.includes(this.marker)) {
      this.armed = false;
      upstream.unpipe(client);
      upstream.once("data", () => client.destroy());
      // Unpiped, the upstream stands paused: flowing again, it hands over the reply to drop.
      upstream.resume();
    }
    upstream.write(chunk);
  }
}

describe.skipIf(!HAS_REDIS)("a batch whose reply was lost, under a short maxStreamLength", () => {
  let server: RedisServer;
  let raw: ReturnType<typeof createClient>;
  beforeAll(async () => {
    server = await RedisServer.start();
    raw = createClient({ url: server.url, RESP: 2 });
    raw.on("error", () => {});
    await raw.connect();
    // One entry a stream node, so `XADD MAXLEN ~ 2` keeps two entries at this size.
    await raw.sendCommand(["CONFIG", "SET", "stream-node-max-entries", "1"]);
  });
  afterAll(async () => {
    raw?.destroy();
    await server?.kill();
  });

  it("is not told as dropped when the stream trimmed it after writing it", async () => {
    const relay = await SwallowReply.start(server.port, "swallow-me");
    const errors: unknown[] = [];
    const bus = await createRedisBus({
      url: relay.url,
      prefix: "r94-trim:",
      maxStreamLength: 2,
      onError: (error) => errors.push(error),
    });
    try {
      // A first run written, so Redis holds the script and the batch below goes whole (EVALSHA).
      bus.emit("warm", { kind: "done" });
      await bus.flushed();
      relay.armed = true;
      // One batch: Redis writes all ten (keeping the last two), its answer is lost, the batch is
      // sent again and each event answered "not above the stream's top". Seqs 1–8 are no longer in
      // the stream: trimmed, not lost. Before, onError was told "8 events of run "job" (seq 1–8)
      // were dropped: … the stream was changed outside this bus", and nothing was dropped.
      bus.emit("job", { kind: "output", text: "swallow-me" });
      for (let i = 2; i <= 10; i++) bus.emit("job", { kind: "output", text: String(i) });
      await bus.flushed();
      expect(bus.pending).toBe(0);
      expect((await bus.readHistory("job")).map((e) => e.seq)).toEqual([9, 10]);
      expect(
        errors
          .filter((e) => !(e instanceof RedisStoreError && e.code === "connect"))
          .map((e) => (e instanceof Error ? e.message : String(e))),
      ).toEqual([]);
    } finally {
      await bus.close();
      await relay.close();
    }
  });
});
