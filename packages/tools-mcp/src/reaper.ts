// A pool's reaper, seen from the host: the process (reaper-process.ts) that ends the pool's stdio
// servers' process trees if the host dies without doing so itself (SIGKILL). Started by the pool's
// `connect()` before it spawns its first stdio server (or, for a server started otherwise, by that
// server's first report), told each server's processes in the same synchronous block as `spawn()`
// returns and as the transport snapshots them, and when each server is gone, and sent a clean
// "bye" when the last one is.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import type { Socket } from "node:net";
import { fileURLToPath } from "node:url";
import type { ProcessEntry } from "./process-table.js";

/**
 * The reaper's script: beside this module in the built package (`dist/reaper-process.js`), or
 * undefined when it is not there (this module run from its source, or bundled without it), and
 * then no reaper is started.
 */
let script: string | null | undefined;
function reaperScript(): string | undefined {
  if (script === undefined) {
    try {
      const path = fileURLToPath(new URL("./reaper-process.js", import.meta.url));
      script = existsSync(path) ? path : null;
    } catch {
      script = null;
    }
  }
  return script ?? undefined;
}

/** A reaper that exits on its own this many times while servers ran is not started again. */
const MAX_UNEXPECTED_EXITS = 3;

/** What one stdio server's transport tells the reaper. */
export interface ReaperLink {
  /**
   * The server's processes now (pid and start time; "" when not known yet, off Linux), and the
   * value of `LOOPWRIGHT_MCP_TREE` it was started with (Linux), by which the reaper also finds what
   * it started that went to init before any snapshot saw it.
   */
  set(entries: readonly ProcessEntry[], mark?: string): void;
  /** The server's tree has been ended (or never started): nothing of it is to be reaped. */
  gone(): void;
}

/**
 * One per pool (POSIX). The reaper process runs while at least one of the pool's stdio servers
 * does: it is started detached (a session and process group of its own, so a Ctrl-C to the host's
 * group does not end it before it can act), with its stdin a pipe from the host and no other
 * stdio, and unreferenced (it and its pipe keep no host event loop alive).
 */
export class Reaper {
  readonly #script: string;
  #child: ChildProcess | undefined;
  /** The processes of each running server (and its tree mark), by the id its link was given. */
  readonly #servers = new Map<number, { entries: readonly ProcessEntry[]; mark: string | undefined }>();
  #ids = 0;
  #unexpectedExits = 0;

  /** A reaper for a pool, or undefined where none is started (Windows, no script beside this module). */
  static create(): Reaper | undefined {
    const path = process.platform === "win32" ? undefined : reaperScript();
    return path ? new Reaper(path) : undefined;
  }

  constructor(scriptPath: string) {
    this.#script = scriptPath;
  }

  /** The pid of the reaper process running now, if any. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /**
   * Starts the reaper process now, if none runs, so that the servers spawned next are written to
   * its pipe in the same synchronous block as their `spawn()` returns: a host killed right after
   * that leaves none of them unlisted. Called by the pool before it spawns stdio servers; a reaper
   * started so for servers that then never ran is sent away by {@link idle}.
   */
  start(): void {
    if (!this.#child) this.#start();
  }

  /** Sends the reaper away if no server is listed (after a connect that spawned none that runs). */
  idle(): void {
    if (this.#servers.size === 0) this.#bye();
  }

  /** A link for one server; once told `gone`, it says nothing more. */
  link(): ReaperLink {
    const id = ++this.#ids;
    let done = false;
    return {
      set: (entries, mark) => {
        if (done) return;
        const server = { entries: [...entries], mark };
        this.#servers.set(id, server);
        this.#send(setMessage(id, server));
      },
      gone: () => {
        if (done) return;
        done = true;
        if (!this.#servers.delete(id)) return;
        if (this.#servers.size > 0) this.#send({ gone: id });
        else this.#bye();
      },
    };
  }

  /** Sends a message, starting the reaper first (with every server's processes) when none runs. */
  #send(message: object): void {
    const child = this.#child;
    if (child) write(child, message);
    else this.#start();
  }

  #start(): void {
    if (this.#unexpectedExits >= MAX_UNEXPECTED_EXITS) return;
    const env = { ...process.env };
    // Options meant for the host (an inspector port, a loader) are not the reaper's.
    delete env.NODE_OPTIONS;
    // In Electron (an editor's extension host), its binary runs the script as Node only when told.
    if (process.versions.electron) env.ELECTRON_RUN_AS_NODE = "1";
    let child: ChildProcess;
    try {
      child = spawn(process.execPath, [this.#script], {
        detached: true,
        stdio: ["pipe", "ignore", "ignore"],
        cwd: "/",
        env,
      });
    } catch {
      this.#unexpectedExits++;
      return;
    }
    this.#child = child;
    const lost = () => {
      if (this.#child !== child) return;
      // Not asked to go: the next message starts another, told everything again.
      this.#child = undefined;
      this.#unexpectedExits++;
    };
    child.once("error", lost);
    child.once("exit", lost);
    child.stdin?.on("error", () => {});
    child.unref();
    (child.stdin as Socket | null)?.unref?.();
    for (const [id, server] of this.#servers) write(child, setMessage(id, server));
  }

  /** No server left: a clean bye, and the reaper exits as its stdin ends. */
  #bye(): void {
    const child = this.#child;
    this.#child = undefined;
    if (!child) return;
    write(child, { bye: true });
    child.stdin?.end();
  }
}

/** The line telling the reaper one server's processes, and its tree mark where it has one. */
function setMessage(
  id: number,
  server: { entries: readonly ProcessEntry[]; mark: string | undefined },
): object {
  const procs = server.entries.map((entry) => [entry.pid, entry.started]);
  return server.mark === undefined ? { set: id, procs } : { set: id, procs, mark: server.mark };
}

function write(child: ChildProcess, message: object): void {
  const stdin = child.stdin;
  if (!stdin || stdin.destroyed || stdin.writableEnded) return;
  stdin.write(`${JSON.stringify(message)}\n`);
}
