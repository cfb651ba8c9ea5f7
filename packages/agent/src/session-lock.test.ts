import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentError, createSession, defineTool, listSessions, type Session } from "./test-exports.js";
import { bundleChild } from "./test-support/bundle-child.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = mkdtempSync(join(tmpdir(), "agent-lock-"));
let server: TestServer;
let child: { file: string; remove(): Promise<void> };
const children: ChildProcess[] = [];

beforeAll(async () => {
  server = await startServer({ replies: (_request, index) => ({ content: `reply ${index}` }) });
  child = await bundleChild(join(here, "test-support/lock-host.ts"), { withoutMcp: true });
}, 60_000);

afterAll(async () => {
  for (const proc of children) if (proc.exitCode === null && !proc.signalCode) proc.kill("SIGKILL");
  await child?.remove();
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

interface Host {
  proc: ChildProcess;
  /** The next JSON line the host prints. */
  next(): Promise<Record<string, unknown>>;
  send(line: string): void;
  exited: Promise<void>;
}

/**
 * Starts the lock host (test-support/lock-host.ts) on `<root>/<id>.jsonl`; with `pauseDir`, it stops
 * where taking the lock reads and moves the lock file (see the host); with `leaseMs`, it opens the
 * session with that `lockLeaseMs`; with `wrap`, it runs under that command (e.g. `unshare`).
 */
function host(id: string, pauseDir?: string, leaseMs?: number, wrap: string[] = []): Host {
  const command = [...wrap, process.execPath, child.file, root, id, server.baseUrl];
  const proc = spawn(command[0] as string, command.slice(1), {
    cwd: join(here, ".."),
    stdio: ["pipe", "pipe", "inherit"],
    env: {
      ...process.env,
      ...(pauseDir ? { LOCK_HOST_PAUSE_DIR: pauseDir } : {}),
      ...(leaseMs !== undefined ? { LOCK_HOST_LEASE_MS: String(leaseMs) } : {}),
    },
  });
  children.push(proc);
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    const wake = waiting.shift();
    if (wake) wake(line);
    else lines.push(line);
  });
  const exited = new Promise<void>((resolve) => proc.once("close", () => resolve()));
  return {
    proc,
    next: async () => {
      const line =
        lines.shift() ??
        (await Promise.race([
          new Promise<string>((resolve) => waiting.push(resolve)),
          exited.then(() => {
            throw new Error("the host exited before printing the line awaited");
          }),
        ]));
      return JSON.parse(line) as Record<string, unknown>;
    },
    send: (line) => proc.stdin?.write(`${line}\n`),
    exited,
  };
}

const config = () => ({ baseUrl: server.baseUrl, model: "sim" });

/**
 * Where this process's pids are looked up, as a lock records it (Linux: boot id and PID namespace):
 * spread into a lock a test writes by hand for a process of this system. A lock of this hostname
 * without them is an older version's, judged by its lease unless its pid runs here with its start time.
 */
function readOr(read: () => string): string | undefined {
  try {
    return read().trim() || undefined;
  } catch {
    return undefined;
  }
}
const bootId = readOr(() => readFileSync("/proc/sys/kernel/random/boot_id", "latin1"));
const pidNs = readOr(() => readlinkSync("/proc/self/ns/pid"));
const thisSystem = { ...(bootId ? { bootId } : {}), ...(pidNs ? { pidNs } : {}) };
const noticesOf = (session: Session) =>
  session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
async function refusal(open: Promise<unknown>): Promise<AgentError> {
  const error = await open.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(AgentError.isInstance(error), String(error)).toBe(true);
  return error as AgentError;
}

/** Opens `<root>/<id>.jsonl` in this process, on the shared testkit server; `options` add to that. */
const openSession = (sessionId: string, options: Partial<Parameters<typeof createSession>[0]> = {}) =>
  createSession({ config: config(), sessionDir: root, sessionId, ...options });
/** What is left beside `<root>/<id>.jsonl`: a lock, a takeover gate, a lock moved aside. */
const leftBeside = (id: string) => readdirSync(root).filter((name) => name.startsWith(`${id}.jsonl.`));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A lock host (see {@link host}) once it has opened `<id>.jsonl` and, given `prompt`, prompted it. */
async function openedHost(id: string, prompt?: string, leaseMs?: number): Promise<Host> {
  const h = host(id, undefined, leaseMs);
  expect(await h.next()).toMatchObject({ opened: true });
  if (prompt !== undefined) {
    h.send(`prompt ${prompt}`);
    expect(await h.next()).toEqual({ prompted: "ok" });
  }
  return h;
}
/** Stops the host with `signal` (no exit hook runs) and waits for it to end; answers the pid it had. */
async function stopped(h: Host, signal: NodeJS.Signals): Promise<number> {
  const pid = h.proc.pid as number;
  h.proc.kill(signal);
  await h.exited;
  return pid;
}
/** Closes the host's session (it says so), then lets it exit. */
async function closeAndExit(h: Host): Promise<void> {
  h.send("close");
  expect(await h.next()).toEqual({ closed: true });
  h.send("exit");
  await h.exited;
}

/** A pid no process has: that of a short-lived child that has exited. */
async function exitedPid(): Promise<number> {
  const done = spawn("true", [], { stdio: "ignore" });
  await new Promise((resolve) => done.once("exit", resolve));
  return done.pid as number;
}
/** A live child process of this one (it sleeps 30 s; killed after the tests if it still runs). */
function sleeperChild(): ChildProcess {
  const sleeper = spawn("sleep", ["30"], { stdio: "ignore" });
  children.push(sleeper);
  return sleeper;
}
/** A lock (or takeover gate) a test writes by hand for process `pid` of this system. */
const lockFor = (pid: number | undefined, token: string, since: string) =>
  JSON.stringify({ pid, host: hostname(), ...thisSystem, token, since });

/** The lock as the shared volume shows it to a replacement container: the old container's hostname in it. */
function asOtherHost(lockPath: string, name: string): Record<string, unknown> {
  const lock = { ...JSON.parse(readFileSync(lockPath, "utf8")), host: name };
  writeFileSync(lockPath, `${JSON.stringify(lock)}\n`);
  return lock;
}
function backdate(path: string, ms: number): void {
  const then = new Date(Date.now() - ms);
  utimesSync(path, then, then);
}
/** Blocks this thread for `ms`: no timer (a lock renewal) runs meanwhile. */
function blockFor(ms: number): void {
  const began = Date.now();
  while (Date.now() - began < ms) {}
}
/** The messages the session file holds, one `role: content` line each. */
const said = (file: string) =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .flatMap((line) => {
      const record = JSON.parse(line) as { message?: { role: string; content: unknown } };
      return record.message ? [`${record.message.role}: ${String(record.message.content)}`] : [];
    });

/** Another host's session, as it writes the lock it took over (its lease 30 s). */
const otherHolder = { pid: 77, host: "web-other", token: "theirs", since: "2026-01-01T00:00:00.000Z" };
const takeOverAsOtherHost = (lockPath: string) =>
  writeFileSync(lockPath, JSON.stringify({ ...otherHolder, leaseMs: 30_000 }));
/** How a session with a 0.3 s lease names the loss of its lock to {@link otherHolder}. */
const lostToOtherHost = (lockPath: string) =>
  `The session file's lock ${lockPath} is no longer this session's: it now names process 77 on host web-other, since ${otherHolder.since}, which took it — after this session's 0.3 s lease went unrenewed (the process stopped or its event loop blocked, or the volume was out of reach, for that long), or after the lock was deleted by hand.`;

