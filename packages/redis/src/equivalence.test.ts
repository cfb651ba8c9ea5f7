// The Redis stores behave as the in-process ones: each property runs one random sequence of
// operations against the in-process store (`@loopwright/events`' bus, `@loopwright/negotiate`'s
// capability store, `@loopwright/ledger`'s calibration, a `Map` of route latches) and against two
// Redis instances sharing one Redis under a fresh prefix, and compares what a user can observe.
//
// Where the README lets the Redis side differ — a change made on one instance reaches the other
// through pub/sub, so it is seen there a little later; a watcher that falls behind is cut where its
// reads happen to stand — the property waits for the change to arrive (bounded, never timed) or
// allows exactly the difference the README names, and no more.

import type { RouteLatches } from "@loopwright/client";
import { createBus, type EventBus, fold, type RunEvent, type SequencedEvent } from "@loopwright/events";
import { createCalibration } from "@loopwright/ledger";
import {
  type CapabilitySnapshot,
  type CapabilityStore,
  createCapabilityStore,
  type EndpointCapabilities,
} from "@loopwright/negotiate";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { HAS_REDIS, RedisServer, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, type RedisEventBus } from "./bus.js";
import { createRedisCalibration, type RedisCalibration } from "./calibration.js";
import { createRedisCapabilityStore, type RedisCapabilityStore } from "./capabilities.js";
import { marksKnown } from "./forgets.js";
import { createRedisRouteLatches, type RedisRouteLatches } from "./route-latches.js";
import type { RedisEventStream } from "./stream-watcher.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until `ready()` holds, looking every 10 ms for at most `rounds` looks: a change that
 * travels through pub/sub is there "soon", and the property then compares; never an assertion on
 * how long it took.
 */
async function until(ready: () => boolean, rounds = 500): Promise<void> {
  for (let i = 0; i < rounds && !ready(); i++) await pause(10);
}

/** What a user sees of an event: its fields, as JSON (key order aside). */
const shown = (event: SequencedEvent): string =>
  JSON.stringify(Object.fromEntries(Object.entries(event).sort(([x], [y]) => (x < y ? -1 : 1))));

const RUNS = ["r0", "r1"] as const;

const eventArb: fc.Arbitrary<RunEvent> = fc.oneof(
  fc.record({ kind: fc.constant("output" as const), text: fc.string({ maxLength: 6 }) }),
  fc.record({ kind: fc.constant("thinking" as const), text: fc.string({ maxLength: 6 }) }),
  fc.record({ kind: fc.constant("turn" as const), step: fc.nat(9) }),
  fc.record({
    kind: fc.constant("tool-call" as const),
    id: fc.constantFrom("c1", "c2"),
    name: fc.constant("read"),
    args: fc.constant("{}"),
  }),
  fc.record({
    kind: fc.constant("tool-result" as const),
    id: fc.constantFrom("c1", "c2"),
    name: fc.constant("read"),
    ok: fc.boolean(),
    content: fc.string({ maxLength: 4 }),
  }),
  fc.record({ kind: fc.constant("retract" as const), chars: fc.nat(4) }),
  fc.record({ kind: fc.constant("notice" as const), text: fc.string({ maxLength: 4 }) }),
  fc.record({ kind: fc.constant("error" as const), message: fc.constant("failed") }),
);

type Side = "a" | "b";
type BusOp =
  | { op: "emit"; run: number; event: RunEvent }
  | { op: "done"; run: number }
  | { op: "watch"; run: number; on: Side; after: number; byId: boolean }
  | { op: "endRun"; run: number; on: Side; release: boolean }
  | { op: "read"; run: number; on: Side; after: number };

const sideArb = fc.constantFrom<Side>("a", "b");
const runArb = fc.nat(RUNS.length - 1);
const busOpArb: fc.Arbitrary<BusOp> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant("emit" as const), run: runArb, event: eventArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("done" as const), run: runArb }) },
  {
    weight: 3,
    // `after` is a fraction of the run's top at that moment (see below), so it is always a seq the
    // reader could have read.
    arbitrary: fc.record({
      op: fc.constant("watch" as const),
      run: runArb,
      on: sideArb,
      after: fc.nat(100),
      // From the event id an earlier watcher handed out for that seq (as a page's Last-Event-ID),
      // or the bare seq as text, rather than the number.
      byId: fc.boolean(),
    }),
  },
  {
    weight: 1,
    // `release`: on the emitting instance, `releaseRun` (what the loop's runtime calls before it
    // runs an id again), which for that instance's own run is the in-memory `endRun`.
    arbitrary: fc.record({
      op: fc.constant("endRun" as const),
      run: runArb,
      on: sideArb,
      release: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant("read" as const), run: runArb, on: sideArb, after: fc.nat(100) }),
  },
);

/** How many of `history`'s events a watcher from `after` reads: those after it, to the first `done`. */
function owedTo(history: SequencedEvent[], after: number): number {
  const done = history.findIndex((e) => e.kind === "done");
  return (done < 0 ? history : history.slice(0, done + 1)).filter((e) => e.seq > after).length;
}

/** A watcher read to its end into `seen`, on either bus. */
interface Reading {
  label: string;
  run: string;
  after: number;
  seen: SequencedEvent[];
  ended: boolean;
  stop: AbortController;
  finished: Promise<void>;
}

