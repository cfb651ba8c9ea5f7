// The Redis bus across three processes and two tenants, against a model. Each "process" is its own
// bus (its own connections) on one real redis-server; each tenant is its own prefix, and both
// tenants use the same run ids. A random sequence of actions — emits by the run's owner, a run id
// taken over by another process once its run is done (release, claim, first write clears the old
// stream), claims that must be refused while another process holds the id, watchers joining at a
// random seq on any process, `readHistory` from any process, `endRun` from any process, every
// ordinary connection cut by `CLIENT KILL` from an admin connection (between steps, as an `endRun`
// is written, or as a burst's flush is on the wire; the subscribers too, then), and Redis restarted
// empty (no persistence) — is run against the buses, half the cases with each stream trimmed to
// about five entries (`maxStreamLength`), and
// against a model: per tenant, the in-memory bus of `@loopwright/events` (for what `emit` answers)
// and the list of runs each id held. What every watcher reads must be what the in-memory bus would
// have handed it (same events, same order, same seqs), but for what Redis lost — events trimmed
// away, or lost with a restart before the watcher read them — which a gap notice must stand for,
// counted exactly, never skipped silently; `readHistory` must be what Redis should hold (under
// trimming, the latest of it, at least as many as it keeps), a claim must be refused exactly when another
// process holds the id, nothing of one tenant may reach the other, and `close()` must leave no
// connection open on the server.
//
// Where the README lets a real bus differ (an `endRun` travels by pub/sub; a watcher reads when it
// gets to it), the property waits, bounded and never timed, for the change to arrive.
//
// R92_REDIS_RUNS sets how many cases, R92_REDIS_SEED replays one, R92_REDIS_NOSHRINK reports the
// first failure as it is (a failing case can take many bounded waits to shrink). Each property
// takes 3–10 s here at the default 30 bus cases, about 50 s at 150;
// its 300 s limit is for a machine loaded many times over (a CI run beside five other agents took
// the stores property past 120 s), where every bounded wait's 10 ms looks stretch.

import type { RouteLatches } from "@loopwright/client";
import {
  createBus,
  type EventBus,
  EventsError,
  type RunEvent,
  type SequencedEvent,
} from "@loopwright/events";
import { createCalibration } from "@loopwright/ledger";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { serverWithAdmin } from "../test/admin.js";
import { HAS_REDIS, SKIP_MESSAGE } from "../test/redis-server.js";
import { createRedisBus, type RedisEventBus } from "./bus.js";
import { RedisStoreError } from "./errors.js";
import { marksKnown } from "./forgets.js";
import { createRedisStores, type RedisStores } from "./stores.js";

if (!HAS_REDIS) console.warn(SKIP_MESSAGE);

const RUNS = Number(process.env.R92_REDIS_RUNS ?? 30);
const STORE_RUNS = Math.max(1, Math.ceil(RUNS / 2));
const SEED = process.env.R92_REDIS_SEED === undefined ? undefined : Number(process.env.R92_REDIS_SEED);

const PROCS = 3;
const TENANTS = ["ta", "tb"] as const;
const RUN_IDS = ["r0", "tenant/r1"] as const;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `ready()` holds, looking every 10 ms, `rounds` looks at most; never an assertion on time. */
async function until(ready: () => boolean, rounds = 500): Promise<void> {
  for (let i = 0; i < rounds && !ready(); i++) await pause(10);
}

/** What a user sees of an event: its fields as JSON, key order aside. */
const shown = (event: SequencedEvent): string =>
  JSON.stringify(Object.fromEntries(Object.entries(event).sort(([x], [y]) => (x < y ? -1 : 1))));

type Body =
  | { kind: "output"; text: string }
  | { kind: "turn"; step: number }
  | { kind: "retract"; chars: number }
  | { kind: "notice"; text: string };

const bodyArb: fc.Arbitrary<Body> = fc.oneof(
  fc.record({ kind: fc.constant("output" as const), text: fc.string({ maxLength: 5 }) }),
  fc.record({ kind: fc.constant("turn" as const), step: fc.nat(9) }),
  fc.record({ kind: fc.constant("retract" as const), chars: fc.nat(3) }),
  fc.record({ kind: fc.constant("notice" as const), text: fc.string({ maxLength: 4 }) }),
);

