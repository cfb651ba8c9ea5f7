// One open session per session file: an advisory lock `<file>.lock`, created exclusively and
// naming its holder (pid, host, the process's start time where the system tells it, on Linux the
// boot id and PID namespace its pid belongs to, the thread of the process that opened it, a random
// token, its lease), renewed while held (see `SessionLock`). A holder's pid is looked up only where
// it means the same process (same host, boot and PID namespace); any other lock is judged by its lease.
import { randomUUID } from "node:crypto";
import {
  lstatSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { threadId } from "node:worker_threads";
import { AgentError, errorText } from "./errors.js";
import { CREATE_NEW, READ_LATIN1, READ_UTF8 } from "./fs-options.js";
import { cutText } from "./messages.js";

/** Who holds a session file's lock, as its `.lock` file says. */
interface LockHolder {
  pid: number;
  host: string;
  /** Linux: the process's start time (field 22 of /proc/<pid>/stat, clock ticks since boot); absent elsewhere. */
  started?: string;
  /**
   * Linux: the system's boot id (/proc/sys/kernel/random/boot_id) and the process's PID namespace
   * (the link /proc/self/ns/pid, e.g. `pid:[4026531836]`). Its pid is looked up in the reader's
   * process table only when both match the reader's (and the host does): two containers sharing a
   * hostname (host networking) each have a process table of their own. Absent elsewhere, and in a
   * lock of an older version.
   */
  bootId?: string;
  pidNs?: string;
  /**
   * The thread of the process that took it: `threadId` of `node:worker_threads` (0 for the main
   * thread; a worker's is never reused while the process runs). Absent in a lock of an older version.
   */
  thread?: number;
  /** Linux: that thread's id on the system (from /proc/thread-self) and its start time, to tell whether it still runs. */
  task?: number;
  taskStarted?: string;
  /** Random, per lock: tells this lock from an earlier one of the same thread. */
  token: string;
  /** When the lock was taken (ISO time), for a person reading the file. */
  since: string;
  /**
   * The holder's lease (ms): it touches the lock file (its modification time) every third of it
   * while it holds the lock, so a lock of another host not touched for longer is stale. Absent in a
   * lock of an older version (which never touches it): the reader's own lease is used for it.
   */
  leaseMs?: number;
}

/**
 * The lease of a lock, by default (`SessionOptions.lockLeaseMs`): a session renews its lock every
 * third of it, and a lock naming another host that has not been renewed for longer is stale.
 */
export const LOCK_LEASE_MS = 30_000;

/** The shortest and longest lease taken (the longest: a third of it is still a timer's delay). */
export const MIN_LOCK_LEASE_MS = 300;
export const MAX_LOCK_LEASE_MS = 2_147_483_647;

/** Whether `value` is a lease in milliseconds this code takes. */
export function validLease(value: unknown): value is number {
  return (
    typeof value === "number" &&
    Number.isSafeInteger(value) &&
    value >= MIN_LOCK_LEASE_MS &&
    value <= MAX_LOCK_LEASE_MS
  );
}

/**
 * How long a lock file that holds no readable holder (its creator was killed between creating and
 * writing it) is taken to be one being written right now, before it counts as stale.
 */
const UNWRITTEN_GRACE_MS = 2000;

/**
 * Locks this thread holds: lock path → token. Shared by every copy of this package in the thread
 * (each worker thread has a `globalThis`, so a registry of its own: a lock taken by another thread
 * of this process is judged by that thread's life, see `goneReason`).
 */
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

/**
 * What this thread saw of each lock it judged by time (another host's lease, a lock naming no
 * holder): lock key → the lock's content and modification time, and when (this thread's monotonic
 * clock, `performance.now()`) it first saw them so. The file's time is the holder's clock (or a hand's),
 * so how long it stayed the same between two looks — this host's own clock — tells a lock nobody
 * renews from a live one whatever the clocks say: a lock whose time is ahead of this host's clock is
 * taken over once seen unchanged for its lease. Shared by every copy of this package in the thread.
 */
const SEEN_KEY = Symbol.for("@loopwright/agent.lockSightings");
const seenRegistry = globalThis as typeof globalThis & {
  [SEEN_KEY]?: Map<string, { text: string; mtimeMs: number; at: number }>;
};

/** The most locks `unchangedFor` remembers (the oldest sighting goes first). */
const MAX_SIGHTINGS = 1000;

/**
 * How long (ms) this thread has seen the lock at `path` unchanged — the same `text`, the same
 * modification time `mtimeMs` — since it first saw it so; 0 at a first look and after a change,
 * which starts the watch again (`record`), or without `record`, when it has not been seen so.
 */
function unchangedFor(path: string, text: string, mtimeMs: number, record = true): number {
  let map = seenRegistry[SEEN_KEY];
  if (!map) {
    map = new Map();
    seenRegistry[SEEN_KEY] = map;
  }
  const key = lockKey(path);
  const seen = map.get(key);
  const now = performance.now();
  if (seen && seen.text === text && seen.mtimeMs === mtimeMs) return now - seen.at;
  if (record) {
    map.delete(key);
    map.set(key, { text, mtimeMs, at: now });
    if (map.size > MAX_SIGHTINGS) map.delete(map.keys().next().value as string);
  }
  return 0;
}

/** Tokens of this thread's locks whose session is closing (closed, its stopped run still writing): for `busy`'s words. */
const CLOSING_KEY = Symbol.for("@loopwright/agent.closingSessionLocks");
const closingRegistry = globalThis as typeof globalThis & { [CLOSING_KEY]?: Set<string> };

function closing(): Set<string> {
  let set = closingRegistry[CLOSING_KEY];
  if (!set) {
    set = new Set();
    closingRegistry[CLOSING_KEY] = set;
  }
  return set;
}

/**
 * The registry's key for a lock path: absolute, its directory's real path (symbolic links and `..`
 * resolved), so one file opened by two spellings of its directory (relative and absolute, through a
 * link) is one lock, and the second open is refused rather than taken for a lock nobody holds.
 */
function lockKey(path: string): string {
  const absolute = resolve(path);
  try {
    return join(realpathSync(dirname(absolute)), basename(absolute));
  } catch {
    return absolute;
  }
}

/** This process's start time where the system tells it (Linux), else undefined. */
function startTime(pid: number): string | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    return startField(readFileSync(`/proc/${pid}/stat`, READ_LATIN1));
  } catch {
    return undefined;
  }
}

