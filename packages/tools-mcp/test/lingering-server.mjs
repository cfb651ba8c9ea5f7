#!/usr/bin/env node
// A small MCP server that does not exit when its stdin ends (as server-everything does not while a
// task's timers run), and that starts a child of its own which ignores SIGTERM: the process tree a
// pool must end on close. `--on-eof exit` makes it the well-behaved kind instead, which writes
// "stdin ended" to `--log <file>` and exits. Its `helper` tool starts, after the server has answered,
// one more child that ignores SIGTERM and that the server leaves running when it exits. With
// `--term-child <file>` it handles SIGTERM by starting a child (`sleep 600`, a cleanup step that
// lingers), writing its pid to the file, and running on; with `--eof-child <file>` it does the same
// 100 ms after its stdin ends, and exits 200 ms after that, leaving that child behind; with
// `--term-exit-child <file>` it does that 100 ms after a SIGTERM instead. Either way it exits by itself after two
// minutes, so a failing test cannot leave it running for long.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const option = (name) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
};
const log = option("--log");
const exitOnEof = option("--on-eof") === "exit";
const termChild = option("--term-child");
if (termChild)
  process.on("SIGTERM", () => {
    const late = spawn("sleep", ["600"], { stdio: "ignore" });
    if (late.pid !== undefined) appendFileSync(termChild, `${late.pid}\n`);
  });

const termExitChild = option("--term-exit-child");
if (termExitChild)
  process.on("SIGTERM", () => {
    setTimeout(() => {
      const late = spawn("sleep", ["600"], { stdio: "ignore" });
      if (late.pid !== undefined) appendFileSync(termExitChild, `${late.pid}\n`);
      setTimeout(() => process.exit(0), 200);
    }, 100);
  });

const child = spawn(
  process.execPath,
  ["-e", "process.on('SIGTERM', () => {}); setTimeout(() => {}, 120_000)"],
  { stdio: "ignore" },
);
setTimeout(() => process.exit(0), 120_000).unref();
// Alive after stdin ends, as a server with a timer of its own is.
const keepAlive = setInterval(() => {}, 1_000);

const eofChild = option("--eof-child");
process.stdin.on("end", () => {
  if (log) appendFileSync(log, "stdin ended\n");
  if (eofChild)
    setTimeout(() => {
      const late = spawn("sleep", ["600"], { stdio: "ignore" });
      if (late.pid !== undefined) appendFileSync(eofChild, `${late.pid}\n`);
      setTimeout(() => process.exit(0), 200);
    }, 100);
  if (!exitOnEof) return;
  clearInterval(keepAlive);
  child.kill("SIGKILL");
  process.exit(0);
});

/** Starts a late helper: a child that ignores SIGTERM and outlives the server. Returns its pid. */
function startHelper() {
  const helper = spawn(
    process.execPath,
    ["-e", "process.on('SIGTERM', () => {}); setTimeout(() => {}, 120_000)"],
    { stdio: "ignore" },
  );
  return helper.pid;
}

const server = new Server({ name: "lingering", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: "pids",
      description: "The server's pid and its child's, as JSON.",
      inputSchema: { type: "object", properties: {} },
    },
    {
      name: "helper",
      description: "Starts a child that ignores SIGTERM and outlives the server; its pid, as JSON.",
      inputSchema: { type: "object", properties: {} },
    },
  ],
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => ({
  content: [
    {
      type: "text",
      text: JSON.stringify(
        request.params.name === "helper"
          ? { helper: startHelper() }
          : { server: process.pid, child: child.pid },
      ),
    },
  ],
}));
await server.connect(new StdioServerTransport());
