// A Redis that keeps the connection open and answers nothing — stopped (SIGSTOP), swapped out, or cut
// off by a network partition that sends no RST — must not hang a factory, nor let the bus's queue
// grow past `maxPending` without `onError` hearing of it.
import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { HoldProxy } from "../test/hold-proxy.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import {
  createRedisBus,
  createRedisCalibration,
  createRedisCapabilityStore,
  createRedisRouteLatches,
  createRedisStores,
  RedisStoreError,
} from "./index.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const FACTORIES = [
  createRedisBus,
  createRedisCapabilityStore,
  createRedisCalibration,
  createRedisRouteLatches,
  createRedisStores,
] as const;

async function failure(promise: Promise<unknown>): Promise<RedisStoreError> {
  const error = await promise.then(
    async (store) => {
      await (store as { close(): Promise<void> }).close();
      return undefined;
    },
    (e: unknown) => e,
  );
  expect(RedisStoreError.isInstance(error), `resolved or threw ${String(error)}`).toBe(true);
  return error as RedisStoreError;
}

/** Lets the events of a connection just closed (its socket's close, the client's error) be heard. */
function settled(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 100));
}

/** A TCP listener that accepts every connection and never writes a byte back. */
async function silentListener(): Promise<{ server: Server; port: number; open: Set<Socket> }> {
  const open = new Set<Socket>();
  const server = createServer((socket) => {
    open.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => open.delete(socket));
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  return { server, port: typeof address === "object" && address ? address.port : 0, open };
}

describe("a server that takes the connection and never answers", () => {
  let listener: Awaited<ReturnType<typeof silentListener>>;
  beforeAll(async () => {
    listener = await silentListener();
  });
  afterAll(async () => {
    for (const socket of listener.open) socket.destroy();
    await new Promise((resolve) => listener.server.close(resolve));
  });

  it("fails every factory with RedisStoreError (connect) naming the URL without its password, closes what it opened, and tells onError nothing more", async () => {
    // With a password the handshake starts with AUTH, without one it does not: both are cut short.
    const urls = [`redis://:pw-sekret-8642@127.0.0.1:${listener.port}`, `redis://127.0.0.1:${listener.port}`];
    for (const [make, url] of FACTORIES.flatMap((make) => urls.map((url) => [make, url] as const))) {
      const told: unknown[] = [];
      const error = await failure(make({ url, connectTimeoutMs: 300, onError: (e) => told.push(e) }));
      expect(error.code, make.name).toBe("connect");
      expect(error.message, make.name).toContain(`127.0.0.1:${listener.port}`);
      expect(error.message, make.name).toMatch(/did not answer/);
      expect(error.message, make.name).not.toContain("pw-sekret-8642");
      await vi.waitFor(() => expect(listener.open.size, make.name).toBe(0), { timeout: 5000 });
      await settled();
      // What the factory threw is the whole story: no bare client error for a store never handed back.
      expect(told.map(String), make.name).toEqual([]);
    }
  }, 60_000);

  it("fails a factory given no connectTimeoutMs too, after the default bound", async () => {
    const told: unknown[] = [];
    const error = await failure(
      createRedisBus({ url: `redis://127.0.0.1:${listener.port}`, onError: (e) => told.push(e) }),
    );
    expect(error.code).toBe("connect");
    expect(error.message).toMatch(/within 5 s/);
    await vi.waitFor(() => expect(listener.open.size).toBe(0), { timeout: 5000 });
    await settled();
    expect(told.map(String)).toEqual([]);
  }, 60_000);

  it("refuses a connectTimeoutMs or writeTimeoutMs that is not a positive number of ms", async () => {
    const url = `redis://127.0.0.1:${listener.port}`;
    for (const bad of [0, -5, "5000", Number.NaN, Number.POSITIVE_INFINITY]) {
      const a = await failure(createRedisCapabilityStore({ url, connectTimeoutMs: bad as number }));
      expect(a.code).toBe("invalid-option");
      expect(a.message).toContain("connectTimeoutMs");
      // The rule named as it is (Infinity is positive, but no timer waits for it), the value as given.
      expect(a.message).toMatch(
        /must be a finite number of ms greater than 0 \(leave it out for the default, \d+ ms\), and was given /,
      );
      const b = await failure(createRedisBus({ url, writeTimeoutMs: bad as number }));
      expect(b.code).toBe("invalid-option");
      expect(b.message).toContain("writeTimeoutMs");
    }
    const nulled = await failure(
      createRedisCapabilityStore({ url, connectTimeoutMs: null as unknown as number }),
    );
    expect(nulled.message).toMatch(/and was given null\.$/);
    const text = await failure(createRedisBus({ url, writeTimeoutMs: "5000" as unknown as number }));
    expect(text.message).toMatch(/and was given the string "5000"\.$/);
    expect(listener.open.size).toBe(0);
  });
});

describe.skipIf(!HAS_REDIS)("a Redis that goes silent while a factory starts", () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server.kill();
  });

  // The first PING (both connections), the store's subscription, its first read of what is shared.
  for (const word of ["PING", "SUBSCRIBE", "SMEMBERS"]) {
    it(`fails the factories held at ${word} with RedisStoreError (connect), and closes what they opened`, async () => {
      const proxy = await HoldProxy.start(server.port, word);
      try {
        for (const make of FACTORIES) {
          // The bus reads nothing shared when it starts: it never sends SMEMBERS.
          if (word === "SMEMBERS" && make === createRedisBus) continue;
          const told: unknown[] = [];
          const error = await failure(
            make({ url: proxy.url, prefix: "held:", connectTimeoutMs: 300, onError: (e) => told.push(e) }),
          );
          expect(error.code, make.name).toBe("connect");
          expect(error.message, make.name).toContain(`127.0.0.1:${proxy.port}`);
          expect(error.message, make.name).toMatch(/did not answer/);
          await vi.waitFor(() => expect(proxy.open, make.name).toBe(0), { timeout: 5000 });
          await settled();
          expect(told.map(String), make.name).toEqual([]);
        }
      } finally {
        await proxy.close();
      }
    }, 60_000);
  }
});

