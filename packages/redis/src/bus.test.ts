import type { SequencedEvent } from "@loopwright/events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, type RedisEventBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

async function collect(watcher: AsyncIterable<SequencedEvent>): Promise<SequencedEvent[]> {
  const seen: SequencedEvent[] = [];
  for await (const event of watcher) seen.push(event);
  return seen;
}

describe.skipIf(!HAS_REDIS)("the Redis bus", () => {
  let server: RedisServer;
  const buses: RedisEventBus[] = [];
  const bus = async (settings?: Parameters<typeof createRedisBus>[0]["settings"]) => {
    const made = await createRedisBus({ url: server.url, prefix: `t${buses.length}:`, settings });
    buses.push(made);
    return made;
  };

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close()));
    await server.kill();
  });

  it("numbers events from 1 synchronously, and a watcher on another bus reads them in order to done", async () => {
    const a = await bus();
    const b = await createRedisBus({ url: server.url, prefix: "t0:" });
    buses.push(b);
    expect(a.emit("r1", { kind: "output", text: "one" }).seq).toBe(1);
    expect(a.emit("r1", { kind: "output", text: "two" }).seq).toBe(2);
    const watching = collect(b.watch("r1"));
    a.emit("r1", { kind: "output", text: "three" });
    a.emit("r1", { kind: "done" } as never);
    const seen = await watching;
    expect(seen.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(seen.map((e) => e.kind)).toEqual(["output", "output", "output", "done"]);
    expect(await b.readHistory("r1", 2)).toHaveLength(2);
  });
});
