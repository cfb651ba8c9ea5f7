import { EventsError, type SequencedEvent } from "@loopwright/events";
import { createClient } from "@redis/client";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns } from "../../../test-support/properties.js";
import { CutProxy } from "../test/cut-proxy.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, type RedisEventBus } from "./bus.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!HAS_REDIS)("runs on one Redis bus do not reach into each other", () => {
  let server: RedisServer;
  const buses: RedisEventBus[] = [];
  let made = 0;
  const bus = async (onError: (error: unknown) => void = () => {}) => {
    const prefix = `tenants${made++}:`;
    const created = await createRedisBus({ url: server.url, prefix, onError });
    buses.push(created);
    return { bus: created, prefix };
  };

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close()));
    await server.kill();
  });

  it("a run whose stream Redis refuses to write is reported and dropped; every other run is still written", async () => {
    const errors: unknown[] = [];
    const { bus: a, prefix } = await bus((error) => errors.push(error));
    const raw = createClient({ url: server.url });
    await raw.connect();
    try {
      // Something else already holds the run's key as another type: every XADD answers WRONGTYPE.
      await raw.sendCommand(["SET", `${prefix}run:taken`, "not a stream"]);
      a.emit("taken", { kind: "output", text: "never written" });
      a.emit("other", { kind: "output", text: "another tenant" });
      a.emit("other", { kind: "done" });
      const flushed = await Promise.race([a.flushed().then(() => true), pause(3000).then(() => false)]);
      expect(flushed).toBe(true);
      expect(a.pending).toBe(0);
      expect((await a.readHistory("other")).map((e) => e.kind)).toEqual(["output", "done"]);
      // Told once, naming the run and what Redis said; not once per retry.
      const refusals = errors.filter((e) => /WRONGTYPE/.test(String(e)));
      expect(refusals).toHaveLength(1);
      expect(String(refusals[0])).toMatch(/"taken"/);
      // Later events of other runs are not held behind it either.
      a.emit("later", { kind: "output", text: "later" });
      await a.flushed();
      expect(await a.readHistory("later")).toHaveLength(1);
    } finally {
      raw.destroy();
    }
  });

  it("readHistory refuses an `after` that is not a seq instead of reading from the wrong place", async () => {
    const { bus: a } = await bus();
    for (let i = 1; i <= 60; i++) a.emit("numbered", { kind: "output", text: `n${i}` });
    await a.flushed();
    // A seq taken from a query string: "5" + 1 would have been "51".
    for (const after of ["5", Number.NaN, 1.5, -1, Number.POSITIVE_INFINITY]) {
      let thrown: unknown;
      try {
        await a.readHistory("numbered", after as never);
      } catch (error) {
        thrown = error;
      }
      expect(EventsError.isInstance(thrown), `${String(after)}: ${String(thrown)}`).toBe(true);
      expect(String(thrown)).toMatch(/after/);
    }
    expect((await a.readHistory("numbered", 5))[0]?.seq).toBe(6);
  });

  it("watch refuses a signal that is not one with an EventsError, before it opens a connection", async () => {
    const { bus: a } = await bus();
    let thrown: unknown;
    try {
      a.watch("r", { aborted: false } as never);
    } catch (error) {
      thrown = error;
    }
    expect(EventsError.isInstance(thrown) && thrown.code).toBe("invalid-signal");
  });

  it("run ids that differ only in glob, hash-tag, separator or control characters stay apart", async () => {
    const { bus: a } = await bus();
    const ids = ["a", "a*", "*", "a?", "[a]", "{a}", "a:b", "a\nb", "a\u0000", "a".repeat(10_000)];
    for (const id of ids) a.emit(id, { kind: "output", text: id });
    await a.flushed();
    for (const id of ids) {
      const events = (await a.readHistory(id)) as SequencedEvent<{ kind: "output"; text: string }>[];
      expect(events.map((e) => e.text)).toEqual([id]);
    }
    const watcher = a.watch("*");
    a.emit("a", { kind: "done" });
    a.emit("*", { kind: "done" });
    const seen: string[] = [];
    for await (const event of watcher) seen.push(event.kind);
    expect(seen).toEqual(["output", "done"]);
  });

  it("an endRun made while this instance's link to Redis is down still reaches the others once it is back", async () => {
    // A's link is cut while Redis, and B's connections, stay up: Redis keeps the stream.
    const proxy = await CutProxy.start(server.port);
    const prefix = `tenants${made++}:`;
    const a = await createRedisBus({ url: proxy.url, prefix, onError: () => {} });
    const b = await createRedisBus({ url: server.url, prefix, onError: () => {} });
    buses.push(a, b);
    try {
      a.emit("cut", { kind: "output", text: "one" });
      await a.flushed();
      const watcher = b.watch("cut");
      expect((await watcher.next()).value).toMatchObject({ seq: 1 });
      await proxy.cut();
      await pause(100);
      a.endRun("cut");
      await proxy.restore();
      const ended = await Promise.race([watcher.next(), pause(5000).then(() => "still waiting")]);
      expect(ended).toEqual({ done: true, value: undefined });
      await a.flushed();
      expect(await b.readHistory("cut")).toEqual([]);
      // A run started afresh under the same id is written after the deletion, from seq 1.
      expect(a.emit("cut", { kind: "output", text: "again" }).seq).toBe(1);
      await a.flushed();
      expect((await b.readHistory("cut")).map((e) => e.seq)).toEqual([1]);
    } finally {
      await proxy.cut();
    }
  }, 20_000);

  it("writes an event carrying __proto__ as data with that key, and keeps a copy whose prototype is untouched", async () => {
    const { bus: a } = await bus();
    const text = '{"kind":"output","text":"mine","__proto__":{"text":"inherited","kind":"done"}}';
    const stored = a.emit("relayed", JSON.parse(text));
    expect(Object.getPrototypeOf(stored)).toBe(Object.prototype);
    await a.flushed();
    const [read] = await a.readHistory("relayed");
    expect(JSON.stringify(read)).toBe(`${text.slice(0, -1)},"seq":1}`);
    expect(JSON.stringify(a.history("relayed")[0])).toBe(JSON.stringify(read));
  });

  it("takes only a settings object's own fields, so a polluted Object.prototype moves no number", async () => {
    const proto = Object.prototype as Record<string, unknown>;
    proto.maxEvents = 1;
    try {
      const created = await createRedisBus({ url: server.url, prefix: `tenants${made++}:`, settings: {} });
      buses.push(created);
      expect(created.configure({}).maxEvents).toBe(1000);
    } finally {
      delete proto.maxEvents;
    }
  });

  it("any run ids, any interleaving: each run reads back exactly its own events, or its id is refused by name", async () => {
    const { bus: a } = await bus();
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.oneof(
            fc.string({ unit: "binary", minLength: 1, maxLength: 6 }),
            // Ids that are one key once written as UTF-8, unless told apart first.
            fc.constantFrom("x\uD800", "x\uDBFF", "x\uDC00", "x\uFFFD", "*", "x*", "{x}", "x:y", "x\n"),
          ),
          { minLength: 1, maxLength: 4 },
        ),
        fc.array(fc.nat(), { minLength: 1, maxLength: 12 }),
        async (ids, picks) => {
          // A fresh namespace per case, so one case's runs are not the next one's.
          const scoped = ids.map((id) => `${round}/${id}`);
          round++;
          const sent = new Map<string, string[]>();
          for (const [i, pick] of picks.entries()) {
            const id = scoped[pick % scoped.length] as string;
            let refused: unknown;
            try {
              a.emit(id, { kind: "output", text: `e${i}` });
            } catch (error) {
              refused = error;
            }
            // Taken, or refused before anything is written by a typed error naming the id as the problem.
            expect(refused === undefined || (EventsError.isInstance(refused) && refused.code)).toSatisfy(
              (v) => v === true || v === "invalid-run-id",
            );
            if (refused === undefined) sent.set(id, [...(sent.get(id) ?? []), `e${i}`]);
          }
          await a.flushed();
          for (const [id, texts] of sent) {
            const read = (await a.readHistory(id)) as SequencedEvent<{ kind: "output"; text: string }>[];
            expect(read.map((e) => e.text)).toEqual(texts);
          }
        },
      ),
      propertyRuns(150, { seed: 20261201 }),
    );
  });

  it("keeps no more of a long run here than its stream keeps in Redis", async () => {
    const created = await createRedisBus({
      url: server.url,
      prefix: `tenants${made++}:`,
      maxStreamLength: 100,
    });
    buses.push(created);
    for (let i = 1; i <= 2000; i++) created.emit("long", { kind: "output", text: `n${i}` });
    await created.flushed();
    const local = created.history("long");
    const stored = await created.readHistory("long");
    expect(local.at(-1)?.seq).toBe(2000);
    expect(local.length).toBeLessThanOrEqual(Math.max(stored.length, 110));
    expect(local.map((e) => e.seq)).toEqual(
      Array.from({ length: local.length }, (_, i) => 2001 - local.length + i),
    );
  });

  it("a watcher waiting past a last entry it cannot read waits, instead of asking Redis again and again", async () => {
    const { bus: a, prefix } = await bus();
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    const commands = async () =>
      Number(/total_commands_processed:(\d+)/.exec(String(await raw.sendCommand(["INFO", "stats"])))?.[1]);
    try {
      const key = `${prefix}run:tail`;
      await raw.sendCommand(["XADD", key, "1-0", "e", '{"seq":1,"kind":"output","text":"one"}']);
      await raw.sendCommand(["XADD", key, "2-0", "e", "{not json"]);
      const watcher = a.watch("tail");
      expect((await watcher.next()).value).toMatchObject({ seq: 1 });
      const waiting = watcher.next();
      await pause(100);
      const before = await commands();
      await pause(500);
      // A blocked XREAD is one command; a reader spinning on the entry sends thousands.
      expect((await commands()) - before).toBeLessThan(20);
      await raw.sendCommand(["XADD", key, "3-0", "e", '{"seq":3,"kind":"done"}']);
      expect((await waiting).value).toMatchObject({ kind: "notice", dropped: 1, seq: 2 });
      expect((await watcher.next()).value).toMatchObject({ seq: 3, kind: "done" });
    } finally {
      raw.destroy();
    }
  });

  it("a watcher whose run's key stops being a stream is ended and reported, not left asking Redis in a loop", async () => {
    const errors: unknown[] = [];
    const { bus: a, prefix } = await bus((error) => errors.push(error));
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    const commands = async () =>
      Number(/total_commands_processed:(\d+)/.exec(String(await raw.sendCommand(["INFO", "stats"])))?.[1]);
    try {
      // More than one read's worth, so the watcher holds a replay batch while the key changes.
      for (let i = 1; i <= 300; i++) a.emit("swapped", { kind: "output", text: `n${i}` });
      await a.flushed();
      const watcher = a.watch("swapped");
      expect((await watcher.next()).value).toMatchObject({ seq: 1 });
      await pause(100);
      await raw.sendCommand(["DEL", `${prefix}run:swapped`]);
      await raw.sendCommand(["SET", `${prefix}run:swapped`, "something else"]);
      const before = await commands();
      let read = 1;
      const reading = (async () => {
        for await (const _ of watcher) read++;
      })();
      const finished = await Promise.race([reading.then(() => true), pause(1000).then(() => false)]);
      expect((await commands()) - before).toBeLessThan(50);
      expect(finished).toBe(true);
      expect(read).toBe(256);
      expect(errors.some((e) => /WRONGTYPE/.test(String(e)))).toBe(true);
    } finally {
      raw.destroy();
    }
  });

  it("a burst of emits while Redis is there is written whole; maxPending bounds only what waits while it is away", async () => {
    const errors: unknown[] = [];
    const created = await createRedisBus({
      url: server.url,
      prefix: `tenants${made++}:`,
      maxPending: 100,
      onError: (error) => errors.push(error),
    });
    buses.push(created);
    // A host replaying a saved run into the bus, in one synchronous loop.
    for (let i = 1; i <= 1000; i++) created.emit("burst", { kind: "output", text: `n${i}` });
    await created.flushed();
    expect((await created.readHistory("burst")).map((e) => e.seq)).toEqual(
      Array.from({ length: 1000 }, (_, i) => i + 1),
    );
    expect(errors).toEqual([]);
    await server.kill();
    // Until the client has seen its connection go, Redis is not away as far as the bus knows.
    await pause(300);
    for (let i = 1; i <= 300; i++) created.emit("burst", { kind: "output", text: `away${i}` });
    expect(created.pending).toBe(100);
    expect(errors.filter((e) => /oldest of those not yet sent are dropped/.test(String(e)))).toHaveLength(1);
    await server.start();
    await created.flushed();
    // The server came back empty; what waited is the latest 100.
    expect((await created.readHistory("burst")).map((e) => e.seq)).toEqual(
      Array.from({ length: 100 }, (_, i) => 1201 + i),
    );
  }, 20_000);

  it("maxPending also bounds what waits while Redis is there but refusing writes (out of memory)", async () => {
    const errors: unknown[] = [];
    const created = await createRedisBus({
      url: server.url,
      prefix: `tenants${made++}:`,
      maxPending: 100,
      onError: (error) => errors.push(error),
    });
    buses.push(created);
    const raw = createClient({ url: server.url, RESP: 2 });
    await raw.connect();
    try {
      await raw.sendCommand(["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "1"]);
      created.emit("full", { kind: "output", text: "first" });
      for (let i = 0; i < 20 && !errors.some((e) => /OOM/.test(String(e))); i++) await pause(50);
      expect(errors.some((e) => /OOM/.test(String(e)))).toBe(true);
      for (let i = 0; i < 1000; i++) created.emit("full", { kind: "output", text: `n${i}` });
      // What waits unsent is held to 100; the batch on the wire (the first event, when its retry is
      // out at this moment) is kept besides, as the README says.
      expect(created.pending).toBeLessThanOrEqual(101);
      expect(errors.some((e) => /oldest of those not yet sent are dropped/.test(String(e)))).toBe(true);
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      await created.flushed();
      const written = (await created.readHistory("full")).map((e) => e.seq);
      // The newest 100; and seq 1 before them when its retry was on the wire as the burst came
      // (kept, as the README says: a machine under load makes that moment longer).
      const newest = Array.from({ length: 100 }, (_, i) => 902 + i);
      expect([newest, [1, ...newest]]).toContainEqual(written);
    } finally {
      await raw.sendCommand(["CONFIG", "SET", "maxmemory", "0"]);
      raw.destroy();
    }
  }, 20_000);
});
