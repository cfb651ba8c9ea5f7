// Review r94r of the claim asked again after a Redis restart (bus.ts `reclaim`): pinned here, small.

import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { serverWithAdmin } from "../test/admin.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { Relay } from "../test/relay.js";
import { createRedisBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

// Each test restarts Redis and waits for reconnects, in bounded looks: generous when the cores are
// shared with the rest of the suite.
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What `claim` was refused with, or undefined when it was granted. */
const refusalOf = (claim: Promise<void>): Promise<unknown> =>
  claim.then(
    () => undefined,
    (error: unknown) => error,
  );

/** Resolves once `bus` has reconnected: it answers a read (looked at a bounded number of times). */
async function reconnected(bus: { readHistory(runId: string): Promise<unknown> }): Promise<void> {
  for (let look = 0; look < 300; look++) {
    const ok = await bus.readHistory("other").then(
      () => true,
      () => false,
    );
    if (ok) return;
    await pause(10);
  }
}

describe.skipIf(!HAS_REDIS)("a claim across reconnects to the same server, after a restart", () => {
  const redis = serverWithAdmin();

  it("is not asked again when the server is the one that granted it", async () => {
    const prefix = "r94r-same:";
    const a = await createRedisBus({ url: redis.server.url, prefix, onError: () => {} });
    const b = await createRedisBus({ url: redis.server.url, prefix, onError: () => {} });
    try {
      // A claims a run and ends it: no claim of A's is running when Redis restarts below.
      await a.claimRun("first");
      a.emit("first", { kind: "done" });
      await a.flushed();
      await redis.restart();
      await reconnected(a);
      // A claims a run on the server Redis came back as.
      await a.claimRun("job");
      // The claim goes on this server, as another instance's `endRun` of the id (claimed, nothing
      // written yet) deletes it, and A's connection drops before it hears the announcement.
      await redis.send(["DEL", `${prefix}claim:job`]);
      await redis.cut("normal");
      await reconnected(a);
      // Looked at a bounded number of times: before the fix A claimed the id again on this same
      // server (the server it had learnt was the one before the restart), and B was refused.
      for (let look = 0; look < 30 && (await redis.send(["EXISTS", `${prefix}claim:job`])) !== 1; look++)
        await pause(10);
      expect(await refusalOf(b.claimRun("job"))).toBeUndefined();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 30_000);
});

/**
 * A relay that, once armed, holds back the first `EVALSHA` a client sends and all it sends after on
 * that connection until `release()`; and can hold back what Redis sends a subscriber (`freeze`,
 * `thaw`): so a test can put another instance's `endRun` between a bus's look at its runs and its
 * claim reaching Redis, and its announcement before or after the claim's answer. Only the claim's
 * connection is held: it held every connection's, and a subscriber that reconnected after the
 * restart a moment later than the command connection had its `SUBSCRIBE` held too (2 runs in 10
 * beside three busy loops), so it was not listening when the other instance announced the end.
 */
class Hold extends Relay {
  armed = false;
  held: [Buffer, Socket][] | undefined;
  /** The connection whose chunks are held (the one that sent the `EVALSHA`). */
  private heldOn: Socket | undefined;
  private listening: [Socket, Socket] | undefined;
  static async start(target: number): Promise<Hold> {
    const relay = new Hold(await Relay.port(), target);
    await relay.listen();
    return relay;
  }
  protected override onChunk(chunk: Buffer, upstream: Socket, client: Socket): void {
    if (chunk.includes("subscribe")) this.listening = [upstream, client];
    if (this.armed && chunk.includes("EVALSHA")) {
      this.armed = false;
      this.held = [];
      this.heldOn = client;
    }
    if (this.held && this.heldOn === client) this.held.push([chunk, upstream]);
    else upstream.write(chunk);
  }
  release(): void {
    const held = this.held ?? [];
    this.held = undefined;
    this.heldOn = undefined;
    for (const [chunk, upstream] of held) upstream.write(chunk);
  }
  freeze(): void {
    const [upstream, client] = this.listening as [Socket, Socket];
    upstream.unpipe(client);
  }
  thaw(): void {
    const [upstream, client] = this.listening as [Socket, Socket];
    upstream.pipe(client);
  }
}

describe.skipIf(!HAS_REDIS)("a claim asked again after a restart, as another instance ends the run", () => {
  const redis = serverWithAdmin();

  for (const heard of ["before", "after"] as const) {
    it(`is let go of when the end is heard ${heard} the claim is answered`, async () => {
      const prefix = `r94r-race-${heard}:`;
      const relay = await Hold.start(redis.server.port);
      const a = await createRedisBus({ url: `redis://127.0.0.1:${relay.port}`, prefix, onError: () => {} });
      const b = await createRedisBus({ url: redis.server.url, prefix, onError: () => {} });
      const claimed = async () => (await redis.send(["EXISTS", `${prefix}claim:job`])) === 1;
      try {
        // A claims a run and has written nothing yet; it has learnt the server once it answers a read.
        await a.claimRun("job");
        await a.readHistory("other");
        relay.armed = true;
        await redis.restart();
        // A has looked at its runs and its claim is held on the way (bounded looks, never timed).
        for (let look = 0; look < 300 && !relay.held; look++) await pause(10);
        expect(relay.held).toBeDefined();
        // Both instances listen on the server Redis came back as (it restarted empty: a subscriber
        // counted here subscribed again since), or the end below is announced to nobody at A.
        const listening = async () =>
          ((await redis.send(["PUBSUB", "NUMSUB", `${prefix}bus:ended`])) as [string, number])[1];
        for (let look = 0; look < 300 && (await listening()) < 2; look++) await pause(10);
        expect(await listening()).toBe(2);
        await reconnected(b);
        if (heard === "after") relay.freeze();
        // B ends the run (a host cancelling it), and A's claim reaches Redis after.
        b.endRun("job");
        await b.flushed();
        if (heard === "before") await pause(100);
        relay.release();
        // A's claim lands (after the script is sent again with its text: Redis lost it); let go of
        // at once, it may be gone before it is seen. A loaded host may take a while to send it
        // again: 50 looks let the claim land after the looks below had found none, and B's claim
        // was refused (one CI run in many).
        for (let look = 0; look < 300 && !(await claimed()); look++) await pause(10);
        if (heard === "after") relay.thaw();
        // Before the fix the claim stood (up to retainUnendedMs) and B's claim below was refused.
        for (let look = 0; look < 300 && (await claimed()); look++) await pause(10);
        expect(await refusalOf(b.claimRun("job"))).toBeUndefined();
      } finally {
        await Promise.all([a.close(), b.close()]);
        await relay.close();
      }
    }, 30_000);
  }
});
