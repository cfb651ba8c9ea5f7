// The reaper: a small process a pool starts (see reaper.ts) to end its stdio servers' process trees
// when the host dies without being able to (SIGKILL, the OOM killer). It reads, on its stdin, one
// JSON message a line from the host:
//   {"set": <server id>, "procs": [[pid, "start time"], …], "mark": "<token>"}
//                                                           the server's processes as last seen,
//                                                           and (Linux) its LOOPWRIGHT_MCP_TREE
//   {"gone": <server id>}                                   the server was ended by the host
//   {"bye": true}                                           the pool has no server left
// Its stdin ending after a bye is a clean exit. Ending without one means the host died: it ends
// each listed server's tree as a close would (EOF grace, SIGTERM, SIGKILL), and exits. Either way
// it exits once its stdin ends. It only ever signals a process listed by the host (pid and start
// time) or a descendant of one that runs now.
import {
  alive,
  CLOSE_TIMINGS,
  killTree,
  listTree,
  markedProcesses,
  POLL_MS,
  type ProcessEntry,
  termTree,
  treeOf,
} from "./process-table.js";

const linux = process.platform === "linux";
/** The longest line read from the host; a longer one (never sent by a pool) is dropped. */
const MAX_LINE = 1024 * 1024;

/** Each server's processes as the host last listed them, by the host's id for the server. */
const servers = new Map<number, ProcessEntry[]>();
/** Each server's `LOOPWRIGHT_MCP_TREE` value (Linux): what it started carries it, even once init has it. */
const marks = new Map<number, string>();
let bye = false;
let held = "";
/** The start-time look-ups under way: a reap waits for them, so no entry is skipped for lack of one. */
const resolving = new Set<Promise<void>>();

/** The process with `pid` that started at `started`, as an entry (its parent is not needed). */
function entryOf(pid: number, started: string): ProcessEntry {
  return { pid, ppid: 0, zombie: false, started };
}

/**
 * Fills in the start time of entries the host sent without one (off Linux, a server just started,
 * before its first listing), from a listing now; an entry whose pid is no longer listed is dropped.
 */
async function resolveStartTimes(id: number): Promise<void> {
  const entries = servers.get(id);
  if (!entries?.some((entry) => entry.started === "")) return;
  let table: Map<number, ProcessEntry>;
  try {
    table = new Map(
      (
        await listTree(
          entries.map((entry) => entry.pid),
          linux,
        )
      ).map((entry) => [entry.pid, entry]),
    );
  } catch {
    return;
  }
  // A later message may have replaced the list meanwhile: only fill in the one read.
  if (servers.get(id) !== entries) return;
  servers.set(
    id,
    entries.flatMap((entry) => {
      if (entry.started !== "") return [entry];
      const now = table.get(entry.pid);
      return now && !now.zombie ? [entryOf(entry.pid, now.started)] : [];
    }),
  );
}

function take(line: string): void {
  let message: unknown;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  if (typeof message !== "object" || message === null) return;
  const { set, procs, gone, mark } = message as {
    set?: unknown;
    procs?: unknown;
    gone?: unknown;
    mark?: unknown;
  };
  if ((message as { bye?: unknown }).bye === true) {
    bye = true;
    servers.clear();
    marks.clear();
  } else if (typeof gone === "number") {
    servers.delete(gone);
    marks.delete(gone);
  } else if (typeof set === "number" && Array.isArray(procs)) {
    if (typeof mark === "string" && mark !== "") marks.set(set, mark);
    const entries = procs.flatMap((item: unknown) => {
      if (!Array.isArray(item)) return [];
      const [pid, started] = item as unknown[];
      return Number.isInteger(pid) && (pid as number) > 0 && typeof started === "string"
        ? [entryOf(pid as number, started)]
        : [];
    });
    servers.set(set, entries);
    const resolved = resolveStartTimes(set);
    resolving.add(resolved);
    void resolved.finally(() => resolving.delete(resolved));
  }
}

