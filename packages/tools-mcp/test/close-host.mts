// A host process for the close tests: starts a pool with one server behind a wrapper that does not
// exit on stdin EOF, calls it once, prints the pids of the wrapper, the server and the server's
// child as JSON, then, by its mode:
// - `close`: closes the pool and lets the event loop run out;
// - `exit`: exits without closing it;
// - `wrapper-dies`: SIGKILLs the wrapper, waits for the server under it to die of the SIGTERM the
//   pool sends what the wrapper left (its child ignores SIGTERM), and exits without closing the
//   pool while that child still waits for its SIGKILL;
// - `wait`: waits (the pool keeps it alive) for a signal it does not handle;
// - `handle`: handles SIGINT, SIGTERM and SIGHUP itself and prints `handled <signal>` for each;
// - `signal-exit-before` / `signal-exit-after`: listens for SIGINT, SIGTERM and SIGHUP as the
//   signal-exit package does (used by ink, execa, write-file-atomic): its listener raises the
//   signal again, to die of it, only when it is the process's sole listener for it; added before
//   the pool starts its server or after.
import { readFileSync } from "node:fs";
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
if (mode === "wrapper-dies") {
  const gone = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/stat`, "latin1").split(") ")[1]?.startsWith("Z") ?? true;
    } catch {
      return true;
    }
  };
  // Once the snapshot taken on the server's first answer is in.
  await new Promise((resolve) => setTimeout(resolve, 200));
  process.kill(pool.status()[0]?.pid as number, "SIGKILL");
  while (!gone(server)) await new Promise((resolve) => setTimeout(resolve, 10));
  // The server's pipes close with it; its child has most of its 0.5 s SIGTERM grace left.
  await new Promise((resolve) => setTimeout(resolve, 100));
  process.exit(0);
}
if (mode === "close") await pool.close();