describe("a session file is held by one process at a time", () => {
  it("refuses a second process's open with AgentError `locked` naming the file and the holder's pid, and writes nothing for it", async () => {
    const file = join(root, "shared.jsonl");
    const a = host("shared");
    const opened = await a.next();
    expect(opened).toMatchObject({ opened: true, notices: [] });
    a.send("prompt hello from A");
    expect(await a.next()).toEqual({ prompted: "ok" });
    const before = readFileSync(file, "utf8");
    // The lock names its holder.
    const lock = JSON.parse(readFileSync(`${file}.lock`, "utf8"));
    expect(lock).toMatchObject({
      pid: a.proc.pid,
      host: hostname(),
      ...thisSystem,
      token: expect.any(String),
    });
    if (process.platform === "linux") expect(lock.started).toMatch(/^\d+$/);

    // Another process.
    const b = host("shared");
    const refused = await b.next();
    expect(refused).toMatchObject({ error: true, code: "locked" });
    expect(refused.message).toContain(file);
    expect(refused.message).toContain(`process ${a.proc.pid}`);
    await b.exited;
    // This process too.
    const error = await refusal(openSession("shared"));
    expect(error.code).toBe("locked");
    expect(error.message).toContain(`${file} is open in process ${a.proc.pid}`);
    expect(error.message).toContain(`${file}.lock`);
    // Neither refused open read, rewrote or appended to the file; the holder still writes to it.
    expect(readFileSync(file, "utf8")).toBe(before);
    a.send("prompt again from A");
    expect(await a.next()).toEqual({ prompted: "ok" });
    await closeAndExit(a);
  }, 30_000);

  it("takes over the lock of a holder killed with SIGKILL, and says so", async () => {
    const file = join(root, "killed.jsonl");
    const pid = await stopped(await openedHost("killed", "before the kill"), "SIGKILL");
    // SIGKILL runs no exit hook: the lock is still there, naming a process that is gone.
    expect(JSON.parse(readFileSync(`${file}.lock`, "utf8")).pid).toBe(pid);

    const session = await openSession("killed");
    expect(noticesOf(session)).toContainEqual(
      expect.stringMatching(
        new RegExp(`lock ${file}\\.lock was taken over: process ${pid} is no longer running`),
      ),
    );
    expect(session.messages).toHaveLength(2);
    expect(JSON.parse(readFileSync(`${file}.lock`, "utf8")).pid).toBe(process.pid);
    expect((await session.prompt("after the kill")).status).toBe("ok");
    await session.close();
    expect(existsSync(`${file}.lock`)).toBe(false);
  }, 30_000);

  it("holds the lock while open and lets go of it on close(), on dispose() and when the process exits", async () => {
    const file = join(root, "closed.jsonl");
    const session = await openSession("closed");
    expect(JSON.parse(readFileSync(`${file}.lock`, "utf8")).pid).toBe(process.pid);
    expect((await session.prompt("hi")).status).toBe("ok");
    await session.close();
    expect(existsSync(`${file}.lock`)).toBe(false);
    // A closed session writes nothing more: the file may be another process's by now.
    const stored = readFileSync(file, "utf8");
    expect((await refusal(session.save())).code).toBe("closed");
    expect(() => session.clear()).toThrow(/Session\.clear: the session is closed/);
    expect(readFileSync(file, "utf8")).toBe(stored);
    // Another process opens it now, with no notice of a takeover; exiting without close() lets go too.
    const a = host("closed");
    expect(await a.next()).toMatchObject({ opened: true, notices: [] });
    expect(existsSync(`${file}.lock`)).toBe(true);
    a.send("exit");
    await a.exited;
    expect(existsSync(`${file}.lock`)).toBe(false);
    // dispose() lets go at once.
    const again = await openSession("closed");
    expect(noticesOf(again)).toEqual([]);
    expect(existsSync(`${file}.lock`)).toBe(true);
    again.dispose();
    expect(existsSync(`${file}.lock`)).toBe(false);
    // listSessions lists the session, never its lock.
    const held = await openSession("closed");
    expect(listSessions(root).map((s) => s.id)).toContain("closed");
    expect(listSessions(root).some((s) => s.id.includes("lock"))).toBe(false);
    await held.close();
  }, 30_000);

  it("lets go of the lock once a run stopped by close() has written its last messages", async () => {
    const file = join(root, "running.jsonl");
    const slow = await startServer({ replies: [{ content: "a slow answer", chunkDelayMs: 200 }] });
    try {
      const session = await createSession({
        config: { baseUrl: slow.baseUrl, model: "sim" },
        sessionDir: root,
        sessionId: "running",
      });
      let streamed = "";
      session.onEvent((event) => {
        if (event.type === "assistant_delta") streamed += event.text;
      });
      const run = session.prompt("take your time");
      // Stopped once some answer streamed: the stopped prompt and that text are kept (with none, the
      // prompt would be taken back out of the file).
      while (streamed === "") await new Promise((resolve) => setTimeout(resolve, 10));
      expect(JSON.parse(readFileSync(`${file}.lock`, "utf8")).pid).toBe(process.pid);
      await session.close();
      expect((await run).status).toBe("aborted");
      expect(existsSync(`${file}.lock`)).toBe(false);
      // What the stopped run wrote is in the file, written while the lock was still held.
      const reopened = await openSession("running");
      expect(reopened.messages[0]).toMatchObject({ role: "user", content: "take your time" });
      expect(reopened.messages[1]).toMatchObject({ role: "assistant", content: streamed });
      await reopened.close();
    } finally {
      await slow.close();
    }
  });

  it("await close() during a run resolves once the stopped run has settled and the lock is let go: the file reopens at once, holding what the run settled (r31 #5)", async () => {
    const slow = await startServer({
      replies: [
        { content: "a slow answer that streams", chunkDelayMs: 150 },
        { content: "never sent", firstByteDelayMs: 3000 },
      ],
    });
    try {
      const open = () =>
        createSession({
          config: { baseUrl: slow.baseUrl, model: "sim" },
          sessionDir: root,
          sessionId: "reload",
        });
      // Stopped once answer text streamed: that text is kept as the answer.
      const a = await open();
      let streamed = "";
      a.onEvent((event) => {
        if (event.type === "assistant_delta") streamed += event.text;
      });
      const first = a.prompt("first question");
      while (streamed === "") await new Promise((resolve) => setTimeout(resolve, 10));
      const closing = a.close();
      // Opened before close() resolved (the stopped run still writing): refused, saying to await close().
      expect((await refusal(open())).message).toMatch(
        /in a session of this process that is closing \(pid \d+; its stopped run is still writing its last messages\); await its close\(\) first\./,
      );
      await closing;
      // The old close() resolved before the stopped run let go: this open was refused `locked`.
      const b = await open();
      expect(b.messages).toEqual([
        { role: "user", content: "first question" },
        { role: "assistant", content: streamed },
      ]);
      expect((await first).status).toBe("aborted");
      // Stopped before the model answered: the prompt is not kept, in the session reopened at once either.
      const second = b.prompt("second question");
      while (slow.chatRequests.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
      await b.close();
      const c = await open();
      expect(c.messages.map((m) => (m as { content?: unknown }).content)).toEqual([
        "first question",
        streamed,
      ]);
      expect((await second).status).toBe("aborted");
      await c.close();
    } finally {
      await slow.close();
    }
  }, 30_000);

  it("close() waits at most 5 s for a stopped run that does not settle, then lets go of the lock; that run writes nothing more to the file (r31 #5)", async () => {
    const file = join(root, "stuck-run.jsonl");
    const slow = await startServer({
      replies: [{ content: "a slow answer that streams", chunkDelayMs: 150 }],
    });
    try {
      const open = () =>
        createSession({
          config: { baseUrl: slow.baseUrl, model: "sim" },
          sessionDir: root,
          sessionId: "stuck-run",
        });
      const a = await open();
      // A host listener that does not return at the run's end keeps the stopped run from settling
      // (and so from writing the answer text it kept).
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      a.agent.subscribe(async (event) => {
        if (event.type === "agent_end") await held;
      });
      let streamed = "";
      a.onEvent((event) => {
        if (event.type === "assistant_delta") streamed += event.text;
      });
      const run = a.prompt("hello");
      while (streamed === "") await new Promise((resolve) => setTimeout(resolve, 10));
      const began = Date.now();
      await a.close();
      const waited = Date.now() - began;
      // Its 5 s, less a timer's slack; and then it goes on, though the run never settles (the
      // listener holds it until released below). The upper bound only tells "about 5 s" from
      // "until the run settles": three times the wait, as a loaded machine may stretch it.
      expect(waited).toBeGreaterThanOrEqual(4500);
      expect(waited).toBeLessThan(15_000);
      expect(existsSync(`${file}.lock`)).toBe(false);
      expect(noticesOf(a)).toContainEqual(expect.stringContaining("had not ended 5 s after close()"));
      const b = await open();
      const stored = readFileSync(file, "utf8");
      // The run ends now, after another session took the file: it writes nothing to it (before, its
      // settle rewrote the file with the answer text it kept).
      release();
      expect((await run).status).toBe("aborted");
      expect(a.messages.at(-1)).toMatchObject({ role: "assistant", content: streamed });
      expect(readFileSync(file, "utf8")).toBe(stored);
      await b.close();
    } finally {
      await slow.close();
    }
  }, 30_000);

  it("refuses a second open in the same process until the first is closed, and a refused open holds nothing", async () => {
    const first = await openSession("twice");
    const error = await refusal(openSession("twice"));
    expect(error.code).toBe("locked");
    expect(error.message).toMatch(
      /is open in another open session of this process \(pid \d+\); close\(\) it first\./,
    );
    // The holder is unaffected by the refusal: it still holds the lock and writes.
    expect((await first.prompt("still mine")).status).toBe("ok");
    await first.close();
    // A session refused after taking the lock (here: its catalogue names an MCP server) lets go of it.
    const clash = await refusal(
      createSession({
        config: config(),
        sessionDir: root,
        sessionId: "twice",
        mcpServers: { mcpServers: { tools: { command: "true", args: [] } } },
        catalog: [{ name: "tools", tools: [{ name: "x" }] }],
      }),
    );
    expect(clash.code).toBe("invalid-input");
    expect(existsSync(join(root, "twice.jsonl.lock"))).toBe(false);
    const second = await openSession("twice");
    expect(noticesOf(second)).toEqual([]);
    expect(second.messages).toHaveLength(2);
    await second.close();
  });

  it("refuses a second open of the same file by another spelling of its directory (relative, `..`, a symbolic link) in the same thread (r31 #2)", async () => {
    const dir = join(root, "spelled");
    mkdirSync(dir, { recursive: true });
    const link = join(root, "spelled-link");
    symlinkSync(dir, link);
    const first = await createSession({ config: config(), sessionDir: dir, sessionId: "s" });
    const spellings = [relative(process.cwd(), dir), join(dir, "..", "spelled"), `${dir}/`, link];
    for (const sessionDir of spellings) {
      // Before: taken over as "left by this process … and no open session holds it", both writing the file.
      const error = await refusal(createSession({ config: config(), sessionDir, sessionId: "s" }));
      expect(error.code, sessionDir).toBe("locked");
      expect(error.message).toMatch(/is open in another open session of this process/);
    }
    expect((await first.prompt("still mine")).status).toBe("ok");
    await first.close();
    // Let go under one spelling, it opens under another, with no takeover.
    const again = await createSession({ config: config(), sessionDir: link, sessionId: "s" });
    expect(noticesOf(again)).toEqual([]);
    expect(again.messages).toHaveLength(2);
    await again.close();
  });

  it("takes over a lock whose pid now belongs to a later process, or that names no holder and is old; keeps one from another host", async () => {
    const file = join(root, "stale.jsonl");
    const lockPath = `${file}.lock`;
    // A live process (this one's child) whose start time is not the one the lock recorded: the pid was reused.
    const sleeper = sleeperChild();
    const reused = {
      pid: sleeper.pid,
      host: hostname(),
      ...thisSystem,
      started: "1",
      token: "t1",
      since: "2020-01-01T00:00:00Z",
    };
    writeFileSync(lockPath, JSON.stringify(reused));
    if (process.platform === "linux") {
      const session = await openSession("stale");
      expect(noticesOf(session)).toContainEqual(
        expect.stringContaining(
          `process ${sleeper.pid} that took it has ended (the pid now belongs to a process started later)`,
        ),
      );
      await session.close();
    }
    sleeper.kill("SIGKILL");
    // A lock file its writer never filled in: held while it may be being written, stale once old.
    writeFileSync(lockPath, "");
    expect((await refusal(openSession("stale"))).code).toBe("locked");
    const old = new Date(Date.now() - 60_000);
    utimesSync(lockPath, old, old);
    const taken = await openSession("stale");
    expect(noticesOf(taken)).toContainEqual(expect.stringContaining("it names no holder"));
    await taken.close();
    // A holder on another host cannot be looked up from here: held while its lock is fresh (see the
    // lease tests below; this one records no lease and was just written).
    writeFileSync(lockPath, JSON.stringify({ ...reused, pid: 4_000_000, host: "elsewhere.example" }));
    const remote = await refusal(openSession("stale"));
    expect(remote.code).toBe("locked");
    expect(remote.message).toContain("process 4000000 on host elsewhere.example");
    rmSync(lockPath);
  });

  it("never moves a live lock: an opener that read the stale lock before another took it over, and a third opener meanwhile, are both refused (r22 #2)", async () => {
    const file = join(root, "race.jsonl");
    const lockPath = `${file}.lock`;
    // A holder killed with SIGKILL leaves a stale lock X.
    const deadPid = await stopped(await openedHost("race", "before the kill"), "SIGKILL");
    const stale = readFileSync(lockPath, "utf8");
    expect(JSON.parse(stale).pid).toBe(deadPid);

    // B reads X and stops there (it has judged X stale, nothing more).
    const pauses = mkdtempSync(join(root, "pauses-"));
    const b = host("race", pauses);
    expect(await b.next()).toEqual({ paused: "read" });
    // A takes X over and holds the session.
    const a = host("race");
    const opened = await a.next();
    expect(opened).toMatchObject({ opened: true });
    expect(opened.notices).toContainEqual(expect.stringContaining(`process ${deadPid} is no longer running`));
    const aPid = a.proc.pid as number;
    expect(JSON.parse(readFileSync(lockPath, "utf8")).pid).toBe(aPid);

    // B goes on with the X it read. The old code moved A's live lock aside here, then stopped
    // (paused "moved") with no lock file in place.
    writeFileSync(join(pauses, "go-read"), "");
    const bNext = await b.next();
    // A third opener, C, comes while B is where it is.
    const c = host("race");
    const cSays = await c.next();
    if (bNext.paused === "moved") writeFileSync(join(pauses, "go-moved"), "");
    const bSays = bNext.paused === "moved" ? await b.next() : bNext;
    // A still holds the session alone: B and C are refused, naming A.
    expect(cSays).toMatchObject({ error: true, code: "locked" });
    expect(cSays.message).toContain(`process ${aPid}`);
    expect(bSays).toMatchObject({ error: true, code: "locked" });
    expect(bSays.message).toContain(`process ${aPid}`);
    expect(bNext).not.toEqual({ paused: "moved" });
    expect(JSON.parse(readFileSync(lockPath, "utf8")).pid).toBe(aPid);
    a.send("prompt still A's");
    expect(await a.next()).toEqual({ prompted: "ok" });
    await closeAndExit(a);
    await Promise.all([b.exited, c.exited]);
    // Nothing is left behind: no lock, no takeover gate, no lock moved aside.
    expect(leftBeside("race")).toEqual([]);
  }, 30_000);

  it("waits for a takeover in progress (its gate held by a live process) and removes a gate left behind (its process gone, or older than 5 s)", async () => {
    const file = join(root, "gate.jsonl");
    const lockPath = `${file}.lock`;
    const gate = `${lockPath}.takeover`;
    const deadLock = (pid: number) => lockFor(pid, "dead", "2020-01-01T00:00:00Z");
    const deadPid = await exitedPid();

    // A gate left by a taker killed mid-takeover (its process gone): removed at once, the stale lock taken over.
    writeFileSync(lockPath, deadLock(deadPid));
    writeFileSync(gate, deadLock(deadPid));
    const first = await openSession("gate");
    expect(noticesOf(first)).toContainEqual(expect.stringContaining("was taken over"));
    expect(existsSync(gate)).toBe(false);
    await first.close();

    // A gate held by a live process: the opener waits until that process lets go of it.
    const sleeper = sleeperChild();
    const live = lockFor(sleeper.pid, "live", "now");
    writeFileSync(lockPath, deadLock(deadPid));
    writeFileSync(gate, live);
    const letGo = spawn("sh", ["-c", `sleep 0.5; rm -f '${gate}'`], { stdio: "ignore" });
    children.push(letGo);
    const began = Date.now();
    const second = await openSession("gate");
    expect(Date.now() - began).toBeGreaterThanOrEqual(400);
    expect(noticesOf(second)).toContainEqual(expect.stringContaining("was taken over"));
    await second.close();

    // A gate older than 5 s counts as left behind, whoever wrote it.
    writeFileSync(lockPath, deadLock(deadPid));
    writeFileSync(gate, live);
    const old = new Date(Date.now() - 60_000);
    utimesSync(gate, old, old);
    const third = await openSession("gate");
    expect(noticesOf(third)).toContainEqual(expect.stringContaining("was taken over"));
    expect(existsSync(gate)).toBe(false);
    await third.close();
    sleeper.kill("SIGKILL");
    expect(leftBeside("gate")).toEqual([]);
  }, 30_000);
});

describe("waiting on another opener's takeover gate (r31 #7)", () => {
  it("keeps the event loop running: a timer fires during the wait, and the open goes on once the gate is let go", async () => {
    const file = join(root, "gate-timer.jsonl");
    const lockPath = `${file}.lock`;
    const gate = `${lockPath}.takeover`;
    const donePid = await exitedPid();
    writeFileSync(lockPath, lockFor(donePid, "dead", "2020-01-01T00:00:00Z"));
    // A live process holds the gate (a takeover in progress there).
    const sleeper = sleeperChild();
    writeFileSync(gate, lockFor(sleeper.pid, "live", "now"));
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 20);
    // This thread's timer lets go of the gate: with the open blocking the thread (the old
    // Atomics.wait), it could not fire until the gate was 5 s old and the open over.
    let removedAt = 0;
    const letGo = setTimeout(() => {
      rmSync(gate, { force: true });
      removedAt = Date.now();
    }, 300);
    const began = Date.now();
    let ticksDuring = -1;
    try {
      const session = await openSession("gate-timer");
      ticksDuring = ticks;
      const took = Date.now() - began;
      expect(removedAt).toBeGreaterThan(0);
      // At least one tick of the 20 ms interval while the open waited (the old blocking wait let
      // none run). Not a count of them: a loaded machine runs an interval far less often than
      // asked, and Node does not make up the ticks it missed.
      expect(ticksDuring).toBeGreaterThan(0);
      expect(took).toBeGreaterThanOrEqual(250);
      // Gone on once the gate was let go, before the gate was old enough (5 s) to be taken for left
      // behind: the timer and the ticks above show the thread was free; this, that the open did not
      // just wait out the gate's age. (About 0.3 s on an idle machine.)
      expect(took).toBeLessThan(4_500);
      expect(noticesOf(session)).toContainEqual(
        expect.stringContaining(`process ${donePid} is no longer running`),
      );
      await session.close();
    } finally {
      clearInterval(ticker);
      clearTimeout(letGo);
      sleeper.kill("SIGKILL");
    }
    expect(leftBeside("gate-timer")).toEqual([]);
  }, 30_000);
});

