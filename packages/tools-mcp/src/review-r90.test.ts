// The pool's own words about a server, next to env values that are ordinary words. Every env value
// is masked in what a message quotes (a server's stderr, an error it sent), but the whole message
// went through the masker, so `MODE: server` or `STATE: stopped` masked the pool's own wording too:
// "MCP server "fx" *** again after 1 restart(s)…", "… *** *** …". Against the fixture server.
import { afterEach, describe, expect, it } from "vitest";
import { FIXTURE, NODE } from "../test/support.js";
import { createMcpPool, type McpPool, McpPoolError } from "./index.js";

const TOKEN = "sk-live-1234567890";
const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

describe("the pool's own wording, with ordinary words among a server's env values", () => {
  it("a server that could not be started: the wording whole, the quoted stderr masked of every value", async () => {
    const notices: string[] = [];
    const pool = createMcpPool(
      [
        {
          name: "broken",
          command: NODE,
          args: [FIXTURE, "--fail"],
          env: { API_TOKEN: TOKEN, MODE: "could not be started", WHERE: "stderr ended" },
        },
      ],
      { onNotice: (text) => notices.push(text) },
    );
    pools.push(pool);
    const [status] = await pool.connect();
    expect(status?.state).toBe("failed");
    const error = status?.error as McpPoolError;
    expect(McpPoolError.isInstance(error)).toBe(true);
    // Before: `MCP server "broken" (…) ***: … Its *** with:`.
    expect(error.message).toMatch(/^MCP server "broken" \(.+\) could not be started: /);
    expect(error.message).toContain(" Its stderr ended with:\n");
    // What it quotes is masked of every value, the credential and the ordinary words alike.
    expect(error.message).toContain("fixture: refusing token=***");
    expect(error.message).not.toContain(TOKEN);
    expect(notices).toContain(error.message);
  });

  it("a server that died mid-call and was restarted: the notice and the call's error read as written", async () => {
    const notices: string[] = [];
    const pool = createMcpPool(
      [
        {
          name: "fx",
          command: NODE,
          args: [FIXTURE],
          env: { API_TOKEN: TOKEN, STATE: "stopped", NEXT: "restarting" },
        },
      ],
      { onNotice: (text) => notices.push(text) },
    );
    pools.push(pool);
    await pool.connect();
    const pid = pool.status()[0]?.pid as number;
    const hung = pool.call("fx__hang", {}).then(
      () => undefined,
      (error: unknown) => error,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.kill(pid, "SIGKILL");
    const error = (await hung) as McpPoolError;
    expect(McpPoolError.isInstance(error)).toBe(true);
    expect(error.code).toBe("server-died");
    // Before: `MCP server "fx" *** while fx__hang was running, … It is being *** …`.
    expect(error.message).toMatch(
      /^MCP server "fx" stopped while hang was running, so the call has no answer\. It is being restarted, so the call can be made again\./,
    );
    expect(notices.some((text) => /^MCP server "fx" stopped; restarting it \(restart 1\)\./.test(text))).toBe(
      true,
    );
    expect(JSON.stringify([error.message, notices])).not.toContain(TOKEN);
  });
});
