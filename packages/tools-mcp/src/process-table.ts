// Processes as the system lists them, for ending a stdio server's process tree: read from Linux's
// /proc (a walk down its children files) or from `ps` elsewhere, matched by pid and start time.
// Used by the stdio transport in the host and by the reaper process (reaper-process.ts), so it
// imports nothing from the MCP SDK.
import { execFile, execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";

/**
 * How long a closed server has after its stdin ends to exit on its own (with what it started),
 * then how long what still runs of its process tree has after SIGTERM before SIGKILL, then how
 * long the host waits for the killed processes to go and their pipes to close before it lets go
 * of the pipes. A server that exits on stdin EOF
 * closes within the first; one that does not is gone, and the close over, within their sum, 1.25 s.
 */
export const CLOSE_TIMINGS = { eofGraceMs: 500, termGraceMs: 500, killWaitMs: 250 } as const;

/** How often a close (the transport's, or the reaper's) looks whether the processes it is ending have ended. */
export const POLL_MS = 20;

/** Polls `done` every `POLL_MS` until it holds (true) or `ms` have passed (false). */
export async function until(done: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!done()) {
    const left = deadline - Date.now();
    if (left <= 0) return false;
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, left)));
  }
  return true;
}

/**
 * One process as the system lists it: its parent, whether it is a zombie (which runs nothing and
 * only waits to be reaped), and when it started, so that a pid the system has since given to a
 * new process is not taken for the one we saw.
 */
export interface ProcessEntry {
  pid: number;
  ppid: number;
  zombie: boolean;
  started: string;
}

/** A process known only by its pid (no listing could be read): no parent, no start time. */
export function unlisted(pid: number): ProcessEntry {
  return { pid, ppid: 0, zombie: false, started: "" };
}

/** Reads Linux's /proc/<pid>/stat text into an entry. */
function parseStat(pid: number | string, stat: string): ProcessEntry {
  // After the command's closing parenthesis: state (field 3), ppid (4), …, start time (22).
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { pid: Number(pid), ppid: Number(fields[1]), zombie: fields[0] === "Z", started: fields[19] ?? "" };
}

/** A process's entry from Linux's /proc/<pid>/stat, or undefined once it is gone. */
export function procEntry(pid: number | string): ProcessEntry | undefined {
  try {
    return parseStat(pid, readFileSync(`/proc/${pid}/stat`, "latin1"));
  } catch {
    return undefined;
  }
}

/** {@link procEntry} without blocking the event loop. */
async function procEntryAsync(pid: number | string): Promise<ProcessEntry | undefined> {
  try {
    return parseStat(pid, await readFile(`/proc/${pid}/stat`, "latin1"));
  } catch {
    return undefined;
  }
}

/** `ps` everywhere but Linux: every process's pid, parent, state and start time. */
const PS_ARGS = ["-A", "-o", "pid=,ppid=,stat=,lstart="];
/** Room for `ps` on a host with very many processes (the default, 1 MiB, is about 20,000). */
const PS_OPTIONS = { encoding: "latin1", maxBuffer: 64 * 1024 * 1024 } as const;
/** Reads `ps -A -o pid=,ppid=,stat=,lstart=` output; lines it cannot read are skipped. */
export function parsePs(text: string): ProcessEntry[] {
  const entries: ProcessEntry[] = [];
  for (const line of text.split("\n")) {
    const match = /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*\S)\s*$/.exec(line);
    if (!match) continue;
    const [, pid, ppid, state, started] = match as unknown as [string, string, string, string, string];
    entries.push({ pid: Number(pid), ppid: Number(ppid), zombie: state.startsWith("Z"), started });
  }
  return entries;
}

/** Every process on the system, now: /proc on Linux, `ps` elsewhere (synchronously, for `exit`). */
export function listSync(linux = process.platform === "linux"): ProcessEntry[] {
  if (!linux) return parsePs(execFileSync("ps", PS_ARGS, PS_OPTIONS));
  const entries: ProcessEntry[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const entry = procEntry(name);
    if (entry) entries.push(entry);
  }
  return entries;
}

