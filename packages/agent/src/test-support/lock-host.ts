// Child process for the lock tests: opens <dir>/<id>.jsonl against a testkit server and prints one
// JSON line per event: { opened, pid, notices } or { error, code, message } (then exits 0). Then it
// takes commands on stdin, one a line: "prompt <text>" runs a prompt and prints its status (or
// { refused: <AgentError code> } when the session refuses it),
// "close" closes the session and prints { closed }, "exit" ends the process without closing,
// "detach" stops reading stdin and prints { detached } (from then on only the session's own timers
// could keep the process alive), "notices" prints { notices } (the timeline's notices now). With
// LOCK_HOST_LEASE_MS set, the session is opened with that `lockLeaseMs`.
//
// With LOCK_HOST_PAUSE_DIR set (the lock race test), the host stops at two points of taking the
// lock, each time printing { paused: "<point>" } and waiting until the file <that dir>/go-<point>
// exists: "read", right after it first reads <file>.lock; "moved", right after it renames
// <file>.lock away. It does so by wrapping node:fs, not through any hook in the package: the same
// steps can be replayed against any version of the lock code.
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { AgentError, createSession, type Session } from "../index.js";

const [dir, id, baseUrl] = process.argv.slice(2) as [string, string, string];
const say = (value: object) => process.stdout.write(`${JSON.stringify(value)}\n`);

const pauseDir = process.env.LOCK_HOST_PAUSE_DIR;
if (pauseDir) {
  const lock = join(dir, `${id}.jsonl.lock`);
  const pause = (point: string) => {
    fs.writeSync(1, `${JSON.stringify({ paused: point })}\n`);
    const cell = new Int32Array(new SharedArrayBuffer(4));
    while (!fs.existsSync(join(pauseDir, `go-${point}`))) Atomics.wait(cell, 0, 0, 10);
  };
  const { readFileSync, renameSync } = fs;
  let read = false;
  fs.readFileSync = ((path: fs.PathOrFileDescriptor, options?: unknown) => {
    const out = readFileSync(path, options as BufferEncoding);
    if (path === lock && !read) {
      read = true;
      pause("read");
    }
    return out;
  }) as typeof fs.readFileSync;
  fs.renameSync = (from: fs.PathLike, to: fs.PathLike) => {
    renameSync(from, to);
    if (from === lock) pause("moved");
  };
  syncBuiltinESMExports();
}

let session: Session;
try {
  session = await createSession({
    config: { baseUrl, model: "sim", maxRetries: 0 },
    sessionDir: dir,
    sessionId: id,
    ...(process.env.LOCK_HOST_LEASE_MS ? { lockLeaseMs: Number(process.env.LOCK_HOST_LEASE_MS) } : {}),
  });
} catch (error) {
  say({
    error: true,
    code: AgentError.isInstance(error) ? error.code : undefined,
    message: error instanceof Error ? error.message : String(error),
  });
  process.exit(0);
}
const notices = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
say({ opened: true, pid: process.pid, notices });

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line.startsWith("prompt ")) {
    try {
      const result = await session.prompt(line.slice("prompt ".length));
      say({ prompted: result.status });
    } catch (error) {
      say({ refused: AgentError.isInstance(error) ? error.code : String(error) });
    }
  } else if (line === "close") {
    await session.close();
    say({ closed: true });
  } else if (line === "exit") {
    process.exit(0);
  } else if (line === "notices") {
    say({ notices: session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : [])) });
  } else if (line === "detach") {
    lines.close();
    process.stdin.destroy();
    say({ detached: true });
  }
}
