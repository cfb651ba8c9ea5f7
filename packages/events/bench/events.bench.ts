// Benchmarks for the event bus, run by `pnpm bench` (node --expose-gc, through tsx):
//  1. emit throughput with 0, 1 and 100 watchers (10 of the 100 stalled, never reading);
//  2. retained heap with 10 stalled watchers at 10^4, 10^5 and 10^6 events, against the same run
//     with no watchers measured in the same process: the watchers' share must stay flat;
//  3. a long-lived host: the heap left by 10^4 finished runs once their retention has passed, and by
//     10^5 watchers of run ids that never started once each has left, against an empty bus;
//  4. fold over tool results that find no card (and over all calls, then all results) at 5 000 and
//     40 000 of each: the time per event should not grow with the count.
// Numbers are printed, never asserted.
import { createBus } from "../src/bus.js";
import { fold } from "../src/fold.js";
import type { RunEvent, SequencedEvent } from "../src/types.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("Run with node --expose-gc (pnpm bench does).");

const BATCH = 1000;

async function drain(iterator: AsyncIterator<SequencedEvent>, count: number): Promise<void> {
  for (let i = 0; i < count; i++) await iterator.next();
}

/** Events per second: through `emit` alone, and end to end with the active readers' draining. */
async function throughput(
  events: number,
  watchers: number,
  stalled: number,
): Promise<{ emit: number; all: number }> {
  const bus = createBus();
  const runId = `t-${watchers}`;
  const readers: AsyncIterator<SequencedEvent>[] = [];
  const idle: AsyncIterator<SequencedEvent>[] = [];
  for (let i = 0; i < watchers; i++) (i < stalled ? idle : readers).push(bus.watch(runId));
  const event = { kind: "output" as const, text: "token" };
  let emitting = 0;
  const started = performance.now();
  for (let sent = 0; sent < events; sent += BATCH) {
    const batch = performance.now();
    for (let i = 0; i < BATCH; i++) bus.emit(runId, event);
    emitting += performance.now() - batch;
    // The readers keep up: each drains what this batch gave it before the next batch goes out.
    for (const reader of readers) await drain(reader, BATCH);
  }
  const all = performance.now() - started;
  bus.reset();
  return { emit: (events / emitting) * 1000, all: (events / all) * 1000 };
}

