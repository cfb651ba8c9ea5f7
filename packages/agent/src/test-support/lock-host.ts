// Child process for the lock tests: opens <dir>/<id>.jsonl against a testkit server and prints one
// JSON line per event: { opened, pid, notices } or { error, code, message } (then exits 0). Then it
// takes commands on stdin, one a line: "prompt <text>" runs a prompt and prints its status,
// "close" closes the session and prints { closed }, "exit" ends the process without closing.
import { createInterface } from "node:readline";
import { AgentError, createSession, type Session } from "../index.js";

const [dir, id, baseUrl] = process.argv.slice(2) as [string, string, string];
const say = (value: object) => process.stdout.write(`${JSON.stringify(value)}\n`);

let session: Session;
try {
  session = await createSession({
    config: { baseUrl, model: "sim", maxRetries: 0 },
    sessionDir: dir,
    sessionId: id,
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

for await (const line of createInterface({ input: process.stdin })) {
  if (line.startsWith("prompt ")) {
    const result = await session.prompt(line.slice("prompt ".length));
    say({ prompted: result.status });
  } else if (line === "close") {
    await session.close();
    say({ closed: true });
  } else if (line === "exit") {
    process.exit(0);
  }
}
