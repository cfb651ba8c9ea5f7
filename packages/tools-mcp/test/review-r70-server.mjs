#!/usr/bin/env node
// An MCP server written by hand over stdio (no SDK) for the r70 review's tests.
//
//   `keys`   takes parameters whose names hold half a surrogate pair alone ("q\ud83d", "q\ud83e",
//            and "x\udc00" inside "opts"), and answers with the names it was given, as JSON text
//            (JSON.stringify writes a lone half as an escape, so the test reads the exact names).
//   `nap`    stops reading its stdin for `ms` (default 1500), then reads on: a server busy with
//            something else, whose pipe fills while the client writes on. Read-only, so the pool
//            sends calls to it together.
//   `echo`   answers with the length of its `text`.
//   `daemon` starts a helper the way a daemon does (`sh -c 'sleep 600 &'`: its parent exits at
//            once, and init takes it over) and answers with the helper's pid.
//   DAEMON_FILE=<file>  does the same as it starts, before it answers anything, writing the pid there.
import { execFileSync } from "node:child_process";
import { appendFileSync } from "node:fs";
import { send, serveLines, text } from "./line-server.mjs";

/** Starts `sleep 600` through a shell that exits at once (a double fork); returns its pid. */
const daemon = () =>
  Number(execFileSync("sh", ["-c", "sleep 600 >/dev/null 2>&1 & echo $!"], { encoding: "utf8" }).trim());
if (process.env.DAEMON_FILE) appendFileSync(process.env.DAEMON_FILE, `${daemon()}\n`);
// Alive after stdin ends, so a close has to signal it; gone by itself after two minutes.
setInterval(() => {}, 1_000);
setTimeout(() => process.exit(0), 120_000).unref();

const TOOLS = [
  {
    name: "keys",
    description: "Answers with the argument names it was given.",
    inputSchema: {
      type: "object",
      properties: {
        "q\ud83d": { type: "string", description: "The query" },
        "q\ud83e": { type: "string" },
        opts: { type: "object", properties: { "x\udc00": { type: "integer" } } },
      },
      required: ["q\ud83d"],
    },
  },
  {
    name: "nap",
    inputSchema: { type: "object", properties: { ms: { type: "number" } } },
    annotations: { readOnlyHint: true },
  },
  { name: "daemon", inputSchema: { type: "object" } },
  {
    name: "echo",
    inputSchema: { type: "object", properties: { text: { type: "string" } } },
    annotations: { readOnlyHint: true },
  },
];

/** The names of an object's keys, and of its objects' keys below them. */
function names(value) {
  if (typeof value !== "object" || value === null) return value === undefined ? null : typeof value;
  const out = {};
  for (const [key, inner] of Object.entries(value)) out[key] = names(inner);
  return out;
}

serveLines("review70", TOOLS, (id, name, args, lines) => {
  if (name === "keys") send({ jsonrpc: "2.0", id, result: text(JSON.stringify(names(args))) });
  else if (name === "nap") {
    // Nothing more is read (the pipe from the client fills) until the nap is over.
    lines.pause();
    process.stdin.pause();
    setTimeout(
      () => {
        send({ jsonrpc: "2.0", id, result: text("rested") });
        lines.resume();
        process.stdin.resume();
      },
      Number(args.ms ?? 1500),
    );
  } else if (name === "daemon") send({ jsonrpc: "2.0", id, result: text(String(daemon())) });
  else if (name === "echo")
    send({ jsonrpc: "2.0", id, result: text(String(String(args.text ?? "").length)) });
  else send({ jsonrpc: "2.0", id, error: { code: -32602, message: `no tool ${name}` } });
});
