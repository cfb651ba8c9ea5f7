import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { PassThrough } from "node:stream";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/**
 * How long a closed server has after its stdin ends to exit on its own, then how long its process
 * group has after SIGTERM before SIGKILL, then how long the host waits for the killed processes to
 * go and their pipes to close before it lets go of the pipes. A server that exits on stdin EOF
 * closes within the first; one that does not is gone, and the close over, within their sum, 1.25 s.
 */
export const CLOSE_TIMINGS = { eofGraceMs: 500, termGraceMs: 500, killWaitMs: 250 } as const;

/** What the transport starts: the stdio entry of a server, as the pool resolved it. */
export interface GroupStdioParameters {
  command: string;
  args?: string[];
  /** Set on top of the SDK's small safe default environment (`getDefaultEnvironment()`). */
  env?: Record<string, string>;
  cwd?: string;
}

/**
 * Process groups still running, by their leader's pid. While one runs, the host's `exit` ends them
 * (SIGKILL, synchronously, the only way there), so a host that exits without closing its pool
 * leaves no server behind; and so do SIGINT, SIGTERM and SIGHUP when the host does not handle them.
 */
const running = new Set<number>();
function killAllSync(): void {
  for (const pid of running) signalGroup(pid, "SIGKILL");
  running.clear();
  unlisten();
}

/**
 * The signals a server used to get along with its host when they shared the terminal's process
 * group: Ctrl-C (SIGINT), the terminal closing (SIGHUP), and SIGTERM, which a host's supervisor
 * may send to its whole group. A server in a group of its own no longer does, so while one runs,
 * and only for a signal the host has no listener of its own for, we listen for it: the host is
 * about to die of it, so its servers' groups are SIGKILLed (a SIGTERM would leave a process that
 * ignores it running, and a dying host cannot wait to follow it up), our listeners go, and the
 * signal is raised again, so that the host dies of it exactly as it would have.
 */
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
const listening = new Map<NodeJS.Signals, (signal: NodeJS.Signals) => void>();
function listen(): void {
  if (running.size === 0) process.on("exit", killAllSync);
  for (const signal of FORWARDED) {
    if (listening.has(signal) || process.listenerCount(signal) > 0) continue;
    const onSignal = (received: NodeJS.Signals) => {
      // The host added a handler of its own since: the signal is its to handle.
      if (process.listeners(received).some((listener) => listener !== onSignal)) return;
      killAllSync();
      process.kill(process.pid, received);
    };
    listening.set(signal, onSignal);
    process.on(signal, onSignal);
  }
}
function unlisten(): void {
  process.off("exit", killAllSync);
  for (const [signal, onSignal] of listening) process.off(signal, onSignal);
  listening.clear();
}
function track(pid: number): void {
  listen();
  running.add(pid);
}
function untrack(pid: number): void {
  if (running.delete(pid) && running.size === 0) unlisten();
}

/** How often a closing transport looks whether its group has ended. */
const POLL_MS = 20;

/** Signals every process in the group `pid` leads (0: none, only asks); false when none is left. */
function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** A process's state and process group from its /proc stat, or undefined once it is gone. */
function procStat(pid: number | string): { state: string; group: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
  // After the command's closing parenthesis: state, ppid, process group.
  const [state = "", , group] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { state, group: Number(group) };
}

/**
 * A check of whether any process of the group `pid` leads still runs. On Linux a zombie does not
 * count: it runs nothing and only waits to be reaped, which a slow init (or a host running as pid
 * 1) may leave for seconds. Elsewhere, whether the group has any process at all. On Linux the
 * first check reads every /proc/<pid>/stat to learn the group's members; later ones (a close polls
 * every {@link POLL_MS} while a stubborn process outlives SIGTERM) read only those members', and
 * the whole of /proc again only once none of them runs, to find any the members started since.
 */
function groupWatch(pid: number): () => boolean {
  let members: number[] = [];
  const member = (candidate: number | string) => {
    const stat = procStat(candidate);
    return stat !== undefined && stat.group === pid && stat.state !== "Z";
  };
  return () => {
    if (!signalGroup(pid, 0)) return false;
    if (process.platform !== "linux") return true;
    if (members.some(member)) return true;
    let entries: string[];
    try {
      entries = readdirSync("/proc");
    } catch {
      return true;
    }
    members = entries.filter((entry) => /^\d+$/.test(entry) && member(entry)).map(Number);
    return members.length > 0;
  };
}