describe("a takeover gate that cannot be read or removed (r25 #1)", () => {
  it("refuses the open (storage, naming the gate and saying to delete it) for a directory or a dangling symbolic link at the gate, within the wait, without spinning; the files stay as they were", async () => {
    const file = join(root, "stuck.jsonl");
    const lockPath = `${file}.lock`;
    const gate = `${lockPath}.takeover`;
    const donePid = await exitedPid();
    const stale = lockFor(donePid, "dead", "2020-01-01T00:00:00Z");
    const shapes: [string, () => void][] = [
      ["a directory", () => mkdirSync(gate)],
      ["a symbolic link to nothing", () => symlinkSync(join(root, "no-such-gate"), gate)],
    ];
    for (const [what, make] of shapes) {
      writeFileSync(lockPath, stale);
      make();
      // The old code looped at full speed here for good: the open runs in a child (the lock host),
      // killed after 25 s, so a spin fails the test (no refusal said) instead of hanging it. The
      // refusal comes once the gate is 5 s old; the rest is the child's start, slow under load.
      const began = Date.now();
      const opener = host("stuck");
      const killer = setTimeout(() => opener.proc.kill("SIGKILL"), 25_000);
      const said = (await opener.next().catch(() => ({ killed: Date.now() - began }))) as {
        code?: string;
        message?: string;
      };
      clearTimeout(killer);
      if ("opened" in said) opener.send("exit");
      await opener.exited;
      expect(said.code, what).toBe("storage");
      expect(said.message).toContain(`the takeover gate ${gate} cannot be read`);
      expect(said.message).toContain(`delete ${gate} by hand, then open the session again.`);
      // The stale lock and the gate are as they were.
      expect(readFileSync(lockPath, "utf8")).toBe(stale);
      expect(lstatSync(gate).isDirectory() || lstatSync(gate).isSymbolicLink()).toBe(true);
      rmSync(gate, { recursive: true });
    }
    // Once the gate is deleted, the stale lock is taken over as usual.
    const session = await openSession("stuck");
    expect(noticesOf(session)).toContainEqual(
      expect.stringContaining(`process ${donePid} is no longer running`),
    );
    await session.close();
    expect(leftBeside("stuck")).toEqual([]);
  }, 90_000);
});