function read(
  label: string,
  run: string,
  after: number,
  stream: AsyncIterable<SequencedEvent>,
  stop: AbortController,
): Reading {
  const reading: Reading = { label, run, after, seen: [], ended: false, stop, finished: Promise.resolve() };
  reading.finished = (async () => {
    for await (const event of stream) reading.seen.push(event);
    reading.ended = true;
  })();
  return reading;
}

describe.skipIf(!HAS_REDIS)("the Redis stores answer as the in-process ones", () => {
  let server: RedisServer;
  let made = 0;
  const fresh = () => `eq${made++}:`;

  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(async () => {
    await server.kill();
  });

  it(
    "bus: emit, watch from a seq on either instance, read back, done and endRun, as the in-memory bus",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(busOpArb, { minLength: 1, maxLength: 14 }), async (ops) => {
          const prefix = fresh();
          const errors: unknown[] = [];
          const onError = (error: unknown) => errors.push(error);
          const a = await createRedisBus({ url: server.url, prefix, onError });
          const b = await createRedisBus({ url: server.url, prefix, onError });
          const on = (side: Side): RedisEventBus => (side === "a" ? a : b);
          const mem: EventBus = createBus();
          const pairs: { redis: Reading; mem: Reading; stream: RedisEventStream; generation: number }[] = [];
          /** How often each run was ended (`endRun`): an id names a seq of one run, not of the next. */
          const generations = RUNS.map(() => 0);
          try {
            for (const step of ops) {
              const run = RUNS[step.run] as string;
              const top = mem.history(run).length;
              switch (step.op) {
                case "emit":
                case "done": {
                  const event: RunEvent = step.op === "done" ? { kind: "done" } : step.event;
                  const fromMem = mem.emit(run, event);
                  const fromRedis = a.emit(run, event);
                  expect(shown(fromRedis), "emit's answer").toBe(shown(fromMem));
                  break;
                }
                case "watch": {
                  // At or past a `done` a Redis watcher waits for the id's next run and reads what
                  // comes after the `done` as that run (README, "A run id used again"), where the
                  // in-memory bus's watchers stop at the `done`: resume before it.
                  const doneAt = mem.history(run).find((e) => e.kind === "done")?.seq ?? top + 1;
                  const after = Math.min(Math.floor((step.after / 100) * top), doneAt - 1);
                  const stop = new AbortController();
                  const memStop = new AbortController();
                  // An id from a watcher of this very run (not one ended since and started afresh).
                  const named = pairs.find(
                    (p) =>
                      p.redis.run === run &&
                      p.generation === generations[step.run] &&
                      p.redis.seen.some((e) => e.seq === after),
                  );
                  const event = named?.redis.seen.find((e) => e.seq === after);
                  const from = !step.byId ? after : named && event ? named.stream.idOf(event) : String(after);
                  const stream = on(step.on).watch(run, stop.signal, { after: from });
                  pairs.push({
                    generation: generations[step.run] as number,
                    stream,
                    redis: read(
                      `${step.on}.watch(${run}, after ${JSON.stringify(from)})`,
                      run,
                      after,
                      stream,
                      stop,
                    ),
                    mem: read("mem", run, after, mem.watch(run, memStop.signal), memStop),
                  });
                  break;
                }
                case "endRun": {
                  // A user ends a run once its watchers have what was emitted: wait for them to read it
                  // (the in-memory watchers hold it at once), so what they end with is comparable.
                  await a.flushed();
                  await until(() =>
                    pairs.every(
                      (p) =>
                        p.redis.run !== run ||
                        p.redis.ended ||
                        // What the in-memory bus holds for it (its watcher may not have taken it yet):
                        // the run's events after its position, up to the first `done`.
                        p.redis.seen.length >= owedTo(mem.history(run), p.redis.after),
                    ),
                  );
                  // The other instance hears of the end through pub/sub (README: "The announcement is
                  // pub/sub"): a watcher of its own, started before, shows when it has.
                  const other = step.on === "a" ? b : a;
                  const probeStop = new AbortController();
                  const probe = read(
                    "probe",
                    run,
                    0,
                    other.watch(run, probeStop.signal, { after: top }),
                    probeStop,
                  );
                  mem.endRun(run);
                  // A release that finds no stream announces nothing, and the watchers of the id read
                  // whichever run comes under it next (README, `releaseRun`): only a run with events.
                  if (step.release && step.on === "a" && top > 0) a.releaseRun(run);
                  else on(step.on).endRun(run);
                  generations[step.run] = (generations[step.run] as number) + 1;
                  await on(step.on).flushed();
                  await until(
                    () =>
                      probe.ended && pairs.every((p) => p.redis.run !== run || p.redis.ended || !p.mem.ended),
                  );
                  probeStop.abort();
                  expect(probe.ended, "the other instance heard the end").toBe(true);
                  break;
                }
                case "read": {
                  await a.flushed();
                  const after = Math.floor((step.after / 100) * top);
                  const fromRedis = await on(step.on).readHistory(run, after);
                  const fromMem = mem.history(run).filter((e) => e.seq > after);
                  expect(fromRedis.map(shown), `${step.on}.readHistory(${run}, ${after})`).toEqual(
                    fromMem.map(shown),
                  );
                  break;
                }
              }
              // The emitting instance's own copy is the in-memory bus's history.
              for (const r of RUNS)
                expect(a.history(r).map(shown), `a.history(${r})`).toEqual(mem.history(r).map(shown));
            }
            // Every run ends with `done`, so every watcher finishes.
            for (const r of RUNS) {
              const held = mem.history(r);
              if (held.at(-1)?.kind !== "done") {
                mem.emit(r, { kind: "done" });
                a.emit(r, { kind: "done" });
              }
            }
            await a.flushed();
            const guard = setTimeout(() => {
              for (const p of pairs) p.redis.stop.abort();
            }, 15_000);
            await Promise.all(pairs.map((p) => Promise.all([p.redis.finished, p.mem.finished])));
            clearTimeout(guard);
            for (const p of pairs) {
              const expected = p.mem.seen.filter((e) => e.seq > p.mem.after);
              expect(p.redis.seen.map(shown), p.redis.label).toEqual(expected.map(shown));
              expect(fold(p.redis.seen), `fold of ${p.redis.label}`).toEqual(fold(expected));
            }
            expect(errors, "onError").toEqual([]);
          } finally {
            for (const p of pairs) {
              p.redis.stop.abort();
              p.mem.stop.abort();
            }
            mem.close();
            await Promise.all([a.close(), b.close()]);
          }
        }),
        propertyRuns(40),
      );
    },
    propertyTimeout(120_000),
  );

  /**
   * What a watcher that fell behind delivers, checked against the run's history: real events in
   * order, each stretch it skipped announced once, just before the event after it, by a notice
   * whose `dropped` counts it and whose `seq` is inside it; the run's `done` last; and at least the
   * `maxEvents` most recent events (README: "a watcher that falls behind keeps the most recent
   * `maxEvents`, and the skipped stretch is announced once").
   */
  const capped = (
    label: string,
    seen: SequencedEvent[],
    history: SequencedEvent[],
    maxEvents: number,
  ): void => {
    const real = history.map(shown);
    let next = 0; // index in history of the next event not yet delivered or skipped
    let pending: SequencedEvent | undefined; // a gap notice waiting for its event
    for (const event of seen) {
      if (event.kind === "notice" && typeof (event as { dropped?: unknown }).dropped === "number") {
        expect(pending, `${label}: two gap notices in a row`).toBeUndefined();
        pending = event;
        continue;
      }
      const at = real.indexOf(shown(event), next);
      expect(at, `${label}: ${shown(event)} is a later event of the run`).toBeGreaterThanOrEqual(next);
      const skipped = at - next;
      if (skipped > 0) {
        expect(pending, `${label}: ${skipped} skipped before seq ${event.seq} untold`).toBeDefined();
        const notice = pending as SequencedEvent & { dropped: number };
        expect(notice.dropped, `${label}: the notice's count`).toBe(skipped);
        expect(notice.seq, `${label}: the notice's seq`).toBeGreaterThanOrEqual(
          (history[next] as SequencedEvent).seq,
        );
        expect(notice.seq, `${label}: the notice's seq`).toBeLessThan(event.seq);
      } else {
        expect(pending, `${label}: a gap notice with nothing skipped`).toBeUndefined();
      }
      pending = undefined;
      next = at + 1;
    }
    expect(pending, `${label}: a gap notice at the end`).toBeUndefined();
    expect(next, `${label}: read to the run's done`).toBe(history.length);
    const tail = Math.min(maxEvents, history.length);
    expect(seen.slice(-tail).map(shown), `${label}: the ${tail} most recent events`).toEqual(
      real.slice(-tail),
    );
  };

  it(
    "bus: a watcher that does not read keeps the most recent maxEvents and tells the gap once, on either instance, as in memory",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 5 }),
          fc.integer({ min: 1, max: 3 }),
          fc.array(eventArb, { minLength: 1, maxLength: 30 }),
          sideArb,
          async (maxEvents, trimSlack, burst, side) => {
            const settings = { maxEvents, trimSlack };
            const prefix = fresh();
            const errors: unknown[] = [];
            const onError = (error: unknown) => errors.push(error);
            const a = await createRedisBus({ url: server.url, prefix, onError, settings });
            const b = await createRedisBus({ url: server.url, prefix, onError, settings });
            const mem = createBus(settings);
            const stop = new AbortController();
            const guard = setTimeout(() => stop.abort(), 15_000);
            try {
              // The watcher has read the run's first event, so what follows is live on both buses.
              const first: RunEvent = { kind: "turn", step: 1 };
              mem.emit("r", first);
              a.emit("r", first);
              const watchers = {
                mem: mem.watch("r", stop.signal)[Symbol.asyncIterator](),
                redis: (side === "a" ? a : b).watch("r", stop.signal)[Symbol.asyncIterator](),
              };
              const seen = { mem: [] as SequencedEvent[], redis: [] as SequencedEvent[] };
              for (const key of ["mem", "redis"] as const) {
                const step = await watchers[key].next();
                if (!step.done) seen[key].push(step.value);
              }
              for (const event of [...burst, { kind: "done" } as RunEvent]) {
                mem.emit("r", event);
                a.emit("r", event);
              }
              await a.flushed();
              // Not read meanwhile: give the Redis watcher's reads time to bring the burst in (how
              // much it caps then depends on where its reads stand; the property allows any).
              await pause(50);
              for (const key of ["mem", "redis"] as const) {
                for (let step = await watchers[key].next(); !step.done; step = await watchers[key].next())
                  seen[key].push(step.value);
              }
              expect(stop.signal.aborted, "the watchers ended on done").toBe(false);
              capped("in memory", seen.mem, mem.history("r"), maxEvents);
              capped(`redis (${side})`, seen.redis, mem.history("r"), maxEvents);
              expect(errors, "onError").toEqual([]);
            } finally {
              clearTimeout(guard);
              stop.abort();
              mem.close();
              await Promise.all([a.close(), b.close()]);
            }
          },
        ),
        propertyRuns(25),
      );
    },
    propertyTimeout(120_000),
  );

  // ---------------------------------------------------------------------------------------------
  // Capability latches: per endpoint and per (endpoint, model), export/import, forget, reset.

  /** Tenants as a host names them: two spellings of one server are one tenant. */
  const TENANTS: { baseUrl: string; apiKey?: string; headers?: Record<string, string> }[] = [
    { baseUrl: "http://h1.test/v1" },
    { baseUrl: "HTTP://H1.test:80/v1/" },
    { baseUrl: "http://h1.test/v1", apiKey: "sk-one" },
    { baseUrl: "http://h2.test/v1", apiKey: "sk-two", headers: { "X-Org": "a" } },
  ];
  const MODELS = ["m1", "m2"];
  const ENDPOINT_LATCHES = ["strictSchemas", "usageInStream"] as const;
  const MODEL_LATCHES = [
    "legacyTokenLimit",
    "chosenTemperature",
    "structuredOutput",
    "toolChoice",
    "anyToolCallIds",
    "refusedEfforts",
    "droppedFields",
  ] as const;

  type CapsOp =
    | { op: "endpoint"; on: Side; tenant: number; field: (typeof ENDPOINT_LATCHES)[number] }
    | { op: "model"; on: Side; tenant: number; model: number; field: (typeof MODEL_LATCHES)[number] }
    | { op: "forget"; on: Side; tenant: number }
    | { op: "reset"; on: Side }
    | {
        op: "race";
        on: Side;
        tenant: number;
        field: (typeof ENDPOINT_LATCHES)[number];
        dropOn: Side;
        reset: boolean;
      }
    | {
        op: "import";
        on: Side;
        latches: { tenant: number; model: number; field: (typeof MODEL_LATCHES)[number] }[];
      };

  const tenantArb = fc.nat(TENANTS.length - 1);
  const modelArb = fc.nat(MODELS.length - 1);
  const capsOpArb: fc.Arbitrary<CapsOp> = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant("endpoint" as const),
        on: sideArb,
        tenant: tenantArb,
        field: fc.constantFrom(...ENDPOINT_LATCHES),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant("model" as const),
        on: sideArb,
        tenant: tenantArb,
        model: modelArb,
        field: fc.constantFrom(...MODEL_LATCHES),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant("forget" as const), on: sideArb, tenant: tenantArb }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("reset" as const), on: sideArb }) },
    {
      // A latch shared and, before it is heard anywhere, a forget or reset on either instance.
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant("race" as const),
        on: sideArb,
        tenant: tenantArb,
        field: fc.constantFrom(...ENDPOINT_LATCHES),
        dropOn: sideArb,
        reset: fc.boolean(),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant("import" as const),
        on: sideArb,
        latches: fc.array(
          fc.record({ tenant: tenantArb, model: modelArb, field: fc.constantFrom(...MODEL_LATCHES) }),
          { maxLength: 3 },
        ),
      }),
    },
  );

  /** A model latch, as `negotiate` sets it on the live object. */
  const latchModel = (
    caps: ReturnType<CapabilityStore["modelCapabilitiesFor"]>,
    field: (typeof MODEL_LATCHES)[number],
  ) => {
    if (field === "refusedEfforts") {
      if (!caps.refusedEfforts.includes("low")) caps.refusedEfforts.push("low");
    } else if (field === "droppedFields") {
      if (!caps.droppedFields.includes("seed")) caps.droppedFields.push("seed");
    } else caps[field] = false;
  };
  const supportsOf = (store: CapabilityStore, tenant: number): EndpointCapabilities => {
    const t = TENANTS[tenant] as (typeof TENANTS)[number];
    return store.capabilitiesFor(t.baseUrl, t.apiKey, t.headers);
  };

  /** One snapshot with every refusal of two: flags and'd, refused lists joined. */
  const refusedInEither = (x: CapabilitySnapshot, y: CapabilitySnapshot): CapabilitySnapshot => {
    const byTenant = new Map<string, CapabilitySnapshot["endpoints"][number]>();
    for (const endpoint of [...x.endpoints, ...y.endpoints]) {
      const key = `${endpoint.baseUrl} ${endpoint.keyId}`;
      const held = byTenant.get(key);
      if (!held) {
        byTenant.set(key, structuredClone(endpoint));
        continue;
      }
      held.strictSchemas &&= endpoint.strictSchemas;
      held.usageInStream &&= endpoint.usageInStream;
      for (const [name, caps] of Object.entries(endpoint.models)) {
        const mine = held.models[name];
        if (!mine) {
          held.models[name] = structuredClone(caps);
          continue;
        }
        for (const field of Object.keys(caps) as (keyof typeof caps)[]) {
          const value = caps[field];
          if (Array.isArray(value))
            (mine[field] as string[]) = [...new Set([...(mine[field] as string[]), ...value])];
          else (mine[field] as boolean) = (mine[field] as boolean) && (value as boolean);
        }
      }
    }
    return { version: x.version, endpoints: [...byTenant.values()] };
  };

  /**
   * What a snapshot says was refused: the endpoints and models with a latch, each as JSON, sorted.
   * An endpoint met but never refused anything is left out: only refusals are shared (README, "The
   * capability store"), so another instance never holds it; nor does it change a request.
   */
  const refusals = (snapshot: CapabilitySnapshot): string[] =>
    snapshot.endpoints
      .map((endpoint) => {
        const models = Object.entries(endpoint.models)
          .filter(
            ([, m]) =>
              m.refusedEfforts.length > 0 ||
              m.droppedFields.length > 0 ||
              !m.legacyTokenLimit ||
              !m.chosenTemperature ||
              !m.structuredOutput ||
              !m.toolChoice ||
              !m.anyToolCallIds ||
              !m.assistantPrefill ||
              !m.prefillEcho,
          )
          .sort(([x], [y]) => (x < y ? -1 : 1));
        if (endpoint.strictSchemas && endpoint.usageInStream && models.length === 0) return undefined;
        const sorted = models.map(([name, m]) => [
          name,
          { ...m, refusedEfforts: [...m.refusedEfforts].sort(), droppedFields: [...m.droppedFields].sort() },
        ]);
        return JSON.stringify({ ...endpoint, models: Object.fromEntries(sorted) });
      })
      .filter((shown) => shown !== undefined)
      .sort();

  it(
    "capability latches: per endpoint and per (endpoint, model), forget, reset, export and import, on either instance",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(capsOpArb, { minLength: 1, maxLength: 10 }), async (ops) => {
          const prefix = fresh();
          const errors: unknown[] = [];
          const onError = (error: unknown) => errors.push(error);
          const a = await createRedisCapabilityStore({ url: server.url, prefix, onError });
          const b = await createRedisCapabilityStore({ url: server.url, prefix, onError });
          const on = (side: Side): RedisCapabilityStore => (side === "a" ? a : b);
          const mem = createCapabilityStore();
          try {
            for (const step of ops) {
              const store = on(step.on);
              // A forget or reset reaches the other instance through pub/sub: it has heard it once it
              // knows one mark more (see below).
              const dropOn = step.op === "race" ? step.dropOn : step.on;
              const other = dropOn === "a" ? b : a;
              const marksBefore = marksKnown(other) ?? 0;
              switch (step.op) {
                case "endpoint":
                  supportsOf(mem, step.tenant)[step.field] = false;
                  supportsOf(store, step.tenant)[step.field] = false;
                  break;
                case "model": {
                  const model = MODELS[step.model] as string;
                  latchModel(mem.modelCapabilitiesFor(supportsOf(mem, step.tenant), model), step.field);
                  latchModel(store.modelCapabilitiesFor(supportsOf(store, step.tenant), model), step.field);
                  break;
                }
                case "forget": {
                  const t = TENANTS[step.tenant] as (typeof TENANTS)[number];
                  mem.forget(t.baseUrl, t.apiKey, t.headers);
                  store.forget(t.baseUrl, t.apiKey, t.headers);
                  break;
                }
                case "reset":
                  mem.reset();
                  store.reset();
                  break;
                case "race": {
                  supportsOf(mem, step.tenant)[step.field] = false;
                  supportsOf(store, step.tenant)[step.field] = false;
                  const sharing = store.sync();
                  const t = TENANTS[step.tenant] as (typeof TENANTS)[number];
                  if (step.reset) {
                    mem.reset();
                    on(step.dropOn).reset();
                  } else {
                    mem.forget(t.baseUrl, t.apiKey, t.headers);
                    on(step.dropOn).forget(t.baseUrl, t.apiKey, t.headers);
                  }
                  await sharing;
                  break;
                }
                case "import": {
                  const before = mem.exportCapabilities();
                  // A snapshot another store exported, laid over both.
                  const source = createCapabilityStore();
                  for (const l of step.latches) {
                    latchModel(
                      source.modelCapabilitiesFor(supportsOf(source, l.tenant), MODELS[l.model] as string),
                      l.field,
                    );
                  }
                  const snapshot = source.exportCapabilities();
                  // The in-memory store sets each field as the snapshot says; the Redis store only
                  // lays on its refusals, since a shared latch only closes (README, "The capability
                  // store"): the model is the in-memory store given what it held and the snapshot both.
                  mem.importCapabilities(snapshot);
                  mem.importCapabilities(refusedInEither(before, snapshot));
                  store.importCapabilities(snapshot);
                  break;
                }
              }
              // The change reaches Redis (sync) and the other instance (pub/sub): wait for both to
              // hold what the one in-memory store holds, then compare.
              await store.sync();
              const want = refusals(mem.exportCapabilities());
              await until(
                () =>
                  JSON.stringify(refusals(a.exportCapabilities())) === JSON.stringify(want) &&
                  JSON.stringify(refusals(b.exportCapabilities())) === JSON.stringify(want),
              );
              expect(refusals(a.exportCapabilities()), `a after ${JSON.stringify(step)}`).toEqual(want);
              expect(refusals(b.exportCapabilities()), `b after ${JSON.stringify(step)}`).toEqual(want);
              // An instance that hears of a forget or reset later than it latches keeps a latch it
              // learned after it, but "a latch of the forget's own millisecond goes with it" (README,
              // "A forget or reset racing another instance's latch"): the next step comes a
              // millisecond on, as a request after a forget does.
              if (step.op === "forget" || step.op === "reset" || step.op === "race") {
                await until(() => (marksKnown(other) ?? 0) > marksBefore);
                expect(marksKnown(other), "the other instance heard the forget").toBeGreaterThan(marksBefore);
                await pause(2);
              }
            }
            // What each instance hands a request: the live objects, tenant by tenant and model by model.
            for (const side of ["a", "b"] as const) {
              for (let t = 0; t < TENANTS.length; t++) {
                const got = supportsOf(on(side), t);
                const wanted = supportsOf(mem, t);
                expect({ ...got }, `${side} tenant ${t}`).toEqual({ ...wanted });
                for (const model of MODELS) {
                  expect(
                    { ...on(side).modelCapabilitiesFor(got, model) },
                    `${side} tenant ${t} ${model}`,
                  ).toEqual({
                    ...mem.modelCapabilitiesFor(wanted, model),
                  });
                }
              }
            }
            // A host that starts now reads the same from Redis.
            const late = await createRedisCapabilityStore({ url: server.url, prefix, onError });
            try {
              expect(refusals(late.exportCapabilities()), "a host started later").toEqual(
                refusals(mem.exportCapabilities()),
              );
            } finally {
              await late.close();
            }
            expect(errors, "onError").toEqual([]);
          } finally {
            await Promise.all([a.close(), b.close()]);
          }
        }),
        propertyRuns(40),
      );
    },
    propertyTimeout(120_000),
  );

  // ---------------------------------------------------------------------------------------------
  // Calibration: readings taken and read on either instance, per endpoint (a string, or the
  // capability object the loop passes) and model, forgotten per endpoint.

  type CalOp =
    | { op: "calibrate"; on: Side; endpoint: number; model: number; chars: number; tokens: number }
    | { op: "forget"; on: Side; endpoint: number; thenCalibrate?: number };
  /** Two endpoints named by a string, two by a tenant's capability object. */
  const CAL_ENDPOINTS = 4;
  const CAL_MODELS = [undefined, "m1", "m2"] as const;
  const calOpArb: fc.Arbitrary<CalOp> = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        op: fc.constant("calibrate" as const),
        on: sideArb,
        endpoint: fc.nat(CAL_ENDPOINTS - 1),
        model: fc.nat(CAL_MODELS.length - 1),
        chars: fc.integer({ min: 8, max: 90 }),
        tokens: fc.integer({ min: 1, max: 30 }),
      }),
    },
    {
      // `thenCalibrate`: a reading of that endpoint taken on the same instance right after, before
      // the forget is heard back.
      weight: 2,
      arbitrary: fc.record(
        {
          op: fc.constant("forget" as const),
          on: sideArb,
          endpoint: fc.nat(CAL_ENDPOINTS - 1),
          thenCalibrate: fc.nat(CAL_ENDPOINTS - 1),
        },
        { requiredKeys: ["op", "on", "endpoint"] },
      ),
    },
  );

  it(
    "calibration: readings taken on either instance answer as one in-memory store, tenants apart, forget per endpoint",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(calOpArb, { minLength: 1, maxLength: 12 }), async (ops) => {
          const prefix = fresh();
          const errors: unknown[] = [];
          const onError = (error: unknown) => errors.push(error);
          const capsA = await createRedisCapabilityStore({ url: server.url, prefix, onError });
          const capsB = await createRedisCapabilityStore({ url: server.url, prefix, onError });
          const a = await createRedisCalibration({
            url: server.url,
            prefix,
            onError,
            endpointIdOf: capsA.endpointIdOf,
          });
          const b = await createRedisCalibration({
            url: server.url,
            prefix,
            onError,
            endpointIdOf: capsB.endpointIdOf,
          });
          const memCaps = createCapabilityStore();
          const mem = createCalibration();
          /** An endpoint of the test's own (never compared): see the probe below. */
          const PROBE = "http://probe.test/v1";
          let probes = 0;
          const on = (side: Side): RedisCalibration => (side === "a" ? a : b);
          /** The endpoint as each side names it: the same string, or that side's object of the tenant. */
          const endpointOf = (side: Side | "mem", n: number): string | object => {
            if (n < 2) return `http://cal${n}.test/v1`;
            const caps = side === "mem" ? memCaps : side === "a" ? capsA : capsB;
            return caps.capabilitiesFor(`http://cal${n}.test/v1`, "sk");
          };
          const divisors = (side: Side | "mem"): number[] => {
            const store = side === "mem" ? mem : on(side);
            const seen: number[] = [];
            for (let n = 0; n < CAL_ENDPOINTS; n++)
              for (const model of CAL_MODELS) seen.push(store.charsPerTokenFor(endpointOf(side, n), model));
            return seen;
          };
          try {
            for (const step of ops) {
              if (step.op === "calibrate") {
                const model = CAL_MODELS[step.model];
                const body = { messages: [{ role: "user" as const, content: "x".repeat(step.chars) }] };
                const fromMem = mem.calibrate(endpointOf("mem", step.endpoint), model, body, step.tokens);
                const fromRedis = on(step.on).calibrate(
                  endpointOf(step.on, step.endpoint),
                  model,
                  body,
                  step.tokens,
                );
                expect(fromRedis, `calibrate ${JSON.stringify(step)}`).toBe(fromMem);
              } else {
                const other: RedisCalibration = step.on === "a" ? b : a;
                const marksBefore = marksKnown(other) ?? 0;
                const fromMem = mem.forget(endpointOf("mem", step.endpoint));
                const fromRedis = on(step.on).forget(endpointOf(step.on, step.endpoint));
                expect(fromRedis, `forget ${JSON.stringify(step)}`).toBe(fromMem);
                if (step.thenCalibrate !== undefined) {
                  const body = { messages: [{ role: "user" as const, content: "x".repeat(30) }] };
                  const n = step.thenCalibrate;
                  expect(on(step.on).calibrate(endpointOf(step.on, n), "m1", body, 6)).toBe(
                    mem.calibrate(endpointOf("mem", n), "m1", body, 6),
                  );
                }
                // The other instance drops the endpoint's readings when it hears the forget, whenever
                // it took them ("a reading on its way across a forget never outlives it", README,
                // "Calibration"): a reading there comes once it has heard, as one after the forget.
                await until(() => (marksKnown(other) ?? 0) > marksBefore);
                expect(marksKnown(other), "the other instance heard the forget").toBeGreaterThan(marksBefore);
              }
              // The reading reaches the other instance through pub/sub, and may not change what it
              // answers (a reading below the highest of the last four, or of 4 itself): a reading of a
              // probe endpoint of this instance's, higher each time and announced after it, shows
              // when the other has heard it (announcements arrive in the order Redis ran them).
              probes++;
              const here = on(step.on);
              const there = step.on === "a" ? b : a;
              here.calibrate(
                PROBE,
                undefined,
                { messages: [{ role: "user" as const, content: "x".repeat(100 + probes) }] },
                50,
              );
              const probed = here.charsPerTokenFor(PROBE);
              await until(() => there.charsPerTokenFor(PROBE) === probed);
              expect(there.charsPerTokenFor(PROBE), "the other instance heard the probe").toBe(probed);
              // A reading taken right after its instance's own forget of the endpoint is sent behind
              // the forget, once Redis has taken it, so the probe may overtake it: wait for what the
              // other instance answers too.
              const want = JSON.stringify(divisors("mem"));
              await until(
                () => JSON.stringify(divisors("a")) === want && JSON.stringify(divisors("b")) === want,
              );
              expect(divisors("a"), `a after ${JSON.stringify(step)}`).toEqual(divisors("mem"));
              expect(divisors("b"), `b after ${JSON.stringify(step)}`).toEqual(divisors("mem"));
            }
            // A host that starts now reads the same readings from Redis.
            const lateCaps = await createRedisCapabilityStore({ url: server.url, prefix, onError });
            const late = await createRedisCalibration({
              url: server.url,
              prefix,
              onError,
              endpointIdOf: lateCaps.endpointIdOf,
            });
            try {
              const seen: number[] = [];
              for (let n = 0; n < CAL_ENDPOINTS; n++) {
                const endpoint =
                  n < 2 ? `http://cal${n}.test/v1` : lateCaps.capabilitiesFor(`http://cal${n}.test/v1`, "sk");
                for (const model of CAL_MODELS) seen.push(late.charsPerTokenFor(endpoint, model));
              }
              expect(seen, "a host started later").toEqual(divisors("mem"));
              // Another tenant of the same Redis (its own prefix) holds none of these readings.
              const elsewhere = await createRedisCalibration({
                url: server.url,
                prefix: fresh(),
                onError,
                endpointIdOf: lateCaps.endpointIdOf,
              });
              try {
                const apart: number[] = [];
                for (let n = 0; n < CAL_ENDPOINTS; n++) {
                  const endpoint =
                    n < 2
                      ? `http://cal${n}.test/v1`
                      : lateCaps.capabilitiesFor(`http://cal${n}.test/v1`, "sk");
                  for (const model of CAL_MODELS) apart.push(elsewhere.charsPerTokenFor(endpoint, model));
                }
                expect(apart, "another prefix").toEqual(apart.map(() => 4));
              } finally {
                await elsewhere.close();
              }
            } finally {
              await Promise.all([late.close(), lateCaps.close()]);
            }
            expect(errors, "onError").toEqual([]);
          } finally {
            await Promise.all([a.close(), b.close(), capsA.close(), capsB.close()]);
          }
        }),
        propertyRuns(30),
      );
    },
    propertyTimeout(120_000),
  );
  // ---------------------------------------------------------------------------------------------
  // Window-route latches: what one instance's lookups learn, every instance's `get` answers, as one
  // pool's `Map` would; `delete` is this instance's only (README, "Window-route latches").

  type RouteOp =
    | {
        op: "learn";
        on: Side;
        base: number;
        field: "neither" | "lmstudioGone" | "lmstudioMissUntil" | "propsMissUntil";
      }
    | { op: "delete"; on: Side; base: number };
  const BASES = ["http://r0.test", "http://r1.test:8080", "http://user:pw@r2.test"];
  const routeOpArb: fc.Arbitrary<RouteOp> = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        op: fc.constant("learn" as const),
        on: sideArb,
        base: fc.nat(BASES.length - 1),
        field: fc.constantFrom(
          "neither" as const,
          "lmstudioGone" as const,
          "lmstudioMissUntil" as const,
          "propsMissUntil" as const,
        ),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant("delete" as const),
        on: sideArb,
        base: fc.nat(BASES.length - 1),
      }),
    },
  );
  const NONE: RouteLatches = { neither: false, lmstudioGone: false, lmstudioMissUntil: 0, propsMissUntil: 0 };
  const latchesOf = (state: RouteLatches | undefined): RouteLatches => ({
    ...NONE,
    ...(state && { ...state }),
  });

  it(
    "window-route latches: learned on either instance, read on both as one pool's Map; delete here only",
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(routeOpArb, { minLength: 1, maxLength: 12 }), async (ops) => {
          const prefix = fresh();
          const errors: unknown[] = [];
          const onError = (error: unknown) => errors.push(error);
          const a = await createRedisRouteLatches({ url: server.url, prefix, onError });
          const b = await createRedisRouteLatches({ url: server.url, prefix, onError });
          const on = (side: Side): RedisRouteLatches => (side === "a" ? a : b);
          // What was learned, anywhere: a pool's `Map` that never forgot a server.
          const mem = new Map<string, RouteLatches>();
          /**
           * Servers each instance dropped (its pool's forget): from then on it holds at most what was
           * learned — nothing, what it learns again, or what another instance announces.
           */
          const dropped = { a: new Set<string>(), b: new Set<string>() };
          // The retry times a lookup sets (LM Studio's, /props') move on with the clock: later each time.
          let clock = 1_000_000;
          try {
            for (const step of ops) {
              const base = BASES[step.base] as string;
              const store = on(step.on);
              const other: Side = step.on === "a" ? "b" : "a";
              if (step.op === "delete") {
                store.delete(base);
                dropped[step.on].add(base);
                expect(store.get(base), `${step.on}.get after its delete`).toBeUndefined();
                continue;
              }
              // As a lookup does: the server's latches, or a fresh set it stores, then one latch.
              const learn = (map: {
                get(base: string): RouteLatches | undefined;
                set(base: string, l: RouteLatches): unknown;
              }) => {
                let state = map.get(base);
                if (!state) {
                  state = { ...NONE };
                  map.set(base, state);
                }
                if (step.field === "lmstudioMissUntil" || step.field === "propsMissUntil") {
                  state[step.field] = clock;
                } else state[step.field] = true;
              };
              clock += 1000;
              learn(mem);
              learn(store);
              // The other instance hears it through pub/sub: wait for its `get` to hold it.
              const want = latchesOf(mem.get(base));
              if (!dropped[other].has(base)) {
                await until(() => JSON.stringify(latchesOf(on(other).get(base))) === JSON.stringify(want));
              }
              for (const side of ["a", "b"] as const) {
                for (const each of BASES) {
                  const got = latchesOf(on(side).get(each));
                  const shared = latchesOf(mem.get(each));
                  if (!dropped[side].has(each)) {
                    expect(got, `${side}.get(${each}) after ${JSON.stringify(step)}`).toEqual(shared);
                  } else {
                    // Dropped here: nothing, or what another instance announced since — never more
                    // than what was learned.
                    expect(!got.neither || shared.neither, `${side} ${each}`).toBe(true);
                    expect(!got.lmstudioGone || shared.lmstudioGone, `${side} ${each}`).toBe(true);
                    expect(got.lmstudioMissUntil <= shared.lmstudioMissUntil, `${side} ${each}`).toBe(true);
                    expect((got.propsMissUntil ?? 0) <= (shared.propsMissUntil ?? 0), `${side} ${each}`).toBe(
                      true,
                    );
                  }
                }
              }
            }
            // A host that starts now reads every latch learned, whatever an instance dropped.
            const late = await createRedisRouteLatches({ url: server.url, prefix, onError });
            try {
              for (const each of BASES) {
                expect(latchesOf(late.get(each)), `a host started later: ${each}`).toEqual(
                  latchesOf(mem.get(each)),
                );
              }
            } finally {
              await late.close();
            }
            expect(errors, "onError").toEqual([]);
          } finally {
            await Promise.all([a.close(), b.close()]);
          }
        }),
        propertyRuns(30),
      );
    },
    propertyTimeout(120_000),
  );
});
