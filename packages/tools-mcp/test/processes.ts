// Processes as Linux's /proc shows them, for the close tests and bench: a process's descendants,
// and whether a pid still runs.
import { readdirSync, readFileSync } from "node:fs";

/** State, parent pid and process group of `pid`, or undefined once it is gone. */
function stat(pid: number): { state: string; ppid: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const [state = "", ppid] = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state, ppid: Number(ppid) };
  } catch {
    return undefined;
  }
}

/** Every descendant of `pid` (children, their children, …) running now. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const ppid = stat(Number(entry))?.ppid;
    if (ppid !== undefined) children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const visit = (parent: number): void => {
    for (const child of children.get(parent) ?? []) {
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/**
 * Whether `pid` still runs: false once there is no such process (`process.kill(pid, 0)` throws
 * ESRCH) or it is a zombie, which runs nothing and only waits for its parent or init to reap it.
 */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
  }
  return stat(pid)?.state !== "Z";
}

/** The pids of `pids` still running after waiting up to `ms` for them to end. */
export async function stillRunning(pids: readonly number[], ms = 5_000): Promise<number[]> {
  for (let waited = 0; waited < ms && pids.some(running); waited += 50)
    await new Promise((resolve) => setTimeout(resolve, 50));
  return pids.filter(running);
}

/** The command line of `pid`, its arguments joined by spaces; "" once it is gone. */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    return "";
  }
}

/** The process group and session of `pid`, or undefined once it is gone. */
export function groupOf(pid: number): { group: number; session: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const [, , group, session] = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { group: Number(group), session: Number(session) };
  } catch {
    return undefined;
  }
}

/** The start time of `pid` as Linux's /proc/<pid>/stat gives it (clock ticks after boot), or "". */
export function startTime(pid: number): string {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ")[19] ?? "";
  } catch {
    return "";
  }
}

/**
 * The pids (one a line) a process has written to `file`, once at least one is there: polled until
 * `ms` have passed ([] then).
 */
export async function pidsWritten(file: string, ms = 10_000): Promise<number[]> {
  for (const deadline = Date.now() + ms; ; ) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      // Not written yet.
    }
    const pids = text
      .split("\n")
      .filter((line) => /^\d+$/.test(line))
      .map(Number);
    if (pids.length > 0 || Date.now() >= deadline) return pids;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
