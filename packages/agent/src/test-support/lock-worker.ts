// Worker thread for the lock tests: opens <dir>/<id>.jsonl (workerData { dir, id, baseUrl }) against
// a testkit server and posts { opened, notices } or { error, code, message }. Then it takes messages:
// "prompt <text>" runs a prompt and posts { prompted }, "close" closes the session and posts
// { closed }, "hang" posts { hanging } and blocks the thread for good, the session still open (so
// `terminate()` ends it as a thread that stopped without closing).
import { parentPort, workerData } from "node:worker_threads";
import { AgentError, createSession, type Session } from "../index.js";

const { dir, id, baseUrl } = workerData as { dir: string; id: string; baseUrl: string };
const port = parentPort as NonNullable<typeof parentPort>;

let session: Session | undefined;
try {
  session = await createSession({
    config: { baseUrl, model: "sim", maxRetries: 0 },
    sessionDir: dir,
    sessionId: id,
  });
  const notices = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
  port.postMessage({ opened: true, notices });
} catch (error) {
  port.postMessage({
    error: true,
    code: AgentError.isInstance(error) ? error.code : undefined,
    message: error instanceof Error ? error.message : String(error),
  });
}

port.on("message", async (line: string) => {
  if (!session) return;
  if (line.startsWith("prompt ")) {
    const result = await session.prompt(line.slice("prompt ".length));
    port.postMessage({ prompted: result.status });
  } else if (line === "close") {
    await session.close();
    port.postMessage({ closed: true });
  } else if (line === "hang") {
    port.postMessage({ hanging: true });
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  }
});
