// Review round 80 (redis): what the bus tells onError when a batch fails for a reason that passes
// (Redis out of memory, the connection lost mid-write). Each test starts its own redis-server.
import { getEventListeners } from "node:events";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CutProxy } from "../test/cut-proxy.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, RedisStoreError } from "./index.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const PASSWORD = "r80-s3cret-pw-9d2f";

describe.skipIf(!HAS_REDIS)("R80-1: a batch that fails for now is told as RedisStoreError, not raw", () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server.kill();
  });

  it("Redis out of memory: refused, naming the URL (password hidden), the reply and the count; written once it takes writes", async () => {
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    await raw.sendCommand(["CONFIG", "SET", "requirepass", PASSWORD]);
    const told: unknown[] = [];
    const bus = await createRedisBus({
      url: `redis://:${PASSWORD}@127.0.0.1:${server.port}`,
      prefix: "oom:",
      onError: (error) => told.push(error),
    });
    try {
      await raw.sendCommand(["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "1"]);
      for (let i = 0; i < 3; i++) bus.emit("full", { kind: "output", text: `n${i}` });
      for (let i = 0; i < 40 && told.length === 0; i++) await pause(50);
      expect(told.length).toBeGreaterThan(0);
      // Before: the client's bare ErrorReply ("OOM command not allowed …"), no URL, no count.
      for (const error of told) {
        expect(RedisStoreError.isInstance(error), String(error)).toBe(true);
        expect((error as RedisStoreError).code).toBe("refused");
        const { message } = error as RedisStoreError;
        expect(message).toMatch(
          /^Redis at redis:\/\/\S*127\.0\.0\.1:\d+ did not take 3 events of a batch of 3 for now: it answered OOM/,
        );
        expect(message).not.toContain(PASSWORD);
        expect((error as RedisStoreError).cause).toBeInstanceOf(Error);
      }
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      await bus.flushed();
      expect((await bus.readHistory("full")).map((e) => e.seq)).toEqual([1, 2, 3]);
    } finally {
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      await raw.sendCommand(["CONFIG", "SET", "requirepass", ""]);
      raw.destroy();
      await bus.close();
    }
  });

  it("the connection cut while a batch is on the wire: connect, the events kept and written after", async () => {
    const proxy = await CutProxy.start(server.port);
    const told: unknown[] = [];
    const bus = await createRedisBus({
      url: proxy.url,
      prefix: "cut:",
      onError: (error) => told.push(error),
    });
    try {
      server.pause();
      bus.emit("cut", { kind: "output", text: "x".repeat(1_000) });
      await pause(200);
      // The write is out, unanswered: the link goes before Redis answers it.
      await proxy.cut();
      server.resume();
      // The connection's own error ("Socket closed unexpectedly") is told as the client raised it, as
      // the README says of a lost connection; the batch it failed is told as the bus's. Before: the
      // batch's failure was a second bare client error, naming no URL and no count.
      // (Since r81 the connection's own error is a RedisStoreError too, "A connection to Redis …".)
      const ours = (): RedisStoreError[] =>
        told.filter(
          (error): error is RedisStoreError =>
            RedisStoreError.isInstance(error) && !error.message.startsWith("A connection to Redis"),
        );
      for (let i = 0; i < 40 && ours().length === 0; i++) await pause(50);
      expect(ours().map((e) => [e.code, e.message])).toEqual([
        [
          "connect",
          expect.stringMatching(
            /^Redis at redis:\/\/127\.0\.0\.1:\d+ did not take 1 events of a batch of 1: the connection failed \(.+\)\. They are kept and sent again/,
          ),
        ],
      ]);
      await proxy.restore();
      await bus.flushed();
      expect((await bus.readHistory("cut")).map((e) => e.seq)).toEqual([1]);
    } finally {
      server.resume();
      await bus.close();
      await proxy.cut().catch(() => {});
    }
  }, 20_000);
});

describe.skipIf(!HAS_REDIS)(
  "R80-2: watchers and claims sharing one signal (a host's shutdown signal)",
  () => {
    let server: RedisServer;
    beforeAll(async () => {
      server = await RedisServer.start();
    });
    afterAll(async () => {
      await server.kill();
    });

    it("30 watchers and 30 claims on one signal add one listener between them, no warning; the abort still ends each", async () => {
      const warnings: string[] = [];
      const onWarning = (warning: Error) => warnings.push(warning.name);
      process.on("warning", onWarning);
      const bus = await createRedisBus({ url: server.url, prefix: "shared:", onError: () => {} });
      try {
        const host = new AbortController();
        const watchers = Array.from({ length: 30 }, (_, i) => bus.watch(`w${i}`, host.signal));
        const claims = Array.from({ length: 30 }, (_, i) => bus.claimRun(`c${i}`, host.signal));
        // Before: 30 listeners on the signal (one per watcher), and Node's MaxListenersExceededWarning.
        expect(getEventListeners(host.signal, "abort").length).toBeLessThanOrEqual(1);
        await Promise.all(claims);
        const reads = watchers.map((watcher) => watcher.next());
        await pause(100);
        host.abort();
        expect((await Promise.all(reads)).every((r) => r.done === true)).toBe(true);
        expect(getEventListeners(host.signal, "abort")).toHaveLength(0);
        await new Promise((resolve) => setImmediate(resolve));
        expect(warnings).not.toContain("MaxListenersExceededWarning");
        // A watcher that leaves on its own takes its share off; the last one takes the listener off.
        const later = new AbortController();
        const two = [bus.watch("x1", later.signal), bus.watch("x2", later.signal)];
        expect(getEventListeners(later.signal, "abort")).toHaveLength(1);
        await two[0]?.return?.();
        expect(getEventListeners(later.signal, "abort")).toHaveLength(1);
        await two[1]?.return?.();
        expect(getEventListeners(later.signal, "abort")).toHaveLength(0);
      } finally {
        process.off("warning", onWarning);
        await bus.close();
      }
    });
  },
);