/**
 * The variable a stdio server is started with (`LOOPWRIGHT_MCP_TREE=<a token of that start>`):
 * inherited by what it starts, at any depth, it finds a process whose parent died before any read
 * saw it (a daemon's double fork, `sh -c 'helper &'`), which no parent link leads to any more.
 */
export const TREE_MARK = "LOOPWRIGHT_MCP_TREE";

/**
 * How many /proc files {@link markedProcesses} has open at once: all of them together (one per
 * process, tens of thousands on a busy host) ran out of file descriptors (EMFILE), and each file
 * that could not be opened was skipped as unreadable, its process not found.
 */
export const ENVIRON_BATCH = 64;

/**
 * Linux: the processes running now that were started with `TREE_MARK=token` in their
 * environment (/proc/<pid>/environ, the environment they were started with), this process left
 * out. A process of another user, whose environment cannot be read, is not found, nor one started
 * with an environment of its own that drops the variable. Reads every process's environ file once,
 * {@link ENVIRON_BATCH} at a time.
 */
export async function markedProcesses(token: string): Promise<ProcessEntry[]> {
  const mark = `${TREE_MARK}=${token}`;
  const names = (await readdir("/proc")).filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid);
  const found: ProcessEntry[] = [];
  for (let at = 0; at < names.length; at += ENVIRON_BATCH) {
    const batch = await Promise.all(
      names.slice(at, at + ENVIRON_BATCH).map(async (name) => {
        let environ: string;
        try {
          environ = await readFile(`/proc/${name}/environ`, "latin1");
        } catch {
          return undefined;
        }
        if (!hasMark(environ, mark)) return undefined;
        const entry = await procEntryAsync(name);
        return entry && !entry.zombie ? entry : undefined;
      }),
    );
    for (const entry of batch) if (entry) found.push(entry);
  }
  return found;
}

/**
 * How long the host's `exit` hook spends at most reading environ files for {@link markedProcessesSync}
 * (it blocks the exiting process): about 20,000 files on a typical host, and only those of
 * processes started since the oldest server are read.
 */
export const EXIT_SCAN_MS = 250;

/**
 * {@link markedProcesses} synchronously, for the host's `exit` (only synchronous work runs there),
 * for several tokens in one pass over `table` (every process now, from {@link listSync}): by token,
 * the processes of `table` started with `TREE_MARK=token`, this process left out. Only processes
 * started at or after `since` (a /proc start time, clock ticks after boot) are read, newest first,
 * and the reading stops after {@link EXIT_SCAN_MS}.
 */
