// Child process for the failed-append test (r68): the session file's appends fail part way, as on
// a disk that fills up mid-write (here the process's file-size limit, RLIMIT_FSIZE, set with
// prlimit: the write that crosses it writes what fits, then fails with EFBIG), and succeed again
// once there is room. Prints the prompt's status and the timeline's errors as JSON.
import { execFileSync } from "node:child_process";
import { statSync } from "node:fs";
import { join } from "node:path";
import { createSession } from "../index.js";

const [dir, baseUrl] = process.argv.slice(2) as [string, string];
const fileLimit = (bytes: string) =>
  execFileSync("prlimit", ["--pid", String(process.pid), `--fsize=${bytes}:unlimited`]);
const session = await createSession({
  config: { baseUrl, model: "sim" },
  sessionDir: dir,
  sessionId: "full",
});
const errors: string[] = [];
session.onEvent((event) => {
  if (event.type !== "error") return;
  errors.push(event.text);
  // Room again (the host freed some space).
  fileLimit("unlimited");
});
// Room for the prompt's line and the head of the answer's.
fileLimit(String(statSync(join(dir, "full.jsonl")).size + 200));
const result = await session.prompt("Tell me the whole story.");
await session.close();
process.stdout.write(`${JSON.stringify({ status: result.status, errors })}\n`);
