// Review r92b: the bus after a cut connection, with Redis truly down (r92c's waits), pinned.

import { describe, expect, it } from "vitest";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)("review r92b", () => {
  // Redis down (stopped, the bus reconnecting): each `readHistory` (and `claimRun`) waiting for the
  // command connection put a "ready" listener of its own on it, so the eleventh call of a host that
  // reads per request printed Node's "MaxListenersExceededWarning: Possible EventEmitter memory
  // leak detected. 11 ready listeners added" on stderr. They wait on one listener now.
  it("twelve readHistory and twelve claimRun calls waiting while Redis is down raise no listener-leak warning", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    const server = await RedisServer.start();
    const bus = await createRedisBus({
      url: server.url,
      prefix: "r92b:",
      onError: () => {},
      connectTimeoutMs: 3000,
    });
    try {
      bus.emit("run", { kind: "output", text: "kept" });
      await bus.flushed();
      await server.kill();
      const failed = (call: () => Promise<unknown>) =>
        call().then(
          () => "answered",
          (error: { code?: string }) => error.code,
        );
      const reads = Array.from({ length: 12 }, () => failed(() => bus.readHistory("run")));
      const claims = Array.from({ length: 12 }, (_, i) => failed(() => bus.claimRun(`claim-${i}`)));
      expect(new Set(await Promise.all([...reads, ...claims])), "how each call ended").toEqual(
        new Set(["connect"]),
      );
      // A read asked while Redis is down, Redis back within the bound: it answers (one waiter woken).
      const read = bus.readHistory("run").then((events) => events.map((event) => event.seq));
      await pause(50);
      await server.start();
      // Redis ran without persistence: the run it held went with it.
      expect(await read, "a read that waited for Redis to come back").toEqual([]);
      await pause(10);
      expect(warnings, "Node's warnings").toEqual([]);
    } finally {
      process.off("warning", onWarning);
      await bus.close();
      await server.kill();
    }
  });
});