/** Field 22 (start time) of a /proc stat file's text. */
function startField(stat: string): string | undefined {
  // The command (field 2) is in parentheses and may hold spaces: fields count from after it.
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] || undefined;
}

/** Where this process's pids are looked up (Linux: boot id and PID namespace; none elsewhere), read once. */
let system: { bootId?: string; pidNs?: string } | undefined;

function thisSystem(): { bootId?: string; pidNs?: string } {
  if (system) return system;
  system = {};
  if (process.platform !== "linux") return system;
  try {
    const bootId = readFileSync("/proc/sys/kernel/random/boot_id", READ_LATIN1).trim();
    if (bootId) system.bootId = bootId;
  } catch {}
  try {
    const pidNs = readlinkSync("/proc/self/ns/pid");
    if (pidNs) system.pidNs = pidNs;
  } catch {}
  return system;
}

/**
 * Whether `holder`'s pid can be looked up in this process's process table: "same" (this host, and
 * the boot id and PID namespace it records are this process's, or neither side records them: off
 * Linux), "other" (another host, or this hostname with another boot or another PID namespace: a
 * container sharing the hostname), or "unknown" (this hostname, a lock that records neither while
 * this process knows its own: a lock of an older version). A PID namespace's number is unique
 * while it lives, and may be given to a new one once it is gone (with every process in it): a lock
 * naming a dead namespace's number, now another's, is told apart by its pid and start time.
 */
function placeOf(holder: LockHolder): "same" | "other" | "unknown" {
  if (holder.host !== hostname()) return "other";
  const mine = thisSystem();
  const theirs = { bootId: holder.bootId, pidNs: holder.pidNs };
  let unknown = false;
  for (const key of ["bootId", "pidNs"] as const) {
    const a = mine[key];
    const b = typeof theirs[key] === "string" ? theirs[key] : undefined;
    if (a !== undefined && b !== undefined) {
      if (a !== b) return "other";
    } else if (b !== undefined) {
      return "other"; // Recorded where it is known; this process cannot tell its own: not the same system.
    } else if (a !== undefined) {
      unknown = true;
    }
  }
  return unknown ? "unknown" : "same";
}

/**
 * Whether `holder`'s pid is looked up here (its life tells whether it holds the lock); else it is
 * judged by its lease, as another host's. A lock that records no boot id or PID namespace (an older
 * version's) is looked up only while its pid runs here with the start time it records: otherwise
 * it may be a live process of another PID namespace, and only its lease can tell.
 */
function lookedUp(holder: LockHolder): boolean {
  const place = placeOf(holder);
  if (place === "same") return true;
  if (place === "other") return false;
  return holder.started !== undefined && running(holder.pid) && startTime(holder.pid) === holder.started;
}

