// Cases the equivalence property (equivalence.test.ts) found where the Redis stores answered
// otherwise than the in-process ones, shrunk and pinned.
import type { SequencedEvent } from "@loopwright/events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, type RedisEventBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

/** Reads a watcher to its end, or to `stop` (a safety net: never the thing asserted). */
async function collect(watcher: AsyncIterable<SequencedEvent>): Promise<string[]> {
  const seen: string[] = [];
  for await (const event of watcher) seen.push(`${event.seq} ${event.kind}`);
  return seen;
}

describe.skipIf(!HAS_REDIS)("review r88: the Redis bus answers as the in-memory one", () => {
  let server: RedisServer;
  const buses: RedisEventBus[] = [];
  let made = 0;
  /** Two instances on one prefix of their own. */
  const pair = async (): Promise<[RedisEventBus, RedisEventBus]> => {
    const prefix = `r88-${made++}:`;
    const a = await createRedisBus({ url: server.url, prefix, onError: () => {} });
    const b = await createRedisBus({ url: server.url, prefix, onError: () => {} });
    buses.push(a, b);
    return [a, b];
  };

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(buses.map((bus) => bus.close()));
    await server.kill();
  });

  it("a watcher started right after its own instance's endRun or releaseRun reads the run started afresh, not ended by the announcement heard back", async () => {
    for (const drop of ["endRun", "releaseRun"] as const) {
      const [a] = await pair();
      a.emit("again", { kind: "output", text: "old" });
      a.emit("again", { kind: "done" });
      await a.flushed();
      // The runtime's way of running an id again: release (or end) it, then watch and emit anew.
      a[drop]("again");
      const stop = new AbortController();
      const guard = setTimeout(() => stop.abort(), 10_000);
      const watching = collect(a.watch("again", stop.signal));
      a.emit("again", { kind: "output", text: "new" });
      a.emit("again", { kind: "done" });
      // Before: the announcement of the drop, heard back a round trip later, ended this watcher
      // with nothing read (in memory a watcher started after endRun reads the next run).
      expect(await watching, drop).toEqual(["1 output", "2 done"]);
      clearTimeout(guard);
    }
  });

  it("an endRun on another instance drops the emitter's copy: its next emit starts the run afresh from seq 1", async () => {
    const [a, b] = await pair();
    a.emit("shared", { kind: "output", text: "one" });
    a.emit("shared", { kind: "output", text: "two" });
    await a.flushed();
    // A watcher on the emitting instance shows when it has heard of B's endRun.
    const heard = collect(a.watch("shared", undefined, { after: 2 }));
    b.endRun("shared");
    await b.flushed();
    expect(await heard).toEqual([]);
    // Before: A kept its copy and numbered on (seq 3) into the deleted stream.
    expect(a.history("shared")).toEqual([]);
    expect(a.emit("shared", { kind: "output", text: "fresh" }).seq).toBe(1);
    a.emit("shared", { kind: "done" });
    await a.flushed();
    // A watcher from the start reads the new run whole, with no gap notice for seqs 1 and 2.
    expect(await collect(b.watch("shared"))).toEqual(["1 output", "2 done"]);
    expect((await b.readHistory("shared")).map((e) => e.seq)).toEqual([1, 2]);
  });

  it("what the emitter wrote into a run after another instance ended it, before it heard, goes with the run", async () => {
    const [a, b] = await pair();
    a.emit("raced", { kind: "output", text: "one" });
    await a.flushed();
    // B ends the run and A emits on in the same tick: A cannot have heard yet, so its event is
    // numbered on (seq 2) and written before or after B's deletion, whichever Redis runs first.
    const heard = collect(a.watch("raced", undefined, { after: 1 }));
    b.endRun("raced");
    expect(a.emit("raced", { kind: "output", text: "late" }).seq).toBe(2);
    await Promise.all([a.flushed(), b.flushed()]);
    await heard;
    await a.flushed();
    // Then A's next run under the id is its own from seq 1, and the late entry is not left in the
    // stream ahead of it (it would hold the id as another emitter's unended run).
    expect(a.emit("raced", { kind: "output", text: "fresh" }).seq).toBe(1);
    a.emit("raced", { kind: "done" });
    await a.flushed();
    expect((await b.readHistory("raced")).map((e) => `${e.seq} ${e.kind}`)).toEqual(["1 output", "2 done"]);
  });
});
