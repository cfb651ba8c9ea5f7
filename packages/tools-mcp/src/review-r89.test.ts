/**
 * r89b: cases the pool model (src/pool-model.test.ts) found, pinned against the scripted server it
 * drives (test/review-r89-server.mjs: each call says what the server does with it).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { NODE } from "../test/support.js";
import { createMcpPool, type McpPool, McpPoolError, type McpPoolOptions } from "./index.js";

const SERVER = fileURLToPath(new URL("../test/review-r89-server.mjs", import.meta.url));
const KEY = "sk-r89-pinned-0123456789abcdef";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tools-mcp-r89-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));
const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

function scripted(options: McpPoolOptions = {}, log = join(dir, "calls.log")): McpPool {
  const pool = createMcpPool(
    [{ name: "s", command: NODE, args: [SERVER], env: { API_KEY: KEY, LOG: log } }],
    { timeoutMs: 10_000, ...options },
  );
  pools.push(pool);
  return pool;
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe("R89B-1: a server's own JSON-RPC error -32000 is an answer, not the server dying", () => {
  // -32000 is the first of JSON-RPC's "server error" codes, which servers answer their own failures
  // with, and the code the SDK gives the calls of a connection that closed. Before, the pool read
  // such an answer as a death: the call failed with `server-died`, the running server was ended and
  // started again (its state lost), and at the second such answer it was failed for good, its tools
  // gone from `tools()` and every later call `unknown-tool`.
  it("fails the call with call-failed and leaves the server running, however often", async () => {
    const pool = scripted();
    await pool.connect();
    const pid = pool.status()[0]?.pid;
    for (const tag of ["a", "b", "c"]) {
      const error = await failure(pool.call("s__act", { mode: "rpc-error", tag }));
      expect(McpPoolError.isInstance(error)).toBe(true);
      // Before: server-died ("MCP server "s" stopped while act was running …").
      expect((error as McpPoolError).code).toBe("call-failed");
      expect((error as McpPoolError).message).toContain(`refused ${tag} with key ***`);
    }
    // Before: failed, restarts 1, no pid; its tools out of the list.
    expect(pool.status()[0]).toMatchObject({ state: "connected", pid, restarts: 0 });
    expect((await pool.tools()).map((t) => t.function.name)).toEqual(["s__act", "s__peek"]);
    expect(await pool.call("s__act", { mode: "ok", tag: "after" })).toMatch(/^ok after most=1$/);
  });
});

describe("R89B-2: a server named as one of its env values is named in its errors and notices", () => {
  // Every env value is masked in what a message about a server quotes, and a server is often named
  // as one of its values is: `postgres` with `PGUSER: postgres`. Before, its every error and notice
  // read `MCP server "***" …`, naming no server (status() and unknown-tool named it all along).
  it('keeps `MCP server "postgres"` while masking the value everywhere else', async () => {
    const notices: string[] = [];
    const pool = createMcpPool(
      [
        {
          name: "postgres",
          command: NODE,
          args: [SERVER],
          env: { API_KEY: KEY, PGUSER: "postgres", LOG: join(dir, "pg.log") },
        },
      ],
      { maxRestarts: 0, onNotice: (text) => notices.push(text) },
    );
    pools.push(pool);
    const refused = (await failure(
      pool.call("postgres__act", { mode: "rpc-error", tag: "postgres" }),
    )) as McpPoolError;
    expect(refused.code).toBe("call-failed");
    // Before: `act on MCP server "***" failed: …`. The value the server echoes is still masked.
    expect(refused.message).toBe(
      'act on MCP server "postgres" failed: MCP error -32000: refused *** with key ***',
    );
    const died = (await failure(pool.call("postgres__act", { mode: "exit", tag: "x" }))) as McpPoolError;
    expect(died.code).toBe("server-died");
    expect(died.message).toMatch(/^MCP server "postgres" stopped while act was running/);
    expect(notices.at(-1)).toMatch(/^MCP server "postgres" \(.*\) stopped again after 0 restart\(s\)/);
    expect(pool.status()[0]?.error?.message).toMatch(/^MCP server "postgres" /);
  });
});

describe("R89B-3: a call waiting for its turn when its server fails for good is this call's failure", () => {
  // A write queued behind a write whose server then died with no restarts left was handed the
  // server's own failure as it stood: `server-died` with no `tool`, a message about the server that
  // did not say the call never ran, and one error object shared by every such call.
  it("names the tool, says it was not run, keeps the code, and is an error of its own", async () => {
    const pool = scripted({ maxRestarts: 0 }, join(dir, "queued.log"));
    await pool.connect();
    const dying = failure(pool.call("s__act", { mode: "exit", tag: "dies", ms: 40 }));
    const queued = [
      failure(pool.call("s__act", { mode: "ok", tag: "q1" })),
      failure(pool.call("s__act", { mode: "ok", tag: "q2" })),
    ];
    expect(await dying).toMatchObject({ code: "server-died", server: "s", tool: "act" });
    const [first, second] = (await Promise.all(queued)) as McpPoolError[];
    for (const error of [first, second]) {
      expect(McpPoolError.isInstance(error)).toBe(true);
      // Before: tool undefined, and the message began `MCP server "s" (…) stopped again after 0 restart(s)`.
      expect(error).toMatchObject({ code: "server-died", server: "s", tool: "act" });
      expect(error?.message).toMatch(
        /^act on MCP server "s" was not run: MCP server "s" \(.*\) stopped again/,
      );
      expect(error?.message).not.toContain(KEY);
    }
    expect(first).not.toBe(second);
  });
});