export function markedProcessesSync(
  tokens: ReadonlySet<string>,
  table: readonly ProcessEntry[],
  since: number,
): Map<string, ProcessEntry[]> {
  const found = new Map<string, ProcessEntry[]>();
  if (tokens.size === 0) return found;
  const prefix = `${TREE_MARK}=`;
  const deadline = Date.now() + EXIT_SCAN_MS;
  const candidates = table
    .filter((entry) => !entry.zombie && entry.pid !== process.pid && Number(entry.started) >= since)
    .sort((a, b) => Number(b.started) - Number(a.started));
  for (const entry of candidates) {
    if (Date.now() > deadline) break;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${entry.pid}/environ`, "latin1");
    } catch {
      continue;
    }
    if (!environ.includes(prefix)) continue;
    for (const variable of environ.split("\0")) {
      if (!variable.startsWith(prefix)) continue;
      const token = variable.slice(prefix.length);
      if (!tokens.has(token)) continue;
      const list = found.get(token);
      if (list) list.push(entry);
      else found.set(token, [entry]);
    }
  }
  return found;
}

/** Whether an environ file's text (NUL-separated) holds `mark` as one of its variables. */
function hasMark(environ: string, mark: string): boolean {
  return environ.includes(mark) && environ.split("\0").includes(mark);
}

/** Whether this Linux kernel lists each task's children in /proc/<pid>/task/<tid>/children. */
let childrenFiles: boolean | undefined;
export function hasChildrenFiles(): boolean {
  childrenFiles ??= existsSync(`/proc/self/task/${process.pid}/children`);
  return childrenFiles;
}

/** The pids a /proc children file lists (space-separated). */
function pidsIn(text: string): number[] {
  return text
    .split(" ")
    .filter((word) => /^\d+$/.test(word))
    .map(Number);
}

/** The pids of a process's children, from each of its threads' /proc children file. */
async function childrenOf(pid: number): Promise<number[]> {
  let tasks: string[];
  try {
    tasks = await readdir(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const lists = await Promise.all(
    tasks.map((tid) => readFile(`/proc/${pid}/task/${tid}/children`, "latin1").catch(() => "")),
  );
  return lists.flatMap(pidsIn);
}

/** The pids of a process's children, read synchronously (see {@link childrenOf}). */
function childrenOfSync(pid: number): number[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  return tasks.flatMap((tid) => {
    let text = "";
    try {
      text = readFileSync(`/proc/${pid}/task/${tid}/children`, "latin1");
    } catch {
      // The thread has ended.
    }
    return pidsIn(text);
  });
}

/**
 * Linux with /proc children files only: {@link listTree}'s walk, synchronously. It reads just the
 * tree's own files (a few for a server), and nothing can die between its reads unseen, so a
 * server's answer has its tree noted before the caller can act on the answer.
 */
export function listTreeSync(roots: readonly number[]): ProcessEntry[] {
  const found = new Map<number, ProcessEntry>();
  const stack = [...roots];
  for (let pid = stack.pop(); pid !== undefined; pid = stack.pop()) {
    if (found.has(pid)) continue;
    const entry = procEntry(pid);
    if (!entry) continue;
    found.set(pid, entry);
    stack.push(...childrenOfSync(pid));
  }
  return [...found.values()];
}

/**
 * A table of processes running now that holds at least `roots` and all their descendants, read
 * without blocking the event loop: on Linux by walking down from `roots` through /proc's children
 * files (the whole of /proc only on a kernel without them), elsewhere every process from `ps`.
 */
export async function listTree(
  roots: readonly number[],
  linux = process.platform === "linux",
): Promise<ProcessEntry[]> {
  if (!linux)
    return new Promise((resolve, reject) =>
      execFile("ps", PS_ARGS, PS_OPTIONS, (error, stdout) =>
        error ? reject(error) : resolve(parsePs(stdout)),
      ),
    );
  if (!hasChildrenFiles()) {
    const names = (await readdir("/proc")).filter((name) => /^\d+$/.test(name));
    const entries = await Promise.all(names.map(procEntryAsync));
    return entries.filter((entry) => entry !== undefined);
  }
  const found = new Map<number, ProcessEntry>();
  // The parent each process was found under: its parent link as the walk saw it, kept even if the
  // parent dies (and the process goes to init) before the process's own stat is read.
  const foundUnder = new Map<number, number>();
  let level = [...new Set(roots)];
  while (level.length > 0) {
    const next = await Promise.all(
      level.map(async (pid) => {
        const entry = await procEntryAsync(pid);
        if (!entry) return [];
        found.set(pid, { ...entry, ppid: foundUnder.get(pid) ?? entry.ppid });
        const children = await childrenOf(pid);
        for (const child of children) if (!foundUnder.has(child)) foundUnder.set(child, pid);
        return children;
      }),
    );
    level = [...new Set(next.flat())].filter((pid) => !found.has(pid));
  }
  return [...found.values()];
}

/**
 * `roots` and all their descendants in `table`, by its parent links: a snapshot of a process
 * tree. Snapshot, because the links go when a parent dies (its children are given to init).
 */
export function treeOf(roots: readonly number[], table: readonly ProcessEntry[]): ProcessEntry[] {
  const children = new Map<number, ProcessEntry[]>();
  for (const entry of table) {
    const siblings = children.get(entry.ppid);
    if (siblings) siblings.push(entry);
    else children.set(entry.ppid, [entry]);
  }
  const byPid = new Map(table.map((entry) => [entry.pid, entry]));
  const found = new Map<number, ProcessEntry>();
  const visit = (entry: ProcessEntry): void => {
    if (found.has(entry.pid)) return;
    found.set(entry.pid, entry);
    for (const child of children.get(entry.pid) ?? []) visit(child);
  };
  for (const root of roots) {
    const entry = byPid.get(root);
    if (entry) visit(entry);
  }
  return [...found.values()];
}

/**
 * Whether the process `entry` saw still runs: not gone, not a zombie, and (on Linux, or against a
 * fresh `table`) the same process, not a later one given its pid. Without a table off Linux, only
 * whether the pid exists: what a close polls with there (what it SIGKILLs is checked against a
 * fresh `ps` listing first).
 */
export function alive(entry: ProcessEntry, table?: ReadonlyMap<number, ProcessEntry>): boolean {
  const now = table ? table.get(entry.pid) : process.platform === "linux" ? procEntry(entry.pid) : undefined;
  if (table || process.platform === "linux")
    return now !== undefined && !now.zombie && now.started === entry.started;
  try {
    process.kill(entry.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** Sends `signal` to each process of `entries` that can still get it. */
export function signalAll(entries: readonly ProcessEntry[], signal: NodeJS.Signals): void {
  for (const { pid } of entries) {
    try {
      process.kill(pid, signal);
    } catch {
      // Gone already, or not ours to signal.
    }
  }
}

/** How many times {@link stopTree} reads a tree again for processes started since its last read. */
const STOP_READS = 10;

/**
 * Stops (SIGSTOP) what of a process tree still runs, reads it again with what those processes
 * started since its last read (a server's SIGTERM handler may have started a child during a
 * grace), stops those too, and so on until a read finds nothing new (or after ten reads). A stopped
 * process cannot start another (a fork under way when SIGSTOP comes is undone, or its child is
 * listed), so what it returns is the whole tree, held still until it is signalled.
 * `read(known)` gives the processes of `known` that still run (the same ones: verified by start
 * time against a listing now) and every descendant of them now. `read` throwing on the first read
 * (before anything was stopped) is the caller's to handle; on a later one, what is stopped is
 * returned.
 */
export async function stopTree(
  tree: readonly ProcessEntry[],
  read: (known: readonly ProcessEntry[]) => Promise<readonly ProcessEntry[]>,
): Promise<ProcessEntry[]> {
  const key = (entry: ProcessEntry) => `${entry.pid} ${entry.started}`;
  const known = new Map((await read(tree)).map((entry) => [key(entry), entry]));
  signalAll([...known.values()], "SIGSTOP");
  for (let reads = 1; reads < STOP_READS; reads++) {
    let now: readonly ProcessEntry[];
    try {
      now = await read([...known.values()]);
    } catch {
      break; // No listing now: what is stopped is all there is to signal.
    }
    const fresh = now.filter((entry) => !known.has(key(entry)));
    if (fresh.length === 0) break;
    for (const entry of fresh) known.set(key(entry), entry);
    signalAll(fresh, "SIGSTOP");
  }
  // A stopped process cannot exit on its own, so its pid is still its own; on Linux, check anyway.
  return [...known.values()].filter((entry) => process.platform !== "linux" || alive(entry));
}

/**
 * SIGTERMs a process tree read whole by {@link stopTree} (so a child started just before is not
 * missed, to be orphaned by its parent's death), then lets it run on (SIGCONT) to handle it.
 * Returns what it signalled.
 */
export async function termTree(
  tree: readonly ProcessEntry[],
  read: (known: readonly ProcessEntry[]) => Promise<readonly ProcessEntry[]>,
): Promise<ProcessEntry[]> {
  const stopped = await stopTree(tree, read);
  signalAll(stopped, "SIGTERM");
  signalAll(stopped, "SIGCONT");
  return stopped;
}

/**
 * The last step of ending a process tree, once the SIGTERM grace is over: SIGKILLs the tree read
 * whole by {@link stopTree}, with what it started during the grace (a SIGTERM handler's child);
 * stopped first, so nothing of it can start a process between the read and the SIGKILL. Returns
 * what it SIGKILLed.
 */
export async function killTree(
  tree: readonly ProcessEntry[],
  read: (known: readonly ProcessEntry[]) => Promise<readonly ProcessEntry[]>,
): Promise<ProcessEntry[]> {
  const stopped = await stopTree(tree, read);
  signalAll(stopped, "SIGKILL");
  return stopped;
}
