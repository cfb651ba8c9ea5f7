/**
 * Review r70 of the MCP pool, against a server written by hand over stdio
 * (`test/review-r70-server.mjs`): parameters whose names hold half a surrogate pair, and a server
 * that stops reading its stdin while many calls are written to it.
 */
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { exited, killHosts, startHost } from "../test/hosts.js";
import { running, stillRunning } from "../test/processes.js";
import { NODE } from "../test/support.js";
import { createMcpPool, type McpPool } from "./index.js";

const SERVER = fileURLToPath(new URL("../test/review-r70-server.mjs", import.meta.url));
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const pools: McpPool[] = [];
/** Helpers a test saw started: killed after it, whatever it found. */
const helpers: number[] = [];
afterEach(async () => {
  killHosts();
  await Promise.all(pools.splice(0).map((p) => p.close()));
  for (const pid of helpers.splice(0)) if (running(pid)) process.kill(pid, "SIGKILL");
});
const pool = (...args: Parameters<typeof createMcpPool>) => {
  const made = createMcpPool(...args);
  pools.push(made);
  return made;
};

describe('r70-1: a tool whose parameter names hold half a surrogate pair ("q\\ud83d", "q\\ud83e")', () => {
  it("is offered with each its own well-formed name, and the server is called by the names it listed", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }]);
    const keys = (await p.tools()).find((t) => t.function.name === "r__keys");
    const parameters = keys?.function.parameters as { properties: Record<string, { description?: string }> };
    expect(LONE_SURROGATE.test(JSON.stringify(parameters))).toBe(false);
    // Before: both were written "q\ufffd" in the listing, one parameter (the second's schema) in place of two.
    expect(Object.keys(parameters.properties)).toEqual(["q\ufffd", "q\ufffd_2", "opts"]);
    expect(parameters.properties["q\ufffd"]?.description).toBe("The query");
    // The call as a model writes it against those names; the server answers with the names it got.
    const got = await p.call("r__keys", { "q\ufffd": "cats", "q\ufffd_2": null, opts: { "x\ufffd": 3 } });
    // Before: {"q\ufffd":"string","opts":{"x\ufffd":"number"}}, names the server does not take.
    expect(got).toBe(JSON.stringify({ "q\ud83d": "string", opts: { "x\udc00": "number" } }));
  });
});

describe("r70-2: a server that stops reading its stdin while many calls are written to it", () => {
  it("gets every call once it reads again, with no listener per waiting call (11 made a MaxListenersExceededWarning)", async () => {
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on("warning", onWarning);
    try {
      const p = pool([{ name: "r", command: NODE, args: [SERVER] }]);
      await p.tools();
      const napping = p.call("r__nap", { ms: 1500 });
      await new Promise((resolve) => setTimeout(resolve, 200));
      // 200 KB each: the pipe (64 KiB) is full from the first, and every later write waits for it to drain.
      const text = "x".repeat(200_000);
      const calls = Array.from({ length: 30 }, () => p.call("r__echo", { text }));
      expect(await napping).toBe("rested");
      expect(await Promise.all(calls)).toEqual(Array(30).fill("200000"));
      // A warning is emitted on the next tick after the listener that passed the limit.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning").map((w) => w.message)).toEqual(
        [],
      );
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("still closes at once when the server never reads again (the waiting writes end with it)", async () => {
    const p = pool([{ name: "r", command: NODE, args: [SERVER] }]);
    await p.tools();
    void p.call("r__nap", { ms: 60_000 }).catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 200));
    const text = "x".repeat(200_000);
    const calls = Array.from({ length: 5 }, () =>
      p.call("r__echo", { text }).catch((error: unknown) => error),
    );
    const started = Date.now();
    await p.close();
    // Not held by the 60 s nap nor by the writes the server never reads: a bound far below the nap
    // and far above the fraction of a second it takes, so a loaded machine cannot fail it.
    expect(Date.now() - started).toBeLessThan(15_000);
    for (const outcome of await Promise.all(calls)) expect(outcome).toMatchObject({ code: "closed" });
  }, 30_000);
});

describe.skipIf(process.platform !== "linux")(
  "r70-3: a helper a server starts the way a daemon does (its parent exits at once, and init takes it over)",
  () => {
    it("is ended by close() when the server started it before its first answer", async () => {
      const file = join(await mkdtemp(join(tmpdir(), "r70-")), "daemon");
      const p = pool([{ name: "r", command: NODE, args: [SERVER], env: { DAEMON_FILE: file } }]);
      await p.tools();
      const helper = Number((await readFile(file, "utf8")).trim());
      helpers.push(helper);
      expect(running(helper)).toBe(true);
      await p.close();
      // Before: no read of the tree reached it (its parent had died before the first), and it ran on.
      expect(await stillRunning([helper], 2_000)).toEqual([]);
    });

    it("is ended by the pool's reaper when the host is killed by SIGKILL (test/reaper-host.mjs on dist/)", async () => {
      const file = join(await mkdtemp(join(tmpdir(), "r70-")), "daemon");
      const host = fileURLToPath(new URL("../test/reaper-host.mjs", import.meta.url));
      const started = startHost("wait", { path: host, args: ["--daemon-file", file] });
      const { server } = (await started.pids) as unknown as { server: number };
      const helper = Number((await readFile(file, "utf8")).trim());
      helpers.push(helper);
      expect(running(helper)).toBe(true);
      process.kill(started.host.pid as number, "SIGKILL");
      await exited(started.host);
      // Before: the server was ended, and the helper ran on.
      expect(await stillRunning([server, helper], 10_000)).toEqual([]);
    });

    it("is ended by close() when the server started it while it ran, between two reads of its tree", async () => {
      const p = pool([{ name: "r", command: NODE, args: [SERVER] }]);
      await p.tools();
      // More than a second after the last answer read the tree, and no answer after it.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const helper = Number(await p.call("r__daemon", {}));
      helpers.push(helper);
      expect(running(helper)).toBe(true);
      await p.close();
      expect(await stillRunning([helper], 2_000)).toEqual([]);
    });
  },
);
