import { EventsError, type SequencedEvent } from "@loopwright/events";
import { createClient } from "@redis/client";
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
  const prefixes = new Map<RedisEventBus, string>();
  /** A bus on a prefix of its own, or another instance on `twin`'s prefix. */
  const bus = async (settings?: Parameters<typeof createRedisBus>[0]["settings"], twin?: RedisEventBus) => {
    const prefix = (twin && prefixes.get(twin)) ?? `t${buses.length}:`;
    const made = await createRedisBus({ url: server.url, prefix, settings, onError: () => {} });
    buses.push(made);
    prefixes.set(made, prefix);
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
    const b = await bus(undefined, a);
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

  it("readHistory and a watcher read past stream entries another process wrote malformed", async () => {
    const a = await bus();
    const raw = createClient({ url: server.url });
    await raw.connect();
    try {
      const key = `${prefixes.get(a)}run:foreign`;
      await raw.sendCommand(["XADD", key, "1-0", "e", '{"seq":1,"kind":"output","text":"one"}']);
      await raw.sendCommand(["XADD", key, "2-0", "e", "{not json"]);
      await raw.sendCommand(["XADD", key, "3-0", "e", "null"]);
      await raw.sendCommand([
        "XADD",
        key,
        "4-0",
        "e",
        '{"seq":1000000000000000,"kind":"output","text":"far"}',
      ]);
      await raw.sendCommand(["XADD", key, "5-0", "e", '{"seq":5,"kind":"output","text":"five"}']);
      await raw.sendCommand(["XADD", key, "6-0", "e", '{"seq":6,"kind":"done"}']);
      const history = await a.readHistory("foreign");
      expect(history.map((e) => e.seq)).toEqual([1, 5, 6]);
      expect(await a.readHistory("foreign", 4)).toHaveLength(2);
      // A payload whose seq is not its entry's would move a watcher past every later event.
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 3000);
      const watched = await collect(a.watch("foreign", controller.signal));
      clearTimeout(timer);
      expect(watched.map((e) => [e.seq, e.kind])).toEqual([
        [1, "output"],
        [4, "notice"],
        [5, "output"],
        [6, "done"],
      ]);
    } finally {
      raw.destroy();
    }
  });

  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const done = { kind: "done" } as const;

  it("keeps a slow watcher's most recent events and announces the skipped stretch once", async () => {
    const a = await bus({ maxEvents: 10, trimSlack: 5 });
    const watcher = a.watch("slow");
    a.emit("slow", { kind: "output", text: "first" });
    expect((await watcher.next()).value?.seq).toBe(1);
    for (let i = 2; i <= 60; i++) a.emit("slow", { kind: "output", text: `n${i}` });
    a.emit("slow", done);
    await a.flushed();
    // Give the watcher's reader time to pull the run in while nobody reads it.
    await pause(1000);
    const rest = await collect(watcher);
    const notices = rest.filter((e) => e.kind === "notice");
    expect(notices).toHaveLength(1);
    const notice = notices[0] as SequencedEvent & { dropped: number };
    expect(rest[0]).toBe(notice);
    const delivered = rest.slice(1).map((e) => e.seq);
    expect(notice.dropped).toBeGreaterThanOrEqual(61 - 1 - 15);
    expect(delivered).toEqual(Array.from({ length: delivered.length }, (_, i) => notice.seq + 1 + i));
    expect(delivered.at(-1)).toBe(61);
    expect(notice.dropped + delivered.length).toBe(60);
  });

  it("replays a run from any seq and ends every watcher on every instance at endRun", async () => {
    const a = await bus();
    const b = await createRedisBus({
      url: server.url,
      prefix: a === buses.at(-1) ? `t${buses.length - 1}:` : "",
    });
    buses.push(b);
    for (let i = 1; i <= 5; i++) a.emit("ended", { kind: "output", text: `n${i}` });
    await a.flushed();
    const fromThree = b.watch("ended", undefined, { after: 3 });
    expect((await fromThree.next()).value?.seq).toBe(4);
    expect((await fromThree.next()).value?.seq).toBe(5);
    const waiting = fromThree.next();
    a.endRun("ended");
    expect(await waiting).toEqual({ done: true, value: undefined });
    expect(a.history("ended")).toEqual([]);
    expect(await b.readHistory("ended")).toEqual([]);
  });

  it("ends a watcher at once when its signal is aborted mid-wait", async () => {
    const a = await bus();
    const controller = new AbortController();
    const watcher = a.watch("quiet", controller.signal);
    const waiting = watcher.next();
    await pause(50);
    controller.abort();
    expect(await waiting).toEqual({ done: true, value: undefined });
  });

  it("expires a run's stream after its done, and an unended one after its last event", async () => {
    const a = await bus({ retainEndedMs: 300, retainUnendedMs: 60_000 });
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    try {
      a.emit("open", { kind: "output", text: "x" });
      a.emit("closed", { kind: "output", text: "x" });
      a.emit("closed", done);
      await a.flushed();
      const prefix = `${prefixes.get(a)}run:`;
      const openTtl = Number(await raw.sendCommand(["PTTL", `${prefix}open`]));
      expect(openTtl).toBeGreaterThan(30_000);
      expect(openTtl).toBeLessThanOrEqual(60_000);
      expect(Number(await raw.sendCommand(["PTTL", `${prefix}closed`]))).toBeLessThanOrEqual(300);
      await pause(500);
      expect(await a.readHistory("closed")).toEqual([]);
      expect(await a.readHistory("open")).toHaveLength(1);
    } finally {
      raw.destroy();
    }
  });

  it("keeps a run for a retention longer than Redis can count in ms, without reporting its events refused", async () => {
    // A host's "keep it for ever": settings take any positive finite number.
    const keep = { retainEndedMs: Number.MAX_VALUE, retainUnendedMs: 1e19 };
    const prefix = `t${buses.length}:`;
    const reports: unknown[] = [];
    const a = await createRedisBus({
      url: server.url,
      prefix,
      settings: keep,
      onError: (e) => reports.push(e),
    });
    buses.push(a);
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    try {
      a.emit("kept", { kind: "output", text: "one" });
      await a.flushed();
      expect(Number(await raw.sendCommand(["PTTL", `${prefix}run:kept`]))).toBeGreaterThan(1e15);
      a.emit("kept", done);
      await a.flushed();
      expect(reports).toEqual([]);
      expect((await a.readHistory("kept")).map((e) => e.kind)).toEqual(["output", "done"]);
      expect(Number(await raw.sendCommand(["PTTL", `${prefix}run:kept`]))).toBeGreaterThan(1e15);
    } finally {
      raw.destroy();
    }
  });

  it("rejects a bad run id or event with an EventsError naming it", async () => {
    const a = await bus();
    expect(() => a.emit("", { kind: "output", text: "x" })).toThrow(/run id as a non-empty string/);
    expect(() => a.emit("r", { text: "x" } as never)).toThrow(/string `kind`/);
    expect(() => a.watch(42 as never)).toThrow(/run id/);
  });

  it("refuses an event JSON cannot write with an EventsError, and goes on writing every run", async () => {
    const a = await bus();
    const cycle: Record<string, unknown> = { kind: "output", text: "x" };
    cycle.self = cycle;
    const getter = Object.defineProperty({ kind: "output" }, "text", {
      enumerable: true,
      get() {
        throw new Error("no");
      },
    });
    for (const event of [{ kind: "output", text: 1n }, cycle, getter]) {
      let thrown: unknown;
      try {
        a.emit("r", event as never);
      } catch (error) {
        thrown = error;
      }
      expect(EventsError.isInstance(thrown), String(thrown)).toBe(true);
      expect((thrown as EventsError).code).toBe("invalid-event");
    }
    expect(a.emit("r", { kind: "output", text: "after" }).seq).toBe(1);
    a.emit("other", { kind: "output", text: "another run" });
    const flushed = await Promise.race([a.flushed().then(() => true), pause(3000).then(() => false)]);
    expect(flushed).toBe(true);
    expect(a.pending).toBe(0);
    expect((await a.readHistory("r")).map((e) => (e as { text?: string }).text)).toEqual(["after"]);
    expect(await a.readHistory("other")).toHaveLength(1);
  });

  it("refuses a second emitter's events into a run, through onError, without throwing", async () => {
    const a = await bus();
    const errors: unknown[] = [];
    const b = await createRedisBus({
      url: server.url,
      prefix: prefixes.get(a),
      onError: (e) => errors.push(e),
    });
    buses.push(b);
    a.emit("owned", { kind: "output", text: "a1" });
    a.emit("owned", { kind: "output", text: "a2" });
    await a.flushed();
    expect(b.emit("owned", { kind: "output", text: "b1" }).seq).toBe(1);
    await b.flushed();
    expect(String(errors[0])).toMatch(/already holds seq 1 or later.*One instance emits into a run/);
    expect((await a.readHistory("owned")).map((e) => (e as { text?: string }).text)).toEqual(["a1", "a2"]);
  });

  it("survives a Redis restart: what is emitted while it is away is written when it is back, and endRun still reaches every instance", async () => {
    const a = await bus();
    const b = await bus(undefined, a);
    a.emit("away", { kind: "output", text: "before" });
    await a.flushed();
    await server.kill();
    expect(a.emit("away", { kind: "output", text: "while away" }).seq).toBe(2);
    expect(a.pending).toBe(1);
    await server.start();
    await a.flushed();
    // The server lost seq 1 with its restart: a reader from the start is told so, once.
    const watcher = b.watch("away");
    const first = await watcher.next();
    expect(first.value).toMatchObject({ kind: "notice", dropped: 1, seq: 1 });
    expect((await watcher.next()).value).toMatchObject({ seq: 2, text: "while away" });
    // B's subscriber came back too: A's endRun ends B's watcher.
    await pause(600);
    const waiting = watcher.next();
    a.endRun("away");
    expect(await waiting).toEqual({ done: true, value: undefined });
  });
});
