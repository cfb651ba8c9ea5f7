// The pool's bounds against a server written by hand (test/raw-server.mjs): the write gate is per
// server, a hook's time bound covers its wait for a turn, connectTimeoutMs covers every page of
// tools/list, and an answer larger than maxMessageBytes fails its call without killing the server.
import { afterEach, describe, expect, it } from "vitest";
import { FIXTURE, NODE, RAW } from "../test/support.js";
import { createMcpPool, type McpPool, McpPoolError, type McpPoolOptions } from "./index.js";

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

/** A pool of raw servers, one per name, each given `env`. */
function rawPool(servers: Record<string, Record<string, string>>, options: McpPoolOptions = {}): McpPool {
  const pool = createMcpPool(
    Object.entries(servers).map(([name, env]) => ({ name, command: NODE, args: [RAW], env })),
    options,
  );
  pools.push(pool);
  return pool;
}
async function caught(promise: Promise<unknown>): Promise<McpPoolError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(McpPoolError.isInstance(error)).toBe(true);
  return error as McpPoolError;
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the write gate", () => {
  it("is one per server: a write hung on one server holds up neither reads nor writes on another", async () => {
    const pool = rawPool({ a: {}, b: {} }, { timeoutMs: 20_000 });
    await pool.connect();
    const stop = new AbortController();
    let settled = false;
    const hung = pool.call("a__write_hang", {}, stop.signal).finally(() => {
      settled = true;
    });
    hung.catch(() => {});
    await sleep(100);
    expect(await pool.call("b__echo", { text: "hi" })).toBe("hi");
    expect(await pool.call("b__write_slow", { ms: 10 })).toMatch(/^slept/);
    expect(settled).toBe(false);

    // On the hung write's own server a write still waits its turn.
    let queuedDone = false;
    const queued = pool.call("a__write_slow", { ms: 10 }).finally(() => {
      queuedDone = true;
    });
    await sleep(300);
    expect(queuedDone).toBe(false);
    stop.abort();
    expect((await caught(hung)).code).toBe("aborted");
    expect(await queued).toMatch(/^slept; most at once: 1$/);
  });
});