describe("a session file is held by one thread at a time (r25 #2)", () => {
  let worker: { file: string; remove(): Promise<void> };
  const workers: Worker[] = [];
  beforeAll(async () => {
    worker = await bundleChild(join(here, "test-support/lock-worker.ts"), { withoutMcp: true });
  }, 60_000);
  afterAll(async () => {
    for (const w of workers) await w.terminate();
    await worker?.remove();
  });

  interface Thread {
    worker: Worker;
    next(): Promise<Record<string, unknown>>;
    send(line: string): void;
  }
  /** Starts the lock worker (test-support/lock-worker.ts) on `<root>/<id>.jsonl` in a thread of this process. */
  function thread(id: string): Thread {
    const w = new Worker(worker.file, { workerData: { dir: root, id, baseUrl: server.baseUrl } });
    workers.push(w);
    const said: Record<string, unknown>[] = [];
    const waiting: ((value: Record<string, unknown>) => void)[] = [];
    w.on("message", (value: Record<string, unknown>) => {
      const wake = waiting.shift();
      if (wake) wake(value);
      else said.push(value);
    });
    return {
      worker: w,
      next: async () => said.shift() ?? (await new Promise((resolve) => waiting.push(resolve))),
      send: (line) => w.postMessage(line),
    };
  }

  it("refuses a second worker thread's open of a file another thread of this process holds (locked), and takes over one a thread that ended left", async () => {
    const file = join(root, "threads.jsonl");
    const a = thread("threads");
    expect(await a.next()).toEqual({ opened: true, notices: [] });
    const b = thread("threads");
    const refused = await b.next();
    // The old code let B in, taking A's live lock over as "left by this process".
    expect(refused).toMatchObject({ error: true, code: "locked" });
    expect(refused.message).toMatch(
      new RegExp(
        `is open in another thread of this process \\(pid ${process.pid}, worker thread ${a.worker.threadId}\\); close\\(\\) the session there first\\.`,
      ),
    );
    // The main thread is refused too, and so is a thread once A has prompted: A alone writes.
    const main = await refusal(openSession("threads"));
    expect(main.code).toBe("locked");
    a.send("prompt from A");
    expect(await a.next()).toEqual({ prompted: "ok" });
    const c = thread("threads");
    expect(await c.next()).toMatchObject({ error: true, code: "locked" });
    expect(JSON.parse(readFileSync(`${file}.lock`, "utf8"))).toMatchObject({
      pid: process.pid,
      thread: a.worker.threadId,
    });
    // A closed: the next thread opens it, with A's messages and no notice.
    a.send("close");
    expect(await a.next()).toEqual({ closed: true });
    const d = thread("threads");
    expect(await d.next()).toEqual({ opened: true, notices: [] });
    // D stops without closing (terminated while blocked): its lock stays, and as its thread has
    // ended, the next open (this thread's) takes it over and says whose it was.
    d.send("hang");
    expect(await d.next()).toEqual({ hanging: true });
    const dThread = d.worker.threadId;
    await d.worker.terminate();
    expect(JSON.parse(readFileSync(`${file}.lock`, "utf8"))).toMatchObject({ thread: dThread });
    if (process.platform !== "linux") {
      // Elsewhere a thread's end cannot be looked up: its lock is held while the process runs.
      const held = await refusal(openSession("threads"));
      expect(held.code).toBe("locked");
      rmSync(`${file}.lock`);
    } else {
      const taken = await openSession("threads");
      expect(noticesOf(taken)).toContainEqual(
        expect.stringContaining(
          `was taken over: it was left by worker thread ${dThread} of this process (pid ${process.pid}), which has ended.`,
        ),
      );
      expect(taken.messages.map((m) => (m as { content?: unknown }).content)).toEqual([
        "from A",
        expect.stringMatching(/^reply \d+$/),
      ]);
      await taken.close();
    }
    expect(leftBeside("threads")).toEqual([]);
  }, 30_000);

  it("refuses a worker's open of a file the main thread holds, naming it; takes over a lock of an earlier process that had this pid, whatever thread it names", async () => {
    const held = await openSession("main-held");
    const w = thread("main-held");
    const said = await w.next();
    expect(said).toMatchObject({ error: true, code: "locked" });
    expect(said.message).toContain(
      `is open in another thread of this process (pid ${process.pid}, its main thread)`,
    );
    await held.close();
    if (process.platform === "linux") {
      // This pid, but another start time: a process that crashed before this one got its pid.
      const lockPath = join(root, "reused-self.jsonl.lock");
      writeFileSync(
        lockPath,
        JSON.stringify({
          pid: process.pid,
          host: hostname(),
          ...thisSystem,
          started: "1",
          thread: 3,
          task: 1,
          token: "old",
          since: "x",
        }),
      );
      const taken = await openSession("reused-self");
      expect(noticesOf(taken)).toContainEqual(
        expect.stringContaining(
          `process ${process.pid} that took it has ended (the pid now belongs to a process started later)`,
        ),
      );
      await taken.close();
    }
  });
});

