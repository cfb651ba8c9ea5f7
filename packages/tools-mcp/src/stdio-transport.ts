import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { PassThrough } from "node:stream";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { ownJson } from "./own-json.js";
import {
  alive,
  CLOSE_TIMINGS,
  hasChildrenFiles,
  killTree,
  listSync,
  listTree,
  listTreeSync,
  markedProcesses,
  markedProcessesSync,
  type ProcessEntry,
  procEntry,
  signalAll,
  TREE_MARK,
  termTree,
  treeOf,
  unlisted,
  until,
} from "./process-table.js";
import type { ReaperLink } from "./reaper.js";
import { loadedSdk, loadSdk, sdk } from "./sdk.js";

export { CLOSE_TIMINGS, listSync, listTree, parsePs, treeOf } from "./process-table.js";

/** What the transport starts: the stdio entry of a server, as the pool resolved it. */
export interface TreeStdioParameters {
  command: string;
  args?: string[];
  /** Set on top of the SDK's small safe default environment (`getDefaultEnvironment()`). */
  env?: Record<string, string>;
  cwd?: string;
  /**
   * The longest message (one line) the server may send, in bytes (default 10 MiB, the SDK's cap).
   * A longer one is skipped to its newline, never held whole; see {@link TreeStdioTransport}.
   */
  maxMessageBytes?: number;
  /** The pool's reaper, told the server's processes as they are snapshotted, and when they are gone. */
  reaper?: ReaperLink;
}

/**
 * The JSON-RPC error code of the answer {@link TreeStdioTransport} puts in place of one too large
 * to take; its `data` is {@link OversizedData}. It never goes over the wire.
 */
export const MESSAGE_TOO_LARGE = -32_090;

/**
 * The longest message read when `maxMessageBytes` is not given: 10 MiB, the SDK's own stdio
 * default (`STDIO_DEFAULT_MAX_BUFFER_SIZE`, which a test compares), kept here so building a
 * transport needs no SDK loaded.
 */
export const DEFAULT_MAX_MESSAGE_BYTES = 10 * 1024 * 1024;

/** The `data` of a {@link MESSAGE_TOO_LARGE} error: the message's size and the cap, in bytes. */
export interface OversizedData {
  loopwrightOversized: true;
  bytes: number;
  limit: number;
}

/** Reported to `onerror` for each message skipped as too large; `answered` says whether a call was failed for it. */
export class OversizedMessageError extends Error {
  override readonly name = "OversizedMessageError";
  readonly bytes: number;
  readonly limit: number;
  readonly answered: boolean;

  constructor(bytes: number, limit: number, answered: boolean) {
    super(`a message of ${bytes} bytes, more than the ${limit} allowed, was skipped`);
    this.bytes = bytes;
    this.limit = limit;
    this.answered = answered;
  }
}

/** How much of a skipped line's start and end is kept, to find the id of the request it answers. */
const HEAD_BYTES = 4096;
const TAIL_BYTES = 1024;

/** A line of the stream: whole, or skipped as too long with its size and its two ends. */
export type StdioLine = { text: string } | { bytes: number; head: string; tail: string };

/**
 * Whether `line` is one skipped as too long: by its own `bytes` (`in` follows the chain, and a
 * polluted `Object.prototype.bytes` made every line of every server one skipped, every call failed).
 */
function isSkipped(line: StdioLine): line is Extract<StdioLine, { bytes: number }> {
  return Object.hasOwn(line, "bytes");
}

/**
 * Splits a byte stream into lines of at most `limit` bytes (not counting the newline). A longer
 * line is not held: once it passes the limit its bytes are counted and dropped up to its newline,
 * keeping only its first {@link HEAD_BYTES} and last {@link TAIL_BYTES}. So a server's one oversized
 * message costs it that message, not the connection, and memory stays bounded by `limit`.
 */
export class LineSplitter {
  readonly limit: number;
  #chunks: Buffer[] = [];
  #size = 0;
  #skipping: { bytes: number; head: Buffer; tail: Buffer } | undefined;

  constructor(limit: number) {
    this.limit = limit;
  }

