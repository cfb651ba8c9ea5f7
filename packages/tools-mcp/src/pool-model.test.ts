// The pool under a random host: a fast-check model of one to three real stdio MCP servers
// (test/review-r89-server.mjs, each call telling its server what to do) in one pool, driven by a
// random sequence of what a host does — list the tools, call a tool (answering, slowly, with a
// JSON-RPC error, with `isError`, with huge text, with an image, after writing garbage to stdout),
// call an unknown name or with bad arguments, stop a call before it is sent or while it runs, run a
// burst of calls together, let a server change its tools, have a server exit or crash mid-call or
// be killed while idle, close the pool (with a call running, or then call it) and open a new one.
// After every step what a user would notice is checked against a small model of each server (up or
// failed, restarts left, its tools): each call settled once, with its answer or a McpPoolError of
// the code the README gives naming the server and tool; no credential from a server's env in any
// error or its causes; the tool list, once it settles, the servers' newest lists under
// `<server>__<tool>`, none of a failed server; a stopped call's server told (notifications/cancelled)
// and usable at once; no two calls to a tool not marked read-only at one server at once; after
// close() no server process of the pool left running (read from /proc), nor its reaper.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { propertyRuns, propertyTimeout } from "../../../test-support/properties.js";
import { commandLine, descendants, running } from "../test/processes.js";
import { NODE } from "../test/support.js";
import { createMcpPool, type McpPool, McpPoolError, type McpPoolErrorCode } from "./index.js";

const SERVER = fileURLToPath(new URL("../test/review-r89-server.mjs", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "tools-mcp-r89-model-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs of the property: 25 (about 25 s on a busy 2-core machine), more with R89_RUNS. */
const RUNS = Number(process.env.R89_RUNS ?? 25);

/** Server names as a `.mcp.json` may spell them: one with a dot, which a tool name cannot hold. */
const NAMES = ["alpha", "be.ta", "gam-ma"] as const;
const BASE = ["act", "peek"];
const MAX_RESTARTS = 1;

type Mode =
  | "ok"
  | "rpc-error"
  | "is-error"
  | "huge"
  | "image"
  | "garbage"
  | "bad-result"
  | "twice"
  | "stray"
  | "ask";
type Cmd =
  | { op: "list" }
  | { op: "call"; server: number; tool: "act" | "peek"; mode: Mode; ms: number }
  | { op: "unknown"; server: number }
  | { op: "badArgs"; server: number; kind: "missing" | "badMode" | "array" }
  | { op: "abortBefore"; server: number }
  | { op: "abortMid"; server: number; tool: "act" | "peek" }
  | { op: "timeout"; server: number }
  | { op: "burst"; server: number; writes: number; reads: number }
  | { op: "change"; server: number; extras: string[] }
  | { op: "extra"; server: number; pick: number }
  | { op: "die"; server: number; how: "exit" | "crash" }
  | { op: "killIdle"; server: number }
  | { op: "killThenCall"; server: number }
  | { op: "killThenClose"; server: number; ticks: number }
  | { op: "restartFails"; server: number }
  | { op: "dieQueued"; server: number; queued: number }
  | { op: "abortRestarting"; server: number; ticks: number }
  | { op: "dieBusy"; server: number; hung: number; how: "exit" | "crash" }
  | { op: "changeMany"; server: number; lists: string[][] }
  | { op: "closeMid"; server: number }
  | { op: "closeThenCall"; server: number }
  | { op: "reopen" }
  | { op: "hooks"; mode: "ok" | "is-error" | "rpc-error" | "hang" }
  | { op: "abortQueued"; server: number }
  | { op: "abortStarting"; server: number; ticks: number }
  | { op: "closeStarting"; ticks: number };

const server = fc.nat(2);
const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ op: "list" as const }) },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant("call" as const),
      server,
      tool: fc.constantFrom("act" as const, "peek" as const),
      mode: fc.constantFrom<Mode>(
        "ok",
        "rpc-error",
        "is-error",
        "huge",
        "image",
        "garbage",
        "bad-result",
        "twice",
        "stray",
        "ask",
      ),
      ms: fc.constantFrom(0, 0, 40),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("unknown" as const), server }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("badArgs" as const),
      server,
      kind: fc.constantFrom("missing" as const, "badMode" as const, "array" as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("abortBefore" as const), server }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("abortMid" as const),
      server,
      tool: fc.constantFrom("act" as const, "peek" as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("timeout" as const), server }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("burst" as const),
      server,
      writes: fc.integer({ min: 2, max: 4 }),
      reads: fc.nat(2),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("change" as const),
      server,
      extras: fc.uniqueArray(fc.constantFrom("find", "read.file", "write", "x-y"), { maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("extra" as const), server, pick: fc.nat(4) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("die" as const),
      server,
      how: fc.constantFrom("exit" as const, "crash" as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("killIdle" as const), server }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("killThenCall" as const), server }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("killThenClose" as const),
      server,
      ticks: fc.integer({ min: 0, max: 40 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("restartFails" as const), server }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("dieQueued" as const),
      server,
      queued: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("abortRestarting" as const), server, ticks: fc.nat(4) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("dieBusy" as const),
      server,
      hung: fc.integer({ min: 1, max: 2 }),
      how: fc.constantFrom("exit" as const, "crash" as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("changeMany" as const),
      server,
      lists: fc.array(
        fc.uniqueArray(fc.constantFrom("find", "read.file", "write", "x-y"), { maxLength: 3 }),
        {
          minLength: 2,
          maxLength: 4,
        },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("closeMid" as const), server }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("closeThenCall" as const), server }) },
  { weight: 1, arbitrary: fc.constant({ op: "reopen" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("hooks" as const),
      mode: fc.constantFrom("ok" as const, "is-error" as const, "rpc-error" as const, "hang" as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("abortQueued" as const), server }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("abortStarting" as const), server, ticks: fc.nat(3) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("closeStarting" as const), ticks: fc.nat(3) }) },
);

