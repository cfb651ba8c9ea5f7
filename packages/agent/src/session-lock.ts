// One process at a time per session file: an advisory lock `<file>.lock`, created exclusively and
// naming its holder (pid, host, the process's start time where the system tells it, a random token).
import { randomUUID } from "node:crypto";
import { linkSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { AgentError, errorText } from "./errors.js";

/** Who holds a session file's lock, as its `.lock` file says. */
interface LockHolder {
  pid: number;
  host: string;
  /** Linux: the process's start time (field 22 of /proc/<pid>/stat, clock ticks since boot); absent elsewhere. */
  started?: string;
  /** Random, per lock: tells this lock from an earlier one of the same process. */
  token: string;
  /** When the lock was taken (ISO time), for a person reading the file. */
  since: string;
}

/**
 * How long a lock file that holds no readable holder (its creator was killed between creating and
 * writing it) is taken to be one being written right now, before it counts as stale.
 */
const UNWRITTEN_GRACE_MS = 2000;

/** Locks this process holds: lock path → token. Shared by every copy of this package in the process. */
const HELD_KEY = Symbol.for("@loopwright/agent.sessionLocks");
const registry = globalThis as typeof globalThis & { [HELD_KEY]?: Map<string, string> };

function held(): Map<string, string> {
  let map = registry[HELD_KEY];
  if (!map) {
    map = new Map();
    registry[HELD_KEY] = map;
    // Ends with the process (a normal exit, process.exit, an uncaught error). A process ended by a
    // signal it does not handle (SIGKILL; SIGTERM or SIGINT without a handler) runs no hook: its
    // lock stays behind, stale, and the next open takes it over.
    process.once("exit", () => {
      for (const [path, token] of map ?? []) removeIfOurs(path, token);
    });
  }
  return map;
}

/** This process's start time where the system tells it (Linux), else undefined. */
function startTime(pid: number): string | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // The command (field 2) is in parentheses and may hold spaces: fields count from after it.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] || undefined;
  } catch {
    return undefined;
  }
}

/** Whether a process with this pid runs on this host now. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as { code?: string }).code === "EPERM";
  }
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (
      typeof value === "object" &&
      value !== null &&
      Number.isSafeInteger(value.pid) &&
      (value.pid as number) > 0 &&
      typeof value.host === "string" &&
      typeof value.token === "string"
    ) {
      return value as LockHolder;
    }
  } catch {}
  return undefined;
}

/** Why the lock's holder is gone (the lock is stale), or undefined while it may still hold the file. */
function goneReason(path: string, text: string): string | undefined {
  const holder = parseHolder(text);
  if (!holder) {
    let age = 0;
    try {
      age = Date.now() - statSync(path).mtimeMs;
    } catch {
      return undefined;
    }
    return age > UNWRITTEN_GRACE_MS ? "it names no holder (its writer stopped before writing it)" : undefined;
  }
  // A process on another host cannot be looked up from here: it is taken to hold the file.
  if (holder.host !== hostname()) return undefined;
  if (holder.pid === process.pid && holder.started === startTime(process.pid)) {
    return held().get(path) === holder.token
      ? undefined
      : `it was left by this process (pid ${holder.pid}) and no open session holds it`;
  }
  if (!running(holder.pid)) return `process ${holder.pid} is no longer running`;
  const now = holder.started === undefined ? undefined : startTime(holder.pid);
  if (now !== undefined && now !== holder.started) {
    return `process ${holder.pid} that took it has ended (the pid now belongs to a process started later)`;
  }
  return undefined;
}

function busy(file: string, path: string, text: string): AgentError {
  const holder = parseHolder(text);
  const who = holder
    ? holder.pid === process.pid && holder.host === hostname()
      ? `another open session of this process (pid ${holder.pid}); close() it first`
      : `process ${holder.pid}${holder.host !== hostname() ? ` on host ${holder.host}` : ""}, since ${holder.since}`
    : "a process that is taking its lock right now";
  return new AgentError(
    "locked",
    `The session file ${file} is open in ${who}. A session file is written by one process at a time; ` +
      `close the session there, or, if that process is gone, delete ${path}.`,
  );
}

function removeIfOurs(path: string, token: string): void {
  try {
    if (parseHolder(readFileSync(path, "utf8"))?.token === token) unlinkSync(path);
  } catch {
    // Already gone.
  }
}

/** The lock of one open session file; `release()` ends it (idempotent). */
export class SessionLock {
  /** The `.lock` file. */
  readonly path: string;
  /** Set when the lock was taken over from a holder that is gone: says whose and why. */
  readonly notice: string | undefined;
  readonly #token: string;
  #released = false;

  constructor(path: string, token: string, notice: string | undefined) {
    this.path = path;
    this.#token = token;
    this.notice = notice;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    if (held().get(this.path) === this.#token) held().delete(this.path);
    removeIfOurs(this.path, this.#token);
  }
}

/**
 * Takes the lock of a session file: `<file>.lock`, created exclusively, holding this process's pid,
 * host, start time and a random token. A lock whose holder is gone (no such process, or the pid now
 * a later process's) is taken over, and the returned lock's `notice` says so. Throws `AgentError`
 * (`locked`) naming the file and the holder's pid while the holder may still run (another process,
 * another session of this one, a process on another host), and (`storage`) when the lock file cannot
 * be written.
 */
export function lockSessionFile(file: string): SessionLock {
  const path = `${file}.lock`;
  const token = randomUUID();
  const started = startTime(process.pid);
  const me: LockHolder = {
    pid: process.pid,
    host: hostname(),
    ...(started !== undefined ? { started } : {}),
    token,
    since: new Date().toISOString(),
  };
  const text = `${JSON.stringify(me)}\n`;
  let notice: string | undefined;
  // Each pass either takes the lock, gives up, or removed a stale lock (or saw one vanish).
  for (let attempt = 0; attempt < 8; attempt++) {
    try {
      writeFileSync(path, text, { flag: "wx" });
      held().set(path, token);
      return new SessionLock(path, token, notice);
    } catch (error) {
      if ((error as { code?: string }).code !== "EEXIST") {
        throw new AgentError(
          "storage",
          `Could not create the lock ${path} of the session file ${file}: ${errorText(error)}`,
          {
            cause: error,
          },
        );
      }
    }
    let current: string;
    try {
      current = readFileSync(path, "utf8");
    } catch {
      continue; // Removed in between: try again.
    }
    const reason = goneReason(path, current);
    if (!reason) throw busy(file, path, current);
    // Taken over by moving it aside under a name of our own and checking that what moved is the
    // stale lock read above: two processes taking over at once cannot both remove a stale lock and
    // then one of them the other's new lock.
    const aside = `${path}.${process.pid}.${token}.stale`;
    try {
      renameSync(path, aside);
    } catch {
      continue;
    }
    let moved = "";
    try {
      moved = readFileSync(aside, "utf8");
    } catch {}
    if (moved !== current) {
      // Another process took the lock between the read and the move: it is put back as it was.
      try {
        linkSync(aside, path);
      } catch {}
      try {
        unlinkSync(aside);
      } catch {}
      continue;
    }
    try {
      unlinkSync(aside);
    } catch {}
    const since = parseHolder(current)?.since;
    notice = `The session file's lock ${path} was taken over: ${reason}.${
      typeof since === "string" ? ` (It was taken ${since}.)` : ""
    }`;
  }
  let last = "";
  try {
    last = readFileSync(path, "utf8");
  } catch {}
  throw busy(file, path, last);
}
