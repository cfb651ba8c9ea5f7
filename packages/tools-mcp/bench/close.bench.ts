// How long closing a stdio server takes, and whether its process tree is gone afterwards: the
// pool's process-tree transport against the SDK's StdioClientTransport in the same run, for a
// server that exits on stdin EOF and for servers that do not (server-everything after a task,
// and a server behind a sh wrapper that ignores EOF and has a child ignoring SIGTERM).
// Run: pnpm --filter @loopwright/tools-mcp bench
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { TreeStdioTransport } from "../src/stdio-transport.js";
import { descendants, running } from "../test/processes.js";

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const NODE = process.execPath;
const EVERYTHING = here("../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const FIXTURE = here("../test/fixture-server.mjs");
const WRAPPER = here("../test/wrapper.sh");
const LINGERING = here("../test/lingering-server.mjs");

interface Case {
  what: string;
  command: string;
  args: string[];
  use: (client: Client) => Promise<unknown>;
}
const cases: Case[] = [
  { what: "fixture server (exits on EOF)", command: NODE, args: [FIXTURE], use: (c) => c.listTools() },
  {
    what: "server-everything after get-sum",
    command: NODE,
    args: [EVERYTHING],
    use: (c) => c.callTool({ name: "get-sum", arguments: { a: 1, b: 2 } }),
  },
  {
    what: "server-everything via sh after a research task",
    command: "sh",
    args: [WRAPPER, NODE, EVERYTHING],
    use: async (c) => {
      // As the pool runs a task tool: under a signal of its own, stopped once the result is in.
      await c.listTools();
      const controller = new AbortController();
      const stream = c.experimental.tasks.callToolStream(
        { name: "simulate-research-query", arguments: { topic: "tides" } },
        undefined,
        { signal: controller.signal, timeout: 60_000 },
      );
      for await (const message of stream) if (message.type === "result") break;
      controller.abort();
    },
  },
  {
    what: "lingering server via sh (ignores EOF; child ignores SIGTERM)",
    command: "sh",
    args: [WRAPPER, NODE, LINGERING],
    use: (c) => c.listTools(),
  },
];

async function once(c: Case, ours: boolean): Promise<{ ms: number; left: number }> {
  const transport = ours
    ? new TreeStdioTransport({ command: c.command, args: c.args })
    : new StdioClientTransport({ command: c.command, args: c.args, stderr: "pipe" });
  const client = new Client({ name: "bench", version: "0" });
  await client.connect(transport);
  await c.use(client);
  const pid = transport.pid as number;
  const tree = [pid, ...descendants(pid)];
  const start = performance.now();
  await client.close();
  const ms = performance.now() - start;
  await new Promise((r) => setTimeout(r, 2_000));
  const left = tree.filter(running);
  for (const p of left) process.kill(p, "SIGKILL");
  return { ms, left: left.length };
}

console.log(`node ${process.version}\n`);
console.log("| server | SDK close | processes left | pool close | processes left |");
console.log("| --- | --- | --- | --- | --- |");
for (const c of cases.filter((c) => !process.argv[2] || c.what.includes(process.argv[2]))) {
  const sdk = await once(c, false);
  const ours = await once(c, true);
  console.log(
    `| ${c.what} | ${Math.round(sdk.ms)} ms | ${sdk.left} | ${Math.round(ours.ms)} ms | ${ours.left} |`,
  );
}