/** Where a holder judged by its lease is, for a person: " on host X", with why it is not looked up here. */
function whereOf(holder: LockHolder): string {
  if (holder.host !== hostname()) return ` on host ${shortText(holder.host)}`;
  const mine = thisSystem();
  if (typeof holder.bootId === "string" && holder.bootId !== mine.bootId) {
    return ` on host ${shortText(holder.host)} (another boot: another machine of that name, or before a restart)`;
  }
  if (typeof holder.pidNs === "string" && holder.pidNs !== mine.pidNs) {
    return ` on host ${shortText(holder.host)} in another PID namespace (another container sharing the hostname)`;
  }
  if (placeOf(holder) === "unknown") {
    return ` on host ${shortText(holder.host)} (a lock of an older version, which records no PID namespace: it may be another container's)`;
  }
  return "";
}

/** Linux: this thread's system id and start time, else undefined. */
function thisTask(): { task: number; taskStarted?: string } | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    // "<pid>/task/<tid>"
    const task = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (!Number.isSafeInteger(task) || task <= 0) return undefined;
    const taskStarted = startField(readFileSync(`/proc/self/task/${task}/stat`, READ_LATIN1));
    return { task, ...(taskStarted !== undefined ? { taskStarted } : {}) };
  } catch {
    return undefined;
  }
}

/** Who this thread is, as a lock (with its lease) or a gate records it. */
function me(token: string, leaseMs?: number): LockHolder {
  const started = startTime(process.pid);
  return {
    pid: process.pid,
    host: hostname(),
    ...(started !== undefined ? { started } : {}),
    ...thisSystem(),
    thread: threadId,
    ...thisTask(),
    token,
    since: new Date().toISOString(),
    ...(leaseMs !== undefined ? { leaseMs } : {}),
  };
}

/** A duration for a person: tenths of a second below 10 s, whole seconds above. */
function seconds(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
}

/**
 * The lease of another host's lock and how it stands: `leaseMs` the one the lock records (its
 * holder's promise to renew it every third of it), or for a lock of an older version (none
 * recorded) the reader's own; `ageMs` how long ago the lock file was last touched (renewed, or for
 * an older version's lock, written) by this host's clock (negative when its time is ahead of it);
 * `unchangedMs` how long this thread has seen it unchanged (see `unchangedFor`; `record` as there);
 * `idleMs` the longer of the two, which the lease is held against.
 */
function leaseState(
  holder: LockHolder,
  path: string,
  text: string,
  mtimeMs: number,
  ownLeaseMs: number,
  record: boolean,
): { leaseMs: number; ageMs: number; unchangedMs: number; idleMs: number; recorded: boolean } {
  const recorded = validLease(holder.leaseMs);
  const ageMs = Date.now() - mtimeMs;
  const unchangedMs = unchangedFor(path, text, mtimeMs, record);
  return {
    leaseMs: recorded ? (holder.leaseMs as number) : ownLeaseMs,
    ageMs,
    unchangedMs,
    idleMs: Math.max(ageMs, unchangedMs),
    recorded,
  };
}

/** The lock file's modification time (its last renewal), or undefined when it cannot be looked at. */
function touchedAt(path: string): number | undefined {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return undefined;
  }
}

/** Whether `holder` names this process (its pid and, where the system tells it, its start time) on this host, boot and PID namespace. */
function thisProcess(holder: LockHolder): boolean {
  return (
    placeOf(holder) === "same" && holder.pid === process.pid && holder.started === startTime(process.pid)
  );
}

/** Whether `holder`, of this process, names another thread than this one. */
function otherThread(holder: LockHolder): boolean {
  return typeof holder.thread === "number" && holder.thread !== threadId;
}

/**
 * Whether the thread of this process that `holder` names still runs: its system thread is there
 * with the start time the lock recorded. Where that cannot be told (no thread recorded, not Linux),
 * it is taken to run, as long as the process does.
 */
