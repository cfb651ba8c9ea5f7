/// <reference types="node" />
// Importing the package (and building a pool, reading a .mcp.json document) loads none of the MCP
// SDK: it is loaded when the first server is connected. A host that imports @loopwright/agent and
// never starts a server — a CLI, on every start — no longer pays for the SDK's client, transports
// and schema library. Checked on the built bundle (run `pnpm build` first) in a child Node whose
// module hooks write down every module resolved.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { describe, expect, it } from "vitest";
import { FIXTURE, NODE } from "../test/support.js";
import { DEFAULT_MAX_MESSAGE_BYTES } from "./stdio-transport.js";

const bundle = pathToFileURL(fileURLToPath(new URL("../dist/index.js", import.meta.url))).href;

// Module hooks run off the main thread: each resolved URL goes back over the port register() gave.
const HOOKS = `
let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  const found = await next(specifier, context);
  port.postMessage(found.url);
  return found;
}`;

const CHILD = `
import { register } from "node:module";
import { MessageChannel } from "node:worker_threads";
const { port1, port2 } = new MessageChannel();
const seen = [];
port1.on("message", (url) => seen.push(url));
port1.unref();
register("data:text/javascript," + encodeURIComponent(${JSON.stringify(HOOKS)}), {
  data: { port: port2 },
  transferList: [port2],
});
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
const sdk = () => seen.filter((url) => url.includes("@modelcontextprotocol")).length;
const [bundle, node, fixture] = process.argv.slice(-3);
const { createMcpPool, mcpServers } = await import(bundle);
const servers = mcpServers({ mcpServers: { fx: { command: node, args: [fixture] } } });
const pool = createMcpPool(servers);
pool.status();
await settle();
const beforeConnect = sdk();
await pool.connect();
const tools = (await pool.tools()).map((tool) => tool.name);
await pool.close();
await settle();
console.log(JSON.stringify({ beforeConnect, afterConnect: sdk(), tools, total: seen.length }));
`;

describe("the MCP SDK, loaded when a server is first connected", () => {
  it("is not loaded by importing the package, building a pool or reading servers; a connect loads it and works", {
    timeout: 90_000,
  }, () => {
    const child = spawnSync(
      process.execPath,
      ["--input-type=module", "--no-warnings", "-e", CHILD, bundle, NODE, FIXTURE],
      { encoding: "utf8", timeout: 80_000 },
    );
    expect(child.stderr).toBe("");
    const report = JSON.parse(child.stdout.trim().split("\n").at(-1) as string) as {
      beforeConnect: number;
      afterConnect: number;
      tools: string[];
      total: number;
    };
    // The hooks did see the bundle's own modules, so a zero below is a real zero.
    expect(report.total).toBeGreaterThan(0);
    expect(report.beforeConnect).toBe(0);
    expect(report.afterConnect).toBeGreaterThan(0);
    expect(report.tools.length).toBeGreaterThan(0);
  });

  it("reads the same default message cap as the SDK's stdio transport", () => {
    expect(DEFAULT_MAX_MESSAGE_BYTES).toBe(STDIO_DEFAULT_MAX_BUFFER_SIZE);
    expect(createRequire(import.meta.url).resolve("@modelcontextprotocol/sdk/shared/stdio.js")).toMatch(
      /stdio/,
    );
  });
});