describe("a lock naming another host is held by a lease (r31 #9)", () => {
  it("takes over the lock a container stopped by SIGTERM or SIGKILL left, once its lease has lapsed, naming the holder and how long the lease had lapsed; refuses it before", async () => {
    const file = join(root, "pod.jsonl");
    const lockPath = `${file}.lock`;
    // A host stopped the ordinary way (docker stop: SIGTERM, no handler, so no exit hook) mid-session.
    const aPid = await stopped(await openedHost("pod", "before the stop"), "SIGTERM");
    const left = asOtherHost(lockPath, "web-7d9f8-old");
    // Just stopped: the replacement cannot tell it from a live holder yet (its words are checked below).
    const early = await refusal(openSession("pod"));
    expect(early.code).toBe("locked");
    // Once the lease has lapsed, it is taken over. The old code refused this open too, for good: a
    // lock naming another host was never stale.
    backdate(lockPath, 45_000);
    const session = await openSession("pod");
    expect(noticesOf(session)).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^The session file's lock ${file}\\.lock was taken over: its holder, process ${aPid} on host web-7d9f8-old, last renewed its lease 45 s ago: the 30 s lease lapsed 15 s ago\\. \\(It was taken ${left.since}\\.\\)$`,
        ),
      ),
    );
    // The early refusal said when the lock would be taken over.
    expect(early.message).toContain(`process ${aPid} on host web-7d9f8-old`);
    expect(early.message).toMatch(
      /Its lease was last renewed \d\.\d s ago \(every 10 s while that session is open\); if that process is gone, the next open after it has gone 30 s without renewal \(in about (29|30) s\) takes it over\./,
    );
    // The lock recorded its lease; what the stopped host wrote is kept.
    expect(left.leaseMs).toBe(30_000);
    expect(session.messages).toHaveLength(2);
    expect(JSON.parse(readFileSync(lockPath, "utf8"))).toMatchObject({ pid: process.pid, host: hostname() });
    await session.close();

    // SIGKILL, the lease the holder recorded (0.6 s) counting, not the opener's own (30 s): taken
    // over once it has gone unrenewed for that long, in real time.
    const bPid = await stopped(await openedHost("pod", undefined, 600), "SIGKILL");
    asOtherHost(lockPath, "web-7d9f8-new");
    expect((await refusal(openSession("pod"))).code).toBe("locked");
    await sleep(900);
    const again = await openSession("pod");
    expect(noticesOf(again)).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `was taken over: its holder, process ${bPid} on host web-7d9f8-new, last renewed its lease \\d\\.\\d s ago: the 0\\.6 s lease lapsed \\d\\.\\d s ago\\.`,
        ),
      ),
    );
    await again.close();

    // A holder that promised a long lease (60 s) is not judged by a shorter lease of the opener.
    await stopped(await openedHost("pod", undefined, 60_000), "SIGKILL");
    asOtherHost(lockPath, "web-7d9f8-long");
    backdate(lockPath, 5_000);
    const long = await refusal(openSession("pod", { lockLeaseMs: 1000 }));
    expect(long.code).toBe("locked");
    expect(long.message).toContain("after it has gone 60 s without renewal (in about 55 s)");
    rmSync(lockPath);
    expect(leftBeside("pod")).toEqual([]);
  }, 30_000);

  it("judges another host's lock of an older version (no lease recorded) by the lock file's last change against the opener's lease, and says so", async () => {
    const file = join(root, "old-lock.jsonl");
    const lockPath = `${file}.lock`;
    const old = { pid: 4321, host: "web-old-version", token: "old", since: "2026-01-01T00:00:00.000Z" };
    // With the default lease (30 s), one last changed 40 s ago is taken over (the old code refused it).
    writeFileSync(lockPath, JSON.stringify(old));
    backdate(lockPath, 40_000);
    const byDefault = await openSession("old-lock");
    expect(noticesOf(byDefault)).toContainEqual(expect.stringContaining("which lapsed 10 s ago."));
    await byDefault.close();
    // One last changed 10 s ago is held.
    writeFileSync(lockPath, JSON.stringify(old));
    backdate(lockPath, 10_000);
    const held = await refusal(openSession("old-lock"));
    expect(held.code).toBe("locked");
    expect(held.message).toMatch(
      /It records no lease \(a lock of an older version, never renewed\) and was last changed 10 s ago; if that process is gone, the next open after it has gone 30 s without renewal \(in about 20 s\) takes it over\./,
    );
    // The opener's own lease (here 5 s) is the one an older version's lock is judged by. How long
    // ago it was written and lapsed is read when the open gets to the lock: the refused open above
    // and this one's own start come in between, and a loaded machine took more than the 50 ms that
    // turn "lapsed 5.0 s" into "5.1 s". Taken over at all, the lock was judged by the 5 s lease
    // (by the default 30 s it is held, as above).
    const taken = await openSession("old-lock", { lockLeaseMs: 5000 });
    expect(noticesOf(taken)).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^The session file's lock ${lockPath.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} was taken over: its holder, process 4321 on host web-old-version, wrote it 1[0-2] s ago and records no lease \\(a lock of an older version, which is never renewed: judged by the lock file's last change against a 5\\.0 s lease\\), which lapsed [5-7]\\.\\d s ago\\. \\(It was taken ${old.since.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\.\\)$`,
        ),
      ),
    );
    expect(JSON.parse(readFileSync(lockPath, "utf8"))).toMatchObject({ pid: process.pid, leaseMs: 5000 });
    await taken.close();
    expect(existsSync(lockPath)).toBe(false);
  });

  it("refuses another host's live holder however long it holds the lock (it keeps renewing), and its renewal timer does not keep its process alive", async () => {
    const file = join(root, "live-pod.jsonl");
    const lockPath = `${file}.lock`;
    const a = await openedHost("live-pod", undefined, 2400);
    const aPid = a.proc.pid as number;
    asOtherHost(lockPath, "web-live");
    backdate(lockPath, 1000);
    const first = statSync(lockPath).mtimeMs;
    // Over two leases: every open is refused, and the holder keeps touching the lock (the old
    // code never did: the lock's time stayed where it was).
    const began = Date.now();
    let refused = 0;
    while (Date.now() - began < 6000) {
      const error = await refusal(openSession("live-pod", { lockLeaseMs: 300 }));
      expect(error.code).toBe("locked");
      expect(error.message).toContain(`process ${aPid} on host web-live`);
      refused++;
      await sleep(250);
    }
    expect(refused).toBeGreaterThan(5);
    expect(statSync(lockPath).mtimeMs).toBeGreaterThan(first + 3000);
    expect(Date.now() - statSync(lockPath).mtimeMs).toBeLessThan(2400);
    // The holder still holds and writes the file (its lock is its own: the token is unchanged).
    a.send("prompt still the live holder's");
    expect(await a.next()).toEqual({ prompted: "ok" });
    expect(readFileSync(file, "utf8")).toContain("still the live holder's");
    // Nothing but the session's timer is left: the process ends by itself, and its exit lets go of the lock.
    a.send("detach");
    expect(await a.next()).toEqual({ detached: true });
    const exited = await Promise.race([a.exited.then(() => true), sleep(5000).then(() => false)]);
    expect(exited).toBe(true);
    expect(a.proc.exitCode).toBe(0);
    expect(existsSync(lockPath)).toBe(false);
  }, 30_000);

  it("renews the lock while open, stops on close() and dispose(), and a session whose lock another opener took over writes nothing more, with a notice", async () => {
    const file = join(root, "renew.jsonl");
    const lockPath = `${file}.lock`;
    const open = () => openSession("renew", { lockLeaseMs: 300 });
    for (const end of ["close", "dispose"] as const) {
      const session = await open();
      const text = readFileSync(lockPath, "utf8");
      expect(JSON.parse(text).leaseMs).toBe(300);
      backdate(lockPath, 10_000);
      await sleep(400);
      expect(Date.now() - statSync(lockPath).mtimeMs).toBeLessThan(1000);
      if (end === "close") await session.close();
      else session.dispose();
      expect(existsSync(lockPath)).toBe(false);
      // The lock as it was, put back: a stopped renewal never touches it again.
      writeFileSync(lockPath, text);
      backdate(lockPath, 10_000);
      await sleep(400);
      expect(Date.now() - statSync(lockPath).mtimeMs).toBeGreaterThan(9000);
      rmSync(lockPath);
    }

    // Its lease lapsed (the process stopped, say), another host's opener took the lock over.
    const session = await open();
    expect((await session.prompt("first")).status).toBe("ok");
    takeOverAsOtherHost(lockPath);
    const began = Date.now();
    while (!noticesOf(session).some((n) => n.includes("is no longer this session's"))) {
      expect(Date.now() - began).toBeLessThan(3000);
      await sleep(20);
    }
    expect(noticesOf(session)).toContainEqual(
      `${lostToOtherHost(lockPath)} Nothing more is written to the session file by this session; close it, and open the file again once the other session has let go of it.`,
    );
    const stored = readFileSync(file, "utf8");
    // A prompt is refused (locked), as save() is: it would be sent and kept in memory only.
    const refused = await refusal(session.prompt("second"));
    expect(refused.code).toBe("locked");
    expect(refused.message).toMatch(
      /^Session\.prompt: nothing was sent or written\. The session file's lock /,
    );
    expect((await refusal(session.agent.prompt("second"))).code).toBe("locked");
    expect((await refusal(session.agent.continue())).code).toBe("locked");
    expect(session.messages.map((m) => (m as { content?: unknown }).content)).toEqual([
      "first",
      expect.stringMatching(/^reply \d+$/),
    ]);
    expect(readFileSync(file, "utf8")).toBe(stored);
    await session.close();
    // The other holder's lock is left as it is.
    expect(JSON.parse(readFileSync(lockPath, "utf8")).token).toBe("theirs");
    rmSync(lockPath);
  });
});

describe("a session whose lease lapsed writes nothing once its lock may be another's (r36 #5, #6, #10)", () => {
  /** Asks the host for its notices until one holds `text` (within `ms`); returns them. */
  async function noticeOf(h: Host, text: string, ms: number): Promise<string[]> {
    const began = Date.now();
    for (;;) {
      h.send("notices");
      const { notices } = (await h.next()) as { notices: string[] };
      if (notices.some((n) => n.includes(text)) || Date.now() - began > ms) return notices;
      await sleep(50);
    }
  }

  it("a process stopped past its lease, whose lock another host took over and let go meanwhile, does not create the lock again: it stops writing, with a notice (r36 #6)", async () => {
    const file = join(root, "paused.jsonl");
    const lockPath = `${file}.lock`;
    const a = await openedHost("paused", "A1", 300);
    // A is stopped (docker pause, a VM frozen) for longer than its lease. Host B sees the lock over
    // the shared volume, its lease lapsed: B takes it over, prompts once and closes (its lock gone).
    a.proc.kill("SIGSTOP");
    asOtherHost(lockPath, "web-A");
    backdate(lockPath, 2000);
    const b = await openSession("paused");
    expect(noticesOf(b)).toContainEqual(expect.stringContaining("was taken over"));
    expect((await b.prompt("B1")).status).toBe("ok");
    await b.close();
    expect(existsSync(lockPath)).toBe(false);
    const written = said(file);
    expect(written).toEqual([
      "user: A1",
      expect.stringMatching(/^assistant: reply \d+$/),
      "user: B1",
      expect.stringMatching(/^assistant: /),
    ]);
    await sleep(400);
    a.proc.kill("SIGCONT");
    // A's overdue renewal finds the lock gone past its lease: the lock is lost, not created again.
    // (The old code created it again as if it had been deleted by hand, and A went on writing.)
    const notices = await noticeOf(a, "was gone when this session came to renew it", 3000);
    expect(notices).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^The session file's lock ${lockPath.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} was gone when this session came to renew it, \\d+\\.\\d s after its last renewal — longer than its 0\\.3 s lease .*Nothing more is written to the session file by this session`,
        ),
      ),
    );
    a.send("prompt A2");
    expect(await a.next()).toEqual({ refused: "locked" });
    expect(said(file)).toEqual(written);
    expect(existsSync(lockPath)).toBe(false);
    await closeAndExit(a);
    const reopened = await openSession("paused");
    expect(reopened.messages.map((m) => (m as { content?: unknown }).content)).toEqual([
      "A1",
      expect.stringMatching(/^reply \d+$/),
      "B1",
      expect.any(String),
    ]);
    await reopened.close();
  }, 30_000);

  it("a session whose file another writer changed while its lock was gone (deleted by hand within the lease) stops writing, with a notice, and lets go of the lock it created again (r36 #6)", async () => {
    const file = join(root, "rewritten.jsonl");
    const lockPath = `${file}.lock`;
    const a = await openedHost("rewritten", "A1", 3000);
    // Within A's lease (3 s; A renews every second), its lock is deleted by hand and another
    // session opens the file (no lock in its way), writes and closes.
    a.proc.kill("SIGSTOP");
    rmSync(lockPath);
    const b = await openSession("rewritten");
    expect((await b.prompt("B1")).status).toBe("ok");
    await b.close();
    const written = said(file);
    expect(written).toHaveLength(4);
    a.proc.kill("SIGCONT");
    // A's next renewal finds the lock gone within its lease (created again, as before), then its file
    // changed since its last write: lost. (The old code kept the lock and went on writing.)
    const notices = await noticeOf(a, "was changed by another writer", 4000);
    expect(notices).toContainEqual(
      `The session file ${file} was changed by another writer since this session last wrote it (the lock ${lockPath} was deleted, or taken over and let go, meanwhile). Nothing more is written to the session file by this session; close it, and open the file again once the other session has let go of it.`,
    );
    expect(existsSync(lockPath)).toBe(false);
    a.send("prompt A2");
    expect(await a.next()).toEqual({ refused: "locked" });
    expect(said(file)).toEqual(written);
    await closeAndExit(a);
    // The file opens at once: nothing holds it.
    const reopened = await openSession("rewritten");
    expect(reopened.messages).toHaveLength(4);
    await reopened.close();
  }, 30_000);

  it("a session whose event loop was blocked past its lease checks its lock before writing: taken over meanwhile, it writes nothing into the new holder's file; not taken over, it writes on (r36 #5)", async () => {
    const file = join(root, "blocked.jsonl");
    const lockPath = `${file}.lock`;
    const tools = await startServer({
      replies: [
        { toolCalls: [{ id: "call_1", name: "block", arguments: "{}" }] },
        { content: "after the first block" },
        { toolCalls: [{ id: "call_2", name: "block", arguments: "{}" }] },
        { content: "A's final answer" },
      ],
    });
    let other: Host | undefined;
    let run = 0;
    const cell = new Int32Array(new SharedArrayBuffer(4));
    const block = defineTool({
      name: "block",
      description: "Blocks the thread",
      parameters: { type: "object", properties: {} },
      execute: () => {
        run++;
        const began = Date.now();
        if (run === 2) {
          // Another host (process) opens the file meanwhile: the lock, seen over the shared volume as
          // another host's, has gone unrenewed past its lease (this thread is blocked).
          asOtherHost(lockPath, "web-A");
          backdate(lockPath, 2000);
          other = host("blocked");
          // Blocked until the other process has taken the lock over (between its unlink of the stale
          // lock and its create of its own, the lock is briefly gone or empty: looked at again).
          const holderPid = () => {
            try {
              return JSON.parse(readFileSync(lockPath, "utf8")).pid;
            } catch {
              return undefined;
            }
          };
          while (holderPid() !== other.proc.pid) {
            if (Date.now() - began > 15_000) throw new Error("the other host never took the lock over");
            Atomics.wait(cell, 0, 0, 10);
          }
        }
        // Blocked past the lease (0.3 s) in either case.
        while (Date.now() - began < 800) Atomics.wait(cell, 0, 0, 10);
        return `A's tool result ${run}`;
      },
    });
    try {
      const a = await createSession({
        config: { baseUrl: tools.baseUrl, model: "sim" },
        sessionDir: root,
        sessionId: "blocked",
        lockLeaseMs: 300,
        tools: [block],
      });
      // Blocked past the lease with nobody taking the lock: the check renews it, and the writes go on.
      expect((await a.prompt("first")).status).toBe("ok");
      expect(noticesOf(a)).toEqual([]);
      expect(said(file)).toEqual([
        "user: first",
        "assistant: null",
        "tool: A's tool result 1",
        "assistant: after the first block",
      ]);
      // Blocked past the lease while another process takes the lock over: the result the tool gives
      // when the thread is unblocked (written at once, before the overdue renewal timer runs, by the
      // old code: a second answer to call_2 in the other host's file) is not written.
      expect((await a.prompt("second")).status).toBe("ok");
      expect(noticesOf(a)).toContainEqual(expect.stringContaining("is no longer this session's"));
      const b = other as unknown as Host;
      const opened = await b.next();
      expect(opened).toMatchObject({ opened: true });
      expect(opened.notices).toContainEqual(expect.stringContaining("was taken over"));
      const text = readFileSync(file, "utf8");
      expect(text).not.toContain("A's tool result 2");
      expect(text).not.toContain("A's final answer");
      const answers = said(file).filter((line) => line.startsWith("tool: "));
      expect(answers).toEqual(["tool: A's tool result 1", expect.stringMatching(/^tool: Not recorded/)]);
      // save() says the file is no longer this session's (r36 #10).
      const refused = await refusal(a.save());
      expect(refused.code).toBe("locked");
      expect(refused.message).toContain("Session.save: nothing was written.");
      expect(readFileSync(file, "utf8")).toBe(text);
      b.send("close");
      expect(await b.next()).toEqual({ closed: true });
      await a.close();
    } finally {
      await tools.close();
    }
  }, 30_000);

  it("save() rejects with AgentError `locked` once the lock was found lost, and writes nothing (r36 #10)", async () => {
    const file = join(root, "lost-save.jsonl");
    const lockPath = `${file}.lock`;
    const session = await openSession("lost-save", { lockLeaseMs: 300 });
    expect((await session.prompt("first")).status).toBe("ok");
    await session.save();
    takeOverAsOtherHost(lockPath);
    const stored = readFileSync(file, "utf8");
    // Past the lease since the last renewal, save() itself checks first (no need to wait for the timer).
    blockFor(400);
    const error = await refusal(session.save());
    expect(error.code).toBe("locked");
    expect(error.message).toBe(
      `Session.save: nothing was written. ${lostToOtherHost(lockPath)} The session file is no longer this session's; close this session, and open the file again once the other session has let go of it.`,
    );
    expect((await refusal(session.prompt("second"))).code).toBe("locked");
    expect((await refusal(session.save())).code).toBe("locked");
    expect(readFileSync(file, "utf8")).toBe(stored);
    await session.close();
    // After close(), `closed` as before.
    expect((await refusal(session.save())).code).toBe("closed");
    expect(JSON.parse(readFileSync(lockPath, "utf8")).token).toBe("theirs");
    rmSync(lockPath);
  });
});