/**
 * An MCP client transport over a child process's stdin and stdout (POSIX), like the SDK's
 * `StdioClientTransport` except that the process is started as the leader of its own process
 * group, so the server and everything it starts (a wrapper such as `npx` and the real server
 * under it) are ended together. `close()` ends stdin, gives the server
 * {@link CLOSE_TIMINGS}`.eofGraceMs` to exit, then SIGTERMs the group, then SIGKILLs it, and lets
 * go of the pipes, so a process that survives all that cannot keep the host's event loop alive.
 * The direct child exiting on its own ends the rest of its group the same way (SIGTERM, then
 * SIGKILL), and `onclose` follows once its pipes close.
 */
export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #params: GroupStdioParameters;
  readonly #readBuffer = new ReadBuffer();
  readonly #stderr = new PassThrough();
  #process: ChildProcess | undefined;
  #pipesClosed = false;
  #ended = false;
  #closing: Promise<void> | undefined;

  constructor(params: GroupStdioParameters) {
    this.#params = params;
  }

  /** The server's stderr, there before `start()` so nothing it writes first is missed. */
  get stderr(): PassThrough {
    return this.#stderr;
  }

  /** The pid of the started process (the group's leader), or null before start and after close. */
  get pid(): number | null {
    return this.#process?.pid ?? null;
  }

  start(): Promise<void> {
    if (this.#process || this.#ended) throw new Error("GroupStdioTransport already started");
    return new Promise((resolve, reject) => {
      const child = spawn(this.#params.command, this.#params.args ?? [], {
        env: { ...getDefaultEnvironment(), ...this.#params.env },
        stdio: ["pipe", "pipe", "pipe"],
        shell: false,
        detached: true,
        ...(this.#params.cwd ? { cwd: this.#params.cwd } : {}),
      });
      this.#process = child;
      child.on("error", (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.once("spawn", () => {
        if (child.pid !== undefined) track(child.pid);
        resolve();
      });
      child.once("exit", () => {
        // The leader is gone (a wrapper, or the server itself): whatever it left running goes too.
        if (!this.#ended && child.pid !== undefined) void this.#endGroup(child, child.pid);
      });
      child.once("close", () => {
        this.#pipesClosed = true;
        // A close under way reports the close itself, once the whole group has ended.
        if (!this.#closing) this.#finish();
      });
      child.stdin?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("data", (chunk: Buffer) => {
        try {
          this.#readBuffer.append(chunk);
        } catch (error) {
          this.onerror?.(error as Error);
          void this.close();
          return;
        }
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.#readBuffer.readMessage();
          } catch (error) {
            this.onerror?.(error as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      child.stderr?.pipe(this.#stderr);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#ended ? undefined : this.#process?.stdin;
    if (!stdin || stdin.destroyed) return Promise.reject(new Error("Not connected"));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /**
   * Ends the server's whole process group (see the class) and resolves once it is let go of. Every
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
    try {
      child.stdin?.end();
    } catch {
      // Its stdin is already gone.
    }
    if (child.pid !== undefined) await this.#endGroup(child, child.pid);
    this.#finish();
  }

  /**
   * Gives the server the EOF grace to exit (none when its leader has exited already), then SIGTERMs
   * what is left of its group, then SIGKILLs what is left, then lets go of the pipes once the group
   * is gone and they close (or after `killWaitMs` when a process that left the group holds them).
   */
  async #endGroup(child: ChildProcess, pid: number): Promise<void> {
    const until = async (done: () => boolean, ms: number) => {
      const deadline = Date.now() + ms;
      while (!done()) {
        const left = deadline - Date.now();
        if (left <= 0) return false;
        await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, left)));
      }
      return true;
    };
    const exited = () => child.exitCode !== null || child.signalCode !== null;
    const groupRuns = groupWatch(pid);
    const empty = () => !groupRuns();
    const { eofGraceMs, termGraceMs, killWaitMs } = CLOSE_TIMINGS;
    if (!exited()) await until(() => exited() && this.#pipesClosed, eofGraceMs);
    if (!empty()) {
      signalGroup(pid, "SIGTERM");
      if (!(await until(empty, termGraceMs))) signalGroup(pid, "SIGKILL");
    }
    // One wait, of at most killWaitMs, for the killed processes to go and the pipes to close: so a
    // close takes at most eofGraceMs + termGraceMs + killWaitMs (1.25 s), plus a poll's lateness.
    await until(() => this.#pipesClosed && empty(), killWaitMs);
    untrack(pid);
    child.stdin?.destroy();
    child.stdout?.destroy();
    child.stderr?.destroy();
  }

  #finish(): void {
    const child = this.#process;
    this.#process = undefined;
    this.#readBuffer.clear();
    if (!child && this.#ended) return;
    this.#ended = true;
    this.onclose?.();
  }
}
