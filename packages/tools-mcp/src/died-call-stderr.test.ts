// A server that dies mid-call: the call's error and the pool's notice both end with what the dead
// process wrote to stderr. The restart began before the call's error was written, and the error
// read the new process's (empty) stderr: "It wrote nothing to stderr" beside a notice quoting it.
import { afterEach, describe, expect, it } from "vitest";
import { EVERYTHING, NODE } from "../test/support.js";
import { createMcpPool, type McpPool, McpPoolError } from "./index.js";

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

describe("the error of a call whose server died under it", () => {
  it("quotes the dead process's stderr, as the restart notice does", async () => {
    const notices: string[] = [];
    const pool = createMcpPool([{ name: "everything", command: NODE, args: [EVERYTHING, "stdio"] }], {
      onNotice: (t) => notices.push(t),
    });
    pools.push(pool);
    await pool.connect();
    const pid = pool.status()[0]?.pid as number;
    const running = pool.call("everything__trigger-long-running-operation", { duration: 30, steps: 30 });
    await new Promise((r) => setTimeout(r, 300));
    process.kill(pid, "SIGKILL");
    const error = await running.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(McpPoolError.isInstance(error) && error.code).toBe("server-died");
    const notice = notices.find((n) => n.startsWith('MCP server "everything" stopped; restarting it'));
    // The published server announces itself on stderr when it starts.
    const tail = notice?.split(" Its stderr ended with:\n")[1];
    expect(tail).toBeTruthy();
    expect((error as McpPoolError).message).not.toContain("It wrote nothing to stderr");
    expect((error as McpPoolError).message.endsWith(` Its stderr ended with:\n${tail}`)).toBe(true);
  });
});
