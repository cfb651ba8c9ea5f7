// The window lookups under load, run by `pnpm bench` (with --expose-gc); prints, never asserts.
//
// 1. What ten thousand answered lookups leave held on the heap (a latched server: no request, only
//    the lookup's own bound and signal), with and without a caller's signal, beside a baseline loop
//    of as many resolved promises. Before the lookups cleared their timers, this held 12 MB (24 MB
//    with a signal) for the whole bound.
// 2. contextLimitFor and listModels on hostile listings of 10^4 to 2·10^5 models (about 5 to 100 MB)
//    over loopback, the model named last, for an endpoint with a key and a credential header, beside a
//    baseline of the least any lookup must do: fetch the same body and JSON-parse it. contextLimitFor
//    reads the body as sent; listModels takes the endpoint's credentials out of it before parsing (the
//    key and the header in every form secretsOf lists), so its ratio is the cost of that redaction.
//    Linear growth is ×2 per doubling; the ratios to the baseline should stay flat. These listings
//    are past the default maxLookupBodyBytes (16 MiB) from 5·10^4 models on, so the pool raises it.
// 3. An endless /v1/models body (a hostile or broken server) at the default cap: how much the server
//    got out before listModels closed the response, how long that took, and the heap's peak while it
//    ran, beside a baseline of fetching a finite body the size of the cap whole (the least any
//    reader of a body that big holds). Before the cap, the lookup read until the bound (10 s) ran
//    out, holding all of it.
// 4. findEntry on a 2·10^5-entry listing lacking the model it is asked for (every entry read three
//    ways: id, names, names without models/), beside three plain passes comparing two of each
//    entry's names. Before r81 it gathered two fresh arrays of names per entry per pass: 8-15 times
//    the baseline; about 1 after.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createClientPool } from "../src/pool.js";
import { DEFAULT_MAX_LOOKUP_BODY_BYTES, findEntry, listingEntries } from "../src/window.js";
import { scriptedHttp } from "../test/http.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc (pnpm bench does)");

async function heldAfter(run: () => Promise<void>): Promise<number> {
  gc?.();
  const before = process.memoryUsage().heapUsed;
  await run();
  gc?.();
  return process.memoryUsage().heapUsed - before;
}

async function serve(body: string): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/v1/models")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(body);
    } else {
      res.writeHead(404).end();
    }
  });
  // Parsing a 100 MB listing on a loaded machine outlasts Node's 5 s keep-alive: the next round would
  // go out on a socket the server is closing (ECONNRESET).
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function fastest(run: () => Promise<unknown>, rounds: number): Promise<number> {
  await run();
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    await run();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

const MB = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`;

{
  const latched = await serve(JSON.stringify({ data: [{ id: "m" }] }));
  const pool = createClientPool({ lookupBoundMs: 600_000 });
  const settings = { baseUrl: latched.baseUrl, model: "m" };
  await pool.servedWindow(settings); // latches the server: no request from here on
  const host = new AbortController();
  const N = 10_000;
  const loop = (signal?: AbortSignal) => async () => {
    for (let i = 0; i < N; i++) await pool.servedWindow(settings, { signal });
  };
  await loop(host.signal)(); // warm-up
  const baseline = await heldAfter(async () => {
    for (let i = 0; i < N; i++) await Promise.resolve();
  });
  const plain = await heldAfter(loop());
  const signalled = await heldAfter(loop(host.signal));
  console.log(`heap held after ${N} answered lookups (bound 600 s):`);
  console.log(
    `  without a signal ${MB(plain)}, with the caller's signal ${MB(signalled)}, baseline ${MB(baseline)}`,
  );
  await latched.close();
}

