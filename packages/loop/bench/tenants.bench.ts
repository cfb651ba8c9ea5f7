// Soak benchmark for a host with many tenants, run by `pnpm bench` (node --expose-gc, through tsx):
//  1. 10,000 tenants meet one runtime (a pooled client, capability latches, calibration readings
//     and a window lookup each), with the default bounds and, as the baseline measured in the same
//     process, with bounds raised past the tenant count (what an unbounded cache would hold);
//  2. 5,000 agent runs over loopback HTTP spread across those tenants, 25 at a time;
//  3. every tenant forgotten, then the runtime closed; and 1,000 runtimes created and dropped.
// Heap is printed per tenant and after eviction against the bounds the READMEs document.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createRuntime, type Runtime } from "../src/index.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("Run with node --expose-gc (pnpm bench does).");

const TENANTS = 10_000;
const RUNS = 5_000;
const CONCURRENCY = 25;
/** The documented bound: what a runtime at its default sizes may hold however many tenants it met. */
const DEFAULT_BOUND_BYTES = 4 * 1024 * 1024;
/** What the second half of the runs may add to the first half's heap: a run leaves nothing behind. */
const RUN_GROWTH_BYTES = 512 * 1024;
/**
 * After eviction (every tenant forgotten, then close), what may remain over the baseline: no cache
 * entry, only what V8 compiled and tuned while the runs went (measured at about 2 MB).
 */
const AFTER_EVICTION_BYTES = 3 * 1024 * 1024;
/** What 1,000 runtimes created, used and dropped without close() may leave. */
const DROPPED_RUNTIMES_BYTES = 512 * 1024;

async function heap(): Promise<number> {
  // A few turns of the event loop: fetch releases a request's abort listener in a finalizer.
  for (let i = 0; i < 6; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    gc?.();
  }
  return process.memoryUsage().heapUsed;
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(2)} MB`;
let over = false;
function against(label: string, bytes: number, bound: number): void {
  const ok = bytes <= bound;
  if (!ok) over = true;
  console.log(`${label.padEnd(52)} ${mb(bytes).padStart(10)}  bound ${mb(bound)}  ${ok ? "within" : "OVER"}`);
}

// The server runs in a child process: its own records of each request are not this heap's.
const child = spawn(
  process.execPath,
  ["--import", "tsx", new URL("./loopback-server.ts", import.meta.url).pathname],
  {
    stdio: ["ignore", "pipe", "inherit"],
  },
);
const [first] = (await once(child.stdout, "data")) as [Buffer];
const server = { baseUrl: first.toString().trim() };
const tenant = (n: number) => ({
  baseUrl: server.baseUrl,
  apiKey: `sk-tenant-${String(n).padStart(6, "0")}-secret`,
  model: "m",
});

/** Every tenant's first contact: its client, its latches, a calibration reading. No network. */
function meet(runtime: Runtime): void {
  const body = { messages: [{ role: "user", content: "x".repeat(160) }] };
  for (let n = 0; n < TENANTS; n++) {
    const t = tenant(n);
    runtime.clients.getClient(t);
    const supports = runtime.capabilities.capabilitiesFor(t.baseUrl, t.apiKey);
    runtime.calibration.calibrate(supports, t.model, body, 40);
    runtime.calibration.calibrate(`${t.baseUrl}#${n}`, t.model, body, 40);
  }
}

/** Runs `count` agent runs, `CONCURRENCY` at a time, spread over the tenants; answers how many failed. */
async function runMany(runtime: Runtime, count: number): Promise<number> {
  let next = 0;
  let failed = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const n = (next++ * 7919) % TENANTS;
      const runId = `run-${n}-${next}`;
      await runtime
        .runAgentLoop({
          config: tenant(n),
          messages: [{ role: "user", content: "hi" }],
          dispatch: () => "",
          onEvent: (event) => runtime.bus.emit(runId, event),
        })
        .catch(() => failed++);
      runtime.bus.endRun(runId);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return failed;
}

// Warm-up: the first requests load and compile the SDK's and fetch's code, which stays whatever
// the tenants do; the baseline is taken after it.
const scratch = createRuntime();
await runMany(scratch, 200);
scratch.close();
const base = await heap();
const unbounded = createRuntime({
  clients: { maxClients: TENANTS },
  capabilities: { maxEndpoints: TENANTS },
  calibration: { maxEndpoints: TENANTS },
});
meet(unbounded);
const unboundedBytes = (await heap()) - base;
unbounded.close();
const afterUnbounded = await heap();

const runtime = createRuntime();
meet(runtime);
const boundedBytes = (await heap()) - afterUnbounded;
console.log(
  `${TENANTS} tenants met (clients ${runtime.clients.size}, capability entries ${runtime.capabilities.size})`,
);
console.log(`  unbounded baseline: ${kb(unboundedBytes / TENANTS)} a tenant, ${mb(unboundedBytes)} in all`);
console.log(
  `  default bounds:     ${kb(boundedBytes / TENANTS)} a tenant, ${mb(boundedBytes)} in all (${((boundedBytes / unboundedBytes) * 100).toFixed(1)}% of the baseline)`,
);
against("heap held by the caches at default bounds", boundedBytes, DEFAULT_BOUND_BYTES);

const started = performance.now();
const failedFirst = await runMany(runtime, RUNS / 2);
const afterHalf = (await heap()) - afterUnbounded;
const failed = failedFirst + (await runMany(runtime, RUNS / 2));
const seconds = (performance.now() - started) / 1000;
const afterRuns = (await heap()) - afterUnbounded;
console.log(
  `${RUNS} runs in ${seconds.toFixed(1)} s (${(RUNS / seconds).toFixed(0)} runs/s, ${failed} failed)`,
);
console.log(
  `  heap over the baseline after ${RUNS / 2} runs: ${mb(afterHalf)}; after ${RUNS}: ${mb(afterRuns)}`,
);
against(`growth over the second ${RUNS / 2} runs`, Math.max(0, afterRuns - afterHalf), RUN_GROWTH_BYTES);

for (let n = 0; n < TENANTS; n++) {
  runtime.forget(tenant(n));
  runtime.calibration.forget(`${tenant(n).baseUrl}#${n}`);
}
const afterForget = (await heap()) - afterUnbounded;
console.log(
  `after forgetting every tenant: clients ${runtime.clients.size}, capability entries ${runtime.capabilities.size}`,
);
against("heap after eviction (forget)", afterForget, AFTER_EVICTION_BYTES);
runtime.close();
against("heap after close()", (await heap()) - afterUnbounded, AFTER_EVICTION_BYTES);

const beforeDropped = await heap();
for (let i = 0; i < 1000; i++) {
  const dropped = createRuntime();
  for (let e = 0; e < 20; e++) dropped.bus.emit("run", { kind: "notice", text: `event ${e}` });
}
against("heap after 1,000 runtimes dropped unclosed", (await heap()) - beforeDropped, DROPPED_RUNTIMES_BYTES);

child.kill();
if (over) process.exitCode = 1;
