// A host killed by SIGKILL runs nothing of its own, so its stdio servers would outlive it: the
// pool's reaper ends them. Real processes only: test/reaper-host.mjs on the built package, the
// lingering server, server-everything behind sh. Split from stdio-close.test.ts so the two files'
// waits run side by side.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { exited, killHosts, type Pids, startHost } from "../test/hosts.js";
import {
  commandLine,
  descendants,
  groupOf,
  pidsWritten,
  running,
  startTime,
  stillRunning,
} from "../test/processes.js";
import { NODE } from "../test/support.js";

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
afterEach(() => killHosts());

// A host killed by SIGKILL runs nothing of its own, so a server that ignores stdin EOF would run
// on: the pool's reaper (a process of its own, from the built package's dist/reaper-process.js)
// ends it. The host here is test/reaper-host.mjs on dist/ (`pnpm build` first).
describe.skipIf(process.platform !== "linux")("a host's reaper", () => {
  const REAPER_HOST = here("../test/reaper-host.mjs");
  const REAPER_SCRIPT = here("../dist/reaper-process.js");
  type HostPids = Pids & { bystander: number };
  const needBuild = () => {
    if (!existsSync(REAPER_SCRIPT))
      throw new Error("dist/reaper-process.js is missing: run `pnpm build` in packages/tools-mcp first.");
  };
  function startReaperHost(mode: "wait" | "close" | "exit", ...args: string[]) {
    needBuild();
    const started = startHost(mode, { path: REAPER_HOST, args });
    return { ...started, pids: started.pids as Promise<HostPids> };
  }
  /** The reaper processes the host started (its children running dist/reaper-process.js). */
  const reapersOf = (host: ChildProcess) =>
    descendants(host.pid as number).filter((pid) => commandLine(pid).includes(REAPER_SCRIPT));

  it("ends the servers of a host killed by SIGKILL, and nothing else of the host's", async () => {
    const { host, pids } = startReaperHost("wait");
    const { wrapper, server, child, bystander } = await pids;
    const reapers = reapersOf(host);
    expect(reapers).toHaveLength(1);
    const reaper = reapers[0] as number;
    // In a session of its own (so a group's Ctrl-C does not reach it), outside the server's tree.
    expect(groupOf(reaper)?.session).toBe(reaper);
    expect(groupOf(reaper)?.group).not.toBe(host.pid);
    expect(descendants(wrapper)).not.toContain(reaper);
    process.kill(host.pid as number, "SIGKILL");
    expect(await exited(host)).toEqual({ code: null, signal: "SIGKILL" });
    expect(await stillRunning([wrapper, server, child], 10_000)).toEqual([]);
    expect(await stillRunning([reaper], 5_000)).toEqual([]);
    // A process the host started outside its pool is not the reaper's (afterEach ends it, with
    // the host's group).
    expect(running(bystander)).toBe(true);
  });

  it("ends a child the server starts in its SIGTERM handler, during the reaper's SIGTERM grace, when its host is killed by SIGKILL", async () => {
    // The server handles SIGTERM by starting `sleep 600` and running on: the child is not in any
    // tree the reaper read before its SIGTERM, and outlives the server's SIGKILL unless the reaper
    // reads the tree again first.
    const dir = mkdtempSync(join(tmpdir(), "lw-termchild-"));
    const file = join(dir, "late");
    let late: number[] = [];
    try {
      const { host, pids } = startReaperHost("wait", "--term-child", file);
      const { wrapper, server, child } = await pids;
      process.kill(host.pid as number, "SIGKILL");
      await exited(host);
      // The reaper's EOF grace, then its SIGTERM: the handler writes the late child's pid.
      late = await pidsWritten(file);
      expect(late).toHaveLength(1);
      expect(await stillRunning([wrapper, server, child, ...late], 10_000)).toEqual([]);
    } finally {
      // afterEach ends the host's group (the late child is in it) too.
      for (const pid of late) if (running(pid)) process.kill(pid, "SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("ends a child the server starts 100 ms after stdin EOF and leaves behind when it exits 200 ms later, when its host is killed by SIGKILL", async () => {
    // The child is in no tree the reaper read when the host died, and init has it by the end of
    // the EOF grace: only a read of the tree during the grace finds it.
    const dir = mkdtempSync(join(tmpdir(), "lw-eofchild-"));
    const file = join(dir, "late");
    let late: number[] = [];
    try {
      const { host, pids } = startReaperHost("wait", "--eof-child", file);
      const { wrapper, server, child } = await pids;
      process.kill(host.pid as number, "SIGKILL");
      await exited(host);
      late = await pidsWritten(file);
      expect(late).toHaveLength(1);
      expect(await stillRunning([wrapper, server, child, ...late], 10_000)).toEqual([]);
    } finally {
      for (const pid of late) if (running(pid)) process.kill(pid, "SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /**
   * Runs test/selfkill-host.mjs in `mode`: it calls pool.connect() and SIGKILLs itself in the same
   * synchronous block. Resolves to the server's "<sh pid> <sleep pid>" as it wrote them (waiting up
   * to `waitMs` for the file), or "" when it wrote none; the folder is removed after `check`.
   */
  async function afterSelfKill(mode: string, waitMs: number, check: (text: string) => Promise<void>) {
    needBuild();
    const dir = mkdtempSync(join(tmpdir(), "lw-selfkill-"));
    try {
      const pidFile = join(dir, "pids");
      const { host, pids } = startHost(mode, { path: here("../test/selfkill-host.mjs"), args: [pidFile] });
      pids.catch(() => {}); // it prints none
      expect(await exited(host)).toEqual({ code: null, signal: "SIGKILL" });
      let text = "";
      for (const deadline = Date.now() + waitMs; !text && Date.now() < deadline; ) {
        text = existsSync(pidFile) ? readFileSync(pidFile, "utf8").trim() : "";
        if (!text) await new Promise((r) => setTimeout(r, 20));
      }
      await check(text);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it("ends a server that ignores EOF and SIGTERM when its host SIGKILLs itself in the same synchronous block as pool.connect()", async () => {
    // The host dies before any event-loop turn: before the server's spawn event, its handshake, or
    // anything the host could print. It connected a server before, so the MCP SDK (loaded on a
    // first connect) is there and this connect spawns at once. The server's pids come from a file
    // the server writes.
    await afterSelfKill("selfkill-warm", 10_000, async (text) => {
      const tree = text.split(" ").map(Number);
      expect(tree).toHaveLength(2);
      // The reaper ends it within its graces (about 1 s) plus its own start; afterEach ends what
      // is left (with the host's group) when it does not.
      expect(await stillRunning(tree, 10_000)).toEqual([]);
    });
  });

  it("starts no server when the host's first pool.connect() is followed by a SIGKILL in the same synchronous block", async () => {
    // The first connect in a process loads the MCP SDK before it spawns: a host killed at once has
    // started nothing, so nothing outlives it (no pid file is ever written).
    await afterSelfKill("selfkill", 1_500, async (text) => {
      expect(text).toBe("");
    });
  });

  it("is started by connect() before the servers, and sent away when none of them could be started", async () => {
    needBuild();
    const { createMcpPool } = (await import(here("../dist/index.js"))) as typeof import("./index.js");
    // spawn() throws at once (an argument with a NUL byte): the transport never had a process to
    // tell the reaper of, nor to say is gone.
    const pool = createMcpPool([{ name: "unstartable", command: "sh", args: ["-c", "exit 0", "a\u0000b"] }]);
    try {
      const connecting = pool.connect();
      // Started in connect()'s synchronous part, before the (failing) spawn.
      const reapers = descendants(process.pid).filter((pid) => commandLine(pid).includes(REAPER_SCRIPT));
      expect(reapers).toHaveLength(1);
      expect((await connecting)[0]?.state).toBe("failed");
      expect(await stillRunning(reapers)).toEqual([]);
    } finally {
      await pool.close();
    }
  });

  it("ends server-everything behind sh, whose research task's timers outlive stdin EOF, when its host is killed by SIGKILL", async () => {
    const { host, pids } = startReaperHost("wait", "--everything");
    const { wrapper } = await pids;
    const tree = [wrapper, ...descendants(wrapper)];
    expect(tree.length).toBeGreaterThanOrEqual(2);
    process.kill(host.pid as number, "SIGKILL");
    await exited(host);
    expect(await stillRunning(tree, 10_000)).toEqual([]);
  });

  it("signals only a listed process with the start time listed: a pid taken over by another process is left alone", async () => {
    // The reaper run by itself: told of two processes, one of them with a start time it does not
    // have now (as when its pid has been given to a new process), then its stdin ends with no bye.
    needBuild();
    const victim = spawn(NODE, ["-e", "setTimeout(() => {}, 120_000)"], { stdio: "ignore" });
    const stranger = spawn(NODE, ["-e", "setTimeout(() => {}, 120_000)"], { stdio: "ignore" });
    try {
      await new Promise((r) => setTimeout(r, 100));
      const [v, s] = [victim.pid as number, stranger.pid as number];
      const reaper = spawn(NODE, [REAPER_SCRIPT], { stdio: ["pipe", "ignore", "inherit"] });
      const gone = exited(reaper);
      const before = String(Number(startTime(s)) - 1);
      reaper.stdin?.end(
        `${JSON.stringify({
          set: 1,
          procs: [
            [v, startTime(v)],
            [s, before],
          ],
        })}\n`,
      );
      expect(await gone).toEqual({ code: 0, signal: null });
      expect(running(v)).toBe(false);
      expect(running(s)).toBe(true);
    } finally {
      victim.kill("SIGKILL");
      stranger.kill("SIGKILL");
    }
  });

  it("with reaper: false starts none, and a server that ignores stdin EOF outlives a host killed by SIGKILL", async () => {
    const { host, pids } = startReaperHost("wait", "--no-reaper");
    const { wrapper, server, child } = await pids;
    expect(reapersOf(host)).toEqual([]);
    process.kill(host.pid as number, "SIGKILL");
    await exited(host);
    // Longer than a reaper would take (1 s of graces); afterEach ends them, with the host's group.
    await new Promise((r) => setTimeout(r, 2_500));
    expect([wrapper, server, child].filter(running)).toEqual([wrapper, server, child]);
  });

  it("is sent away when the pool closes: none runs after, and the host exits on its own", async () => {
    const { host, pids, output } = startReaperHost("close");
    const { wrapper, server, child } = await pids;
    const reapers = reapersOf(host);
    expect(reapers).toHaveLength(1);
    host.stdin?.write("close\n");
    for (let i = 0; i < 400 && !output().includes("closed\n"); i++)
      await new Promise((r) => setTimeout(r, 25));
    expect(output()).toContain("closed\n");
    expect(await stillRunning([wrapper, server, child])).toEqual([]);
    // Gone while the host still runs: told it was done, not left to notice the host's death.
    expect(await stillRunning(reapers)).toEqual([]);
    expect(host.exitCode === null && host.signalCode === null).toBe(true);
    host.stdin?.end();
    expect(await exited(host)).toEqual({ code: 0, signal: null });
  });

  it("exits after a host that exits without closing its pool, with no server left running", async () => {
    const { host, pids } = startReaperHost("exit");
    const { wrapper, server, child } = await pids;
    const reapers = reapersOf(host);
    expect(await exited(host)).toEqual({ code: 0, signal: null });
    expect(await stillRunning([wrapper, server, child])).toEqual([]);
    expect(await stillRunning(reapers)).toEqual([]);
  });

  it("changes nothing for a Ctrl-C to the host's group: host and servers die of it, and the reaper exits", async () => {
    const { host, pids } = startReaperHost("wait");
    const { wrapper, server, child } = await pids;
    const reapers = reapersOf(host);
    expect(reapers).toHaveLength(1);
    process.kill(-(host.pid as number), "SIGINT");
    expect(await exited(host)).toEqual({ code: null, signal: "SIGINT" });
    expect(await stillRunning([wrapper, server, child])).toEqual([]);
    expect(await stillRunning(reapers)).toEqual([]);
  });
});
