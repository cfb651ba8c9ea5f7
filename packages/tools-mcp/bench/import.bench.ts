// What importing the package costs a host that never connects a server, against importing
// @loopwright/loop (which every host loads) in the same run: the median wall time of a fresh Node
// importing each bundle, and how many modules it resolved. Since the SDK is loaded on first
// connect, tools-mcp and agent should sit near loop; the SDK's own modules are timed alone too
// (what a connect adds once). Run after `pnpm build`: pnpm --filter @loopwright/tools-mcp bench
import { spawnSync } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";

const bundle = (path: string) => pathToFileURL(fileURLToPath(new URL(path, import.meta.url))).href;
const targets: [string, string[]][] = [
  ["@loopwright/loop (baseline)", [bundle("../../loop/dist/index.js")]],
  ["@loopwright/tools-mcp", [bundle("../dist/index.js")]],
  ["@loopwright/agent", [bundle("../../agent/dist/index.js")]],
  [
    "the MCP SDK parts a connect loads",
    [
      "@modelcontextprotocol/sdk/client/index.js",
      "@modelcontextprotocol/sdk/client/sse.js",
      "@modelcontextprotocol/sdk/client/stdio.js",
      "@modelcontextprotocol/sdk/client/streamableHttp.js",
    ],
  ],
];

const CHILD = `
import { register } from "node:module";
import { MessageChannel } from "node:worker_threads";
const { port1, port2 } = new MessageChannel();
let count = 0;
port1.on("message", () => count++);
port1.unref();
register("data:text/javascript," + encodeURIComponent(
  "let port; export function initialize(d) { port = d.port; }" +
  "export async function resolve(s, c, next) { const f = await next(s, c); port.postMessage(1); return f; }"),
  { data: { port: port2 }, transferList: [port2] });
const started = performance.now();
for (const what of JSON.parse(process.argv.at(-1))) await import(what);
const ms = performance.now() - started;
await new Promise((resolve) => setTimeout(resolve, 50));
console.log(JSON.stringify({ ms, count }));
`;

function once(specifiers: string[]): { ms: number; count: number } {
  const child = spawnSync(
    process.execPath,
    ["--input-type=module", "--no-warnings", "-e", CHILD, JSON.stringify(specifiers)],
    { encoding: "utf8", cwd: fileURLToPath(new URL("..", import.meta.url)) },
  );
  if (child.status !== 0) throw new Error(child.stderr);
  return JSON.parse(child.stdout.trim()) as { ms: number; count: number };
}

const RUNS = 9;
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const results = new Map<string, { ms: number; count: number }>();
// Interleaved, so a busy moment on the machine falls on every target alike.
const samples = new Map<string, number[]>(targets.map(([name]) => [name, []]));
for (let run = 0; run < RUNS; run++) {
  for (const [name, specifiers] of targets) {
    const { ms, count } = once(specifiers);
    samples.get(name)?.push(ms);
    results.set(name, { ms: 0, count });
  }
}
const base = median(samples.get(targets[0]?.[0] as string) as number[]);
console.log(`import cost, median of ${RUNS} fresh processes each`);
for (const [name] of targets) {
  const ms = median(samples.get(name) as number[]);
  const { count } = results.get(name) as { count: number };
  console.log(
    `  ${name.padEnd(36)} ${ms.toFixed(0).padStart(5)} ms  ${(ms / base).toFixed(2)}× loop  ${String(count).padStart(5)} modules`,
  );
}