describe("clear() once the lock is lost (fix101)", () => {
  it("throws AgentError `locked`, as save() rejects, and empties neither the other session's file nor anything in memory", async () => {
    const file = join(root, "lost-clear.jsonl");
    const lockPath = `${file}.lock`;
    const a = await openSession("lost-clear", { lockLeaseMs: 300 });
    expect((await a.prompt("A1")).status).toBe("ok");
    // A's event loop is blocked past its lease while session B (another host, as the lock says over
    // a shared volume) takes the lock over: B's open runs synchronously up to its first wait.
    asOtherHost(lockPath, "web-A");
    backdate(lockPath, 2000);
    const opening = openSession("lost-clear");
    blockFor(400);
    const messages = [...a.messages];
    const timeline = a.getSnapshot().timeline;
    // clear() asks the lock first (past the lease it renews), finds it B's, and refuses.
    let error: unknown;
    try {
      a.clear();
    } catch (thrown) {
      error = thrown;
    }
    expect(AgentError.isInstance(error), String(error)).toBe(true);
    expect((error as AgentError).code).toBe("locked");
    expect((error as AgentError).message).toMatch(
      /^Session\.clear: nothing was cleared\. The session file's lock .* is no longer this session's: it now names process \d+, since .*The session file is no longer this session's; close this session, and open the file again once the other session has let go of it\.$/,
    );
    expect(a.messages).toEqual(messages);
    expect(a.messages.map((m) => (m as { content?: unknown }).content)).toEqual([
      "A1",
      expect.stringMatching(/^reply \d+$/),
    ]);
    // The timeline as it was, and the notice of the loss on its end (the old code emptied both).
    expect(a.getSnapshot().timeline.slice(0, timeline.length)).toEqual(timeline);
    expect(noticesOf(a)).toContainEqual(expect.stringContaining("is no longer this session's"));
    const b = await opening;
    expect(noticesOf(b)).toContainEqual(expect.stringContaining("was taken over"));
    expect((await b.prompt("B1")).status).toBe("ok");
    const written = said(file);
    expect(written).toEqual([
      "user: A1",
      expect.stringMatching(/^assistant: reply \d+$/),
      "user: B1",
      expect.stringMatching(/^assistant: reply \d+$/),
    ]);
    // Found lost by the renewal timer instead: refused the same way, and again on every call.
    await sleep(150);
    expect(() => a.clear()).toThrow(/^Session\.clear: nothing was cleared\./);
    expect(a.messages).toEqual(messages);
    expect((await refusal(a.save())).code).toBe("locked");
    expect(said(file)).toEqual(written);
    await a.close();
    expect(() => a.clear()).toThrow(/Session\.clear: the session is closed/);
    await b.close();
    expect(existsSync(lockPath)).toBe(false);
  });

  it("prompt() is refused (locked) the same way, and adds, sends and writes nothing; it asks the lock first", async () => {
    const file = join(root, "lost-prompt.jsonl");
    const lockPath = `${file}.lock`;
    const session = await openSession("lost-prompt", { lockLeaseMs: 300 });
    expect((await session.prompt("first")).status).toBe("ok");
    takeOverAsOtherHost(lockPath);
    const stored = readFileSync(file, "utf8");
    const messages = [...session.messages];
    const requests = server.chatRequests.length;
    // Past the lease since the last renewal (the timer had no turn): prompt() itself finds the loss.
    blockFor(400);
    const timeline = session.getSnapshot().timeline;
    const refused = await refusal(session.prompt("second"));
    expect(refused.code).toBe("locked");
    expect(refused.message).toBe(
      `Session.prompt: nothing was sent or written. ${lostToOtherHost(lockPath)} The session file is no longer this session's; close this session, and open the file again once the other session has let go of it.`,
    );
    // No user entry: only the loss's notice was added.
    expect(session.getSnapshot().timeline.slice(0, timeline.length)).toEqual(timeline);
    expect(
      session
        .getSnapshot()
        .timeline.slice(timeline.length)
        .map((e) => e.type),
    ).toEqual(["notice"]);
    expect(session.messages).toEqual(messages);
    expect(session.running).toBe(false);
    expect(server.chatRequests.length).toBe(requests);
    expect(readFileSync(file, "utf8")).toBe(stored);
    await session.close();
    expect(JSON.parse(readFileSync(lockPath, "utf8")).token).toBe("theirs");
    rmSync(lockPath);
  });

  it("the agent's setters, in-place changes of its messages, reset(), steer() and followUp() throw AgentError `locked` once the lock is lost, and change nothing in memory (fix139, r49 F7)", async () => {
    const file = join(root, "lost-agent.jsonl");
    const lockPath = `${file}.lock`;
    const session = await openSession("lost-agent", { lockLeaseMs: 300 });
    expect((await session.prompt("first")).status).toBe("ok");
    const agent = session.agent;
    agent.system = "Answer briefly.";
    takeOverAsOtherHost(lockPath);
    const stored = readFileSync(file, "utf8");
    const messages = [...agent.messages];
    const catalog = agent.catalog;
    // Past the lease since the last renewal: the first change itself finds the loss.
    blockFor(400);
    const changes: [string, () => void][] = [
      [
        "Agent.messages",
        () => {
          agent.messages = [];
        },
      ],
      [
        "Agent.loaded",
        () => {
          agent.loaded = ["read_file"];
        },
      ],
      [
        "Agent.system",
        () => {
          agent.system = "Leak everything.";
        },
      ],
      [
        "Agent.catalog",
        () => {
          agent.catalog = [{ name: "other", tools: [] }];
        },
      ],
      ["Agent.reset", () => agent.reset()],
      // The live transcript changed in place (r49 F7).
      ["Agent.messages", () => agent.messages.push({ role: "user", content: "pushed" })],
      ["Agent.messages", () => agent.messages.splice(0, 1)],
      [
        "Agent.messages",
        () => {
          agent.messages.length = 0;
        },
      ],
      [
        "Agent.messages",
        () => {
          agent.messages[0] = { role: "user", content: "rewritten" };
        },
      ],
      ["Agent.steer", () => agent.steer("steered")],
      ["Agent.followUp", () => agent.followUp("followed up")],
    ];
    for (const [method, change] of changes) {
      let error: unknown;
      try {
        change();
      } catch (thrown) {
        error = thrown;
      }
      expect(AgentError.isInstance(error), `${method}: ${String(error)}`).toBe(true);
      expect((error as AgentError).code, method).toBe("locked");
      expect((error as AgentError).message, method).toBe(
        `${method}: nothing was changed. ${lostToOtherHost(lockPath)} The session file is no longer this session's; close this session, and open the file again once the other session has let go of it.`,
      );
    }
    expect(agent.messages).toEqual(messages);
    expect(agent.loaded).toEqual([]);
    expect(agent.system).toBe("Answer briefly.");
    expect(agent.catalog).toBe(catalog);
    expect(agent.hasQueuedMessages()).toBe(false);
    expect(readFileSync(file, "utf8")).toBe(stored);
    await session.close();
    expect(JSON.parse(readFileSync(lockPath, "utf8")).token).toBe("theirs");
    rmSync(lockPath);
  });

  it("a clear() that cannot write the file (storage) leaves the session as it was", async () => {
    const dir = join(root, "clear-fails");
    const session = await createSession({ config: config(), sessionDir: dir, sessionId: "c" });
    expect((await session.prompt("kept")).status).toBe("ok");
    const messages = [...session.messages];
    const timeline = session.getSnapshot().timeline;
    // The rewrite's temporary file cannot be created: a directory stands at the file's place.
    rmSync(join(dir, "c.jsonl"));
    mkdirSync(join(dir, "c.jsonl"));
    expect(() => session.clear()).toThrow(/^Could not write the session file /);
    expect(session.messages).toEqual(messages);
    expect(session.getSnapshot().timeline).toEqual(timeline);
    rmSync(join(dir, "c.jsonl"), { recursive: true });
    session.clear();
    expect(session.messages).toEqual([]);
    expect(readFileSync(join(dir, "c.jsonl"), "utf8")).not.toContain("kept");
    await session.close();
  });
});

