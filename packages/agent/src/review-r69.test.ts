import { execFileSync, spawn } from "node:child_process";
import { utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AgentError, createSession, listSessions } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const listDir = useTempDirs("r69-list");
const skewDir = useTempDirs("r69-skew");

describe("listSessions while a session is deleted", () => {
  // The session file is a FIFO another process writes twice (once for the header look, once for
  // the full read) and unlinks before its second write ends: listSessions has read the session,
  // and the file is gone when it asks for its modification time — a delete between the two, made exact.
  it.skipIf(process.platform === "win32")(
    "leaves the deleted session out instead of throwing ENOENT",
    async () => {
      const dir = listDir();
      const fifo = join(dir, "gone.jsonl");
      execFileSync("mkfifo", [fifo]);
      const header = `${JSON.stringify({ type: "session", version: 1, id: "gone", createdAt: new Date().toISOString() })}\n`;
      // Before its second open the writer waits until the lister has closed its first read of the
      // FIFO (no descriptor of the lister's process names it any more): opened sooner, the second
      // write could go to the first read as it closed (EPIPE under load, the child exiting 1 —
      // seen once in CI) instead of to the full read. The lister's second open waits for this
      // writer, so it cannot be missed. Where /proc cannot be read, a short wait stands in.
      const script = `const fs = require("fs"); const p = ${JSON.stringify(fifo)}; const h = ${JSON.stringify(header)};
const real = fs.realpathSync(p); const fds = "/proc/" + process.ppid + "/fd";
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const listerHolds = () => { let names; try { names = fs.readdirSync(fds); } catch { pause(100); return false; }
  return names.some((n) => { try { return fs.readlinkSync(fds + "/" + n) === real; } catch { return false; } }); };
let fd = fs.openSync(p, "w"); fs.writeSync(fd, h); fs.closeSync(fd);
while (listerHolds()) pause(2);
fd = fs.openSync(p, "w"); fs.writeSync(fd, h); fs.unlinkSync(p); fs.closeSync(fd);`;
      const child = spawn(process.execPath, ["-e", script], { stdio: "ignore" });
      const exited = new Promise((resolve) => child.on("exit", resolve));
      let listed: unknown;
      try {
        listed = listSessions(dir);
      } catch (error) {
        listed = error;
      }
      expect(await exited).toBe(0);
      expect(listed).toEqual([]);
    },
  );
});

describe("a lock of another host whose modification time is ahead of this host's clock", () => {
  it("is refused with the skew named, not as renewed 0.0 s ago", async () => {
    const dir = skewDir();
    const lock = join(dir, "s.jsonl.lock");
    const lease = {
      pid: 4242,
      host: "r69-other-host",
      token: "t",
      since: "2026-01-01T00:00:00.000Z",
      leaseMs: 30_000,
    };
    writeFileSync(lock, JSON.stringify(lease));
    const ahead = new Date(Date.now() + 3_600_000);
    utimesSync(lock, ahead, ahead);
    const refused = await createSession({
      config: { baseUrl: "http://127.0.0.1:9/v1", model: "sim" },
      sessionDir: dir,
      sessionId: "s",
    }).then(
      async (session) => {
        await session.close();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(AgentError);
    expect((refused as AgentError).code).toBe("locked");
    const message = (refused as AgentError).message;
    expect(message).not.toMatch(/renewed 0\.0 s ago/);
    expect(message).toMatch(
      /Its lease was last renewed at a time 3(599|600) s ahead of this host's clock \(the holder's clock is ahead of this one's, or the time was set by hand\)/,
    );
  });
});