console.log(
  "contextLimitFor and listModels (keyed, with a credential header) on a listing of n models, the one named last, vs fetch + JSON.parse of it:",
);
const credentials = { apiKey: "sk-bench-0123456789abcdef", headers: { "x-api-key": "hdr-bench-secret-42" } };
let previous: { n: number; ms: number } | undefined;
for (const n of [10_000, 50_000, 100_000, 200_000]) {
  const data = Array.from({ length: n }, (_, i) => ({
    id: `org/model-${i}`,
    aliases: [`alias-${i}`],
    description: "x".repeat(400),
    context_length: 1000 + i,
  }));
  const body = JSON.stringify({ data });
  const server = await serve(body);
  const pool = createClientPool({ lookupBoundMs: 120_000, maxLookupBodyBytes: 256 * 1024 * 1024 });
  const rounds = n >= 100_000 ? 3 : 5;
  const endpoint = { ...credentials, baseUrl: server.baseUrl, model: `org/model-${n - 1}` };
  const looked = await fastest(() => pool.contextLimitFor(endpoint), rounds);
  const listed = await fastest(() => pool.listModels(endpoint), rounds);
  const base = await fastest(async () => (await fetch(`${server.baseUrl}/models`)).json(), rounds);
  const growth =
    previous === undefined
      ? ""
      : `  contextLimitFor growth ×${(looked / previous.ms).toFixed(1)} for ×${n / previous.n} models`;
  console.log(
    `  ${String(n).padStart(7)} models (${(body.length / 1e6).toFixed(0)} MB): contextLimitFor ${looked.toFixed(0)} ms (ratio ${(looked / base).toFixed(2)}), listModels ${listed.toFixed(0)} ms (ratio ${(listed / base).toFixed(2)}), baseline ${base.toFixed(0)} ms${growth}`,
  );
  previous = { n, ms: looked };
  await server.close();
}

{
  const cap = DEFAULT_MAX_LOOKUP_BODY_BYTES;
  const entry = `{"id":"org/model","description":"${"x".repeat(400)}","context_length":8192},`;
  // The baseline: a listing the size of the cap, sent whole.
  const finite = `{"data":[${entry.repeat(Math.floor((cap - 16) / entry.length)).slice(0, -1)}]}`;
  // Endless, with a 1 GiB backstop so a reader without a cap ends instead of taking the machine down.
  const server = await scriptedHttp((path) =>
    path === "/finite" ? [200, finite] : { head: '{"data":[', repeat: entry, upTo: 1024 * 1024 * 1024 },
  );
  const origin = server.baseUrl.replace(/\/v1$/, "");

  /** The heap's peak above where it started while `run` runs, sampled every 2 ms. */
  async function peakOf(run: () => Promise<unknown>): Promise<{ peak: number; ms: number; answer: unknown }> {
    gc?.();
    const before = process.memoryUsage().heapUsed;
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().heapUsed - before);
    }, 2);
    const started = performance.now();
    const answer = await run().catch((error: unknown) => error);
    const ms = performance.now() - started;
    peak = Math.max(peak, process.memoryUsage().heapUsed - before);
    clearInterval(sampler);
    return { peak, ms, answer };
  }

  const pool = createClientPool({ lookupBoundMs: 600_000 });
  await pool.listModels({ baseUrl: server.baseUrl }).catch(() => {}); // warm-up
  const base = await peakOf(async () => (await fetch(`${origin}/finite`)).text());
  const capped = await peakOf(() => pool.listModels({ baseUrl: server.baseUrl }));
  const code = (capped.answer as { code?: string }).code;
  const last = server.seen.at(-1);
  // The server hears the close a moment after the lookup answered.
  for (let waited = 0; !last?.closedEarly && waited < 2_000; waited += 10)
    await new Promise((r) => setTimeout(r, 10));
  console.log(`an endless /v1/models body, default maxLookupBodyBytes (${MB(cap)}):`);
  console.log(
    `  listModels answered ${code} in ${capped.ms.toFixed(0)} ms; the server wrote ${MB(last?.bytesWritten ?? 0)} before the response was closed (${last?.closedEarly ? "closed" : "NOT closed"}); heap peak +${MB(capped.peak)} (ratio ${(capped.peak / base.peak).toFixed(2)}), baseline fetch + text() of a body the size of the cap +${MB(base.peak)} in ${base.ms.toFixed(0)} ms`,
  );
  await server.close();
}

{
  const entries =
    listingEntries({
      data: Array.from({ length: 200_000 }, (_, i) => ({
        id: `org/model-${i}`,
        name: `Org: Model ${i}`,
        aliases: [`m${i}`],
        context_length: 4096,
      })),
    }) ?? [];
  const least = (work: () => unknown): number => {
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 7; i++) {
      const started = performance.now();
      work();
      best = Math.min(best, performance.now() - started);
    }
    return best;
  };
  const plain = least(() => {
    for (let pass = 0; pass < 3; pass++) entries.find((e) => e.id === "nope" || e.name === "nope");
  });
  const search = least(() => findEntry(entries, "nope"));
  console.log("findEntry on a 2·10^5-entry listing lacking the model, vs three plain passes over it:");
  console.log(
    `  findEntry ${search.toFixed(1)} ms, baseline ${plain.toFixed(1)} ms (ratio ${(search / plain).toFixed(2)})`,
  );
}
