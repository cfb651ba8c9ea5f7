/**
 * Review r79: a `tools/list_changed` that changed nothing is no change — no "changed its tools"
 * notice, no `onToolsChanged` — against the published server-everything (which sends one as it
 * starts) and the fixture server (whose `add_tool`, called again, announces the same list).
 */
import { afterEach, describe, expect, it } from "vitest";
import { EVERYTHING, FIXTURE, NODE } from "../test/support.js";
import { createMcpPool, type McpPool } from "./index.js";

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

/** A pool over one server, what it tells `onNotice`, and how often `onToolsChanged`. */
function watched(name: string, args: string[]) {
  const notices: string[] = [];
  const told = { changes: 0 };
  const pool = createMcpPool([{ name, command: NODE, args }], {
    onNotice: (text) => notices.push(text),
    onToolsChanged: () => told.changes++,
  });
  pools.push(pool);
  return { pool, notices, told };
}

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a list_changed that changed nothing", () => {
  it("server-everything's at start: no 'changed its tools' notice (the playground printed one on every start)", async () => {
    const { pool, notices, told } = watched("everything", [EVERYTHING]);
    const first = (await pool.tools()).map((t) => t.function.name);
    expect(first.length).toBeGreaterThan(5);
    // Its notification, and the listing it draws, come just after the start.
    await settle(1_500);
    expect(notices.filter((n) => n.includes("changed its tools"))).toEqual([]);
    expect(told.changes).toBe(1);
    expect((await pool.tools()).map((t) => t.function.name)).toEqual(first);
  }, 30_000);

  it("a second add_tool announces the same list: told once, for the first, which did change it", async () => {
    const { pool, notices, told } = watched("fx", [FIXTURE]);
    await pool.tools();
    await pool.call("fx__add_tool", {});
    for (let i = 0; i < 100 && !notices.some((n) => n.includes("changed its tools")); i++) await settle(20);
    expect(notices.filter((n) => n.includes("changed its tools"))).toHaveLength(1);
    const after = told.changes;
    await pool.call("fx__add_tool", {});
    await settle(800);
    expect(notices.filter((n) => n.includes("changed its tools"))).toHaveLength(1);
    expect(told.changes).toBe(after);
    expect((await pool.tools()).map((t) => t.function.name)).toContain("fx__added_tool");
  }, 30_000);
});

describe("many calls in parallel on one signal (a run's step)", () => {
  it("adds one abort listener to it, not one per call: no leak warning at the eleventh, and a stop still stops them all", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    try {
      const { pool } = watched("fx", [FIXTURE]);
      await pool.tools();
      const run = new AbortController();
      const answers = await Promise.all(
        Array.from({ length: 30 }, () => pool.call("fx__whoami", {}, run.signal)),
      );
      expect(answers).toHaveLength(30);
      // Thirty calls that hang, then the run stopped: every one ends, told it was stopped.
      const hung = Array.from({ length: 30 }, () =>
        pool.call("fx__hang", {}, run.signal).then(
          () => "answered",
          (error: Error) => error.message,
        ),
      );
      await settle(200);
      run.abort();
      const ends = await Promise.all(hung);
      expect(ends.every((end) => /stopped/.test(end))).toBe(true);
      await settle(50);
      // Before: "MaxListenersExceededWarning: Possible EventTarget memory leak detected. 11 abort
      // listeners added to [AbortSignal]" — each call hung a listener of its own on the run's signal.
      expect(warnings.filter((w) => w.includes("MaxListeners"))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  }, 30_000);
});
