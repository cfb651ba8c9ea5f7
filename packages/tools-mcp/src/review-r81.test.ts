/**
 * Review r81e: a switch-off hook entry, `{ id, enabled: false }` with no `events` (what a stronger
 * spec layer writes to switch a weaker layer's hook off), given raw to `createMcpPool`, was refused
 * as a hook without events, so a host that built one could not build a pool at all. It is now
 * read as off; a hook that is on still needs its events, and `enabled` must be a boolean.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createMcpPool, type McpHookSpec, type McpPool, McpPoolError } from "./index.js";

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

/** The pool `createMcpPool` builds with `hooks`, or the message it refuses them with. */
function poolOr(hooks: unknown[]): McpPool | string {
  try {
    const pool = createMcpPool([], { hooks: hooks as McpHookSpec[] });
    pools.push(pool);
    return pool;
  } catch (error) {
    return McpPoolError.isInstance(error) ? `${error.code}: ${error.message}` : `untyped: ${String(error)}`;
  }
}

describe("a switch-off hook entry with no events (r81e #3)", () => {
  it.each([
    [{ id: "audit", enabled: false }],
    [{ id: "audit", enabled: false, events: null }],
    [{ id: "audit", enabled: false, server: "log", tool: "write" }],
  ])("%j is taken as off: the pool builds, and the hook runs on no event", async (off) => {
    const pool = poolOr([off, { id: "greet", events: ["sessionStart"] }]);
    expect(typeof pool).not.toBe("string");
    const outcomes = await (pool as McpPool).runHooks("sessionStart", {});
    // Only the hook that is on runs (it names no server, so its outcome says so).
    expect(outcomes.map((outcome) => outcome.id)).toEqual(["greet"]);
    for (const event of ["afterTurn", "beforeTurn", "sessionEnd"] as const) {
      expect(await (pool as McpPool).runHooks(event, {})).toEqual([]);
    }
  });

  it.each([
    [
      { id: "audit" },
      'invalid-config: hooks[0] ("audit").events must be an array of events (only an entry with enabled: false may leave it out); got undefined.',
    ],
    [
      { id: "audit", enabled: true },
      'invalid-config: hooks[0] ("audit").events must be an array of events (only an entry with enabled: false may leave it out); got undefined.',
    ],
    [
      { id: "audit", enabled: false, events: "afterTurn" },
      'invalid-config: hooks[0] ("audit").events must be an array of events (only an entry with enabled: false may leave it out); got the string "afterTurn".',
    ],
    [
      { id: "audit", enabled: "false", events: ["afterTurn"] },
      'invalid-config: hooks[0] ("audit").enabled must be true or false; got the string "false".',
    ],
    [
      { id: "audit", enabled: 0 },
      'invalid-config: hooks[0] ("audit").enabled must be true or false; got the number 0.',
    ],
  ])("%j is refused with a typed error naming it", (hook, message) => {
    expect(poolOr([hook])).toBe(message);
  });
});
