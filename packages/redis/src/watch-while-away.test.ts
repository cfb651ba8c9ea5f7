import type { SequencedEvent } from "@loopwright/events";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CutProxy } from "../test/cut-proxy.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

describe.skipIf(!HAS_REDIS)("a watcher started while Redis is out of reach", () => {
  let server: RedisServer;
  let raw: ReturnType<typeof createClient>;
  beforeAll(async () => {
    server = await RedisServer.start();
    raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
  });
  afterAll(async () => {
    raw.destroy();
    await server.kill();
  });
  const clients = async () =>
    ((await raw.sendCommand(["CLIENT", "LIST"])) as string).trim().split("\n").length;

  it("waits for Redis and reads the run once it is back", async () => {
    const proxy = await CutProxy.start(server.port);
    const bus = await createRedisBus({ url: proxy.url, prefix: "early:", onError: () => {} });
    const emitter = await createRedisBus({ url: server.url, prefix: "early:", onError: () => {} });
    try {
      await proxy.cut();
      const seen: SequencedEvent[] = [];
      const watching = (async () => {
        for await (const event of bus.watch("late")) seen.push(event);
      })();
      await new Promise((resolve) => setTimeout(resolve, 300));
      await proxy.restore();
      emitter.emit("late", { kind: "output", text: "one" });
      emitter.emit("late", { kind: "done" });
      await Promise.race([watching, new Promise((resolve) => setTimeout(resolve, 4000))]);
      expect(seen.map((e) => e.kind)).toEqual(["output", "done"]);
    } finally {
      await Promise.all([bus.close(), emitter.close()]);
      await proxy.cut();
    }
  });

  it("a watcher left while Redis is away leaves no connection trying behind it", async () => {
    const proxy = await CutProxy.start(server.port);
    const bus = await createRedisBus({ url: proxy.url, prefix: "left:", onError: () => {} });
    const before = await clients();
    await proxy.cut();
    const watcher = bus.watch("gone");
    const first = watcher.next();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await watcher.return?.();
    expect(await first).toEqual({ done: true, value: undefined });
    await bus.close();
    await proxy.restore();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const after = await clients();
    // The bus's own two are gone; nothing of it reconnects.
    expect(after).toBe(before - 2);
    await proxy.cut();
  });
});