type Action =
  | { op: "emit"; t: number; run: number; proc: number; body: Body }
  | { op: "done"; t: number; run: number }
  | { op: "claim"; t: number; run: number; proc: number }
  | { op: "watch"; t: number; run: number; proc: number; after: number }
  | { op: "read"; t: number; run: number; proc: number; after: number }
  | { op: "endRun"; t: number; run: number; proc: number; cut: boolean }
  | { op: "kill" }
  | { op: "restart" }
  | {
      op: "cutFlush";
      t: number;
      run: number;
      n: number;
      type: "normal" | "pubsub";
      first: boolean;
      done: boolean;
    };

const t = fc.nat(TENANTS.length - 1);
const run = fc.nat(RUN_IDS.length - 1);
const proc = fc.nat(PROCS - 1);
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ op: fc.constant("emit" as const), t, run, proc, body: bodyArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("done" as const), t, run }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("claim" as const), t, run, proc }) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant("watch" as const), t, run, proc, after: fc.nat(100) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("read" as const), t, run, proc, after: fc.nat(100) }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("endRun" as const), t, run, proc, cut: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.constant({ op: "kill" as const }) },
  { weight: 1, arbitrary: fc.constant({ op: "restart" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("cutFlush" as const),
      t,
      run,
      n: fc.integer({ min: 1, max: 24 }),
      type: fc.constantFrom("normal" as const, "pubsub" as const),
      first: fc.boolean(),
      done: fc.boolean(),
    }),
  },
);

/**
 * The short retention a case may run under: each stream trimmed (`XADD MAXLEN ~`) to about this
 * many entries, on a server whose stream nodes hold two entries (`stream-node-max-entries`), so
 * `~` trims at all at this size.
 */
const SHORT_STREAM = 5;

/** One run an id held: what was emitted into it, who emits, and how it ended. */
interface Gen {
  events: SequencedEvent[];
  owner: number | undefined;
  ended: "done" | "endRun" | undefined;
  /** Its events up to this seq were lost with a Redis restart (0: none). */
  lostUpTo: number;
}

/** Per tenant and run id: the run now under the id, and the one whose entries Redis holds. */
interface Slot {
  current: Gen;
  /** The run whose stream is in Redis (`undefined`: none, deleted or never written). */
  stored: Gen | undefined;
}

interface Watching {
  label: string;
  gen: Gen;
  after: number;
  /** What of its run Redis had lost when it started: a gap there is told, not read. */
  lostUpTo: number;
  seen: SequencedEvent[];
  ended: boolean;
  stop: AbortController;
  finished: Promise<void>;
}

/** How many of `gen`'s events a watcher from `after` reads: those above it, to the `done`. */
function owed(gen: Gen, after: number): SequencedEvent[] {
  const done = gen.events.findIndex((e) => e.kind === "done");
  return (done < 0 ? gen.events : gen.events.slice(0, done + 1)).filter((e) => e.seq > after);
}

const fresh = (): Gen => ({ events: [], owner: undefined, ended: undefined, lostUpTo: 0 });

/** Whether `event` is a watcher's own gap notice (`dropped` ≥ 1), never an emitted one. */
const isGap = (event: SequencedEvent): boolean =>
  event.kind === "notice" &&
  typeof (event as { dropped?: unknown }).dropped === "number" &&
  ((event as { dropped: number }).dropped ?? 0) >= 1;

/**
 * What a watcher read, in the terms of what it is owed: each gap notice it was handed stands for the
 * `dropped` events it skips, and is shown as them when it may skip there (`gapAt(seq)` for each of
 * them), carries a seq inside that stretch and counts it exactly; otherwise it is shown as itself,
 * so any unexplained notice, loss, reorder or duplicate differs from `want`.
 */
function explained(
  seen: SequencedEvent[],
  want: SequencedEvent[],
  gapAt: (seq: number) => boolean,
): string[] {
  const out: string[] = [];
  let i = 0;
  for (const event of seen) {
    const next = want[i];
    if (isGap(event) && (next === undefined || shown(event) !== shown(next))) {
      const dropped = (event as { dropped: number }).dropped;
      const stretch = want.slice(i, i + dropped);
      const first = stretch[0]?.seq ?? Number.NaN;
      const last = stretch.at(-1)?.seq ?? Number.NaN;
      if (
        stretch.length === dropped &&
        stretch.every((e) => gapAt(e.seq)) &&
        event.seq >= first &&
        event.seq <= last
      ) {
        out.push(...stretch.map(shown));
        i += dropped;
        continue;
      }
    }
    out.push(shown(event));
    i++;
  }
  return out;
}

