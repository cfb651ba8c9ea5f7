// A host process for the close tests: starts a pool with one server behind a wrapper that does not
// exit on stdin EOF, calls it once, prints the pids of the wrapper, the server and the server's
// child as JSON, then, by its mode:
// - `close`: closes the pool and lets the event loop run out;
// - `exit`: exits without closing it;
// - `wait`: waits (the pool keeps it alive) for a signal it does not handle;
// - `handle-before` / `handle-after`: handles SIGINT, SIGTERM and SIGHUP itself, with a handler
//   added before the pool starts its server or after, and prints `handled <signal>` for each one.
import { fileURLToPath } from "node:url";
import { createMcpPool } from "../src/index.js";

const mode = process.argv[2];
const handle = (signal: NodeJS.Signals) => console.log(`handled ${signal}`);
const addHandlers = () => {
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, handle);
};
if (mode === "handle-before") addHandlers();

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const pool = createMcpPool([
  {
    name: "lingering",
    command: "sh",
    args: [here("./wrapper.sh"), process.execPath, here("./lingering-server.mjs")],
  },
]);
const output = await pool.callTool("lingering__pids", {});
const { server, child } = JSON.parse(output.text) as { server: number; child: number };
if (mode === "handle-after") addHandlers();
console.log(JSON.stringify({ wrapper: pool.status()[0]?.pid, server, child }));
if (mode === "exit") process.exit(0);
if (mode === "close") await pool.close();
