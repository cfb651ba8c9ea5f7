import type { SequencedEvent } from "@loopwright/events";
import { createClient } from "@redis/client";
import { afterAll, beforeAll, expect } from "vitest";
import { createRedisBus, type RedisEventBus } from "../src/bus.js";
import { RedisServer } from "./redis-server.js";

type BusOptions = Parameters<typeof createRedisBus>[0];

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Looks every 10 ms until `ready()` holds, 500 looks at most; never an assertion on time. */
export async function until(ready: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500 && !(await ready()); i++) await pause(10);
}

/**
 * The set-up a describe of Redis bus tests shares, its `beforeAll`/`afterAll` registered: a real
 * Redis, a raw client on it, and `bus(prefix, more)` making a bus (on that Redis unless `more` is
 * another URL or has `url`; errors ignored unless `more.onError`), closed after the tests with
 * anything handed to `closing`.
 */
export function busFixture() {
  const closing: { close(): Promise<void> }[] = [];
  const fixture = {
    server: undefined as unknown as RedisServer,
    raw: undefined as unknown as ReturnType<typeof createClient>,
    closing,
    bus: async (
      prefix: string,
      more: string | Partial<Omit<BusOptions, "prefix">> = {},
    ): Promise<RedisEventBus> => {
      const options = typeof more === "string" ? { url: more } : more;
      const made = await createRedisBus({ url: fixture.server.url, onError: () => {}, ...options, prefix });
      closing.push(made);
      return made;
    },
    /** Whether a connection of Redis's waits in a blocking `XREAD` now: a watcher that has subscribed. */
    watcherWaits: async (): Promise<boolean> =>
      String(await fixture.raw.sendCommand(["CLIENT", "LIST"]))
        .split("\n")
        .some((line) => /\bflags=\w*b/.test(line) && /\bcmd=xread\b/.test(line)),
    /**
     * Starts `b` watching `job` from `after` and waits until it has subscribed (waits in its `XREAD`);
     * answers (in an object: an async function answering a promise would wait for it) what it reads,
     * as `<seq>:<kind>`, to its end, or to 12 s after it started — what it read by then, and `stopped`.
     */
    subscribed: async (b: RedisEventBus, after: number) => {
      const stop = new AbortController();
      setTimeout(() => stop.abort(), 12_000).unref();
      const watcher = b.watch("job", stop.signal, { after });
      const reading = (async () => {
        const seen: SequencedEvent[] = [];
        for await (const event of watcher) seen.push(event);
        return { seen: seen.map((e) => `${e.seq}:${e.kind}`), stopped: stop.signal.aborted };
      })();
      await until(fixture.watcherWaits);
      expect(await fixture.watcherWaits()).toBe(true);
      return { reading };
    },
    /** A new run of `job` on `emitter`: five outputs and its `done`, written (its `flushed()` awaited). */
    newRun: async (emitter: RedisEventBus): Promise<void> => {
      for (let i = 1; i <= 5; i++) emitter.emit("job", { kind: "output", text: `NEW ${i}` });
      emitter.emit("job", { kind: "done" });
      await emitter.flushed();
    },
    /** An earlier run of `job` emitted to seq `last` (its reader read it all) and its stream gone (expired, evicted). */
    earlierRunGone: async (prefix: string, last: number): Promise<void> => {
      const old = await fixture.bus(prefix);
      for (let i = 1; i <= last; i++) old.emit("job", { kind: "output", text: `old ${i}` });
      await old.flushed();
      await fixture.raw.sendCommand(["DEL", `${prefix}run:job`, `${prefix}claim:job`]);
    },
  };
  beforeAll(async () => {
    fixture.server = await RedisServer.start();
    fixture.raw = createClient({ url: fixture.server.url, RESP: 2 });
    fixture.raw.on("error", () => {});
    await fixture.raw.connect();
  });
  afterAll(async () => {
    await Promise.all(closing.map((c) => c.close()));
    fixture.raw?.destroy();
    await fixture.server?.kill();
  });
  return fixture;
}
