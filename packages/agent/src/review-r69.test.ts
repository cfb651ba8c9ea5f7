import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { listSessions } from "./test-exports.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("listSessions while a session is deleted", () => {
  // The session file is a FIFO another process writes twice (once for the header look, once for
  // the full read) and unlinks before its second write ends: listSessions has read the session,
  // and the file is gone when it asks for its modification time — a delete between the two, made exact.
  it.skipIf(process.platform === "win32")(
    "leaves the deleted session out instead of throwing ENOENT",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "r69-list-"));
      dirs.push(dir);
      const fifo = join(dir, "gone.jsonl");
      execFileSync("mkfifo", [fifo]);
      const header = `${JSON.stringify({ type: "session", version: 1, id: "gone", createdAt: new Date().toISOString() })}\n`;
      const script = `const fs = require("fs"); const p = ${JSON.stringify(fifo)}; const h = ${JSON.stringify(header)};
let fd = fs.openSync(p, "w"); fs.writeSync(fd, h); fs.closeSync(fd);
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
