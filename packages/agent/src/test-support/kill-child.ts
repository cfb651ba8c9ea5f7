// Child process for the crash test: runs a long session writing to <dir>/<id>.jsonl until killed.
import { startServer } from "@loopwright/testkit";
import { createSession } from "../index.js";
import { LONG_RUN_STEPS, longRunReplies, NOTE_TOOL } from "./long-run.js";

const [dir, id] = process.argv.slice(2);
const server = await startServer({ replies: longRunReplies(2) });
const session = await createSession({
  config: { baseUrl: server.baseUrl, model: "sim" },
  tools: [NOTE_TOOL],
  sessionDir: dir,
  sessionId: id,
  maxTurns: LONG_RUN_STEPS + 5,
});
process.stdout.write("ready\n");
await session.prompt("Take notes.");
await server.close();
process.stdout.write("finished\n");