  /** Takes the next chunk; returns the lines it completed, in order. */
  push(chunk: Buffer): StdioLine[] {
    const lines: StdioLine[] = [];
    let start = 0;
    while (start <= chunk.length) {
      const newline = chunk.indexOf(10, start);
      const end = newline === -1 ? chunk.length : newline;
      const piece = chunk.subarray(start, end);
      if (this.#skipping) {
        this.#skipping.bytes += piece.length;
        this.#skipping.tail = lastBytes([this.#skipping.tail, piece], TAIL_BYTES);
      } else if (this.#size + piece.length > this.limit) {
        const held = [...this.#chunks, piece];
        this.#skipping = {
          bytes: this.#size + piece.length,
          head: firstBytes(held, HEAD_BYTES),
          tail: lastBytes(held, TAIL_BYTES),
        };
        this.#chunks = [];
        this.#size = 0;
      } else if (piece.length > 0) {
        // Copied: a view would keep the whole chunk alive.
        this.#chunks.push(Buffer.from(piece));
        this.#size += piece.length;
      }
      if (newline === -1) break;
      const skipped = this.#skipping;
      if (skipped) {
        lines.push({ bytes: skipped.bytes, head: utf8(skipped.head), tail: utf8(skipped.tail) });
      } else {
        lines.push({ text: Buffer.concat(this.#chunks, this.#size).toString("utf8") });
      }
      this.#skipping = undefined;
      this.#chunks = [];
      this.#size = 0;
      start = newline + 1;
    }
    return lines;
  }

  clear(): void {
    this.#chunks = [];
    this.#size = 0;
    this.#skipping = undefined;
  }
}

function utf8(bytes: Buffer): string {
  return bytes.toString("utf8").replace(/\r$/, "");
}

function firstBytes(buffers: readonly Buffer[], count: number): Buffer {
  const out: Buffer[] = [];
  let left = count;
  for (const buffer of buffers) {
    if (left <= 0) break;
    const part = buffer.subarray(0, left);
    out.push(part);
    left -= part.length;
  }
  return Buffer.from(Buffer.concat(out));
}

function lastBytes(buffers: readonly Buffer[], count: number): Buffer {
  const out: Buffer[] = [];
  let left = count;
  for (let i = buffers.length - 1; i >= 0 && left > 0; i--) {
    const buffer = buffers[i] as Buffer;
    const part = buffer.subarray(Math.max(0, buffer.length - left));
    out.push(part);
    left -= part.length;
  }
  return Buffer.from(Buffer.concat(out.reverse()));
}

/**
 * The id of the request a skipped line answered, from its two ends, or undefined when it is not
 * an answer (a request or notification: a `method` at its top level) or the id is not in reach.
 * Reads the top level of its start (keys and simple values, up to where the kept start ends) for
 * `result`/`error` and `id`; else an `"id": …` that is the line's last member (where the SDK
 * writes it).
 */
export function answeredId(head: string, tail: string): string | number | undefined {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let stringStart = -1;
  let lastKey: string | undefined;
  let answer = false;
  let id: string | number | undefined;
  if (!head.trimStart().startsWith("{")) return undefined;
  for (let i = 0; i < head.length; i++) {
    const c = head[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === "\\") escaped = true;
      else if (c === '"') {
        inString = false;
        if (depth === 1) {
          const after = /^\s*:/.exec(head.slice(i + 1, i + 17));
          if (after) {
            lastKey = head.slice(stringStart + 1, i);
            if (lastKey === "method") return undefined;
            if (lastKey === "result" || lastKey === "error") answer = true;
            if (lastKey === "id") {
              const value = /^\s*:\s*(-?\d+|"[^"\\]*")\s*[,}]/.exec(head.slice(i + 1, i + 200));
              if (value?.[1]) id = JSON.parse(value[1]) as string | number;
            }
          }
        }
      }
      continue;
    }
    if (c === '"') {
      inString = true;
      stringStart = i;
    } else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") depth--;
  }
  if (!answer) return undefined;
  if (id !== undefined) return id;
  const last = /[{,]\s*"id"\s*:\s*(-?\d+|"[^"\\]*")\s*\}\s*$/.exec(tail);
  return last?.[1] ? (JSON.parse(last[1]) as string | number) : undefined;
}

/**
 * The servers still running, each as a function that SIGKILLs its tree synchronously, found in a
 * table of every process, with (Linux) the processes started with its {@link TREE_MARK}, and its
 * tree mark and start time. While one runs, the host's `exit` event lists the processes once,
 * reads the environ files of those started since the oldest server (see
 * {@link markedProcessesSync}), and calls them all with that table (only synchronous work runs
 * there), so a host that calls `process.exit()` without closing its pool leaves no server behind,
 * nor a helper one started the way a daemon starts (`sh -c 'helper &'`), which init has.
 */
interface KillSync {
  /** This start's tree mark and when its process started (/proc clock ticks), on Linux. */
  mark(): { token: string; since: number } | undefined;
  kill(table: readonly ProcessEntry[], marked: readonly ProcessEntry[]): void;
}
const running = new Set<KillSync>();
function killAllSync(): void {
  let table: ProcessEntry[];
  try {
    table = listSync();
  } catch {
    table = [];
  }
  let marked = new Map<string, ProcessEntry[]>();
  if (process.platform === "linux") {
    const tokens = new Set<string>();
    let since = Number.POSITIVE_INFINITY;
    for (const server of running) {
      const mark = server.mark();
      if (!mark) continue;
      tokens.add(mark.token);
      since = Math.min(since, mark.since);
    }
    try {
      marked = markedProcessesSync(tokens, table, since);
    } catch {
      // No /proc to read: the trees as the parent links give them.
    }
  }
  for (const server of running) server.kill(table, marked.get(server.mark()?.token ?? "") ?? []);
  running.clear();
  process.off("exit", killAllSync);
}
function track(kill: KillSync): void {
  if (running.size === 0) process.on("exit", killAllSync);
  running.add(kill);
}
function untrack(kill: KillSync): void {
  if (running.delete(kill) && running.size === 0) process.off("exit", killAllSync);
}

/** At most how often a server's answers have its process tree snapshotted again. */
const REFRESH_MS = 1_000;

/**
 * One line of the server's, as a JSON-RPC message. Its objects are put on `ownJson`'s bare
 * prototype before the SDK's schema checks it, and that object is what the SDK is handed. The
 * SDK's own reading (`deserializeMessage`) checks the parsed object, which inherits from
 * `Object.prototype`, with a strict schema that counts inherited enumerable fields as unknown ones:
 * with any field set on `Object.prototype` (prototype pollution) every answer was refused, and every
 * call waited for its timeout. The one schema its own fields name is used, not the SDK's union of
 * four: the union records each option that fails, and zod reads such a record's `path` through the
 * chain (a polluted `Object.prototype.path = true` made every line throw). Throws, as the SDK's
 * reading does, for a line that is no message.
 */
function readMessage(text: string): JSONRPCMessage {
  const message = ownJson(JSON.parse(text) as unknown);
  const has = (name: string) =>
    typeof message === "object" && message !== null && Object.hasOwn(message, name);
  const {
    JSONRPCErrorResponseSchema,
    JSONRPCNotificationSchema,
    JSONRPCRequestSchema,
    JSONRPCResultResponseSchema,
  } = sdk();
  const schema = has("method")
    ? has("id")
      ? JSONRPCRequestSchema
      : JSONRPCNotificationSchema
    : has("error")
      ? JSONRPCErrorResponseSchema
      : JSONRPCResultResponseSchema;
  schema.parse(message);
  return message as JSONRPCMessage;
}

/**
 * An MCP client transport over a child process's stdin and stdout (POSIX), like the SDK's
 * `StdioClientTransport` except in two things. A message longer than `maxMessageBytes` is skipped
 * (the SDK's transport throws and closes): the call it answered gets an error in its place, and
 * the server runs on. And closing it ends the server's whole process tree: a wrapper
 * such as `npx`, the real server under it, and what that started. The server is started as an
 * ordinary child, in the host's process group, so a terminal's Ctrl-C and hang-up reach it as
 * they reach the host. `close()` ends stdin and gives the server {@link CLOSE_TIMINGS}`.eofGraceMs`
 * to exit, waiting also on what its tree held just before (pids, parent links and start times)
 * and, on Linux, on what it starts meanwhile (the tree is read again at each look, in the SIGTERM
 * grace below too);
 * whatever of that and its descendants still runs then is read whole (stopped until no read finds
 * a new process) and SIGTERMed, and after `termGraceMs` what
 * of it still runs is read again, with what it started during that grace, stopped and SIGKILLed
 * (see {@link killTree}); the pipes are let go of after at most `killWaitMs` more, so a process that
 * survives all that cannot keep the host's event loop alive, and a helper the server leaves behind
 * when it exits on EOF goes too. The tree is also snapshotted when the server answers (at most once
 * a second), so the direct child exiting on its own (a wrapper that died) ends what was under it
 * then the same way, and `onclose` follows. On Linux the server is started with
 * {@link TREE_MARK} set to a token of this start, and during the EOF grace every process started
 * with it joins the tree: a helper whose parent died before any read saw it (a daemon's double
 * fork), which no parent link leads to.
 */
export class TreeStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #params: TreeStdioParameters;
  readonly #lines: LineSplitter;
  readonly #stderr = new PassThrough();
  readonly #killSync: KillSync = {
    mark: () => {
      const started = Number(this.#root?.started);
      return Number.isFinite(started) && this.#root?.started
        ? { token: this.#mark, since: started }
        : undefined;
    },
    kill: (table, marked) => this.#killTreeSync(table, marked),
  };
  #process: ChildProcess | undefined;
  /** The one wait for the server's stdin to drain, shared by every send made while it is full. */
  #drained: Promise<void> | undefined;
  #pipesClosed = false;
  #ended = false;
  #closing: Promise<void> | undefined;
  /** When the last snapshot on an answer was started (ms since the epoch). */
  #refreshedAt = Number.NEGATIVE_INFINITY;
  /** The snapshots under way, one after another, so none overwrites a later one's tree. */
  #snapshots: Promise<unknown> = Promise.resolve();
  /** How many runs of #endTree are under way: the exit hook stays until none is. */
  #endingTrees = 0;
  /** The server's process tree as last snapshotted, by pid. */
  #tree = new Map<number, ProcessEntry>();
  /** The started process as seen when it started (off Linux without its start time, until listed). */
  #root: ProcessEntry | undefined;
  /** This start's value of {@link TREE_MARK}, in the server's environment and what it starts. */
  readonly #mark = randomUUID();

  constructor(params: TreeStdioParameters) {
    this.#params = params;
    this.#lines = new LineSplitter(params.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
  }

  /** The server's stderr, there before `start()` so nothing it writes first is missed. */
  get stderr(): PassThrough {
    return this.#stderr;
  }

  /** The pid of the started process (the tree's root), or null before start and after close. */
  get pid(): number | null {
    return this.#process?.pid ?? null;
  }

  start(): Promise<void> {
    if (this.#process || this.#ended) throw new Error("TreeStdioTransport already started");
    // The pool loads the SDK before it builds a transport; one built on its own loads it here.
    const loaded = loadedSdk();
    if (!loaded) return loadSdk().then(() => this.start());
    const { getDefaultEnvironment } = loaded;
    return new Promise((resolve, reject) => {
      const child = spawn(this.#params.command, this.#params.args ?? [], {
        env: { ...getDefaultEnvironment(), ...this.#params.env, [TREE_MARK]: this.#mark },
        stdio: ["pipe", "pipe", "pipe"],
        shell: false,
        ...(this.#params.cwd ? { cwd: this.#params.cwd } : {}),
      });
      this.#process = child;
      // `pid` is set as `spawn()` returns when the process was started (undefined when it could not
      // be; the error event follows). The exit hook and the reaper hear of it now, in this
      // synchronous block, not at the spawn event a turn later: a host killed before that turn (by
      // SIGKILL right after `pool.connect()`) has the server's pid in the reaper's pipe already,
      // where it outlives the host. The start time is read now too: the process exists (exec'd, or
      // at worst a zombie no one has waited for, since that happens on the event loop), so its
      // /proc entry is there. Where it cannot be read (off Linux, or /proc unreadable) it goes as
      // "", and the reaper fills it in from its own listing before it acts.
      if (child.pid !== undefined) {
        track(this.#killSync);
        this.#root = (process.platform === "linux" ? procEntry(child.pid) : undefined) ?? unlisted(child.pid);
        this.#report();
      }
      child.on("error", (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.once("spawn", () => resolve());
      child.once("exit", () => {
        // The root is gone (a wrapper, or the server itself): whatever was under it goes too.
        if (!this.#ended) void this.#endTree(child, false);
      });
      child.once("close", () => {
        this.#pipesClosed = true;
        // A close under way reports the close itself, once the whole tree has ended.
        if (!this.#closing) this.#finish();
      });
      child.stdin?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("data", (chunk: Buffer) => {
        for (const line of this.#lines.push(chunk)) {
          if (isSkipped(line)) {
            this.#oversized(line);
            continue;
          }
          let message: JSONRPCMessage;
          try {
            message = readMessage(line.text.replace(/\r$/, ""));
          } catch (error) {
            this.onerror?.(error as Error);
            continue;
          }
          if (!this.#ended && Date.now() - this.#refreshedAt >= REFRESH_MS) {
            // The process that answered runs by now: note the tree (again, at most once a second,
            // for what it started since), for a root that dies on its own. On Linux at once, by a
            // walk of the tree's own /proc files, before whoever gets the answer can act on it.
            this.#refreshedAt = Date.now();
            if (process.platform === "linux" && hasChildrenFiles()) this.#snapshotSync();
            else void this.#snapshot().catch(() => {});
          }
          this.onmessage?.(message);
        }
      });
      child.stderr?.pipe(this.#stderr);
    });
  }

  /**
   * A line too long to take was skipped: the request it answers (found from its ends) gets a
   * {@link MESSAGE_TOO_LARGE} error in its place, so that call fails at once, and `onerror` hears
   * of it either way.
   */
  #oversized(line: { bytes: number; head: string; tail: string }): void {
    const limit = this.#lines.limit;
    const id = answeredId(line.head, line.tail);
    this.onerror?.(new OversizedMessageError(line.bytes, limit, id !== undefined));
    if (id === undefined) return;
    const data: OversizedData = { loopwrightOversized: true, bytes: line.bytes, limit };
    this.onmessage?.({
      jsonrpc: "2.0",
      id,
      error: {
        code: MESSAGE_TOO_LARGE,
        message: `the answer was a message of ${line.bytes} bytes, more than maxMessageBytes (${limit}) allows, so it was skipped`,
        data,
      },
    });
  }

  /**
   * Writes a message to the server's stdin. Resolves at once while the pipe takes more, else once
   * it has drained (or the pipe has closed or failed: the message is then lost with the
   * connection, whose close fails the request). Every send made while the pipe is full waits on
   * one `drain` listener, however many there are: a server slow to read its stdin, sent many calls
   * together, left one listener each (a MaxListenersExceededWarning past ten).
   */
  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#ended ? undefined : this.#process?.stdin;
    if (!stdin || stdin.destroyed) return Promise.reject(new Error("Not connected"));
    if (stdin.write(sdk().serializeMessage(message))) return Promise.resolve();
    this.#drained ??= new Promise<void>((resolve) => {
      const done = () => {
        stdin.off("drain", done);
        stdin.off("close", done);
        stdin.off("error", done);
        this.#drained = undefined;
        resolve();
      };
      stdin.on("drain", done);
      stdin.on("close", done);
      stdin.on("error", done);
    });
    return this.#drained;
  }

  /**
   * Ends the server's whole process tree (see the class) and resolves once it is let go of. Every
   * call, a second one while the first still runs too, gets the one close's promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const child = this.#process;
    if (!child || this.#ended) {
      this.#finish();
      return;
    }
    this.#ended = true;
    // Before stdin ends: what the server started since its last snapshot, which it may leave
    // behind (given to init, out of reach of a later snapshot) when it exits on EOF.
    await this.#snapshot().catch(() => {});
    try {
      child.stdin?.end();
    } catch {
      // Its stdin is already gone.
    }
    await this.#endTree(child, true);
    this.#finish();
  }

  /** Whether the started process itself has exited. */
  #exited(child: ChildProcess): boolean {
    return child.exitCode !== null || child.signalCode !== null;
  }

  /**
   * Snapshots the tree again: the processes of the last snapshot that still run, the started
   * process while it runs, and every descendant of them now. Returns the snapshot, verified
   * against the same listing (so no pid a new process took over is in it).
   */
  #snapshot(): Promise<ProcessEntry[]> {
    const taken = this.#snapshots.then(() => this.#snapshotNow());
    this.#snapshots = taken.catch(() => {});
    return taken;
  }

  async #snapshotNow(): Promise<ProcessEntry[]> {
    return this.#snapshotFrom(await listTree(this.#candidates()));
  }

  /** {@link #snapshotNow} at once, by {@link listTreeSync} (Linux with children files only). */
  #snapshotSync(): void {
    this.#snapshotFrom(listTreeSync(this.#candidates()));
  }

  /** The pids a snapshot walks down from: the last snapshot's, and the started process. */
  #candidates(): number[] {
    const child = this.#process;
    const candidates = [...this.#tree.keys()];
    if (child?.pid !== undefined && !this.#exited(child)) candidates.push(child.pid);
    return candidates;
  }

  /**
   * The pids a tree is read down from in `table`: the last snapshot's processes that still run
   * there, and the started process while it runs.
   */
  #roots(byPid: ReadonlyMap<number, ProcessEntry>): number[] {
    const child = this.#process;
    const roots = [...this.#tree.values()].filter((entry) => alive(entry, byPid)).map((entry) => entry.pid);
    if (child?.pid !== undefined && !this.#exited(child)) roots.push(child.pid);
    return roots;
  }

  #snapshotFrom(table: readonly ProcessEntry[]): ProcessEntry[] {
    const roots = this.#roots(new Map(table.map((entry) => [entry.pid, entry])));
    const tree = treeOf(roots, table).filter((entry) => !entry.zombie);
    this.#tree = new Map(tree.map((entry) => [entry.pid, entry]));
    this.#report();
    return tree;
  }

  /**
   * Tells the reaper the server's processes: the last snapshot, and the started process while it
   * runs and is not in one yet.
   */
  #report(): void {
    const reaper = this.#params.reaper;
    if (!reaper) return;
    const entries = [...this.#tree.values()];
    const child = this.#process;
    const root = this.#root;
    if (root && !this.#tree.has(root.pid) && child && !this.#exited(child)) entries.push(root);
    reaper.set(entries, process.platform === "linux" ? this.#mark : undefined);
  }

  /**
   * Linux: joins to the tree every process started with this start's {@link TREE_MARK} that it
   * does not hold: one whose parent died before any read saw it (a helper started the way a daemon
   * starts, `sh -c 'helper &'`, as the server started or between two reads), given to init and
   * out of reach of the parent links. The tree's later reads walk down from it too.
   */
  #adoptMarked(): Promise<void> {
    if (process.platform !== "linux") return Promise.resolve();
    // In line with the snapshots, so none read before it overwrites the tree it joins to.
    const adopted = this.#snapshots.then(async () => {
      let marked: ProcessEntry[];
      try {
        marked = await markedProcesses(this.#mark);
      } catch {
        return; // No /proc to read: the tree as the parent links give it.
      }
      const fresh = marked.filter((entry) => this.#tree.get(entry.pid)?.started !== entry.started);
      if (fresh.length === 0) return;
      for (const entry of fresh) this.#tree.set(entry.pid, entry);
      this.#report();
    });
    this.#snapshots = adopted.catch(() => {});
    return adopted;
  }

  /** The tree has ended (or the server never started): the exit hook and the reaper let it go. */
  #release(): void {
    untrack(this.#killSync);
    this.#params.reaper?.gone();
  }

  /**
   * For the host's `exit`: SIGKILLs the server's tree, found in `table` (every process, now), with
   * `marked`, the processes started with this start's {@link TREE_MARK}, and what they started.
   */
  #killTreeSync(table: readonly ProcessEntry[], marked: readonly ProcessEntry[]): void {
    const child = this.#process;
    const byPid = new Map(table.map((entry) => [entry.pid, entry]));
    // Even with no listing (no `ps`), the started process itself.
    if (child?.pid !== undefined && !this.#exited(child) && !byPid.has(child.pid))
      signalAll([unlisted(child.pid)], "SIGKILL");
    signalAll(treeOf([...this.#roots(byPid), ...marked.map((entry) => entry.pid)], table), "SIGKILL");
  }

  /**
   * On close (`eof`), gives the server the EOF grace to exit with everything of the snapshot
   * taken before its stdin ended; then snapshots what of its tree still runs, stopped until whole
   * ({@link termTree}), and SIGTERMs it, watching the tree during that grace as during the EOF
   * grace (Linux), so what a SIGTERM handler starts joins the snapshot;
   * after the SIGTERM grace snapshots again what of that still runs, with what it started since,
   * and stops and SIGKILLs it all ({@link killTree}); and lets go of the pipes once those are gone
   * and the pipes close (or after `killWaitMs`, when a process outside the tree holds them).
   */
  async #endTree(child: ChildProcess, eof: boolean): Promise<void> {
    this.#endingTrees++;
    try {
      await this.#endTreeOnce(child, eof);
    } finally {
      // The exit hook stays while another run may still be between SIGTERM and SIGKILL.
      if (--this.#endingTrees === 0) this.#release();
    }
  }

  async #endTreeOnce(child: ChildProcess, eof: boolean): Promise<void> {
    const { eofGraceMs, termGraceMs, killWaitMs } = CLOSE_TIMINGS;
    // Read during the EOF grace (every process's environ file: tens of ms on a busy host), in line
    // with the snapshots, so the one after the grace has what it found.
    this.#adoptMarked().catch(() => {});
    const known = () => [...this.#tree.values()];
    // On Linux with children files the tree is read again at each look (its own /proc files), so
    // a child the server starts on EOF and leaves behind as it exits is kept, though init has it.
    const watch = process.platform === "linux" && hasChildrenFiles();
    if (eof)
      await until(() => {
        if (watch) this.#snapshotSync();
        return this.#exited(child) && this.#pipesClosed && !known().some((entry) => alive(entry));
      }, eofGraceMs);
    let snapshot: ProcessEntry[] = [];
    try {
      snapshot = await this.#snapshot();
    } catch {
      // No listing (no `ps`): the started process alone, if it still runs.
      if (child.pid !== undefined && !this.#exited(child)) snapshot = [unlisted(child.pid)];
    }
    const live = (entry: ProcessEntry, table?: ReadonlyMap<number, ProcessEntry>) =>
      entry.started ? alive(entry, table) : !this.#exited(child);
    let killed: ProcessEntry[] = [];
    const anyAlive = () => snapshot.some((entry) => live(entry)) || killed.some((entry) => alive(entry));
    if (anyAlive()) {
      // Stopped and read again until whole (see stopTree) before the SIGTERM, so a child started
      // just now is SIGTERMed with its parent instead of being left to init when the parent dies.
      try {
        snapshot = await termTree(snapshot, () => this.#snapshot());
      } catch {
        // No listing (no `ps`): the snapshot as it was.
        signalAll(snapshot, "SIGTERM");
      }
      // Watched as the EOF grace is: a child a SIGTERM handler starts joins the snapshot at the
      // next look, so it is waited on and SIGKILLed with the rest, though its parent exits at once.
      const termed = () => {
        if (watch) {
          this.#snapshotSync();
          const had = new Set(snapshot.map((entry) => `${entry.pid}:${entry.started}`));
          for (const entry of known()) if (!had.has(`${entry.pid}:${entry.started}`)) snapshot.push(entry);
        }
        return !anyAlive();
      };
      if (!(await until(termed, termGraceMs))) {
        // What still runs is read again, with what it started during the grace (a SIGTERM
        // handler's child), stopped and SIGKILLed. The reads check start times against a listing
        // now (off Linux the poll above only asks whether a pid exists), so no process that has
        // since taken a pid of the snapshot is signalled.
        try {
          killed = await killTree(snapshot, () => this.#snapshot());
        } catch {
          // No listing (no `ps`): the snapshot as it was, what of it still runs.
          signalAll(
            snapshot.filter((entry) => live(entry)),
            "SIGKILL",
          );
        }
      }
    }
    // One wait, of at most killWaitMs, for the killed processes to go and the pipes to close: so a
    // close takes at most eofGraceMs + termGraceMs + killWaitMs (1.25 s), plus a poll's lateness.
    await until(() => this.#pipesClosed && !anyAlive(), killWaitMs);
    child.stdin?.destroy();
    child.stdout?.destroy();
    child.stderr?.destroy();
  }

  #finish(): void {
    const child = this.#process;
    this.#process = undefined;
    this.#lines.clear();
    if (!child && this.#ended) return;
    this.#ended = true;
    if (this.#endingTrees === 0) this.#release();
    this.onclose?.();
  }
}