describe("runHooks", () => {
  it("a hook's timeoutSeconds bounds its wait for its server's turn too: hooks on one server's writes take turns", async () => {
    // Each hook's tool takes 1 s and is not read-only, so the three take turns, in order. The first
    // has 5 s and answers. The second has 0.5 s, all of it spent waiting behind the first. The
    // third has 1.6 s: it waits 1 s for the first, and the 0.6 s left is not enough to run. Before,
    // each bound started at the call: the second ran out while running, and the third answered.
    const hook = (id: string, timeoutSeconds: number) => ({
      id,
      events: ["beforeTurn"],
      server: "s",
      tool: "write_slow",
      timeoutSeconds,
    });
    const pool = rawPool({ s: {} }, { hooks: [hook("h1", 5), hook("h2", 0.5), hook("h3", 1.6)] });
    await pool.connect();
    const outcomes = await pool.runHooks("beforeTurn", {});
    expect(outcomes.map((o) => [o.id, o.ok, o.timedOut ?? false])).toEqual([
      ["h1", true, false],
      ["h2", false, true],
      ["h3", false, true],
    ]);
    expect(outcomes[1]?.error).toBe(
      'write_slow on MCP server "s" did not start within 0.5 s: it waited all that time for its turn behind the server\'s other calls that are not read-only.',
    );
    expect(outcomes[2]?.error).toMatch(
      /^write_slow on MCP server "s" did not answer within 1\.6 s \(\d+(\.\d)? s of it waiting for its turn behind the server's other calls that are not read-only\); the server was asked to cancel it\.$/,
    );
    // Each bounded by its own time, not by the first hook's 5 s: the messages above say which
    // bound ran out; these leave a loaded machine 2.5 s of timer lateness.
    expect(outcomes[1]?.ms).toBeLessThan(500 + 2500);
    expect(outcomes[2]?.ms).toBeLessThan(1600 + 2500);
  });

  it("hooks on different servers' writes run at once, each within its time", async () => {
    const hooks = ["s", "t"].map((server) => ({
      id: `on-${server}`,
      events: ["afterTurn"],
      server,
      tool: "write_slow",
      timeoutSeconds: 30,
    }));
    const pool = rawPool({ s: {}, t: {} }, { hooks });
    await pool.connect();
    const started = Date.now();
    const outcomes = await pool.runHooks("afterTurn", {});
    const took = Date.now() - started;
    expect(outcomes.map((o) => [o.id, o.ok, o.context])).toEqual([
      ["on-s", true, "slept; most at once: 1"],
      ["on-t", true, "slept; most at once: 1"],
    ]);
    // At once: the two took about as long together as the longer of them alone (one after the
    // other, twice as long). Compared in the same run, not against a bound of 1.8 s that a loaded
    // machine could stretch a 1 s tool past.
    const longest = Math.max(...outcomes.map((o) => o.ms ?? 0));
    expect(longest).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(longest * 1.5);
  });
});

describe("listing a server's tools", () => {
  it("has one connectTimeoutMs for every page together", async () => {
    // 150 ms a page without end: before, each page had its own bound, and the start took 15 s.
    const pool = rawPool({ p: { PAGES: "1", PAGE_MS: "150" } }, { connectTimeoutMs: 1000 });
    const started = Date.now();
    const [status] = await pool.connect();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(status?.state).toBe("failed");
    expect(status?.error?.code).toBe("connect-failed");
    expect(status?.error?.message).toMatch(
      /^MCP server "p" \(.*\) could not be started: listing its tools took longer than connectTimeoutMs \(1 s\), after \d+ pages?\./,
    );
  });

  it("keeps the first 100 pages of a server that pages without end, and says so to onNotice", async () => {
    const notices: string[] = [];
    const pool = rawPool({ p: { PAGES: "1" } }, { onNotice: (t) => notices.push(t) });
    const [status] = await pool.connect();
    expect(status).toMatchObject({ state: "connected", tools: 100 });
    expect(notices).toContain(
      'MCP server "p" listed its tools over more than 100 pages; only the first 100 pages (100 tools) are used.',
    );
  });
});

describe("an answer larger than maxMessageBytes", () => {
  for (const idFirst of [false, true]) {
    it(`fails the call it answered with call-failed naming its size and the option, and the server runs on (its id ${idFirst ? "first" : "last"})`, async () => {
      const notices: string[] = [];
      const pool = rawPool(
        { s: idFirst ? { ID_FIRST: "1" } : {} },
        { maxMessageBytes: 100_000, timeoutMs: 20_000, onNotice: (t) => notices.push(t) },
      );
      await pool.connect();
      const pid = pool.status()[0]?.pid;
      for (let round = 0; round < 2; round++) {
        const error = await caught(pool.call("s__big", { bytes: 200_000 }));
        expect(error.code).toBe("call-failed");
        expect(error.server).toBe("s");
        expect(error.tool).toBe("big");
        expect(error.message).toMatch(
          /^big on MCP server "s" answered with a message of 200,\d{3} bytes, more than maxMessageBytes \(100,000\) allows, so the answer was dropped; the server runs on\. Ask for less at a time, or raise the pool's maxMessageBytes\.$/,
        );
        expect(pool.status()[0]).toMatchObject({ state: "connected", restarts: 0, pid });
      }
      expect(await pool.call("s__big", { bytes: 99_000 })).toHaveLength(99_000);
      expect(notices.filter((n) => n.includes("stopped"))).toEqual([]);
    });
  }

  it("is 10 MB by default (the SDK's cap): an 11 MB answer fails its call, and the server runs on", async () => {
    const pool = rawPool({ s: {} }, { timeoutMs: 25_000 });
    await pool.connect();
    const error = await caught(pool.call("s__big", { bytes: 11_000_000 }));
    expect(error.code).toBe("call-failed");
    expect(error.message).toMatch(
      /a message of 11,000,\d{3} bytes, more than maxMessageBytes \(10,485,760\)/,
    );
    expect(pool.status()[0]).toMatchObject({ state: "connected", restarts: 0 });
    expect(await pool.call("s__echo", { text: "still here" })).toBe("still here");
  });

  it("that answers no call (a notification) is skipped and told to onNotice; the call goes on", async () => {
    const notices: string[] = [];
    const pool = rawPool({ s: {} }, { maxMessageBytes: 100_000, onNotice: (t) => notices.push(t) });
    await pool.connect();
    expect(await pool.call("s__big_notice", { bytes: 200_000 })).toBe("after the notice");
    expect(notices).toEqual([
      expect.stringMatching(
        /^MCP server "s" sent a message of 200,\d{3} bytes, more than maxMessageBytes \(100,000\) allows; it was skipped\./,
      ),
    ]);
    expect(pool.status()[0]).toMatchObject({ state: "connected", restarts: 0 });
  });
});

describe("stderrLines", () => {
  it("0 quotes no stderr in a failure, and does not claim the server wrote none", async () => {
    const pool = createMcpPool([{ name: "fx", command: NODE, args: [FIXTURE, "--fail"] }], {
      stderrLines: 0,
    });
    pools.push(pool);
    const [status] = await pool.connect();
    expect(status?.state).toBe("failed");
    expect(status?.error?.message).not.toContain("fixture:");
    expect(status?.error?.message).not.toContain("stderr");
  });

  it("2 quotes the last two lines", async () => {
    const pool = createMcpPool([{ name: "fx", command: NODE, args: [FIXTURE, "--fail"] }], {
      stderrLines: 2,
    });
    pools.push(pool);
    const [status] = await pool.connect();
    const tail = status?.error?.message.split("Its stderr ended with:\n")[1]?.split("\n") ?? [];
    expect(tail).toHaveLength(2);
    expect(tail[1]).toBe("  fixture: cannot start without a database");
  });
});
