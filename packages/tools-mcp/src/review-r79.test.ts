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
