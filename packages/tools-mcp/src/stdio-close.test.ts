// Closing a stdio server ends its whole process tree: the wrapper it was started through (npx, a
// shell script), the real server under it, and what that server started. Real processes only: a
// sh wrapper, published server-everything, a small SDK server that outlives its stdin
// (test/lingering-server.mjs), and a host process of its own (test/close-host.mts) that closes its
// pool, exits without closing it, or gets a terminal's signals (handling them itself, or not, or
// through a signal-exit-style listener).
import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { exited, killHosts, startHost } from "../test/hosts.js";
import { descendants, pidsWritten, running, stillRunning } from "../test/processes.js";
import { EVERYTHING, NODE } from "../test/support.js";
import { createMcpPool, type McpPool, type McpServerEntry } from "./index.js";
import { listSync, listTree, TreeStdioTransport, treeOf } from "./stdio-transport.js";

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const WRAPPER = here("../test/wrapper.sh");
const LINGERING = here("../test/lingering-server.mjs");

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tools-mcp-close-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const pools: McpPool[] = [];
afterEach(async () => {
  killHosts();
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
function pool(server: McpServerEntry & { name: string }): McpPool {
  const created = createMcpPool([server]);
  pools.push(created);
  return created;
}

// How the tree is read on macOS and other POSIX systems; a Linux machine without procps has no ps.
const HAS_PS = spawnSync("ps", ["-A", "-o", "pid="]).status === 0;
if (!HAS_PS)
  console.warn(
    "stdio-close.test: no `ps` on this machine (Debian: apt-get install procps); its tree reading is not tested here.",
  );

describe.skipIf(!HAS_PS)("the process tree as ps lists it", () => {
  it("is the tree /proc gives: the wrapper, the server and what it started", async () => {
    const lingering = pool({ name: "lingering", command: "sh", args: [WRAPPER, NODE, LINGERING] });
    const { server, child } = JSON.parse((await lingering.callTool("lingering__pids", {})).text);
    const wrapper = lingering.status()[0]?.pid as number;
    const viaPs = treeOf([wrapper], listSync(false)).map((entry) => entry.pid);
    expect(viaPs.sort((a, b) => a - b)).toEqual([wrapper, server, child].sort((a, b) => a - b));
  });
});

describe.skipIf(process.platform !== "linux")("the process tree as /proc's children files give it", () => {
  it("is the tree a scan of all of /proc gives: the wrapper, the server and what it started", async () => {
    const lingering = pool({ name: "lingering", command: "sh", args: [WRAPPER, NODE, LINGERING] });
    const { server, child } = JSON.parse((await lingering.callTool("lingering__pids", {})).text);
    const wrapper = lingering.status()[0]?.pid as number;
    const walked = treeOf([wrapper], await listTree([wrapper])).map((entry) => entry.pid);
    const scanned = treeOf([wrapper], listSync(true)).map((entry) => entry.pid);
    expect(walked.sort((a, b) => a - b)).toEqual([wrapper, server, child].sort((a, b) => a - b));
    expect(scanned.sort((a, b) => a - b)).toEqual(walked);
  });
});

describe("closing a stdio server started through a wrapper", () => {
  it("ends the wrapper, the server that ignores stdin EOF, and the child that ignores SIGTERM", async () => {
    const exitListeners = process.listenerCount("exit");
    const signalListeners = () => ["SIGINT", "SIGTERM", "SIGHUP"].map((s) => process.listenerCount(s));
    const signalsBefore = signalListeners();
    const lingering = pool({ name: "lingering", command: "sh", args: [WRAPPER, NODE, LINGERING] });
    const { server, child } = JSON.parse((await lingering.callTool("lingering__pids", {})).text);
    const wrapper = lingering.status()[0]?.pid as number;
    // While it runs, the pool listens for the host's exit (to end the tree there); not after close,
    // and never for a signal: those are the host's (and reach the server, in the host's group).
    expect(process.listenerCount("exit")).toBe(exitListeners + 1);
    expect(signalListeners()).toEqual(signalsBefore);
    expect(descendants(wrapper).sort((a, b) => a - b)).toEqual([server, child].sort((a, b) => a - b));
    await lingering.close();
    expect(await stillRunning([wrapper, server, child])).toEqual([]);
    expect(process.listenerCount("exit")).toBe(exitListeners);
  });

  it("ends a child the server starts in its SIGTERM handler, during the close's SIGTERM grace", async () => {
    // The server ignores stdin EOF and handles SIGTERM by starting `sleep 600` and running on: that
    // child was in no snapshot before the SIGTERM, and outlives the server's SIGKILL unless the
    // close reads the tree again first.
    const file = join(dir, "term-child");
    const lingering = pool({
      name: "lingering",
      command: "sh",
      args: [WRAPPER, NODE, LINGERING, "--term-child", file],
    });
    const { server, child } = JSON.parse((await lingering.callTool("lingering__pids", {})).text);
    const wrapper = lingering.status()[0]?.pid as number;
    let late: number[] = [];
    try {
      await lingering.close();
      late = await pidsWritten(file, 2_000);
      expect(late).toHaveLength(1);
      expect(await stillRunning([wrapper, server, child, ...late])).toEqual([]);
    } finally {
      for (const pid of late) if (running(pid)) process.kill(pid, "SIGKILL");
    }
  });

  it.skipIf(process.platform !== "linux")(
    "ends a child the server starts 100 ms after SIGTERM and leaves behind when it exits 200 ms later",
    async () => {
      // The child is in no snapshot taken before the SIGTERM, and init has it before the SIGTERM
      // grace ends: only a read of the tree during that grace finds it.
      const file = join(dir, "term-exit-child");
      const lingering = pool({
        name: "lingering",
        command: "sh",
        args: [WRAPPER, NODE, LINGERING, "--term-exit-child", file],
      });
      const { server, child } = JSON.parse((await lingering.callTool("lingering__pids", {})).text);
      const wrapper = lingering.status()[0]?.pid as number;
      let late: number[] = [];
      try {
        await lingering.close();
        late = await pidsWritten(file, 2_000);
        expect(late).toHaveLength(1);
        expect(await stillRunning([wrapper, server, child, ...late])).toEqual([]);
      } finally {
        for (const pid of late) if (running(pid)) process.kill(pid, "SIGKILL");
      }
    },
  );

  it("ends a child the server starts 100 ms after stdin EOF and leaves behind when it exits 200 ms later", async () => {
    // The child is in no snapshot taken before stdin ended, and init has it by the end of the EOF
    // grace: only a read of the tree during the grace finds it.
    const file = join(dir, "eof-child");
    const polite = pool({
      name: "polite",
      command: "sh",
      args: [WRAPPER, NODE, LINGERING, "--eof-child", file],
    });
    const { server, child } = JSON.parse((await polite.callTool("polite__pids", {})).text);
    const wrapper = polite.status()[0]?.pid as number;
    let late: number[] = [];
    try {
      await polite.close();
      late = await pidsWritten(file, 2_000);
      expect(late).toHaveLength(1);
      expect(await stillRunning([wrapper, server, child, ...late])).toEqual([]);
    } finally {
      for (const pid of late) if (running(pid)) process.kill(pid, "SIGKILL");
    }
  });

  it("ends server-everything behind a wrapper after its research task (its timers outlive stdin)", async () => {
    const everything = pool({ name: "everything", command: "sh", args: [WRAPPER, NODE, EVERYTHING] });
    const output = await everything.callTool("everything__simulate-research-query", { topic: "tides" });
    expect(output.text).toContain("Research Report: tides");
    const wrapper = everything.status()[0]?.pid as number;
    const tree = [wrapper, ...descendants(wrapper)];
    expect(tree.length).toBeGreaterThanOrEqual(2);
    await everything.close();
    expect(await stillRunning(tree)).toEqual([]);
  });

  it("lets a server that exits on stdin EOF finish on its own, with no signal", async () => {
    const log = join(dir, "eof.log");
    const polite = pool({
      name: "polite",
      command: "sh",
      args: [WRAPPER, NODE, LINGERING, "--on-eof", "exit", "--log", log],
    });
    const { server } = JSON.parse((await polite.callTool("polite__pids", {})).text);
    await polite.close();
    expect(await stillRunning([server])).toEqual([]);
    expect(await readFile(log, "utf8")).toBe("stdin ended\n");
  });

  it("ends a helper the server started after its first answer, when the server exits on stdin EOF", async () => {
    const polite = pool({
      name: "polite",
      command: "sh",
      args: [WRAPPER, NODE, LINGERING, "--on-eof", "exit"],
    });
    const { server } = JSON.parse((await polite.callTool("polite__pids", {})).text);
    // Started after the server's first answer; it ignores SIGTERM and the server leaves it behind.
    const { helper } = JSON.parse((await polite.callTool("polite__helper", {})).text);
    expect(descendants(server)).toContain(helper);
    await polite.close();
    expect(await stillRunning([server, helper])).toEqual([]);
  });

  it("ends a helper the server started more than a second after its first answer, when the server crashes and its wrapper exits", async () => {
    const lingering = pool({ name: "lingering", command: "sh", args: [WRAPPER, NODE, LINGERING] });
    const { server, child } = JSON.parse((await lingering.callTool("lingering__pids", {})).text);
    await new Promise((r) => setTimeout(r, 1_100));
    const { helper } = JSON.parse((await lingering.callTool("lingering__helper", {})).text);
    // Let the snapshot taken on the helper's answer finish before the server crashes: the helper
    // goes to init, out of reach of a walk down from the wrapper, which then exits by itself.
    await new Promise((r) => setTimeout(r, 100));
    process.kill(server, "SIGKILL");
    expect(await stillRunning([server, child, helper])).toEqual([]);
  });

  it("restarts a server whose wrapper died, and ends what the wrapper left running", async () => {
    const lingering = pool({ name: "lingering", command: "sh", args: [WRAPPER, NODE, LINGERING] });
    const { server, child } = JSON.parse((await lingering.callTool("lingering__pids", {})).text);
    const wrapper = lingering.status()[0]?.pid as number;
    process.kill(wrapper, "SIGKILL");
    let status = lingering.status()[0];
    for (let i = 0; i < 400 && !(status?.state === "connected" && status.pid !== wrapper); i++) {
      await new Promise((r) => setTimeout(r, 25));
      status = lingering.status()[0];
    }
    expect(status).toMatchObject({ state: "connected", restarts: 1 });
    expect(await stillRunning([server, child])).toEqual([]);
    const again = JSON.parse((await lingering.callTool("lingering__pids", {})).text);
    expect(again.server).not.toBe(server);
  });
});

describe("closing one stdio transport twice at once", () => {
  // The SDK's Client.connect closes the transport itself when initialize fails, while the pool
  // awaits its own close: neither may resolve (or report the close) while the server still runs.
  it("resolves both closes, and reports the close once, only after the server's tree has ended", async () => {
    const transport = new TreeStdioTransport({ command: "sh", args: [WRAPPER, NODE, LINGERING] });
    const runningAtClose: number[][] = [];
    let tree: number[] = [];
    transport.onclose = () => runningAtClose.push(tree.filter(running));
    await transport.start();
    const wrapper = transport.pid as number;
    // The wrapper's node server and the server's child: both started once the server answers.
    await transport.send({ jsonrpc: "2.0", id: 1, method: "ping" });
    const answered = new Promise<void>((resolve) => {
      transport.onmessage = () => resolve();
    });
    await answered;
    tree = [wrapper, ...descendants(wrapper)];
    expect(tree).toHaveLength(3);
    const first = transport.close();
    await transport.close();
    const afterSecond = tree.filter(running);
    await first;
    expect(afterSecond).toEqual([]);
    expect(runningAtClose).toEqual([[]]);
  });
});

describe("a host process running a pool", () => {
  async function runHost(mode: "close" | "exit"): Promise<{ code: number | null; pids: number[] }> {
    const { host, pids } = startHost(mode);
    const { wrapper, server, child } = await pids;
    const { code } = await exited(host);
    return { code, pids: [wrapper, server, child] };
  }

  it("exits on its own once its pool is closed, with no server left running", async () => {
    const { code, pids } = await runHost("close");
    expect(code).toBe(0);
    expect(await stillRunning(pids)).toEqual([]);
  });

  it("leaves no server running when it exits without closing its pool", async () => {
    const { code, pids } = await runHost("exit");
    expect(code).toBe(0);
    expect(await stillRunning(pids)).toEqual([]);
  });

  it("leaves nothing of a dead wrapper's tree running when it exits while that tree is being ended", async () => {
    const { host, pids } = startHost("wrapper-dies");
    const { wrapper, server, child } = await pids;
    expect(await exited(host)).toEqual({ code: 0, signal: null });
    expect(await stillRunning([wrapper, server, child], 1_000)).toEqual([]);
  });

  // Ctrl-C sends SIGINT to the terminal's foreground process group, and closing the terminal sends
  // SIGHUP: the servers share the host's group, so they get it too.
  it.each(["SIGINT", "SIGHUP"] as const)(
    "dies of a %s to its process group that it does not handle, with no server left running",
    async (signal) => {
      const { host, pids } = startHost("wait");
      const { wrapper, server, child } = await pids;
      process.kill(-(host.pid as number), signal);
      expect(await exited(host)).toEqual({ code: null, signal });
      expect(await stillRunning([wrapper, server, child])).toEqual([]);
    },
  );

  // signal-exit (ink's cli-cursor, execa, …) re-raises a signal only when its listener is the
  // process's only one: no listener of the pool's may keep it from doing so, or stand in for it.
  it.each(["signal-exit-before", "signal-exit-after"])(
    "dies of Ctrl-C with a signal-exit-style listener (%s its server starts), with no server left running",
    async (mode) => {
      const { host, pids } = startHost(mode);
      const { wrapper, server, child } = await pids;
      process.kill(-(host.pid as number), "SIGINT");
      expect(await exited(host)).toEqual({ code: null, signal: "SIGINT" });
      expect(await stillRunning([wrapper, server, child])).toEqual([]);
    },
  );

  it("keeps control of the signals it handles itself: its handler runs, and its servers run on", async () => {
    const { host, pids, output } = startHost("handle");
    const { wrapper, server, child } = await pids;
    const handled = async (signal: string, times: number) => {
      const count = () => output().split(`handled ${signal}\n`).length - 1;
      for (let i = 0; i < 200 && count() < times; i++) await new Promise((r) => setTimeout(r, 25));
      return count();
    };
    try {
      // Sent to the host alone (`kill <pid>`, a supervisor): nothing of the pool's acts on it.
      for (const signal of ["SIGINT", "SIGHUP", "SIGTERM"] as const) {
        process.kill(host.pid as number, signal);
        expect(await handled(signal, 1)).toBe(1);
      }
      await new Promise((r) => setTimeout(r, 300));
      expect(host.exitCode === null && host.signalCode === null).toBe(true);
      expect([wrapper, server, child].filter(running)).toEqual([wrapper, server, child]);
      // A terminal's Ctrl-C: the host's handler decides for the host, which runs on.
      process.kill(-(host.pid as number), "SIGINT");
      expect(await handled("SIGINT", 2)).toBe(2);
      await new Promise((r) => setTimeout(r, 300));
      expect(host.exitCode === null && host.signalCode === null).toBe(true);
    } finally {
      // The host's group: it, its servers, and any the pool restarted after the Ctrl-C.
      process.kill(-(host.pid as number), "SIGKILL");
    }
  });
});
