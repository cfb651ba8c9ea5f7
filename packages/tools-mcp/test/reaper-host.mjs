// A host process for the reaper tests, run with plain node on the built package (dist/, where the
// reaper's script is): starts a pool with one server behind a wrapper that does not exit on stdin
// EOF (test/lingering-server.mjs), calls it once, and prints as JSON the pids of the wrapper, the
// server, the server's child, and a bystander: a process of its own, outside the pool, that also
// ignores stdin EOF (the reaper must leave it alone). Then, by its mode:
// - `wait`: waits (its servers keep it alive) to be killed;
// - `close`: waits for a line on its stdin, closes the pool, and lets its event loop run out;
// - `exit`: exits without closing the pool.
// `--no-reaper` creates the pool with `reaper: false`; `--everything` starts server-everything behind
// the wrapper instead, runs its research task (whose timers outlive stdin EOF), and prints only the
// wrapper's and the bystander's pids. `--term-child <file>` and `--eof-child <file>` are passed on
// to the lingering server (which then starts a child on SIGTERM, or on stdin EOF before it exits,
// and writes its pid to the file). `--daemon-file <file>` starts test/review-r70-server.mjs instead,
// which starts a helper the way a daemon does (init takes it over at once) and writes its pid to
// the file, and prints only the server's and the bystander's pids.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createMcpPool } from "../dist/index.js";

const mode = process.argv[2] ?? "wait";
const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const everything = process.argv.includes("--everything");
const passed = (name) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? [] : [name, process.argv[at + 1]];
};
const termChild = [...passed("--term-child"), ...passed("--eof-child")];
const daemonFile = passed("--daemon-file")[1];
const server = daemonFile
  ? {
      name: "r70",
      command: process.execPath,
      args: [here("./review-r70-server.mjs")],
      env: { DAEMON_FILE: daemonFile },
    }
  : everything
    ? {
        name: "everything",
        command: "sh",
        args: [
          here("./wrapper.sh"),
          process.execPath,
          here("../node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        ],
      }
    : {
        name: "lingering",
        command: "sh",
        args: [here("./wrapper.sh"), process.execPath, here("./lingering-server.mjs"), ...termChild],
      };
const pool = createMcpPool([server], process.argv.includes("--no-reaper") ? { reaper: false } : {});
const bystander = spawn(process.execPath, ["-e", "setTimeout(() => {}, 120_000)"], { stdio: "ignore" });
bystander.unref();
if (daemonFile) {
  await pool.tools();
  console.log(JSON.stringify({ server: pool.status()[0]?.pid, bystander: bystander.pid }));
} else if (everything) {
  // Its research task leaves timers that keep it running after its stdin ends.
  await pool.callTool("everything__simulate-research-query", { topic: "tides" });
  console.log(JSON.stringify({ wrapper: pool.status()[0]?.pid, bystander: bystander.pid }));
} else {
  const output = await pool.callTool("lingering__pids", {});
  const { server, child } = JSON.parse(output.text);
  console.log(JSON.stringify({ wrapper: pool.status()[0]?.pid, server, child, bystander: bystander.pid }));
}
if (mode === "exit") process.exit(0);
if (mode === "close") {
  process.stdin.once("data", async () => {
    process.stdin.pause();
    await pool.close();
    console.log("closed");
  });
}
