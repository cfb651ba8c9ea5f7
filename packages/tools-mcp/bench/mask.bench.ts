// What masking a server's credentials costs, measured in the same run:
// - a 20-line stderr tail (10 KB) with eight secrets: the masker (every encoded form, wrapped
//   lines) against plain split/join of the eight values as given (the exact-value masking it replaced);
// - hostile text: near-misses of a secret (its head repeated) at 1 MB and 4 MB, to show the
//   pass stays linear (the 4 MB row takes about four times the 1 MB row);
// - text with both `%` and `\` (four readings) at 1 MB and 4 MB;
// - a tool's result as the model reads it (a 100 KB text result, and a structured one of 2,000
//   records, neither holding a secret: the common case): toolOutput then maskOutput (every form,
//   text and structured content) against toolOutput then exact split/join of its text;
// - a server that writes 8 MB, then 32 MB, of stderr with no line break (a progress bar redrawn
//   with \r) and exits: the time until its failure is reported. Linear is at most 4x; the
//   per-write re-split of the whole unended line this replaced took 1.5 s and 18.3 s here.
// Run: pnpm --filter @loopwright/tools-mcp bench

import { toolOutput } from "../src/content.js";
import { createMcpPool } from "../src/index.js";
import { masker, maskOutput } from "../src/redact.js";

const secrets = [
  "sk-live/AbC+xyz=1234567890",
  "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
  "9f86d081884c7d659a2feaa0c55ad015",
  "Bearer tok-9f8e7d6c5b",
  "tok-9f8e7d6c5b",
  "pa55word-xyz",
  "query-secret-123",
  "fast-mode",
];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Microseconds per call of `f`, median of nine rounds of `n`. */
function time(f: () => unknown, n: number): number {
  for (let i = 0; i < n; i++) f();
  const rounds: number[] = [];
  for (let round = 0; round < 9; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) f();
    rounds.push(Number(process.hrtime.bigint() - start) / 1e3 / n);
  }
  return median(rounds);
}

const exact = (text: string) => {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join("***");
  return out;
};
const mask = masker(secrets);

const line = (i: number) =>
  `2026-12-01T22:00:${String(i).padStart(2, "0")}Z server: request ${i} to https://api.example/v1/items failed with 503 ${"x".repeat(400)}`;
const tail = Array.from({ length: 20 }, (_, i) => line(i)).join("\n");
const e = time(() => exact(tail), 200);
const m = time(() => mask(tail), 200);
console.log(
  `mask a 10 KB stderr tail, 8 secrets   exact split/join ${e.toFixed(0).padStart(6)} µs   masker ${m.toFixed(0).padStart(6)} µs   ratio ${(m / e).toFixed(2)}x`,
);

const nearMiss = (bytes: number) => "sk-live/AbC+".repeat(Math.ceil(bytes / 12)).slice(0, bytes);
const one = nearMiss(1_000_000);
const four = nearMiss(4_000_000);
const t1 = time(() => mask(one), 3);
const t4 = time(() => mask(four), 3);
console.log(
  `near-misses of a secret              1 MB ${(t1 / 1000).toFixed(1).padStart(7)} ms   4 MB ${(t4 / 1000).toFixed(1).padStart(7)} ms   ratio ${(t4 / t1).toFixed(2)}x (4.00 is linear)`,
);

// Text holding both `%` and `\` is read four times (as written, JSON-decoded, percent-decoded, both):
// 1 MB and 4 MB of a log line with escapes. Before r69 each decoded reading was built one string a
// character: 4 MB took about 3.4 s (8 MB 9 s) on a loaded 2-core machine, 1.0-2.1 s after; linear
// either way.
const escapes = (bytes: number) => 'GET /a%2Fb?q=x\\n "ok" '.repeat(Math.ceil(bytes / 23)).slice(0, bytes);
const e1 = time(() => mask(escapes(1_000_000)), 3);
const e4 = time(() => mask(escapes(4_000_000)), 3);
console.log(
  `text with both % and \\               1 MB ${(e1 / 1000).toFixed(1).padStart(7)} ms   4 MB ${(e4 / 1000).toFixed(1).padStart(7)} ms   ratio ${(e4 / e1).toFixed(2)}x (4.00 is linear)`,
);

const textResult = {
  content: [{ type: "text", text: Array.from({ length: 200 }, (_, i) => line(i)).join("\n") }],
};
const records = Array.from({ length: 2000 }, (_, i) => ({
  id: i,
  name: `item-${i}`,
  path: `/srv/data/${i}.json`,
}));
const structuredResult = { content: [], structuredContent: { records } };
for (const [what, result] of [
  ["a 100 KB text result     ", textResult],
  ["a 2,000-record structured", structuredResult],
] as const) {
  const plain = time(() => exact(toolOutput(result).text), 50);
  const masked = time(() => maskOutput(toolOutput(result), mask), 50);
  console.log(
    `${what} result, 8 secrets  exact split/join ${plain.toFixed(0).padStart(6)} µs   maskOutput ${masked.toFixed(0).padStart(6)} µs   ratio ${(masked / plain).toFixed(2)}x`,
  );
}

const FLOOD = `const mb = Number(process.argv[1]);
const chunk = "progress 42% ".repeat(5000) + "\\r";
let written = 0;
const go = () => {
  while (written < mb * 1e6) {
    written += chunk.length;
    if (!process.stderr.write(chunk)) return void process.stderr.once("drain", go);
  }
  process.exit(3);
};
go();`;
const flood = async (mb: number) => {
  const pool = createMcpPool(
    [{ name: "flood", command: process.execPath, args: ["-e", FLOOD, String(mb)] }],
    {
      connectTimeoutMs: 300_000,
    },
  );
  const start = Date.now();
  await pool.connect();
  await pool.close();
  return (Date.now() - start) / 1000;
};
const f8 = await flood(8);
const f32 = await flood(32);
console.log(
  `stderr with no line break           8 MB ${f8.toFixed(2).padStart(7)} s    32 MB ${f32.toFixed(2).padStart(7)} s    ratio ${(f32 / f8).toFixed(2)}x (4.00 is linear)`,
);