describe.skipIf(!HAS_REDIS)("the bus when a write goes unanswered and then its connection fails", () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server.kill();
  });

  it("sends the batch that was on the wire again after the reconnect, with the newest maxPending unsent events", async () => {
    // The first write (EVALSHA) is held, as by a network that went quiet; after the reconnect all passes.
    const proxy = await HoldProxy.start(server.port, "EVALSHA", 1);
    const errors: unknown[] = [];
    const bus = await createRedisBus({
      url: proxy.url,
      prefix: "cut:",
      maxPending: 100,
      writeTimeoutMs: 300,
      onError: (error) => errors.push(error),
    });
    try {
      for (let i = 1; i <= 1000; i++) bus.emit("run", { kind: "output", text: `event ${i}` });
      await vi.waitFor(
        () =>
          expect(
            errors.some((e) => RedisStoreError.isInstance(e) && /did not answer a write/.test(e.message)),
            errors.map(String).join("\n"),
          ).toBe(true),
        { timeout: 20_000, interval: 50 },
      );
      expect(bus.pending).toBe(512 + 100);
      proxy.drop();
      await bus.flushed();
      expect(bus.pending).toBe(0);
      const seqs = (await bus.readHistory("run")).map((event) => event.seq);
      const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
      expect(seqs).toEqual([...range(1, 512), ...range(901, 1000)]);
    } finally {
      await bus.close();
      await proxy.close();
    }
  }, 60_000);
});

describe.skipIf(!HAS_REDIS)("the bus while Redis is stopped (SIGSTOP)", () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server.kill();
  });

  it("keeps the batch on the wire and at most maxPending unsent events once a write goes unanswered, drops the oldest unsent, tells onError, and writes the rest once Redis runs again", async () => {
    const errors: unknown[] = [];
    const bus = await createRedisBus({
      url: server.url,
      prefix: "stopped:",
      maxPending: 100,
      writeTimeoutMs: 500,
      connectTimeoutMs: 500,
      onError: (error) => errors.push(error),
    });
    const told = (pattern: RegExp) =>
      errors.find((e) => RedisStoreError.isInstance(e) && pattern.test(e.message)) as
        | RedisStoreError
        | undefined;
    try {
      bus.emit("warm", { kind: "output", text: "x" });
      await bus.flushed();
      server.pause();
      try {
        // One burst: the flush sends the first 512 (seq 1-512) as one batch, which Redis never answers.
        for (let i = 1; i <= 1000; i++) bus.emit("run", { kind: "output", text: `event ${i}` });
        await vi.waitFor(
          () => expect(told(/did not answer a write/), errors.map(String).join("\n")).toBeDefined(),
          {
            timeout: 20_000,
            interval: 100,
          },
        );
        // The sent batch is kept (Redis stores it when it wakes); of the 488 unsent, the newest 100 wait.
        expect(bus.pending).toBe(512 + 100);
        expect(told(/did not answer a write/)?.message).toMatch(/the 512 events of that write are kept/);
        expect(told(/did not answer a write/)?.message).toMatch(/at most 100 more wait unsent/);
        // Still stopped: what is emitted now is cut at once, not queued, and never the batch on the wire.
        for (let i = 1001; i <= 2000; i++) bus.emit("run", { kind: "output", text: `event ${i}` });
        expect(bus.pending).toBe(512 + 100);
        expect(told(/has been away/)?.message).toMatch(/the oldest of those not yet sent are dropped/);
        // A read is refused after the bound, not left waiting.
        const read = await bus.readHistory("run").then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(RedisStoreError.isInstance(read), String(read)).toBe(true);
        expect((read as RedisStoreError).code).toBe("connect");
        expect((read as RedisStoreError).message).toMatch(/readHistory: .*did not answer/);
      } finally {
        server.resume();
      }
      await bus.flushed();
      expect(bus.pending).toBe(0);
      // Stored: the batch that was on the wire, then the newest 100. Dropped: the oldest unsent, 513-1900.
      const seqs = (await bus.readHistory("run")).map((event) => event.seq);
      const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
      expect(seqs).toEqual([...range(1, 512), ...range(1901, 2000)]);
    } finally {
      server.resume();
      await bus.close();
    }
  }, 60_000);
});
