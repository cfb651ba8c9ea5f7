// restoreArguments over a 1,000-call run of one tool whose schema has a recursion past its limit
// (so a string sits where JSON text may have been asked for, and the sanitized form is needed):
// the schema object the run shares (sanitized once, then remembered) against a fresh copy of it
// per call (the uncached path: sanitized on every call), in the same run.
// Run: pnpm --filter @loopwright/schema-compat bench
// Each case is timed in alternating rounds and the median round is reported, so a noisy
// neighbour on a shared machine moves both sides of the ratio alike.
import { restoreArguments } from "../src/optional-nulls.js";

const CALLS = 1_000;
const ROUNDS = 7;

const schema = {
  type: "object",
  properties: {
    tree: { $ref: "#/$defs/node" },
    path: { type: "string", description: "Where to write." },
    mode: { type: "string", enum: ["create", "overwrite", "append"] },
    tags: { type: "array", items: { type: "string" }, maxItems: 20 },
    options: {
      type: "object",
      properties: {
        recursive: { type: "boolean" },
        depth: { type: "integer", minimum: 0, maximum: 32 },
        encoding: { type: "string", default: "utf-8" },
      },
    },
  },
  required: ["tree", "path"],
  $defs: {
    node: {
      type: "object",
      properties: {
        name: { type: "string" },
        size: { type: "integer" },
        children: { type: "array", items: { $ref: "#/$defs/node" } },
      },
      required: ["name"],
    },
  },
};
const deep = JSON.stringify([{ name: "leaf", children: [{ name: "deepest" }] }]);
const args = {
  tree: { name: "root", children: [{ name: "kid", children: [{ name: "k2", children: deep }] }] },
  path: "out.json",
  mode: null,
  tags: ["a", "b"],
  options: null,
};

let sink = 0;

/** Nanoseconds per call over one run of CALLS calls, each against `schemaFor(i)`. */
function run(schemaFor: (i: number) => unknown): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) if (restoreArguments(args, schemaFor(i))) sink++;
  return Number(process.hrtime.bigint() - start) / CALLS;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const copies = Array.from({ length: (ROUNDS + 1) * CALLS }, () => structuredClone(schema));
let next = 0;
const uncached = () => copies[next++];
const shared = () => schema;

run(shared);
run(uncached);
const once: number[] = [];
const every: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  once.push(run(shared));
  every.push(run(uncached));
}
const a = median(once);
const b = median(every);
console.log(`node ${process.version}; ${CALLS} calls a round, median of ${ROUNDS} alternating rounds\n`);
console.log(
  `${"restoreArguments, JSON text to parse back".padEnd(44)} schema copied per call (sanitized each time) ${b
    .toFixed(0)
    .padStart(
      7,
    )} ns   one schema (sanitized once) ${a.toFixed(0).padStart(7)} ns   ratio ${(a / b).toFixed(3)}x`,
);
if (sink < 0) console.log(sink);
