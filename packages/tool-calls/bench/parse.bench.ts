// parseToolArguments on valid JSON (its fast path) against plain JSON.parse in the same run, on
// arguments of the sizes tool calls have: a few fields, and a ~20 kB file write; plus the repair
// path for scale. Run: pnpm --filter @loopwright/tool-calls bench
// Each case is timed in alternating rounds and the median round is reported, so a noisy
// neighbour on a shared machine moves both sides of a ratio alike.
import { parseToolArguments } from "../src/parse-tool-arguments.js";

const small = JSON.stringify({ path: "src/index.ts", line: 42, recursive: true, pattern: "TODO|FIXME" });
const large = JSON.stringify({
  path: "docs/guide.md",
  content: 'A line of prose with "quotes", a tab\tand some unicode: é ü 漢字.\n'.repeat(300),
  mode: "overwrite",
});
const python = `{'path': 'src/index.ts', 'line': 42, 'recursive': True, 'pattern': None,}`;

let sink = 0;

/** Nanoseconds per call of `fn`, timed over `iterations` calls. */
function time(fn: () => unknown, iterations: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) if (fn()) sink++;
  return Number(process.hrtime.bigint() - start) / iterations;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function compare(label: string, text: string, iterations: number, rounds = 15): void {
  const baseline = () => JSON.parse(text);
  const subject = () => parseToolArguments(text);
  time(baseline, iterations);
  time(subject, iterations);
  const base: number[] = [];
  const ours: number[] = [];
  for (let r = 0; r < rounds; r++) {
    base.push(time(baseline, iterations));
    ours.push(time(subject, iterations));
  }
  const b = median(base);
  const o = median(ours);
  console.log(
    `${label.padEnd(34)} JSON.parse ${b.toFixed(0).padStart(7)} ns   parseToolArguments ${o
      .toFixed(0)
      .padStart(7)} ns   ratio ${(o / b).toFixed(2)}x`,
  );
}

console.log(`node ${process.version}; median of 15 alternating rounds\n`);
compare(`small valid JSON (${small.length} B)`, small, 20_000);
compare(`large valid JSON (${(large.length / 1024).toFixed(1)} kB)`, large, 300);
const repair = median(Array.from({ length: 15 }, () => time(() => parseToolArguments(python), 5_000)));
console.log(`${"repair path: Python-style (74 B)".padEnd(34)} parseToolArguments ${repair.toFixed(0)} ns`);
if (sink < 0) console.log(sink);