function retained(events: number, stalled: number, cap = true): { heap: number; peak: number } {
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const bus = createBus(cap ? {} : { maxEvents: Number.MAX_SAFE_INTEGER });
  const watchers = Array.from({ length: stalled }, () => bus.watch("m"));
  let peak = 0;
  for (let i = 0; i < events; i++) {
    bus.emit("m", { kind: "output", text: "t" });
    if (i % 10_000 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed - before);
  }
  gc?.();
  const heap = process.memoryUsage().heapUsed - before;
  peak = Math.max(peak, heap);
  // Keep both alive until measured.
  if (watchers.length < 0 || bus.history("m").length < 0) console.log("unreachable");
  bus.reset();
  return { heap, peak };
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/** Heap left after many runs come and go on one bus, against the same bus before any. */
async function manyRuns(): Promise<{ finished: number; kept: number; watchedOnly: number }> {
  const bus = createBus({ retainEndedMs: 20 });
  gc?.();
  const before = process.memoryUsage().heapUsed;
  for (let run = 0; run < 10_000; run++) {
    for (let i = 0; i < 20; i++) bus.emit(`run-${run}`, { kind: "output", text: "token " });
    bus.emit(`run-${run}`, { kind: "done" });
  }
  gc?.();
  const kept = process.memoryUsage().heapUsed - before;
  await new Promise((resolve) => setTimeout(resolve, 100));
  gc?.();
  const finished = process.memoryUsage().heapUsed - before;
  for (let i = 0; i < 100_000; i++) {
    const controller = new AbortController();
    const watcher = bus.watch(`never-started-${i}`, controller.signal);
    const waiting = watcher.next();
    controller.abort();
    await waiting;
  }
  gc?.();
  const watchedOnly = process.memoryUsage().heapUsed - before - finished;
  bus.close();
  return { finished, kept, watchedOnly };
}

/** Microseconds per event that `fold` takes over `n` unmatched results, and over n calls then n results. */
function foldCost(n: number): { orphans: number; paired: number } {
  const orphans: RunEvent[] = [];
  const paired: RunEvent[] = [];
  for (let i = 0; i < n; i++) {
    orphans.push({ kind: "tool-result", id: `r${i}`, name: "f", ok: true, content: "x" });
    paired.push({ kind: "tool-call", id: `c${i}`, name: "f", args: "{}" });
  }
  for (let i = 0; i < n; i++)
    paired.push({ kind: "tool-result", id: `c${i}`, name: "f", ok: true, content: "x" });
  let t = performance.now();
  fold(orphans);
  const a = ((performance.now() - t) * 1000) / n;
  t = performance.now();
  fold(paired);
  return { orphans: a, paired: ((performance.now() - t) * 1000) / (2 * n) };
}

async function main(): Promise<void> {
  const events = 200_000;
  await throughput(20_000, 1, 0); // warm-up
  // Best of three rounds, the configurations interleaved, so JIT warm-up and a busy neighbour on a
  // shared machine weigh on all three alike.
  const best = async (watchers: number, stalled: number, into: { emit: number; all: number }) => {
    const run = await throughput(events, watchers, stalled);
    into.emit = Math.max(into.emit, run.emit);
    into.all = Math.max(into.all, run.all);
  };
  const base = { emit: 0, all: 0 };
  const one = { emit: 0, all: 0 };
  const hundred = { emit: 0, all: 0 };
  for (let round = 0; round < 3; round++) {
    await best(0, 0, base);
    await best(1, 0, one);
    await best(100, 10, hundred);
  }
  const rate = (n: number) => `${Math.round(n).toLocaleString("en")}/s`.padStart(12);
  console.log(
    `emit throughput, ${events.toLocaleString("en")} events, best of 3 (emit alone | with the readers draining)`,
  );
  console.log(`  0 watchers                 ${rate(base.emit)}  (baseline)`);
  console.log(
    `  1 watcher                  ${rate(one.emit)}  ${(base.emit / one.emit).toFixed(2)}× the baseline's time | ${rate(one.all)} end to end`,
  );
  console.log(
    `  100 watchers (10 stalled)  ${rate(hundred.emit)}  ${(base.emit / hundred.emit).toFixed(2)}× the baseline's time | ${rate(hundred.all)} end to end`,
  );
  console.log("\nretained heap after GC (peak sampled while emitting), one run, 10 stalled watchers.");
  console.log("  The run's own history is kept until endRun or the sweep, so it grows with the run in every");
  console.log("  row; what the watchers add on top of it is the number that must stay flat.");
  const rows: number[] = [];
  for (const n of [10_000, 100_000, 1_000_000]) {
    const alone = retained(n, 0);
    const watched = retained(n, 10);
    const uncapped = retained(n, 10, false);
    const share = watched.heap - alone.heap;
    rows.push(share);
    console.log(
      `  ${n.toLocaleString("en").padStart(9)} events: no watchers ${mb(alone.heap)} (peak ${mb(alone.peak)}),` +
        ` 10 stalled ${mb(watched.heap)} (peak ${mb(watched.peak)}), watchers' share ${mb(share)};` +
        ` with the cap lifted the share is ${mb(uncapped.heap - alone.heap)}`,
    );
  }
  console.log(
    `  watchers' share at 10^6 over 10^4: ${mb(rows[2] ?? 0)} vs ${mb(rows[0] ?? 0)} (flat: bounded by 10 × (maxEvents + trimSlack) slots)`,
  );
  foldCost(5_000); // warm-up
  const small = foldCost(5_000);
  const large = foldCost(40_000);
  console.log("\nfold, µs per event at 5 000 and 40 000 (the same per event: linear)");
  console.log(
    `  results with no card: ${small.orphans.toFixed(2)} vs ${large.orphans.toFixed(2)}; all calls then all results: ${small.paired.toFixed(2)} vs ${large.paired.toFixed(2)}`,
  );
  const many = await manyRuns();
  console.log("\na long-lived host, heap over an empty bus after GC:");
  console.log(
    `  10^4 finished runs of 21 events: ${mb(many.kept)} while retained, ${mb(many.finished)} once swept`,
  );
  console.log(`  10^5 watchers of ids that never started, each gone: ${mb(many.watchedOnly)} left`);
}

await main();