/** The listed processes that still run, and every descendant of them now. */
async function treesNow(listed: readonly ProcessEntry[]): Promise<ProcessEntry[]> {
  const table = await listTree(
    listed.map((entry) => entry.pid),
    linux,
  );
  const byPid = new Map(table.map((entry) => [entry.pid, entry]));
  const roots = listed.filter((entry) => alive(entry, byPid)).map((entry) => entry.pid);
  return treeOf(roots, table).filter((entry) => !entry.zombie);
}

/**
 * Waits up to `ms` for every process of `tree` to end. On Linux it also reads the tree again at
 * each look (a walk of the tree's own /proc files) and keeps what its processes started since, so
 * a child started during the wait is kept even when its parent dies before the wait is over (as
 * a server does that starts a child and then dies of writing to the dead host's pipe). Returns
 * whether all of it ended, and what of it still runs.
 */
async function watch(
  tree: readonly ProcessEntry[],
  ms: number,
): Promise<{ ended: boolean; tree: ProcessEntry[] }> {
  const key = (entry: ProcessEntry) => `${entry.pid} ${entry.started}`;
  const known = new Map(tree.map((entry) => [key(entry), entry]));
  const deadline = Date.now() + ms;
  for (;;) {
    if (linux)
      try {
        for (const entry of await treesNow([...known.values()])) known.set(key(entry), entry);
      } catch {
        // No listing now: the tree as last read.
      }
    const live = [...known.values()].filter((entry) => alive(entry));
    if (live.length === 0) return { ended: true, tree: [] };
    const left = deadline - Date.now();
    if (left <= 0) return { ended: false, tree: live };
    await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, left)));
  }
}

/**
 * The host died: every listed server's tree, read now (before a wrapper's death cuts the links to
 * what it started), gets the close's EOF grace to exit on its own, watched (see {@link watch}) for
 * what it starts meanwhile. What of it still runs then is read again (stopped and read until
 * whole: stopTree in process-table.ts), SIGTERMed and let run on; after the SIGTERM grace, watched
 * the same way, what of that still runs is read once more, with what it started during the grace
 * (a SIGTERM handler's child), and all of it is stopped and SIGKILLed (see {@link killTree}). On
 * Linux the processes started with a server's `LOOPWRIGHT_MCP_TREE` join the listed ones first. A
 * process started by a parent that died before the next read (given to init) is out of reach.
 */
async function reap(): Promise<void> {
  // A host killed right after starting a server (off Linux, where it sends no start time) sends
  // its pid and dies: the look-up that message started is waited for here.
  await Promise.all(resolving);
  const listed = [...servers.values()].flat().filter((entry) => entry.started !== "");
  // What a server started that went to init before any snapshot saw it (a daemon's double fork),
  // found by the mark it inherited.
  if (linux)
    for (const mark of marks.values()) {
      try {
        listed.push(...(await markedProcesses(mark)));
      } catch {
        // No /proc to read: the listed processes alone.
      }
    }
  if (listed.length === 0) return;
  const { eofGraceMs, termGraceMs } = CLOSE_TIMINGS;
  const first = await watch(await treesNow(listed), eofGraceMs);
  if (first.ended) return;
  // Read, stopped and read again until whole (see stopTree), so a child started just now is
  // SIGTERMed with its parent instead of being left to init when the parent dies of it.
  const tree = await termTree(first.tree, treesNow);
  if (tree.length === 0) return;
  const termed = await watch(tree, termGraceMs);
  if (termed.ended) return;
  // Read from a listing now, start times checked (off Linux the poll above only asks whether a pid
  // exists), so no process that has since taken a pid of the tree is signalled.
  await killTree(termed.tree, treesNow);
}

let ending = false;
function ended(): void {
  if (ending) return;
  ending = true;
  if (bye) process.exit(0);
  reap().then(
    () => process.exit(0),
    () => process.exit(1),
  );
}

process.stdin.on("data", (chunk: Buffer) => {
  const lines = (held + chunk.toString("utf8")).split("\n");
  held = lines.pop() ?? "";
  if (held.length > MAX_LINE) held = "";
  for (const line of lines) take(line);
});
process.stdin.once("end", ended);
process.stdin.once("error", ended);