function threadRuns(holder: LockHolder): boolean {
  if (process.platform !== "linux" || !Number.isSafeInteger(holder.task) || (holder.task as number) <= 0) {
    return true;
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/self/task/${holder.task}/stat`, READ_LATIN1);
  } catch {
    return false;
  }
  return holder.taskStarted === undefined || startField(stat) === holder.taskStarted;
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
      // `since` is only shown: what is not text (an object whose toString is no function would throw
      // in the message) is left out, and text is shown cut short, as is the host's name.
      const { since, ...rest } = value as LockHolder;
      return { ...rest, since: typeof since === "string" ? shortText(since) : "" } as LockHolder;
    }
  } catch {}
  return undefined;
}

/** Text a lock file holds, as a message shows it: at most 100 characters, a longer one cut with "…". */
function shortText(text: string): string {
  return text.length > 100 ? `${cutText(text, 99)}…` : text;
}

/**
 * Why the lock's holder is gone (the lock is stale), or undefined while it may still hold the file.
 * `path` is looked at (its modification time) after `text` was read from it: a renewal or a new lock
 * in between makes it younger, never older.
 */
function goneReason(path: string, text: string, ownLeaseMs: number): string | undefined {
  const holder = parseHolder(text);
  if (!holder) {
    const at = touchedAt(path);
    if (at === undefined) return undefined;
    // Its time may be ahead of this host's clock: also judged by how long it was seen unchanged.
    return Math.max(Date.now() - at, unchangedFor(path, text, at)) > UNWRITTEN_GRACE_MS
      ? "it names no holder (its writer stopped before writing it)"
      : undefined;
  }
  // A process on another host cannot be looked up from here: it holds the file while it renews its
  // lease (touches the lock file every third of it); a lock not renewed for longer is stale. A lock
  // of an older version records no lease and is never renewed: judged by its last change alike.
  // So is one of this hostname whose pid is not in this process table (another boot, another PID
  // namespace: a container sharing the hostname), or may not be (an older version's, see `lookedUp`).
  if (!lookedUp(holder)) {
    const at = touchedAt(path);
    if (at === undefined) return undefined;
    const { leaseMs, ageMs, unchangedMs, idleMs, recorded } = leaseState(
      holder,
      path,
      text,
      at,
      ownLeaseMs,
      true,
    );
    if (idleMs <= leaseMs) return undefined;
    const who = `its holder, process ${holder.pid}${whereOf(holder)},`;
    // Its time ahead of this host's clock (or not yet a lease behind it): it went unrenewed while watched.
    if (ageMs <= leaseMs) {
      const where =
        ageMs < 0
          ? `stays ${seconds(-ageMs)} ahead of this host's clock`
          : `stays ${seconds(ageMs)} behind this host's clock`;
      return `${who} has not ${recorded ? "renewed its lease" : "changed it (a lock of an older version, which records no lease, judged against this opener's)"} in the ${seconds(unchangedMs)} this process saw the lock unchanged (its modification time ${where}): the ${seconds(leaseMs)} lease lapsed ${seconds(unchangedMs - leaseMs)} ago`;
    }
    return recorded
      ? `${who} last renewed its lease ${seconds(ageMs)} ago: the ${seconds(leaseMs)} lease lapsed ${seconds(ageMs - leaseMs)} ago`
      : `${who} wrote it ${seconds(ageMs)} ago and records no lease (a lock of an older version, which is never renewed: judged by the lock file's last change against a ${seconds(leaseMs)} lease), which lapsed ${seconds(ageMs - leaseMs)} ago`;
  }
  if (thisProcess(holder)) {
    // Another thread's lock is its own: held while that thread runs (its registry is not this one's).
    if (otherThread(holder)) {
      return threadRuns(holder)
        ? undefined
        : `it was left by worker thread ${holder.thread} of this process (pid ${holder.pid}), which has ended`;
    }
    return held().get(lockKey(path)) === holder.token
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

function busy(file: string, path: string, text: string, ownLeaseMs: number): AgentError {
  const holder = parseHolder(text);
  let lease = "";
  const byLease = holder !== undefined && !lookedUp(holder);
  const at = byLease ? touchedAt(path) : undefined;
  if (holder && at !== undefined) {
    const { leaseMs, ageMs, idleMs, recorded } = leaseState(holder, path, text, at, ownLeaseMs, false);
    // A time ahead of this host's clock cannot say how long ago it was renewed: this process watches
    // the lock, and one it has seen unchanged for the lease is taken over.
    const left =
      ageMs < 0
        ? `an open in this process once the lock has stayed unchanged for ${seconds(leaseMs)} (in about ${seconds(leaseMs - idleMs)}) takes it over`
        : `the next open after it has gone ${seconds(leaseMs)} without renewal (in about ${seconds(leaseMs - idleMs)}) takes it over`;
    // A modification time ahead of this host's clock (the holder's clock is ahead, or the time was
    // set by hand): "renewed 0.0 s ago" would be false.
    const when =
      ageMs < 0
        ? `at a time ${seconds(-ageMs)} ahead of this host's clock (the holder's clock is ahead of this one's, or the time was set by hand)`
        : `${seconds(ageMs)} ago`;
    lease = recorded
      ? ` Its lease was last renewed ${when} (every ${seconds(leaseMs / 3)} while that session is open); if that process is gone, ${left}.`
      : ` It records no lease (a lock of an older version, never renewed) and was last changed ${when}; if that process is gone, ${left}.`;
  }
  const who = holder
    ? holder.pid === process.pid && placeOf(holder) === "same"
      ? otherThread(holder)
        ? `another thread of this process (pid ${holder.pid}, ${
            holder.thread === 0 ? "its main thread" : `worker thread ${holder.thread}`
          }); close() the session there first`
        : closing().has(holder.token)
          ? `a session of this process that is closing (pid ${holder.pid}; its stopped run is still writing its last messages); await its close() first`
          : `another open session of this process (pid ${holder.pid}); close() it first`
      : `process ${holder.pid}${byLease ? whereOf(holder) : ""}${holder.since ? `, since ${holder.since}` : ""}`
    : "a process that is taking its lock right now";
  return new AgentError(
    "locked",
    `The session file ${file} is open in ${who}. A session file is written by one process at a time; ` +
      `close the session there, or, if that process is gone, delete ${path}.${lease}`,
  );
}

/**
 * How long a takeover gate (`<file>.lock.takeover`) may stand before it counts as left behind
 * whoever wrote it. A takeover holds it for one read, one unlink and one create: milliseconds.
 */
const GATE_STALE_MS = 5000;

/** The pause between looks at a takeover gate another opener holds. */
const GATE_POLL_MS = 10;

/**
 * The steps of taking a lock: each `yield` asks for a pause of that many milliseconds (another
 * opener holds the takeover gate); the driver waits it out and goes on. `lockSessionFile` waits by
 * blocking the thread (it is synchronous), `beginLock` with a timer (the event loop keeps running).
 */
type Steps<T> = Generator<number, T, void>;

function runBlocking<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, step.value);
  }
}