/** Lets `ticks` turns of the event loop go by (0: none): where in a start a host's hand falls. */
async function turns(ticks: number): Promise<void> {
  for (let i = 0; i < ticks; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** What the model holds of one server: whether it is up, restarts it has had, its extra tools. */
interface ServerModel {
  name: string;
  key: string;
  log: string;
  up: boolean;
  restarts: number;
  extras: string[];
  /** Registers a tool (`boot`) and says so as soon as its first listing is answered. */
  boot: boolean;
}

/** A tool's name as `tools()` offers it: `<server>__<tool>` with what OpenAI refuses made `_`. */
const exposed = (server: string, tool: string) => `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, "_");

/** Waits for `done()` in steps of 25 ms, at most `steps` of them; whether it came true. */
async function until(done: () => boolean | Promise<boolean>, steps = 400): Promise<boolean> {
  for (let i = 0; i < steps; i++) {
    if (await done()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return done();
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };
/**
 * How a call ended, counting its settlements: it must settle exactly once (a promise cannot settle
 * twice, but a `then` that ran twice or never would show here), within a generous number of steps.
 */
async function settle(promise: Promise<unknown>, what: string): Promise<Settled> {
  let outcome: Settled | undefined;
  let times = 0;
  promise.then(
    (value) => {
      times++;
      outcome = { ok: true, value };
    },
    (error: unknown) => {
      times++;
      outcome = { ok: false, error };
    },
  );
  // 30 s of 25 ms steps: far past any call here (the slowest is a 300 ms timeout).
  if (!(await until(() => outcome !== undefined, 1_200))) throw new Error(`${what} never settled`);
  await new Promise((resolve) => setTimeout(resolve, 0));
  if (times !== 1) throw new Error(`${what} settled ${times} times`);
  return outcome as Settled;
}

/** Every message in an error and its cause chain. */
function messages(error: unknown): string {
  const out: string[] = [];
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 10; depth++) {
    out.push(e instanceof Error ? `${e.message}\n${e.stack ?? ""}` : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  return out.join("\n");
}

class Run {
  pool!: McpPool;
  servers: ServerModel[] = [];
  /** Every pid a server of the current pool has had. */
  pids = new Set<number>();
  closed = false;
  tagCount = 0;
  notices: string[] = [];
  readonly trace: string[] = [];

  constructor(
    readonly count: number,
    readonly id: number,
    /** A `maxMessageBytes` the huge answer (200 000 characters) is past. */
    readonly small: boolean,
    readonly boots: readonly boolean[],
    readonly plain: boolean,
  ) {}

  open(): void {
    const generation = this.tagCount++;
    this.servers = NAMES.slice(0, this.count).map((name, i) => ({
      name,
      key: `sk-r89-${randomBytes(12).toString("hex")}`,
      log: join(dir, `run${this.id}-${generation}-${i}.log`),
      up: true,
      restarts: 0,
      boot: this.boots[i] === true,
      extras: this.boots[i] === true ? ["boot"] : [],
    }));
    this.pids = new Set();
    this.notices = [];
    this.closed = false;
    this.pool = createMcpPool(
      this.servers.map((s) => ({
        name: s.name,
        command: NODE,
        args: [SERVER],
        // ROLE: a value spelled as the server's name, as `PGUSER: postgres` for a server named postgres.
        env: {
          API_KEY: s.key,
          LOG: s.log,
          ROLE: s.name,
          FAIL_FILE: `${s.log}.fail`,
          ...(s.boot ? { BOOT: "1" } : {}),
          // Every other run's servers stay up after stdin EOF: close() has to end them.
          ...(this.id % 2 === 1 ? { LINGER: "1" } : {}),
        },
      })),
      {
        maxRestarts: MAX_RESTARTS,
        timeoutMs: 20_000,
        toolNames: this.plain ? "plain" : "prefixed",
        ...(this.small ? { maxMessageBytes: 150_000 } : {}),
        // One hook per server, on its read-only tool; the notices kept to look for credentials in.
        hooks: this.servers.map((s, i) => ({
          id: `hook${i}`,
          events: ["beforeTurn"],
          server: s.name,
          tool: "peek",
          timeoutSeconds: 0.4,
        })),
        onNotice: (text: string) => this.notices.push(text),
      },
    );
  }

  tag(): string {
    return `t${this.id}_${this.tagCount++}`;
  }

  logOf(s: ServerModel): string[] {
    try {
      return readFileSync(s.log, "utf8").split("\n");
    } catch {
      return [];
    }
  }

  notePids(): void {
    for (const status of this.pool.status()) if (status.pid !== undefined) this.pids.add(status.pid);
  }

  /** A failure: a typed McpPoolError of one of `codes`, naming the server and tool, no credential in it. */
  expectError(
    out: Settled,
    codes: McpPoolErrorCode[],
    where: { server?: string; tool?: string },
  ): McpPoolError {
    if (out.ok)
      throw new Error(`expected ${codes.join("/")}, got an answer: ${String(out.value).slice(0, 200)}`);
    const error = out.error;
    if (!McpPoolError.isInstance(error)) throw new Error(`an untyped throw: ${messages(error)}`);
    expect(codes, error.message).toContain(error.code);
    if (where.server !== undefined) {
      expect(error.server, error.message).toBe(where.server);
      // Its message names the server as the host does, not as `MCP server "***"` (but for a tool's
      // own isError text, which is the message).
      if (error.code !== "tool-error") expect(error.message).toContain(`MCP server "${where.server}"`);
    }
    if (where.tool !== undefined) expect(error.tool, error.message).toBe(where.tool);
    this.noCredential(error);
    return error;
  }

  /** No notice, nor a failed server's error in status(), holds a credential. */
  noticesClean(): void {
    const text = [...this.notices, ...this.pool.status().map((s) => s.error?.message ?? "")].join("\n");
    for (const s of this.servers)
      expect(text.includes(s.key), `credential of ${s.name} in: ${text}`).toBe(false);
  }

  noCredential(error: unknown): void {
    const text = messages(error);
    for (const s of this.servers)
      expect(text.includes(s.key), `credential of ${s.name} in: ${text}`).toBe(false);
  }

  /** The tools the model says are offered: each up server's act, peek and extras. */
  expectedTools(): string[] {
    if (this.closed) return [];
    return this.servers
      .filter((s) => s.up)
      .flatMap((s) => [...BASE, ...s.extras].map((tool) => this.nameOf(s, tool)))
      .sort();
  }

  /**
   * The name `tools()` gives a server's tool: `<server>__<tool>`, or under `toolNames: "plain"` the
   * tool's own name where no server before it (of those up) has one so named; what OpenAI refuses
   * made `_`. A server that failed has none (its prefixed name is called, and unknown).
   */
  nameOf(s: ServerModel, tool: string): string {
    if (!this.plain || !s.up) return exposed(s.name, tool);
    const taken = new Set<string>();
    for (const each of this.servers) {
      if (!each.up) continue;
      for (const own of [...BASE, ...each.extras]) {
        const name = taken.has(own) ? `${each.name}__${own}` : own;
        taken.add(name);
        if (each === s && own === tool) return name.replace(/[^A-Za-z0-9_-]/g, "_");
      }
    }
    return exposed(s.name, tool);
  }

  async toolNames(): Promise<string[]> {
    return (await this.pool.tools()).map((t) => t.function.name);
  }

  /** The tool list, once it settles, is the model's (bounded wait: a list_changed is heard late). */
  async checkTools(): Promise<void> {
    const want = this.expectedTools();
    let got: string[] = [];
    await until(async () => {
      got = await this.toolNames();
      return JSON.stringify(got) === JSON.stringify(want);
    }, 200);
    expect(got).toEqual(want);
    if (this.closed) return;
    // The catalogue, the policies and the status say the same.
    const catalogue = await this.pool.servers();
    expect(catalogue.map((c) => c.name)).toEqual(this.servers.filter((s) => s.up).map((s) => s.name));
    expect(catalogue.flatMap((c) => c.tools.map((t) => t.name)).sort()).toEqual(want);
    this.servers.forEach((s, i) => {
      expect(this.pool.status()[i]).toMatchObject(
        s.up
          ? { state: "connected", restarts: s.restarts, tools: BASE.length + s.extras.length }
          : { state: "failed", restarts: s.restarts, tools: 0 },
      );
      expect(this.pool.policy(this.nameOf(s, "act"))?.parallel).toBe(s.up ? false : undefined);
      expect(this.pool.policy(this.nameOf(s, "peek"))?.parallel).toBe(s.up ? true : undefined);
      expect(this.pool.dedupe({ name: this.nameOf(s, "peek") })).toBe(s.up);
    });
  }

  /** Waits for a server's restart (or failure) after a death, as the model says it ends. */
  async settleServer(s: ServerModel, oldPid: number | undefined): Promise<void> {
    const index = this.servers.indexOf(s);
    const ok = await until(() => {
      const status = this.pool.status()[index];
      if (!s.up) return status?.state === "failed";
      return status?.state === "connected" && status.pid !== undefined && status.pid !== oldPid;
    });
    expect(ok, `${s.name} did not settle: ${JSON.stringify(this.pool.status()[index])}`).toBe(true);
    this.notePids();
  }

  /**
   * SIGKILLs a server's process (started first if need be; `first` runs once it is), as the OOM
   * killer would; its pid.
   */
  async kill(s: ServerModel, first?: () => void): Promise<number> {
    await this.pool.connect();
    first?.();
    const pid = this.pool.status()[this.servers.indexOf(s)]?.pid;
    if (pid === undefined) throw new Error(`${s.name} up but without a pid`);
    this.pids.add(pid);
    process.kill(pid, "SIGKILL");
    return pid;
  }

  /** The model after a server died: restarted with its first tools, or failed once restarts ran out. */
  died(s: ServerModel): void {
    if (s.restarts < MAX_RESTARTS) {
      s.restarts++;
      s.extras = s.boot ? ["boot"] : [];
    } else s.up = false;
  }

  /** A plain call that should answer, to check a server is usable. */
  async expectUsable(s: ServerModel, tool: "act" | "peek" = "act"): Promise<void> {
    const tag = this.tag();
    const out = await settle(
      this.pool.call(this.nameOf(s, tool), { mode: "ok", tag }),
      `${tool} on ${s.name} after a stop`,
    );
    if (!out.ok) throw new Error(`${s.name} not usable: ${messages(out.error)}`);
    expect(String(out.value)).toMatch(new RegExp(`^ok ${tag} most=[01]$`));
  }

  async step(cmd: Cmd): Promise<void> {
    this.trace.push(JSON.stringify(cmd));
    if (cmd.op === "reopen") {
      if (!this.closed) await this.close();
      this.open();
      return;
    }
    if (cmd.op === "closeStarting") {
      // A new pool, closed while its servers are still starting: tools() ends empty, nothing runs on.
      if (!this.closed) await this.close();
      this.open();
      const listing = settle(this.pool.tools(), "tools() as the pool closed");
      await turns(cmd.ticks);
      await this.close();
      const out = await listing;
      if (out.ok) expect(out.value).toEqual([]);
      else this.expectError(out, ["closed"], {});
      return;
    }
    if (cmd.op === "abortStarting") {
      // A new pool: a call stopped while its server starts ends at once; the start goes on.
      if (!this.closed) await this.close();
      this.open();
      const s = this.servers[cmd.server % this.servers.length] as ServerModel;
      const controller = new AbortController();
      const tag = this.tag();
      const pending = settle(
        this.pool.call(this.nameOf(s, "act"), { mode: "ok", tag }, controller.signal),
        "a call stopped while its server started",
      );
      await turns(cmd.ticks);
      controller.abort(new Error("stopped by the host"));
      const out = await pending;
      // Stopped before its server had started: aborted. A start fast enough for the call to be
      // answered before the stop is no failure either.
      if (!out.ok) {
        const error = this.expectError(out, ["aborted"], {});
        expect([this.nameOf(s, "act"), "act"]).toContain(error.tool);
      }
      await this.expectUsable(s);
      await this.checkTools();
      return;
    }
    if (cmd.op === "hooks") {
      // Every hook has an outcome, never a rejection: ok with the tool's text, or ok: false with
      // the failure (a timeout said so); none holds a credential.
      const tag = this.tag();
      const out = await settle(this.pool.runHooks("beforeTurn", { mode: cmd.mode, tag }), "runHooks");
      if (!out.ok) throw new Error(`runHooks rejected: ${messages(out.error)}`);
      const outcomes = out.value as Awaited<ReturnType<McpPool["runHooks"]>>;
      expect(outcomes.map((o) => o.id)).toEqual(this.servers.map((_, i) => `hook${i}`));
      this.servers.forEach((s, i) => {
        const outcome = outcomes[i];
        const text = JSON.stringify(outcome);
        for (const each of this.servers) expect(text.includes(each.key), `credential in ${text}`).toBe(false);
        if (this.closed || !s.up || cmd.mode !== "ok") expect(outcome?.ok, text).toBe(false);
        else
          expect(outcome).toMatchObject({
            ok: true,
            context: expect.stringMatching(new RegExp(`^ok ${tag} most=`)),
          });
        if (!this.closed && s.up && cmd.mode === "hang") expect(outcome?.timedOut, text).toBe(true);
        if (!this.closed && s.up && cmd.mode === "is-error")
          expect(outcome?.error).toContain(`failed ${tag} with key ***`);
      });
      if (!this.closed && cmd.mode === "hang")
        for (const s of this.servers.filter((each) => each.up)) {
          const told = await until(() => this.logOf(s).includes(`cancelled ${tag}`));
          expect(told, `${s.name} was not told its hook ran out of time`).toBe(true);
        }
      return;
    }
    if (cmd.op === "list") {
      await this.checkTools();
      this.notePids();
      return;
    }
    const s = this.servers[cmd.server % this.servers.length] as ServerModel;
    const act = this.nameOf(s, "act");
    if (this.closed) {
      // Every call after close() throws `closed`.
      const out = await settle(this.pool.call(act, { mode: "ok", tag: this.tag() }), "a call after close");
      this.expectError(out, ["closed"], {});
      expect(await this.pool.tools()).toEqual([]);
      return;
    }
    // A failed server's tools are not offered: a call to one is an unknown tool naming it as not connected.
    if (!s.up && cmd.op !== "unknown" && cmd.op !== "closeThenCall") {
      const out = await settle(
        this.pool.call(act, { mode: "ok", tag: this.tag() }),
        "a call to a failed server",
      );
      const error = this.expectError(out, ["unknown-tool"], { tool: act });
      expect(error.message).toContain(`Not connected: `);
      expect(error.message).toContain(s.name);
      return;
    }
    switch (cmd.op) {
      case "call": {
        const tag = this.tag();
        const name = this.nameOf(s, cmd.tool);
        const out = await settle(
          this.pool.call(name, { mode: cmd.mode, tag, ms: cmd.ms }),
          `${cmd.tool} ${cmd.mode} on ${s.name}`,
        );
        this.notePids();
        if (cmd.mode === "rpc-error") {
          const error = this.expectError(out, ["call-failed"], { server: s.name, tool: cmd.tool });
          expect(error.message).toContain(`refused ${tag} with key ***`);
        } else if (cmd.mode === "bad-result") {
          // A result that is no CallToolResult: refused as the server's failure, the server runs on.
          this.expectError(out, ["call-failed"], { server: s.name, tool: cmd.tool });
          await this.expectUsable(s);
        } else if (cmd.mode === "huge" && this.small) {
          // Skipped, not held: the call fails naming the size and the option; the server runs on.
          const error = this.expectError(out, ["call-failed"], { server: s.name, tool: cmd.tool });
          expect(error.message).toContain("maxMessageBytes (150,000)");
          const index = this.servers.indexOf(s);
          expect(this.pool.status()[index]).toMatchObject({ state: "connected", restarts: s.restarts });
          await this.expectUsable(s);
        } else if (cmd.mode === "is-error") {
          const error = this.expectError(out, ["tool-error"], { server: s.name, tool: cmd.tool });
          expect(error.message).toContain(`failed ${tag} with key ***`);
        } else {
          if (!out.ok) throw new Error(`${cmd.mode} failed: ${messages(out.error)}`);
          const text = String(out.value);
          expect(text.includes(s.key)).toBe(false);
          if (cmd.mode === "huge") expect(text.length).toBe(200_000);
          else if (cmd.mode === "image") {
            expect(text).toContain(`image ${tag}`);
            expect(text).toContain("[image: image/png");
          } else if (cmd.mode === "ask")
            // A ping is answered; a question the pool cannot answer (no elicit given, no sampling)
            // is refused at once, not left to hang the call.
            expect(text).toMatch(new RegExp(`^ok ${tag} asked result/error/error most=[01]$`));
          else expect(text).toMatch(new RegExp(`^ok ${tag} most=[01]$`));
          // A second answer to the call, or one to a request never made, is ignored: the next call
          // gets its own answer.
          if (cmd.mode === "twice" || cmd.mode === "stray") await this.expectUsable(s);
        }
        return;
      }
      case "unknown": {
        const name = exposed(s.name, "nothing_here");
        const out = await settle(this.pool.call(name, {}), "an unknown tool");
        const error = this.expectError(out, ["unknown-tool"], { tool: name });
        // It lists the tools there are (a tool a server registers as it starts may come later).
        for (const up of this.servers.filter((each) => each.up))
          for (const tool of BASE) expect(error.message).toContain(this.nameOf(up, tool));
        return;
      }
      case "badArgs": {
        const args =
          cmd.kind === "array"
            ? [1, 2]
            : cmd.kind === "missing"
              ? { tag: this.tag() }
              : { mode: "dance", tag: "x" };
        const out = await settle(this.pool.call(act, args), "a call with bad arguments");
        this.expectError(
          out,
          ["call-failed"],
          cmd.kind === "array" ? { tool: act } : { server: s.name, tool: "act" },
        );
        await this.expectUsable(s);
        return;
      }
      case "abortBefore": {
        const tag = this.tag();
        const out = await settle(
          this.pool.call(act, { mode: "ok", tag }, AbortSignal.abort(new Error("stopped"))),
          "a call stopped before it was sent",
        );
        // Named by the tool as called, or (the server up) by the server and its own name for it.
        const error = this.expectError(out, ["aborted"], {});
        expect([act, "act"]).toContain(error.tool);
        await this.expectUsable(s);
        // Never sent: the server never ran it.
        expect(this.logOf(s)).not.toContain(`call ${tag}`);
        return;
      }
      case "abortMid": {
        const tag = this.tag();
        const controller = new AbortController();
        const pending = settle(
          this.pool.call(this.nameOf(s, cmd.tool), { mode: "hang", tag }, controller.signal),
          "a call stopped while it ran",
        );
        const sent = await until(() => this.logOf(s).includes(`call ${tag}`));
        expect(sent, "the hanging call reached its server").toBe(true);
        controller.abort(new Error("stopped by the host"));
        const out = await pending;
        this.expectError(out, ["aborted"], { server: s.name, tool: cmd.tool });
        // The README: the server was sent notifications/cancelled for the request.
        const told = await until(() => this.logOf(s).includes(`cancelled ${tag}`));
        expect(told, `${s.name} was not told of the stop`).toBe(true);
        await this.expectUsable(s);
        return;
      }
      case "timeout": {
        const tag = this.tag();
        const out = await settle(
          this.pool.callTool(act, { mode: "hang", tag }, { timeoutMs: 300 }),
          "a call past its timeout",
        );
        this.expectError(out, ["timeout"], { server: s.name, tool: "act" });
        const told = await until(() => this.logOf(s).includes(`cancelled ${tag}`));
        expect(told, `${s.name} was not told of the timeout`).toBe(true);
        await this.expectUsable(s);
        return;
      }
      case "burst": {
        const calls = [
          ...Array.from({ length: cmd.writes }, () => ({ tool: "act", tag: this.tag() })),
          ...Array.from({ length: cmd.reads }, () => ({ tool: "peek", tag: this.tag() })),
        ];
        const outs = await Promise.all(
          calls.map(({ tool, tag }) =>
            settle(this.pool.call(this.nameOf(s, tool), { mode: "ok", tag, ms: 30 }), `burst ${tool}`),
          ),
        );
        outs.forEach((out, i) => {
          if (!out.ok) throw new Error(`burst call failed: ${messages(out.error)}`);
          // Calls to a tool not marked read-only run one at a time at a server (serializeWrites).
          expect(String(out.value)).toMatch(new RegExp(`^ok ${calls[i]?.tag} most=1$`));
        });
        return;
      }
      case "change": {
        const tag = this.tag();
        const out = await settle(
          this.pool.call(act, { mode: "change", tag, extras: cmd.extras }),
          "a call that changes the tools",
        );
        if (!out.ok) throw new Error(`change failed: ${messages(out.error)}`);
        s.extras = [...cmd.extras];
        await this.checkTools();
        return;
      }
      case "extra": {
        // Any name an extra tool ever had: offered now (answered), or gone with a change (unknown).
        const tool = ["find", "read.file", "write", "x-y", "boot"][cmd.pick] as string;
        const name = this.nameOf(s, tool);
        // A tool a server registers as it starts is offered once the listing after its
        // list_changed is in (the tool list settles): not before, as tools() does not offer it yet.
        if (s.extras.includes(tool)) await this.checkTools();
        const out = await settle(this.pool.call(name, {}), "an extra tool");
        if (s.extras.includes(tool)) {
          if (!out.ok) throw new Error(`extra ${tool} failed: ${messages(out.error)}`);
          expect(String(out.value)).toMatch(new RegExp(`^extra ${tool.replace(".", "\\.")} most=`));
        } else this.expectError(out, ["unknown-tool"], { tool: name });
        return;
      }
      case "die": {
        const tag = this.tag();
        await this.pool.connect();
        const oldPid = this.pool.status()[this.servers.indexOf(s)]?.pid;
        const out = await settle(
          this.pool.call(act, { mode: cmd.how, tag }),
          `a call whose server ${cmd.how}s`,
        );
        const error = this.expectError(out, ["server-died"], { server: s.name, tool: "act" });
        const restarting = s.restarts < MAX_RESTARTS;
        expect(error.message).toContain(restarting ? "being restarted" : "not restarted again");
        this.died(s);
        await this.settleServer(s, oldPid);
        await this.checkTools();
        return;
      }
      case "killIdle": {
        const oldPid = await this.kill(s);
        this.died(s);
        await this.settleServer(s, oldPid);
        await this.checkTools();
        return;
      }
      case "killThenCall": {
        const oldPid = await this.kill(s);
        const restarting = s.restarts < MAX_RESTARTS;
        this.died(s);
        const tag = this.tag();
        // Sent before the pool heard of the death, the call is the one the death cut short; after,
        // it waits for the restart (README), or finds no such tool once the server has failed.
        const out = await settle(this.pool.call(act, { mode: "ok", tag }), "a call as its server was killed");
        // Under plain names, once the server has failed its name may be another server's own.
        if (out.ok && !(this.plain && !restarting)) {
          expect(restarting, "answered by a server that is not restarted").toBe(true);
          expect(String(out.value)).toMatch(new RegExp(`^ok ${tag} most=1$`));
        } else if (!out.ok)
          this.expectError(out, restarting ? ["server-died"] : ["server-died", "unknown-tool"], {
            tool: (out.error as McpPoolError).code === "unknown-tool" ? act : "act",
          });
        await this.settleServer(s, oldPid);
        await this.checkTools();
        return;
      }
      case "abortRestarting": {
        // A call stopped while its server is (being) restarted after a kill: it ends at once, as
        // aborted (or, sent before the death was heard of, server-died); the restart goes on.
        const oldPid = await this.kill(s);
        const restarting = s.restarts < MAX_RESTARTS;
        this.died(s);
        const controller = new AbortController();
        const tag = this.tag();
        const pending = settle(
          this.pool.call(act, { mode: "hang", tag }, controller.signal),
          "a call stopped as its server restarts",
        );
        await turns(cmd.ticks);
        controller.abort(new Error("stopped by the host"));
        const out = await pending;
        const codes: McpPoolErrorCode[] = restarting
          ? ["aborted", "server-died"]
          : ["aborted", "server-died", "unknown-tool"];
        const error = this.expectError(out, codes, {});
        expect([act, "act"]).toContain(error.tool);
        await this.settleServer(s, oldPid);
        if (s.up) await this.expectUsable(s);
        await this.checkTools();
        return;
      }
      case "killThenClose": {
        // Closed while its server is being restarted after a kill (or before the death is heard
        // of): close() checks that no process, the restarted one included, is left.
        const oldPid = await this.kill(s);
        await turns(cmd.ticks);
        await this.close();
        return;
      }
      case "restartFails": {
        // Killed, and its restart refuses to start: failed, its tools gone; a call that waited for
        // the restart fails naming the tool (or, sent before the death was heard of, server-died).
        // Written once the server runs: its restart, not its first start, refuses.
        const oldPid = await this.kill(s, () => writeFileSync(`${s.log}.fail`, ""));
        const restarting = s.restarts < MAX_RESTARTS;
        const out = await settle(
          this.pool.call(act, { mode: "ok", tag: this.tag() }),
          "a call as the restart fails",
        );
        if (restarting) s.restarts++;
        s.up = false;
        if (out.ok) {
          // Only under plain names, where the name went to another server once this one failed.
          expect(this.plain, `answered: ${String(out.value)}`).toBe(true);
        } else {
          const error = this.expectError(out, ["server-died", "connect-failed", "unknown-tool"], {});
          if (error.code !== "unknown-tool") expect(error).toMatchObject({ server: s.name, tool: "act" });
        }
        await this.settleServer(s, oldPid);
        rmSync(`${s.log}.fail`, { force: true });
        const index = this.servers.indexOf(s);
        if (restarting) expect(this.pool.status()[index]?.error?.code).toBe("connect-failed");
        await this.checkTools();
        return;
      }
      case "dieQueued": {
        // Writes waiting for their turn behind a write whose server dies: they run on the restarted
        // server, or (none) fail naming the server and the tool.
        await this.pool.connect();
        const oldPid = this.pool.status()[this.servers.indexOf(s)]?.pid;
        const restarting = s.restarts < MAX_RESTARTS;
        const dying = settle(
          this.pool.call(act, { mode: "exit", tag: this.tag(), ms: 40 }),
          "a write whose server dies",
        );
        const tags = Array.from({ length: cmd.queued }, () => this.tag());
        const queued = tags.map((tag) =>
          settle(this.pool.call(act, { mode: "ok", tag }), "a write queued behind it"),
        );
        this.expectError(await dying, ["server-died"], { server: s.name, tool: "act" });
        const outs = await Promise.all(queued);
        outs.forEach((out, i) => {
          if (restarting) {
            if (!out.ok) throw new Error(`a queued write failed: ${messages(out.error)}`);
            expect(String(out.value)).toMatch(new RegExp(`^ok ${tags[i]} most=1$`));
          } else
            expect(this.expectError(out, ["server-died"], { server: s.name, tool: "act" }).code).toBe(
              "server-died",
            );
        });
        this.died(s);
        await this.settleServer(s, oldPid);
        await this.checkTools();
        return;
      }
      case "dieBusy": {
        await this.pool.connect();
        const oldPid = this.pool.status()[this.servers.indexOf(s)]?.pid;
        const tags = Array.from({ length: cmd.hung }, () => this.tag());
        const hung = tags.map((tag) =>
          settle(
            this.pool.call(this.nameOf(s, "peek"), { mode: "hang", tag }),
            "a call hung as its server died",
          ),
        );
        const reached = await until(() => tags.every((tag) => this.logOf(s).includes(`call ${tag}`)));
        expect(reached, "the hung calls reached their server").toBe(true);
        const restarting = s.restarts < MAX_RESTARTS;
        // Read-only too: a call to a tool not marked read-only would wait for the hung ones (the
        // server's gate lets reads run together, a write alone).
        const out = await settle(
          this.pool.call(this.nameOf(s, "peek"), { mode: cmd.how, tag: this.tag() }),
          "a call whose server dies",
        );
        // Every call the death cut short is answered with server-died naming the server and tool.
        this.expectError(out, ["server-died"], { server: s.name, tool: "peek" });
        for (const each of await Promise.all(hung)) {
          const error = this.expectError(each, ["server-died"], { server: s.name, tool: "peek" });
          expect(error.message).toContain(restarting ? "being restarted" : "not restarted again");
        }
        this.died(s);
        await this.settleServer(s, oldPid);
        await this.checkTools();
        return;
      }
      case "changeMany": {
        const tags = cmd.lists.map(() => this.tag());
        const outs = await Promise.all(
          cmd.lists.map((extras, i) =>
            settle(
              this.pool.call(this.nameOf(s, "peek"), { mode: "change", tag: tags[i], extras }),
              "one of several changes of the tools",
            ),
          ),
        );
        for (const out of outs) if (!out.ok) throw new Error(`change failed: ${messages(out.error)}`);
        // The server's newest list is the one of the change it ran last.
        const order = this.logOf(s);
        const last = tags
          .map((tag, i) => ({ at: order.lastIndexOf(`call ${tag}`), i }))
          .sort((a, b) => b.at - a.at)[0] as { i: number };
        s.extras = [...(cmd.lists[last.i] as string[])];
        await this.checkTools();
        return;
      }
      case "abortQueued": {
        // A write stopped while it waits for its turn behind a hung write: aborted, never sent.
        const first = this.tag();
        const stopFirst = new AbortController();
        const hung = settle(
          this.pool.call(act, { mode: "hang", tag: first }, stopFirst.signal),
          "a hung write",
        );
        const reached = await until(() => this.logOf(s).includes(`call ${first}`));
        expect(reached, "the hung write reached its server").toBe(true);
        const controller = new AbortController();
        const tag = this.tag();
        const queued = settle(this.pool.call(act, { mode: "ok", tag }, controller.signal), "a queued write");
        await turns(2);
        controller.abort(new Error("stopped by the host"));
        this.expectError(await queued, ["aborted"], { server: s.name, tool: "act" });
        stopFirst.abort(new Error("stopped by the host"));
        this.expectError(await hung, ["aborted"], { server: s.name, tool: "act" });
        await this.expectUsable(s);
        expect(this.logOf(s)).not.toContain(`call ${tag}`);
        return;
      }
      case "closeMid": {
        const tag = this.tag();
        const pending = settle(
          this.pool.call(act, { mode: "hang", tag }),
          "a call running as the pool closed",
        );
        await until(() => this.logOf(s).includes(`call ${tag}`));
        await this.close();
        const out = await pending;
        this.expectError(out, ["closed"], { server: s.name, tool: "act" });
        return;
      }
      case "closeThenCall": {
        await this.close();
        const out = await settle(this.pool.call(act, { mode: "ok", tag: this.tag() }), "a call after close");
        this.expectError(out, ["closed"], {});
        expect(await this.pool.tools()).toEqual([]);
        expect(this.pool.policy(act)).toBeUndefined();
        return;
      }
    }
  }

  /** close(): then no server process of this pool runs, nor its reaper. */
  async close(): Promise<void> {
    this.notePids();
    const tree = [...this.pids].flatMap((pid) => [pid, ...descendants(pid)]);
    await this.pool.close();
    this.closed = true;
    const left = tree.filter(running);
    expect(left, `left running after close(): ${left.map(commandLine).join("; ")}`).toEqual([]);
    const ours = () =>
      descendants(process.pid).filter((pid) => {
        const line = commandLine(pid);
        return line.includes("review-r89-server") || line.includes("reaper-process");
      });
    // The reaper says bye and exits once the last server is gone: a moment after close() resolves.
    await until(() => ours().length === 0, 200);
    expect(ours().map(commandLine)).toEqual([]);
  }
}

describe("a pool of real MCP servers under a random host (r89)", () => {
  it(
    "keeps every call settled once, typed, masked; the tool list current; nothing running after close",
    async () => {
      let runs = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 3 }),
          fc.boolean(),
          fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
          fc.boolean(),
          fc.array(cmdArb, { minLength: 3, maxLength: 12 }),
          async (count, small, boots, plain, cmds) => {
            const run = new Run(count, runs++, small, boots, plain);
            run.open();
            try {
              for (const cmd of cmds) {
                await run.step(cmd);
                run.noticesClean();
              }
              if (!run.closed) await run.close();
            } catch (error) {
              await run.pool.close().catch(() => {});
              throw new Error(`after ${run.trace.join(" → ")}: ${messages(error)}`, { cause: error });
            }
          },
        ),
        propertyRuns(RUNS, {
          // Shrinking starts servers again for every candidate: only when asked (R89_SHRINK=1).
          endOnFailure: process.env.R89_SHRINK !== "1",
          ...(process.env.R89_SEED ? { seed: Number(process.env.R89_SEED) } : {}),
        }),
      );
    },
    propertyTimeout(RUNS * 4_000 + 60_000),
  );
});
