// What the pool costs on top of the SDK, measured against the SDK itself in the same run:
// - a call: pool.call (lookup, gate, argument clean-up, result conversion) against a bare SDK
//   Client's callTool on an identical server-everything process, alternating rounds, median;
// - starting three servers: the pool's parallel connect against three SDK clients connected one
//   after another (what a host writing the loop by hand usually does).
// Run: pnpm --filter @loopwright/tools-mcp bench
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createMcpPool } from "../src/index.js";

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const EVERYTHING = here("../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const FILESYSTEM = here("../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const FIXTURE = here("../test/fixture-server.mjs");
const servers = [
  { name: "everything", command: process.execPath, args: [EVERYTHING, "stdio"] },
  { name: "fs", command: process.execPath, args: [FILESYSTEM, here("..")] },
  { name: "fx", command: process.execPath, args: [FIXTURE] },
];

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

async function rawClient(server: (typeof servers)[number]): Promise<Client> {
  const client = new Client({ name: "bench", version: "0" });
  await client.connect(
    new StdioClientTransport({ command: server.command, args: server.args, stderr: "pipe" }),
  );
  await client.listTools();
  return client;
}

async function timeCalls(call: () => Promise<unknown>, n: number): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await call();
  return Number(process.hrtime.bigint() - start) / 1e3 / n;
}

console.log(`node ${process.version}\n`);

// Calls.
const pool = createMcpPool([servers[0] as (typeof servers)[number]]);
await pool.connect();
const client = await rawClient(servers[0] as (typeof servers)[number]);
const viaPool = () => pool.call("everything__get-sum", { a: 2, b: 40 });
const viaSdk = () => client.callTool({ name: "get-sum", arguments: { a: 2, b: 40 } });
await timeCalls(viaPool, 50);
await timeCalls(viaSdk, 50);
const ours: number[] = [];
const base: number[] = [];
for (let round = 0; round < 9; round++) {
  base.push(await timeCalls(viaSdk, 100));
  ours.push(await timeCalls(viaPool, 100));
}
const b = median(base);
const o = median(ours);
console.log(
  `call get-sum over stdio        SDK callTool ${b.toFixed(0).padStart(6)} µs   pool.call ${o.toFixed(0).padStart(6)} µs   ratio ${(o / b).toFixed(2)}x`,
);
await pool.close();
await client.close();

// Starting three servers.
const parallel: number[] = [];
const sequential: number[] = [];
for (let round = 0; round < 3; round++) {
  let start = Date.now();
  const clients: Client[] = [];
  for (const server of servers) clients.push(await rawClient(server));
  sequential.push(Date.now() - start);
  await Promise.all(clients.map((c) => c.close()));
  start = Date.now();
  const three = createMcpPool(servers);
  await three.tools();
  parallel.push(Date.now() - start);
  await three.close();
}
const s = median(sequential);
const p = median(parallel);
console.log(
  `start 3 servers, list tools    SDK one by one ${String(s).padStart(5)} ms   pool (parallel) ${String(p).padStart(5)} ms   ratio ${(p / s).toFixed(2)}x`,
);
