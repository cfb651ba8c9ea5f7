// A host process for the close tests: starts a pool with one server behind a wrapper that does not
// exit on stdin EOF, calls it once, prints the pids of the wrapper, the server and the server's
// child as JSON, then, by its mode:
// - `close`: closes the pool and lets the event loop run out;
// - `exit`: exits without closing it;
// - `wait`: waits (the pool keeps it alive) for a signal it does not handle;
// - `handle`: handles SIGINT, SIGTERM and SIGHUP itself and prints `handled <signal>` for each;
// - `signal-exit-before` / `signal-exit-after`: listens for SIGINT, SIGTERM and SIGHUP as the
//   signal-exit package does (used by ink, execa, write-file-atomic): its listener raises the
//   signal again, to die of it, only when it is the process's sole listener for it; added before
//   the pool starts its server or after.
import { fileURLToPath } from "node:url";
import { createMcpPool } from "../src/index.js";

const mode = process.argv[2] ?? "";
const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
function signalExitStyle(): void {
  for (const signal of SIGNALS) {
    const listener = () => {
      if (process.listeners(signal).length !== 1) return;
      for (const other of SIGNALS) process.removeAllListeners(other);
      process.kill(process.pid, signal);
    };
    process.on(signal, listener);
  }
}
if (mode === "handle")
  for (const signal of SIGNALS) process.on(signal, () => console.log(`handled ${signal}`));
if (mode === "signal-exit-before") signalExitStyle();

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
if (mode === "signal-exit-after") signalExitStyle();
console.log(JSON.stringify({ wrapper: pool.status()[0]?.pid, server, child }));
if (mode === "exit") process.exit(0);
if (mode === "close") await pool.close();
