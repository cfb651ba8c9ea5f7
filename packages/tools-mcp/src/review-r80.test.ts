/**
 * Review r80e: a hook's id (and the server and tool it names) quoted in a message. The pool quoted
 * them raw: a line break wrote a second log line, and an id of 10^5 characters was echoed whole.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createMcpPool, type McpHookSpec, type McpPool, McpPoolError } from "./index.js";

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const FORGED = "a\nERROR forged line";
const LONG = `${"x".repeat(39)}😀${"y".repeat(100_000)}`;

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

/** The message `createMcpPool` refuses a hook with, or "accepted". */
function refusal(hook: McpHookSpec): string {
  try {
    pools.push(createMcpPool([], { hooks: [hook] }));
  } catch (error) {
    return McpPoolError.isInstance(error) ? error.message : String(error);
  }
  return "accepted";
}

describe("a hook's id in the refusal of its timeoutSeconds", () => {
  it("is escaped as JSON writes it, so the message stays one line", () => {
    expect(refusal({ id: FORGED, events: [], timeoutSeconds: -1 })).toBe(
      'hooks[0] ("a\\nERROR forged line").timeoutSeconds must be a non-negative number of seconds; got the number -1.',
    );
  });

  it("is cut, never between the halves of an emoji, and says how long it was", () => {
    const message = refusal({ id: LONG, events: [], timeoutSeconds: -1 });
    expect(message.length).toBeLessThan(200);
    expect(message).not.toMatch(LONE_SURROGATE);
    expect(message).toBe(
      `hooks[0] ("${"x".repeat(39)}"… (100041 characters)).timeoutSeconds must be a non-negative number of seconds; got the number -1.`,
    );
  });
});

describe("a hook's id, server and tool in its outcome's error", () => {
  it("are escaped and cut there too", async () => {
    const pool = createMcpPool([], {
      hooks: [
        { id: FORGED, events: ["beforeTurn"] },
        { id: LONG, events: ["beforeTurn"], server: `s\r\n${"z".repeat(100_000)}`, tool: "t" },
      ],
    });
    pools.push(pool);
    const outcomes = await pool.runHooks("beforeTurn", {});
    expect(outcomes.map((outcome) => outcome.error)).toEqual([
      'hook "a\\nERROR forged line" names no MCP server and tool.',
      `hook "${"x".repeat(39)}"… (100041 characters) names MCP server "s\\r\\n${"z".repeat(37)}"… (100003 characters), which the pool does not have.`,
    ]);
  });
});