/** The highest seq a watcher has read (a gap notice's too): how far it has got. */
const reached = (w: { seen: SequencedEvent[] }): number => Math.max(0, ...w.seen.map((e) => e.seq));

describe.skipIf(!HAS_REDIS)("the Redis bus across three processes and two tenants, against a model", () => {
  const redis = serverWithAdmin();
  let cases = 0;

  /** Nothing left open on the server once every store is closed. */
  const nothingLeft = async (): Promise<void> => {
    expect(await redis.settled(), "connections left open after close()").toEqual([]);
  };

  /** What `onError` was told that it should not have been: a cut connection is told as `connect`. */
  const untold = (errors: unknown[], killed: boolean): string[] =>
    errors
      .filter((e) => !(e instanceof RedisStoreError && e.code === "connect" && killed))
      .map((e) => (e instanceof RedisStoreError ? `${e.code}: ${e.message}` : String(e)));

  it(
    "watchers, reads, claims, takeovers, endRun and cut connections answer as the model",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.boolean(),
          fc.array(actionArb, { minLength: 1, maxLength: 40, size: "max" }),
          async (trim, actions) => {
            const round = cases++;
            const errors: unknown[] = [];
            const onError = (error: unknown) => errors.push(error);
            let killed = false;
            let restarted = false;
            const buses: RedisEventBus[][] = [];
            const mems: EventBus[] = [];
            const slots: Slot[][] = [];
            const watchers: Watching[] = [];
            /** Two entries a stream node under a short retention, Redis's default otherwise. */
            const nodeSize = () =>
              redis.send(["CONFIG", "SET", "stream-node-max-entries", trim ? "2" : "100"]);
            try {
              await nodeSize();
              for (let ti = 0; ti < TENANTS.length; ti++) {
                const prefix = `m${round}${TENANTS[ti]}:`;
                const row: RedisEventBus[] = [];
                for (let p = 0; p < PROCS; p++)
                  row.push(
                    await createRedisBus({
                      url: redis.server.url,
                      prefix,
                      onError,
                      ...(trim ? { maxStreamLength: SHORT_STREAM } : {}),
                    }),
                  );
                buses.push(row);
                mems.push(createBus());
                slots.push(RUN_IDS.map(() => ({ current: fresh(), stored: undefined })));
              }
              const bus = (ti: number, p: number) => buses[ti]?.[p] as RedisEventBus;
              const slotOf = (ti: number, ri: number) => slots[ti]?.[ri] as Slot;
              const tag = (ti: number, body: Body): RunEvent =>
                // Each event names its tenant, so one read through the other tenant's prefix shows.
                (body.kind === "output" || body.kind === "notice"
                  ? { ...body, text: `${TENANTS[ti]}:${body.text}` }
                  : { ...body, text: TENANTS[ti] }) as RunEvent;

              const subscribed = await redis.subscribers();
              const flushAll = () => Promise.all(buses.flat().map((b) => b.flushed()));
              /** What `w` must read of its run: what it is owed, but for what Redis lost before it started. */
              const readable = (w: Watching) => owed(w.gen, w.after).filter((e) => e.seq > w.lostUpTo);
              /** Waits until every watcher of `gen` has read what it is owed of it. */
              const caughtUp = (gen: Gen) =>
                until(() =>
                  watchers.every(
                    (w) => w.gen !== gen || w.ended || reached(w) >= (readable(w).at(-1)?.seq ?? 0),
                  ),
                );
              /** Where `w` may be handed a gap notice: anywhere under a short retention, else at what was lost. */
              const gapAt = (w: Watching) => (seq: number) => trim || seq <= w.lostUpTo;
              /** Every bus subscribed again after its subscriber connection was cut (bounded, never timed). */
              const resubscribed = async () => {
                for (let look = 0; look < 500 && (await redis.subscribers()) < subscribed; look++)
                  await pause(10);
              };

              /**
               * The run id taken by `p`, as the loop's runtime does it: release what it ran under the id
               * (its own ended run), then claim. The watchers of the run it replaces have read it to its
               * `done` first (a late reader of an old run is ended with a notice: README, "A run id used
               * again"; not what this model is about).
               */
              const takeOver = async (ti: number, ri: number, p: number) => {
                const slot = slotOf(ti, ri);
                const id = RUN_IDS[ri] as string;
                const old = slot.current;
                await flushAll();
                // Every watcher of the old run ended at its `done` (none of a run with no events yet).
                await caughtUp(old);
                await until(() => watchers.every((w) => w.gen !== old || w.ended || old.events.length === 0));
                const reading = watchers.filter((w) => w.gen === old && !w.ended && old.events.length > 0);
                expect(
                  reading.map((w) => w.label),
                  "watchers of the run taken over still reading",
                ).toEqual([]);
                if (old.events.length > 0) {
                  mems[ti]?.endRun(id);
                  bus(ti, p).releaseRun(id);
                  // Only the emitter's own stream is deleted by its release (README, `releaseRun`).
                  if (old.owner === p && slot.stored === old) slot.stored = undefined;
                }
                await bus(ti, p).flushed();
                await bus(ti, p).claimRun(id);
                // A watcher waiting on an id with no stream reads whichever run comes next: this one.
                if (old.events.length === 0 && old.ended === undefined) old.owner = p;
                else slot.current = { ...fresh(), owner: p };
              };

              const emit = (ti: number, ri: number, event: RunEvent) => {
                const slot = slotOf(ti, ri);
                const id = RUN_IDS[ri] as string;
                const gen = slot.current;
                const fromMem = mems[ti]?.emit(id, event) as SequencedEvent;
                const fromRedis = bus(ti, gen.owner as number).emit(id, event);
                expect(shown(fromRedis), `p${gen.owner}.emit(${id}) answers as in memory`).toBe(
                  shown(fromMem),
                );
                gen.events.push(fromMem);
                slot.stored = gen;
                if (event.kind === "done") gen.ended = "done";
              };

              const perform = async (action: Action): Promise<void> => {
                if (action.op === "kill") {
                  // Every ordinary connection (commands, watchers' blocked reads) cut, as a proxy or
                  // Redis's `timeout` would; the subscribers stay. Nothing emitted may be lost.
                  killed = true;
                  await redis.cut("normal");
                  return;
                }
                if (action.op === "restart") {
                  // Redis restarted without persistence, between steps (what was emitted is written and
                  // read): every stream and claim is gone. A run going on keeps its seqs (its next event
                  // is written above what was lost); a watcher reading on through the restart reads it
                  // with no gap; one started later, below what was lost, is told the gap by a notice;
                  // `readHistory` shows what Redis holds; a claim of an id another process holds is
                  // still refused (README, "After a Redis restart").
                  await flushAll();
                  for (const slot of slots.flat()) {
                    await caughtUp(slot.current);
                    if (slot.stored) await caughtUp(slot.stored);
                  }
                  killed = true;
                  restarted = true;
                  await redis.restart();
                  await nodeSize();
                  for (const slot of slots.flat()) {
                    if (slot.stored) slot.stored.lostUpTo = slot.stored.events.at(-1)?.seq ?? 0;
                    slot.stored = undefined;
                  }
                  await resubscribed();
                  await flushAll();
                  // Each process claims again the runs it holds once it has reconnected: until then
                  // another host's claim of the id would be granted (README, "After a Redis restart").
                  for (let ti = 0; ti < TENANTS.length; ti++)
                    for (let ri = 0; ri < RUN_IDS.length; ri++) {
                      const gen = slotOf(ti, ri).current;
                      if (gen.owner === undefined || gen.ended) continue;
                      const claim = `m${round}${TENANTS[ti]}:claim:${RUN_IDS[ri]}`;
                      for (let look = 0; look < 500 && (await redis.send(["EXISTS", claim])) !== 1; look++)
                        await pause(10);
                    }
                  return;
                }
                if (action.op === "cutFlush") {
                  // A burst into one run (its `done` too, maybe), with the command or the subscriber
                  // connections cut while its flush is on the wire: just before the emits, or just after.
                  // Nothing emitted may be lost, written twice or out of order.
                  const { t: ti, run: ri } = action;
                  const slot = slotOf(ti, ri);
                  if (slot.current.owner === undefined || slot.current.ended) await takeOver(ti, ri, 0);
                  killed = true;
                  let cutting: Promise<void> | undefined;
                  if (action.first) cutting = redis.cut(action.type);
                  for (let i = 0; i < action.n; i++)
                    emit(ti, ri, tag(ti, { kind: "output", text: String(i) }));
                  if (action.done) emit(ti, ri, { kind: "done" });
                  if (!action.first) {
                    await Promise.resolve();
                    cutting = redis.cut(action.type);
                  }
                  await cutting;
                  await flushAll();
                  if (action.type === "pubsub") await resubscribed();
                  return;
                }
                const { t: ti, run: ri } = action;
                const slot = slotOf(ti, ri);
                const id = RUN_IDS[ri] as string;
                switch (action.op) {
                  case "emit": {
                    const gen = slot.current;
                    if (gen.owner === undefined || gen.ended) await takeOver(ti, ri, action.proc);
                    emit(ti, ri, tag(ti, action.body));
                    break;
                  }
                  case "done": {
                    const gen = slot.current;
                    if (gen.owner === undefined || gen.ended) break;
                    emit(ti, ri, { kind: "done" });
                    break;
                  }
                  case "claim": {
                    const gen = slot.current;
                    await flushAll();
                    const held =
                      gen.owner !== undefined && gen.owner !== action.proc && gen.ended === undefined;
                    if (held) {
                      // Another process holds the id (claimed, or running): refused, naming the id.
                      const refusal = await bus(ti, action.proc)
                        .claimRun(id)
                        .then(
                          () => undefined,
                          (error: unknown) => error,
                        );
                      expect(
                        refusal,
                        `p${action.proc}.claimRun(${id}) while p${gen.owner} holds it`,
                      ).toBeInstanceOf(EventsError);
                      expect((refusal as EventsError).code).toBe("invalid-run-id");
                    } else if (gen.owner === undefined || gen.ended) {
                      await takeOver(ti, ri, action.proc);
                    }
                    break;
                  }
                  case "watch": {
                    await flushAll();
                    // An ended run Redis lost with a restart left no stream: a watcher of the id reads
                    // whichever run comes next, as on an id never used. Every process that ran the id
                    // lets go of its run of it first (its owner, and one that ran an earlier run under
                    // it), as the loop's runtime does before it runs an id again.
                    if (slot.stored === undefined && slot.current.ended) {
                      mems[ti]?.endRun(id);
                      for (let p = 0; p < PROCS; p++) bus(ti, p).releaseRun(id);
                      await flushAll();
                      slot.current = fresh();
                    }
                    const gen = slot.stored ?? slot.current;
                    const top = gen.events.at(-1)?.seq ?? 0;
                    // At or past a `done` a watcher waits for the id's next run (README, "A run id used
                    // again"): resume before it, as a reader of that run would.
                    const doneAt = gen.events.find((e) => e.kind === "done")?.seq ?? top + 1;
                    const after = Math.min(Math.floor((action.after / 100) * top), doneAt - 1);
                    const stop = new AbortController();
                    const w: Watching = {
                      label: `${TENANTS[ti]} p${action.proc}.watch(${id}, after ${after})`,
                      gen,
                      after,
                      lostUpTo: gen.lostUpTo,
                      seen: [],
                      ended: false,
                      stop,
                      finished: Promise.resolve(),
                    };
                    const stream = bus(ti, action.proc).watch(id, stop.signal, { after });
                    w.finished = (async () => {
                      for await (const event of stream) w.seen.push(event);
                      w.ended = true;
                    })();
                    watchers.push(w);
                    // It has read what is there before anything else happens, so what it reads is of
                    // the run it was started on.
                    await caughtUp(gen);
                    const there = owed(gen, after).filter((e) => e.seq <= reached(w) || e.seq > w.lostUpTo);
                    expect(explained(w.seen, there, gapAt(w)), `${w.label} reads what is there`).toEqual(
                      there.map(shown),
                    );
                    break;
                  }
                  case "read": {
                    await flushAll();
                    const gen = slot.stored;
                    const top = gen?.events.at(-1)?.seq ?? 0;
                    const after = Math.floor((action.after / 100) * top);
                    const got = await bus(ti, action.proc).readHistory(id, after);
                    const want = (gen?.events ?? []).filter(
                      (e) => e.seq > after && e.seq > (gen?.lostUpTo ?? 0),
                    );
                    // Under a short retention Redis holds the latest of them, at least as many as it keeps.
                    const held = trim
                      ? want.slice(Math.max(0, want.length - Math.max(got.length, SHORT_STREAM)))
                      : want;
                    expect(
                      got.map(shown),
                      `${TENANTS[ti]} p${action.proc}.readHistory(${id}, ${after})`,
                    ).toEqual(held.map(shown));
                    break;
                  }
                  case "endRun": {
                    const gen = slot.current;
                    await flushAll();
                    await caughtUp(gen);
                    if (slot.stored && slot.stored !== gen) await caughtUp(slot.stored);
                    // Every other process hears the end through pub/sub: a watcher of its own, started
                    // before, shows when it has (README, `endRun`).
                    const probes = Array.from({ length: PROCS }, (_, p) => p)
                      .filter((p) => p !== action.proc)
                      .map((p) => {
                        const stop = new AbortController();
                        const top = (slot.stored ?? gen).events.at(-1)?.seq ?? 0;
                        const probe = { ended: false, stop, p };
                        void (async () => {
                          for await (const _ of bus(ti, p).watch(id, stop.signal, { after: top })) {
                            // a probe past the top reads nothing of this run
                          }
                          probe.ended = true;
                        })();
                        return probe;
                      });
                    // Give the probes their subscription before the announcement goes.
                    await pause(20);
                    mems[ti]?.endRun(id);
                    bus(ti, action.proc).endRun(id);
                    // Its deletion and announcement, owed, on the wire when the command connections are
                    // cut: sent again after the reconnect, heard everywhere all the same.
                    if (action.cut) {
                      killed = true;
                      await redis.cut("normal");
                    }
                    await bus(ti, action.proc).flushed();
                    const ending = [gen, slot.stored];
                    await until(
                      () =>
                        probes.every((probe) => probe.ended) &&
                        watchers.every((w) => !ending.includes(w.gen) || w.ended),
                    );
                    for (const probe of probes) {
                      probe.stop.abort();
                      expect(probe.ended, `p${probe.p} heard ${TENANTS[ti]} endRun(${id})`).toBe(true);
                    }
                    if (gen.ended === undefined) gen.ended = "endRun";
                    slot.current = fresh();
                    slot.stored = undefined;
                    break;
                  }
                }
              };
              for (const action of actions) {
                const began = performance.now();
                await perform(action);
                if (process.env.R92_REDIS_TIMES)
                  console.log(action.op, Math.round(performance.now() - began));
              }

              // Every run still open ends with `done`, so every watcher finishes.
              for (let ti = 0; ti < TENANTS.length; ti++) {
                for (let ri = 0; ri < RUN_IDS.length; ri++) {
                  const slot = slotOf(ti, ri);
                  if (!watchers.some((w) => !w.ended && w.gen === slot.current)) continue;
                  if (slot.current.owner === undefined) await takeOver(ti, ri, 0);
                  if (!slot.current.ended) emit(ti, ri, { kind: "done" });
                }
              }
              await flushAll();
              const guard = setTimeout(() => {
                for (const w of watchers) w.stop.abort();
              }, 15_000);
              await Promise.all(watchers.map((w) => w.finished));
              clearTimeout(guard);
              for (const w of watchers) {
                // A run ended by `endRun` with nothing written after what Redis lost leaves nothing to
                // tell the gap by: its watcher ends after what it read.
                const all = owed(w.gen, w.after);
                const want = readable(w).length === 0 ? all.filter((e) => e.seq <= reached(w)) : all;
                expect(explained(w.seen, want, gapAt(w)), w.label).toEqual(want.map(shown));
              }
              if (process.env.R92_REDIS_TIMES)
                console.log(
                  `case ${round}: ${actions.length} actions, ${watchers.length} watchers read ${watchers.reduce((n, w) => n + w.seen.length, 0)} events, killed ${killed}, restarted ${restarted}, trim ${trim}`,
                );
              // Nothing is lost or refused; a cut connection is told as `connect`, nothing else.
              expect(untold(errors, killed), "onError").toEqual([]);
            } finally {
              for (const w of watchers) w.stop.abort();
              for (const mem of mems) mem.close();
              await Promise.all(buses.flat().map((b) => b.close()));
            }
            await nothingLeft();
          },
        ),
        propertyRuns(RUNS, {
          ...(SEED === undefined ? {} : { seed: SEED }),
          ...(process.env.R92_REDIS_NOSHRINK ? { endOnFailure: true } : {}),
        }),
      );
    },
    propertyTimeout(300_000),
  );

  // -----------------------------------------------------------------------------------------------
  // The stores: capability latches, calibration readings and window-route latches learned on any of
  // three processes, per tenant prefix, with connections cut (commands or subscriptions) between.
  // Model: per tenant, the set of refusals learned (a latch only closes; a forget opens the
  // endpoint's), an in-memory calibration, and a pool's Map of route latches. Redis may also be
  // restarted empty (no persistence): every process keeps what it holds and writes it back. Every process of the
  // tenant must come to hold the model, the other tenant's processes never any of it, and a host
  // started last reads it from Redis.

  type StoreAction =
    | { op: "latch"; t: number; proc: number; ep: number; field: "strictSchemas" | "usageInStream" }
    | { op: "forget"; t: number; proc: number; ep: number }
    | { op: "calibrate"; t: number; proc: number; ep: number; model: number; chars: number; tokens: number }
    | { op: "route"; t: number; proc: number; ep: number; field: "neither" | "lmstudioGone" }
    | { op: "kill"; type: "normal" | "pubsub" }
    | { op: "restart" };

  const ENDPOINTS = [
    "http://127.0.0.1:9/v1",
    "http://127.0.0.1:10/v1",
    "http://u:pw@127.0.0.1:11/v1",
  ] as const;
  const MODELS = [undefined, "m1"] as const;
  const ep = fc.nat(ENDPOINTS.length - 1);
  const storeActionArb: fc.Arbitrary<StoreAction> = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant("latch" as const),
        t,
        proc,
        ep,
        field: fc.constantFrom("strictSchemas" as const, "usageInStream" as const),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("forget" as const), t, proc, ep }) },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant("calibrate" as const),
        t,
        proc,
        ep,
        model: fc.nat(MODELS.length - 1),
        chars: fc.integer({ min: 8, max: 90 }),
        tokens: fc.integer({ min: 1, max: 30 }),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant("route" as const),
        t,
        proc,
        ep,
        field: fc.constantFrom("neither" as const, "lmstudioGone" as const),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant("kill" as const),
        type: fc.constantFrom("normal" as const, "pubsub" as const),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ op: "restart" as const }) },
  );

  it(
    "capability latches, calibration and route latches across three processes and two tenants answer as the model",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(storeActionArb, { minLength: 1, maxLength: 20, size: "max" }),
          async (actions) => {
            const round = cases++;
            const errors: unknown[] = [];
            const onError = (error: unknown) => errors.push(error);
            let killed = false;
            let restarted = false;
            const procs: RedisStores[][] = [];
            const models = TENANTS.map(() => ({
              latched: new Set<string>(),
              calibration: createCalibration(),
              routes: new Map<string, RouteLatches>(),
            }));
            const prefixOf = (ti: number) => `s${round}${TENANTS[ti]}:`;
            try {
              for (let ti = 0; ti < TENANTS.length; ti++) {
                const row: RedisStores[] = [];
                for (let p = 0; p < PROCS; p++)
                  row.push(await createRedisStores({ url: redis.server.url, prefix: prefixOf(ti), onError }));
                procs.push(row);
              }
              /** What a store holds, in the model's terms. */
              const heldBy = (stores: RedisStores) => {
                const latched = new Set<string>();
                const divisors: number[] = [];
                const routes: string[] = [];
                for (let e = 0; e < ENDPOINTS.length; e++) {
                  const base = ENDPOINTS[e] as string;
                  const caps = stores.capabilities.capabilitiesFor(base, "key");
                  for (const field of ["strictSchemas", "usageInStream"] as const)
                    if (!caps[field]) latched.add(`${e}.${field}`);
                  for (const model of MODELS) divisors.push(stores.calibration.charsPerTokenFor(base, model));
                  const route = stores.routeLatches.get(base);
                  routes.push(`${route?.neither === true}/${route?.lmstudioGone === true}`);
                }
                return JSON.stringify({ latched: [...latched].sort(), divisors, routes });
              };
              const wanted = (ti: number) => {
                const model = models[ti] as (typeof models)[number];
                const divisors: number[] = [];
                const routes: string[] = [];
                for (const base of ENDPOINTS) {
                  for (const m of MODELS) divisors.push(model.calibration.charsPerTokenFor(base, m));
                  const route = model.routes.get(base);
                  routes.push(`${route?.neither === true}/${route?.lmstudioGone === true}`);
                }
                return JSON.stringify({ latched: [...model.latched].sort(), divisors, routes });
              };
              const converged = () =>
                procs.every((row, ti) => row.every((stores) => heldBy(stores) === wanted(ti)));
              /**
               * A host started now reads the model from Redis, for its tenant only. After a restart
               * the processes write back what they hold once they have reconnected: each is awaited
               * (`writtenBack()`), then the late host looks once.
               */
              const lateHostsRead = async (): Promise<void> => {
                if (restarted) await Promise.all(procs.flat().map((stores) => stores.writtenBack(60_000)));
                for (let ti = 0; ti < TENANTS.length; ti++) {
                  const late = await createRedisStores({
                    url: redis.server.url,
                    prefix: prefixOf(ti),
                    onError,
                  });
                  try {
                    expect(heldBy(late), `a host of ${TENANTS[ti]} started last`).toBe(wanted(ti));
                  } finally {
                    await late.close();
                  }
                }
              };

              for (const action of actions) {
                if (action.op === "kill") {
                  killed = true;
                  await redis.cut(action.type);
                  continue;
                }
                if (action.op === "restart") {
                  // Redis restarted without persistence: everything it held is gone. Each process
                  // keeps what it holds and, once reconnected, writes it back (README: latches,
                  // readings and route latches are written again after a reconnect), so a host
                  // started after reads the model again.
                  killed = true;
                  restarted = true;
                  await redis.restart();
                  await lateHostsRead();
                  continue;
                }
                const stores = procs[action.t]?.[action.proc] as RedisStores;
                const model = models[action.t] as (typeof models)[number];
                const base = ENDPOINTS[action.ep] as string;
                switch (action.op) {
                  case "latch":
                    stores.capabilities.capabilitiesFor(base, "key")[action.field] = false;
                    model.latched.add(`${action.ep}.${action.field}`);
                    break;
                  case "forget": {
                    // Every other process of the tenant has heard the forget once it knows one mark
                    // more: until then a reading or latch of the endpoint sent by another process may
                    // reach Redis before the forget, which then deletes it (README, "A forget or reset
                    // racing another instance's latch"), so the next action waits for it.
                    const marks = () =>
                      (procs[action.t] ?? [])
                        .filter((other) => other !== stores)
                        .flatMap((other) => [
                          marksKnown(other.capabilities) ?? 0,
                          marksKnown(other.calibration) ?? 0,
                        ]);
                    const before = marks();
                    stores.capabilities.forget(base, "key");
                    stores.calibration.forget(base);
                    model.calibration.forget(base);
                    for (const field of ["strictSchemas", "usageInStream"])
                      model.latched.delete(`${action.ep}.${field}`);
                    const heard = () => marks().every((known, i) => known > (before[i] ?? 0));
                    await until(heard);
                    expect(heard(), `every process heard ${JSON.stringify(action)}`).toBe(true);
                    break;
                  }
                  case "calibrate": {
                    const m = MODELS[action.model];
                    const body = { messages: [{ role: "user" as const, content: "x".repeat(action.chars) }] };
                    const fromMem = model.calibration.calibrate(base, m, body, action.tokens);
                    expect(
                      stores.calibration.calibrate(base, m, body, action.tokens),
                      `calibrate ${JSON.stringify(action)}`,
                    ).toBe(fromMem);
                    break;
                  }
                  case "route": {
                    for (const map of [model.routes, stores.routeLatches] as const) {
                      let state = map.get(base);
                      if (!state) {
                        state = { neither: false, lmstudioGone: false, lmstudioMissUntil: 0 };
                        map.set(base, state);
                      }
                      state[action.field] = true;
                    }
                    break;
                  }
                }
                // Shared now (sync), heard everywhere (pub/sub, or the reload after a cut subscription).
                await stores.capabilities.sync().catch(() => {});
                await until(converged);
                for (let ti = 0; ti < TENANTS.length; ti++)
                  for (let p = 0; p < PROCS; p++)
                    expect(
                      heldBy(procs[ti]?.[p] as RedisStores),
                      `${TENANTS[ti]} p${p} after ${JSON.stringify(action)}`,
                    ).toBe(wanted(ti));
                // "A latch of the forget's own millisecond goes with it" (README): the next request comes later.
                if (action.op === "forget") await pause(2);
              }
              // A host started now reads the same from Redis, for its tenant only.
              await lateHostsRead();
              expect(untold(errors, killed), "onError").toEqual([]);
            } finally {
              await Promise.all(procs.flat().map((stores) => stores.close()));
            }
            await nothingLeft();
          },
        ),
        propertyRuns(STORE_RUNS, {
          ...(SEED === undefined ? {} : { seed: SEED }),
          ...(process.env.R92_REDIS_NOSHRINK ? { endOnFailure: true } : {}),
        }),
      );
    },
    propertyTimeout(300_000),
  );
});