/**
 * Whether a takeover gate holding `text` was left behind: older than `GATE_STALE_MS`, or naming a
 * process of this host that is gone (its pid free, or now a later process's), or a thread of this
 * process that has ended, or this thread (which holds a gate only inside `takeOver`, never between
 * two calls). A gate of another thread of this process that runs is held, as another process's is.
 */
function gateLeft(gate: string, text: string): boolean {
  try {
    if (Date.now() - statSync(gate).mtimeMs > GATE_STALE_MS) return true;
  } catch {
    return false; // Gone: the next create tells.
  }
  const holder = parseHolder(text);
  // Another host's, another boot's or PID namespace's (or maybe, an older version's): only its age tells.
  if (!holder || placeOf(holder) !== "same") return false;
  if (thisProcess(holder) && otherThread(holder)) return !threadRuns(holder);
  // This thread, or a process that had its pid before this one: either way no takeover in progress.
  if (holder.pid === process.pid) return true;
  if (!running(holder.pid)) return true;
  const now = holder.started === undefined ? undefined : startTime(holder.pid);
  return now !== undefined && now !== holder.started;
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Whether the gate is older than `GATE_STALE_MS` (false when it cannot be looked at). */
function gateOld(gate: string): boolean {
  try {
    return Date.now() - lstatSync(gate).mtimeMs > GATE_STALE_MS;
  } catch {
    return false;
  }
}

/**
 * The error for a takeover gate this opener can neither read nor remove (a directory, a symbolic
 * link to nothing, another user's file): `storage`, naming the gate and what to do.
 */
function gateError(
  file: string,
  path: string,
  gate: string,
  what: "read" | "remove",
  error: unknown,
): AgentError {
  return new AgentError(
    "storage",
    `The session file ${file} was not opened: its lock ${path} is stale, but the takeover gate ${gate} ` +
      `cannot be ${what === "read" ? "read" : "removed"} (${errorText(error)}), so the lock cannot be taken over. ` +
      `That gate is not one an open left in passing (it is a directory, a link to nothing, or another user's file). ` +
      `If no other process is opening this session, delete ${gate} by hand, then open the session again.`,
    { cause: error },
  );
}

function storageError(file: string, path: string, error: unknown): AgentError {
  return new AgentError(
    "storage",
    `Could not create the lock ${path} of the session file ${file}: ${errorText(error)}`,
    { cause: error },
  );
}

/**
 * Takes over the stale lock `path` whose content was `stale`, one opener at a time: under the
 * gate `<path>.takeover` (created exclusively; a gate left behind by a process that is gone, or
 * older than `GATE_STALE_MS`, is removed) the lock is read again, and only while it still holds
 * `stale` and is still stale is it unlinked and this opener's lock (`text`) created in its place.
 * Returns "taken" (this opener holds the lock now), "removed" (the stale lock is gone but another
 * opener, one that found no lock at all, created its lock first) or "changed" (the lock is no longer
 * the stale one read: another opener took it over, or it was let go; nothing was removed).
 * A gate held by a running opener is waited for, up to `GATE_STALE_MS` and a second. Throws
 * `AgentError` (`storage`, naming the gate and saying to delete it) for a gate that cannot be read
 * or removed (a directory, a symbolic link to nothing, another user's file unreadable past the
 * wait or left behind where this user cannot remove it): it would never go away by itself.
 *
 * No lock that may be live is ever moved or removed: a lock is unlinked only by the gate's holder,
 * after reading it as the stale content, and any other taker waits for the gate. What remains: a
 * gate holder stopped for longer than `GATE_STALE_MS` between its read and its unlink (suspended, a
 * debugger), whose gate a later opener takes as left behind; and two openers removing one gate left
 * behind at the same instant (the second's unlink can take the first's new gate), which needs a
 * taker killed inside its takeover and two more opening within microseconds of each other.
 */
function* takeOver(
  file: string,
  path: string,
  stale: string,
  text: string,
  ownLeaseMs: number,
): Steps<"taken" | "removed" | "changed"> {
  const gate = `${path}.takeover`;
  const token = randomUUID();
  const gateText = `${JSON.stringify(me(token))}\n`;
  const deadline = Date.now() + GATE_STALE_MS + 1000;
  // Every pass that does not create the gate looks at it, then checks the deadline and pauses: a
  // gate that stays (held, or one nobody can remove) never makes this loop spin.
  for (;;) {
    try {
      writeFileSync(gate, gateText, CREATE_NEW);
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== "EEXIST") throw storageError(file, gate, error);
    }
    let holder: string | undefined;
    // Why the gate cannot be read, when it may still be a takeover in progress (another user's
    // file): thrown once that has lasted past the deadline, or the gate is old.
    let unreadable: unknown;
    try {
      holder = readFileSync(gate, READ_UTF8);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === "ENOENT") {
        // Let go in between — unless it is a symbolic link to nothing, which no opener writes.
        if (isLink(gate)) throw gateError(file, path, gate, "read", error);
      } else if (code === "EISDIR" || gateOld(gate)) {
        throw gateError(file, path, gate, "read", error);
      } else {
        unreadable = error;
      }
    }
    if (holder !== undefined && gateLeft(gate, holder)) {
      try {
        if (readFileSync(gate, READ_UTF8) === holder) unlinkSync(gate);
      } catch (error) {
        // Gone already is fine; one left behind that cannot be removed stays: say so.
        if ((error as { code?: string }).code !== "ENOENT")
          throw gateError(file, path, gate, "remove", error);
      }
    }
    if (Date.now() > deadline) {
      if (unreadable !== undefined) throw gateError(file, path, gate, "read", unreadable);
      return "changed";
    }
    yield GATE_POLL_MS;
  }
  try {
    let now: string;
    try {
      now = readFileSync(path, READ_UTF8);
    } catch {
      return "changed"; // Let go: the next pass creates it.
    }
    // Read again under the gate: still the stale lock (a fresh lock being written also reads empty,
    // so a lock naming no holder is checked for its age again).
    // A lease renewed meanwhile makes it live again.
    if (now !== stale || !goneReason(path, now, ownLeaseMs)) return "changed";
    try {
      unlinkSync(path);
    } catch {
      return "changed";
    }
    try {
      writeFileSync(path, text, CREATE_NEW);
      return "taken";
    } catch (error) {
      if ((error as { code?: string }).code === "EEXIST") return "removed";
      throw storageError(file, path, error);
    }
  } finally {
    removeIfOurs(gate, token);
  }
}

