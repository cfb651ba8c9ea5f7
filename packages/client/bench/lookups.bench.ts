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
//    Linear growth is ×2 per doubling; the ratios to the baseline should stay flat.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createClientPool } from "../src/pool.js";

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
  const pool = createClientPool({ lookupBoundMs: 120_000 });
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
