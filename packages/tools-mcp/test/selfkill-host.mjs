// A host for the reaper tests, run with plain node on the built package (dist/): creates a pool with
// one stdio server that ignores stdin EOF and SIGTERM, calls `pool.connect()`, and SIGKILLs itself
// in the same synchronous block, before any event-loop turn: before the server's `spawn` event, the
// SDK's handshake, or any print. The server (sh, and a `sleep` it runs in the background) writes
// "<sh pid> <sleep pid>" to the file given as the argument after the mode, so the test can find it.
import { createMcpPool } from "../dist/index.js";

const [mode, pidFile] = process.argv.slice(2);
if (!pidFile) throw new Error("usage: selfkill-host.mjs <selfkill|selfkill-warm> <pid file>");
if (mode === "selfkill-warm") {
  // A host that has connected a server before: the MCP SDK is loaded (the pool loads it on a first
  // connect), and the next connect spawns its server within the caller's synchronous block.
  const fixture = new URL("./fixture-server.mjs", import.meta.url).pathname;
  const warm = createMcpPool([{ name: "quick", command: process.execPath, args: [fixture] }]);
  await warm.connect();
  await warm.close();
}
// One write by a builtin (no other process to start first): the file is empty or whole.
const script = `trap '' TERM HUP; sleep 600 & echo "$$ $!" > "$0"; wait`;
const pool = createMcpPool([{ name: "stubborn", command: "sh", args: ["-c", script, pidFile] }]);
void pool.connect();
process.kill(process.pid, "SIGKILL");
