// Host processes for the closing tests (src/stdio-close.test.ts, src/reaper.test.ts): each the
// leader of a process group of its own, as a terminal's job is, killed with its group after each test.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { NODE } from "./support.js";

const HOST = fileURLToPath(new URL("./close-host.mts", import.meta.url));
const hosts: ChildProcess[] = [];

/** SIGKILLs every host started since the last call, with its process group (its servers share it). */
export function killHosts(): void {
  for (const host of hosts.splice(0)) {
    try {
      process.kill(-(host.pid as number), "SIGKILL");
    } catch {
      // Gone with its group already.
    }
  }
}

export type Pids = { wrapper: number; server: number; child: number };
/**
 * Starts a host (the leader of a process group of its own, as a terminal's job is) in `mode`:
 * test/close-host.mts on the source by default, or `script` (run with plain node) given.
 */
export function startHost(
  mode: string,
  script?: { path: string; args?: string[] },
): { host: ChildProcess; pids: Promise<Pids>; output: () => string } {
  const argv = script ? [script.path, mode, ...(script.args ?? [])] : ["--import", "tsx", HOST, mode];
  const host = spawn(NODE, argv, {
    stdio: [script ? "pipe" : "ignore", "pipe", "inherit"],
    detached: true,
  });
  hosts.push(host);
  let out = "";
  const pids = new Promise<Pids>((resolve, reject) => {
    host.stdout?.on("data", (chunk) => {
      out += String(chunk);
      const line = out.split("\n").find((l) => l.startsWith("{"));
      if (line) resolve(JSON.parse(line) as Pids);
    });
    host.once("exit", () => reject(new Error(`host (${mode}) exited before its pids: ${out}`)));
  });
  return { host, pids, output: () => out };
}
export const exited = (host: ChildProcess) =>
  new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (host.exitCode !== null || host.signalCode !== null)
      resolve({ code: host.exitCode, signal: host.signalCode });
    else host.once("exit", (code, signal) => resolve({ code, signal }));
  });
