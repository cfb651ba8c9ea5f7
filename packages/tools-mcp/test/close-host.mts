// A host process for the close tests: starts a pool with one server behind a wrapper that does not
// exit on stdin EOF, calls it once, prints the pids of the wrapper, the server and the server's
// child as JSON, then either closes the pool and lets the event loop run out (`close`) or exits
// without closing it (`exit`).
import { fileURLToPath } from "node:url";
import { createMcpPool } from "../src/index.js";

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
console.log(JSON.stringify({ wrapper: pool.status()[0]?.pid, server, child }));
if (process.argv[2] === "exit") process.exit(0);
await pool.close();
