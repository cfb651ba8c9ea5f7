// Child process for the failed-rewrite test (r70): a rewrite's temporary file fails part way, as on
// a disk that fills up mid-write (the process's file-size limit, RLIMIT_FSIZE, set with prlimit: the
// write that crosses it writes what fits, then fails with EFBIG). Session `s`'s save() rewrites the
// session file; opening session `d` rewrites its over-full `.dropped` file. Prints how each ended.
import { execFileSync } from "node:child_process";
import { createSession } from "../index.js";

const [dir, limit] = process.argv.slice(2) as [string, string];
const config = { baseUrl: "http://127.0.0.1:9/v1", model: "sim" };
const outcome = (error: unknown) => `${(error as { code?: string }).code}: ${(error as Error).message}`;
const session = await createSession({ config, sessionDir: dir, sessionId: "s" });
// The disk fills up once s is open.
execFileSync("prlimit", ["--pid", String(process.pid), `--fsize=${limit}:unlimited`]);
const saved = await session.save().then(() => "saved", outcome);
await session.close();
const opened = await createSession({ config, sessionDir: dir, sessionId: "d" }).then(async (d) => {
  await d.close();
  return "opened";
}, outcome);
process.stdout.write(`${JSON.stringify({ saved, opened })}\n`);