function removeIfOurs(path: string, token: string): void {
  try {
    if (parseHolder(readFileSync(path, READ_UTF8))?.token === token) unlinkSync(path);
  } catch {
    // Already gone.
  }
}

/**
 * The lock of one open session file; `release()` ends it (idempotent). While held, it renews its
 * lease: every third of the lease, on a timer that never keeps the process alive (unref'd), it
 * touches the lock file's modification time — after reading the lock and finding its own token
 * there. A lock found to be another's (taken over, its lease having lapsed: the process stopped, its
 * event loop blocked, the volume unreachable, for longer than the lease) is lost: the renewal stops,
 * and `watch`'s callback is told. So is one whose file is gone when more than the lease has passed
 * since its last renewal (another opener may have taken it over and let go of it meanwhile; gone
 * within the lease, deleted by hand, it is created again, when no other opener has created one),
 * and one whose session file another writer changed since this session's last write to it (`wrote`).
 * Before each write its session calls `check`, which renews first when the lease has passed since
 * the last renewal (the timer could not run: the event loop was blocked, the process stopped), so a
 * lock lost meanwhile is found before anything is written.
 *
 * The lease is kept in the file's modification time, not in a field rewritten into it: a touch
 * never changes the lock's content, so a reader never finds it half written, a takeover's check
 * that the lock is still the stale one it read stays exact, and a holder that wakes up after its
 * lock was taken over cannot overwrite the new holder's lock (a late touch only lengthens that
 * lease). On a network volume (NFS, SMB) a touch is one attribute update, and the reader sees it
 * as soon as it opens the file (close-to-open: the reader reads the lock, then looks at its time).
 */