/** `unshare` that puts the host in a PID namespace of its own (its pid 1), and kills it when `unshare` is killed. */
const ownPidNamespace = ["unshare", "-pf", "--mount-proc", "--kill-child=SIGKILL"];
const unshareWorks =
  process.platform === "linux" &&
  spawnSync(ownPidNamespace[0] as string, [...ownPidNamespace.slice(1), "true"]).status === 0;

describe("a lock of a process in another PID namespace of this hostname is held by its lease (r38 #7)", () => {
  it("refuses a second container's open while the holder (pid 1 of its own PID namespace) lives and renews, and takes the lock over once it was killed and its lease lapsed", async (ctx) => {
    if (!unshareWorks) {
      console.warn(
        "skipped: `unshare -pf --mount-proc` does not work here (it needs root or user namespaces)",
      );
      ctx.skip();
    }
    const file = join(root, "ns.jsonl");
    const lockPath = `${file}.lock`;
    // Two containers with one hostname (host networking) sharing the volume: each its own PID namespace.
    const a = host("ns", undefined, 1500, ownPidNamespace);
    expect(await a.next()).toMatchObject({ opened: true, pid: 1 });
    const lock = JSON.parse(readFileSync(lockPath, "utf8"));
    expect(lock).toMatchObject({ pid: 1, host: hostname(), leaseMs: 1500 });
    // The old code looked pid 1 up in the opener's own process table, found it started at another
    // time, and took the live lock over ("process 1 that took it has ended"): these opens succeeded.
    const began = Date.now();
    for (;;) {
      const here = await refusal(openSession("ns"));
      expect(here.code).toBe("locked");
      expect(here.message).toContain(
        `is open in process 1 on host ${hostname()} in another PID namespace (another container sharing the hostname), since ${lock.since}.`,
      );
      expect(here.message).toMatch(
        /Its lease was last renewed \d\.\d s ago \(every 0\.5 s while that session is open\)/,
      );
      const b = host("ns", undefined, undefined, ownPidNamespace);
      const said = await b.next();
      if ("opened" in said) b.send("exit");
      await b.exited;
      expect(said).toMatchObject({ error: true, code: "locked" });
      expect(said.message).toContain(`process 1 on host ${hostname()} in another PID namespace`);
      // Past two of its leases: the holder keeps renewing, so it is refused all along.
      if (Date.now() - began > 3200) break;
      await sleep(300);
    }
    // The lock records where its pid is looked up: this boot, another PID namespace than the opener's.
    expect(lock.bootId).toBe(bootId);
    expect(lock.pidNs).toMatch(/^pid:\[\d+\]$/);
    expect(lock.pidNs).not.toBe(pidNs);
    // The holder still holds and writes the file.
    a.send("prompt still the first container's");
    expect(await a.next()).toEqual({ prompted: "ok" });
    expect(readFileSync(file, "utf8")).toContain("still the first container's");
    expect(JSON.parse(readFileSync(lockPath, "utf8")).token).toBe(lock.token);

    // Killed (no exit hook runs): refused while its lease may still run, taken over once it lapsed.
    a.proc.kill("SIGKILL");
    await a.exited;
    expect((await refusal(openSession("ns"))).code).toBe("locked");
    await sleep(1800);
    // Taken over from this process's PID namespace, which is never the dead holder's. (A new
    // container's namespace may get the dead one's number again; its pid 1 is then told apart by its
    // start time, and the takeover says "process 1 that took it has ended".)
    const taken = await openSession("ns");
    expect(noticesOf(taken)).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^The session file's lock ${lockPath.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} was taken over: its holder, process 1 on host ${hostname().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} in another PID namespace \\(another container sharing the hostname\\), last renewed its lease \\d\\.\\d s ago: the 1\\.5 s lease lapsed \\d\\.\\d s ago\\.`,
        ),
      ),
    );
    expect(taken.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    await taken.close();
    expect(readFileSync(file, "utf8")).toContain("still the first container's");
    expect(leftBeside("ns")).toEqual([]);
  }, 30_000);

  it("judges a lock of this hostname of an older version (no boot id, no PID namespace) by its lease, unless its pid runs here with the start time it records", async () => {
    if (process.platform !== "linux") return;
    const file = join(root, "old-ns.jsonl");
    const lockPath = `${file}.lock`;
    const sleeper = sleeperChild();
    const pid = sleeper.pid as number;
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    const started = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    const old = { pid, host: hostname(), token: "old", since: "2026-01-01T00:00:00.000Z" };
    // Its pid here is a process started at another time: maybe another container's live holder.
    // Fresh, it is refused (the old code took it over at once: "the pid now belongs to a process started later").
    writeFileSync(lockPath, JSON.stringify({ ...old, started: "1" }));
    const fresh = await refusal(openSession("old-ns"));
    expect(fresh.code).toBe("locked");
    expect(fresh.message).toContain(
      `process ${pid} on host ${hostname()} (a lock of an older version, which records no PID namespace: it may be another container's)`,
    );
    expect(fresh.message).toContain("It records no lease");
    backdate(lockPath, 40_000);
    const lapsed = await openSession("old-ns");
    expect(noticesOf(lapsed)).toContainEqual(
      expect.stringContaining(`its holder, process ${pid} on host ${hostname()} (a lock of an older version`),
    );
    await lapsed.close();
    // Its pid runs here with the start time it records: held, however old.
    writeFileSync(lockPath, JSON.stringify({ ...old, started }));
    backdate(lockPath, 600_000);
    const live = await refusal(openSession("old-ns"));
    expect(live.code).toBe("locked");
    expect(live.message).toContain(`is open in process ${pid}, since ${old.since}.`);
    // That process gone, the lock (old) is taken over.
    sleeper.kill("SIGKILL");
    await new Promise((resolve) => sleeper.once("exit", resolve));
    const taken = await openSession("old-ns");
    expect(noticesOf(taken)).toContainEqual(expect.stringContaining("was taken over"));
    await taken.close();
    expect(existsSync(lockPath)).toBe(false);
  });
});
