// The routing benchmark, run by `pnpm bench`: a run over a 300-tool catalogue (catalogue.ts) routes
// 1,000 calls the way a model writes them — `call_tool` in proxy mode, and in on-demand mode an
// unloaded tool called as `server.tool`, `functions.tool` or in another case — through one
// `createToolLoading`, which resolves every name with the lookups it built once. The baseline, in the
// same process and on the same calls, is what each call cost before: the catalogue checked and its
// index built again for every name (`proxiedCall` with the catalogue, `toolResolver` per call).
// Numbers are printed as a ratio, never asserted.

import { toolResolver } from "../src/names.js";
import { proxiedCall } from "../src/proxied-call.js";
import { type CallInput, createToolLoading } from "../src/tool-loading.js";
import { toolset } from "./catalogue.js";

const TOOLS = 300;
const CALLS = 1_000;
const ROUNDS = 7;

const { tools, catalog } = toolset(TOOLS);
const named = catalog.flatMap((server) =>
  server.tools.map((tool) => ({ server: server.name, tool: tool.name })),
);
if (named.length < TOOLS) throw new Error(`the catalogue holds ${named.length} tools, not ${TOOLS}`);

/** The i-th call's spelling of its tool: as listed, `server.tool`, `functions.tool`, or upper case. */
function spelling(i: number): { name: string; tool: string } {
  const { server, tool } = named[(i * 7) % named.length] as { server: string; tool: string };
  const forms = [tool, `${server}.${tool}`, `functions.${tool}`, tool.toUpperCase()];
  return { name: forms[i % forms.length] as string, tool };
}
const spelled = Array.from({ length: CALLS }, (_, i) => spelling(i));

const proxy = createToolLoading({ mode: "proxy", tools, catalog });
const ondemand = createToolLoading({ mode: "ondemand", tools, catalog });
const state = { loaded: [] as string[], messages: [] };

const proxyCalls: CallInput[] = spelled.map(({ name }, i) => ({
  id: `call_${i}`,
  name: "call_tool",
  args: { name, arguments: { page: i } },
}));
const directCalls: CallInput[] = spelled.map(({ name }, i) => ({ id: `call_${i}`, name, args: { page: i } }));

/** Routes every call; answers how many reached their catalogued tool (the cross-check). */
function held(): number {
  let right = 0;
  proxyCalls.forEach((call, i) => {
    const route = proxy.route(call, state);
    if (route.kind === "dispatch" && route.name === spelled[i]?.tool) right++;
  });
  directCalls.forEach((call, i) => {
    const route = ondemand.route(call, state);
    if (route.kind === "dispatch" && route.name === spelled[i]?.tool) right++;
  });
  return right;
}

/** The same resolutions, each rebuilding what the catalogue's index holds. */
function rebuilt(): number {
  let right = 0;
  proxyCalls.forEach((call, i) => {
    if (proxiedCall(call.args, catalog).name === spelled[i]?.tool) right++;
  });
  directCalls.forEach((call, i) => {
    if (toolResolver(catalog)(call.name) === spelled[i]?.tool) right++;
  });
  return right;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function time(run: () => number): { ms: number; right: number } {
  const samples: number[] = [];
  let right = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const start = performance.now();
    right = run();
    samples.push(performance.now() - start);
  }
  return { ms: median(samples), right };
}

time(held); // warm-up, both ways
time(rebuilt);
const now = time(held);
const before = time(rebuilt);
if (now.right !== 2 * CALLS || before.right !== 2 * CALLS) {
  throw new Error(`routed ${now.right} and ${before.right} of ${2 * CALLS} calls to their tools`);
}
console.log(
  `\nRouting ${CALLS} call_tool calls (proxy) and ${CALLS} unloaded calls (ondemand) over ${TOOLS} tools, median of ${ROUNDS}:`,
);
console.table([
  {
    way: "index rebuilt per call (before)",
    ms: before.ms.toFixed(2),
    "per call µs": ((before.ms * 1000) / (2 * CALLS)).toFixed(1),
  },
  {
    way: "createToolLoading's lookups (now)",
    ms: now.ms.toFixed(2),
    "per call µs": ((now.ms * 1000) / (2 * CALLS)).toFixed(1),
  },
]);
console.log(`route is ${(before.ms / now.ms).toFixed(1)}× faster than rebuilding the index per call.`);