export class SessionLock {
  /** The `.lock` file. */
  readonly path: string;
  /** Set when the lock was taken over from a holder that is gone: says whose and why. */
  readonly notice: string | undefined;
  /** The lease (ms) this lock records and is renewed by. */
  readonly leaseMs: number;
  readonly #token: string;
  /** The lock's content as written, to create it again if it is deleted while held. */
  readonly #text: string;
  /** The registry's key, taken when the lock was (the directory may be gone by release). */
  readonly #key: string;
  #released = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** Why the lock was lost (found to be another's), once it was. */
  #lost: string | undefined;
  #onLost: ((why: string) => void) | undefined;
  /** When this lock was taken or last found to be its own and renewed (`Date.now()` before the look). */
  #renewedAt = Date.now();
  /** The session file (the lock's path without `.lock`). */
  readonly #file: string;
  /** How the session file stood after this session's last write to it (undefined before any, or when it could not be looked at). */
  #stamp: FileStamp | undefined;

  constructor(path: string, token: string, text: string, leaseMs: number, notice: string | undefined) {
    this.path = path;
    this.#file = path.endsWith(".lock") ? path.slice(0, -".lock".length) : path;
    this.#key = lockKey(path);
    this.#token = token;
    this.#text = text;
    this.leaseMs = leaseMs;
    this.notice = notice;
    this.#timer = setInterval(() => this.#renew(), Math.max(1, Math.floor(leaseMs / 3)));
    this.#timer.unref?.();
  }

  /** Why the lock was lost (found to be another's while held), or undefined. */
  get lost(): string | undefined {
    return this.#lost;
  }

  /** Tells `onLost` when the lock is found to be another's (at once if it was already). */
  watch(onLost: (why: string) => void): void {
    this.#onLost = onLost;
    if (this.#lost !== undefined) onLost(this.#lost);
  }

  /**
   * Before a write to the session file: why the lock was lost, or undefined while this session
   * holds it. Within the lease of the last renewal, a clock compare (no I/O); past it (the renewal
   * timer could not run: the event loop was blocked, the process stopped), the renewal runs first,
   * so a lock another opener took meanwhile is found lost (and `watch`'s callback told) before the
   * write.
   */
  check(): string | undefined {
    if (this.#lost === undefined && !this.#released && Date.now() - this.#renewedAt > this.leaseMs) {
      this.#renew();
    }
    return this.#lost;
  }

  /**
   * After a write of this session to its file: remembers the file's size and identity, so a renewal
   * that finds them changed (another writer appended or replaced the file) takes the lock as lost.
   */
  wrote(): void {
    this.#stamp = stampOf(this.#file);
  }

  /** Marks the lock as its session's closing (let go once its stopped run has settled): a refused open says so. */
  closing(): void {
    if (!this.#released) closing().add(this.#token);
  }

  release(): void {
    if (this.#released) return;
    this.#end();
    removeIfOurs(this.path, this.#token);
  }

  /** Stops the renewal and forgets the lock (its file is not touched). */
  #end(): void {
    this.#released = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    closing().delete(this.#token);
    if (held().get(this.#key) === this.#token) held().delete(this.#key);
  }

  #renew(): void {
    if (this.#released) return;
    const at = Date.now();
    const since = at - this.#renewedAt;
    let text: string;
    try {
      text = readFileSync(this.path, READ_UTF8);
    } catch (error) {
      // Any failure but ENOENT is tried again next time.
      if ((error as { code?: string }).code !== "ENOENT") return;
      // Gone past the lease: another opener may have taken the lock over (its lease having lapsed),
      // written the file and let go of the lock since; this session cannot tell, so it stops.
      if (since > this.leaseMs) {
        this.#lose(
          `The session file's lock ${this.path} was gone when this session came to renew it, ${seconds(since)} after its last renewal — longer than its ${seconds(this.leaseMs)} lease (the process stopped or its event loop blocked, or the volume was out of reach, for that long), so another opener may have taken it over and let go of it since.`,
        );
        return;
      }
      // Deleted by hand within the lease: created again, unless another opener has created one
      // meanwhile (the next renewal finds it).
      try {
        writeFileSync(this.path, this.#text, CREATE_NEW);
      } catch {
        return;
      }
      text = this.#text;
    }
    const holder = parseHolder(text);
    if (holder?.token !== this.#token) {
      const who = holder
        ? `process ${holder.pid}${placeOf(holder) === "same" ? "" : whereOf(holder)}${
            holder.since ? `, since ${holder.since}` : ""
          }`
        : "another opener";
      this.#lose(
        `The session file's lock ${this.path} is no longer this session's: it now names ${who}, which took it — after this session's ${seconds(this.leaseMs)} lease went unrenewed (the process stopped or its event loop blocked, or the volume was out of reach, for that long), or after the lock was deleted by hand.`,
      );
      return;
    }
    if (this.#changedByOther()) {
      // Written by another session (the lock deleted by hand, or taken over and let go): this
      // session's lock is let go too, for the file is no longer this session's to write.
      this.#lose(
        `The session file ${this.#file} was changed by another writer since this session last wrote it (the lock ${this.path} was deleted, or taken over and let go, meanwhile).`,
      );
      removeIfOurs(this.path, this.#token);
      return;
    }
    try {
      const now = new Date();
      utimesSync(this.path, now, now);
      this.#renewedAt = at;
    } catch {
      // Tried again at the next renewal.
    }
  }

  /** Whether the session file is no longer as this session's last write left it (its size or identity changed). */
  #changedByOther(): boolean {
    const was = this.#stamp;
    if (!was) return false;
    const now = stampOf(this.#file);
    // A file that cannot be looked at now is not taken for a change (tried again next time).
    return now !== undefined && (now.size !== was.size || now.ino !== was.ino || now.dev !== was.dev);
  }

  #lose(why: string): void {
    this.#lost = why;
    this.#end();
    this.#onLost?.(why);
  }
}

/**
 * How a session file stands: its size and identity. Not its modification time: on a network volume
 * the time a client reads back after its own write may differ from the one it reads later (the
 * server sets it), which would be taken for another writer's change; an append changes the size, a
 * rewrite (a temporary file renamed over it) the identity.
 */
interface FileStamp {
  size: number;
  ino: number;
  dev: number;
}

function stampOf(path: string): FileStamp | undefined {
  try {
    const { size, ino, dev } = statSync(path);
    return { size, ino, dev };
  } catch {
    return undefined;
  }
}

/**
 * Takes the lock of a session file: `<file>.lock`, created exclusively, holding this process's pid,
 * host, start time, this thread (`threadId`, and on Linux its system id and start time) and a random
 * token. A lock whose holder is gone (no such process, or the pid now a later process's, or a worker
 * thread of this process that has ended, or this thread with no open session holding it) is taken
 * over, one opener at a time (see `takeOver`: a lock that may be live is never moved or removed),
 * and the returned lock's `notice` says so; so is a lock naming another host whose lease (`leaseMs`
 * it records, else `leaseMs` given here) has gone unrenewed for longer than the lease. Throws
 * `AgentError` (`locked`) naming the file and the holder's pid while the holder may still run
 * (another process, another session of this one in this thread or another, a process on another
 * host renewing its lease), and (`storage`) when the lock file cannot be written or a takeover
 * gate left in the way cannot be read or removed. The lock records `leaseMs` and renews it (see
 * `SessionLock`).
 */
export function lockSessionFile(file: string, leaseMs: number = LOCK_LEASE_MS): SessionLock {
  return runBlocking(lockSteps(file, leaseMs));
}

/**
 * As `lockSessionFile`, without ever blocking the thread: returns the lock when it is taken (or
 * throws) without a wait — almost always —, else a function that waits for the other opener's
 * takeover with timers (the same bound, the same outcome) and resolves to the lock or rejects with
 * the error `lockSessionFile` would throw.
 */
export function beginLock(
  file: string,
  leaseMs: number = LOCK_LEASE_MS,
): SessionLock | (() => Promise<SessionLock>) {
  const steps = lockSteps(file, leaseMs);
  const first = steps.next();
  if (first.done) return first.value;
  return async () => {
    let pause = first.value;
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, pause));
      const step = steps.next();
      if (step.done) return step.value;
      pause = step.value;
    }
  };
}

function* lockSteps(file: string, leaseMs: number): Steps<SessionLock> {
  const path = `${file}.lock`;
  const token = randomUUID();
  const text = `${JSON.stringify(me(token, leaseMs))}\n`;
  let notice: string | undefined;
  // Each pass either takes the lock, gives up, or saw the lock change (removed as stale, taken
  // over by another opener, or let go).
  for (let attempt = 0; attempt < 8; attempt++) {
    try {
      writeFileSync(path, text, CREATE_NEW);
      held().set(lockKey(path), token);
      return new SessionLock(path, token, text, leaseMs, notice);
    } catch (error) {
      if ((error as { code?: string }).code !== "EEXIST") throw storageError(file, path, error);
    }
    let current: string;
    try {
      current = readFileSync(path, READ_UTF8);
    } catch {
      continue; // Removed in between: try again.
    }
    const reason = goneReason(path, current, leaseMs);
    if (!reason) throw busy(file, path, current, leaseMs);
    const taken = yield* takeOver(file, path, current, text, leaseMs);
    if (taken === "changed") continue;
    const since = parseHolder(current)?.since;
    notice = `The session file's lock ${path} was taken over: ${reason}.${
      typeof since === "string" ? ` (It was taken ${since}.)` : ""
    }`;
    if (taken === "taken") {
      held().set(lockKey(path), token);
      return new SessionLock(path, token, text, leaseMs, notice);
    }
    // "removed": the stale lock is gone, but another opener created its lock first; the next pass
    // finds that one.
  }
  let last = "";
  try {
    last = readFileSync(path, READ_UTF8);
  } catch {}
  throw busy(file, path, last, leaseMs);
}
