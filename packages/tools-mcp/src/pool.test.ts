// The pool's behaviour under the things that go wrong: a hung call, a stop, a server that dies
// mid-call or never starts, tools that change, writes asked to run together. Against real servers:
// server-everything and a small SDK server (test/fixture-server.mjs) that hangs and changes on cue.
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CompactionHookRunner, type CompactionPlan, runCompaction } from "@loopwright/ledger";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { callEachOnce, EVERYTHING, FIXTURE, failedWithArgs, NODE } from "../test/support.js";
import { createMcpPool, type McpPool, McpPoolError } from "./index.js";

let dir: string;
let cancelLog: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tools-mcp-pool-"));
  cancelLog = join(dir, "cancelled.log");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const pools: McpPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});
function fixturePool(options: Parameters<typeof createMcpPool>[1] = {}): McpPool {
  const pool = createMcpPool(
    [{ name: "fx", command: NODE, args: [FIXTURE], env: { CANCEL_LOG: cancelLog } }],
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
/** Pids of this process's children whose command line holds `marker` (read from /proc). */
function childrenWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== process.pid) continue;
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(marker)) found.push(Number(entry));
    } catch {
      // The process ended while it was read.
    }
  }
  return found;
}

/**
 * Closes a pool whose one server is still at work on a call it was asked to cancel, without waiting
 * out the SDK's two-second grace for that server to exit on its own: server-everything's research
 * query runs its four seconds whatever it is told. The server is killed as the close begins, which
 * the pool, already closing, does not take for a death.
 */
async function closeBusy(pool: McpPool): Promise<void> {
  const pid = pool.status()[0]?.pid;
  const closing = pool.close();
  if (pid !== undefined) process.kill(pid, "SIGKILL");
  await closing;
}

async function cancellations(): Promise<string> {
  // The notification travels to the server after the call has already been answered here.
  for (let i = 0; i < 50; i++) {
    const text = await readFile(cancelLog, "utf8").catch(() => "");
    if (text) return text;
    await new Promise((r) => setTimeout(r, 20));
  }
  return "";
}

describe("a call that hangs", () => {
  afterEach(() => rm(cancelLog, { force: true }));

  it("is answered with a timeout error after timeoutMs, and the server is told to cancel it", async () => {
    const pool = fixturePool({ timeoutMs: 300 });
    const error = await caught(pool.call("fx__hang", {}));
    expect(error.code).toBe("timeout");
    expect(error.message).toBe(
      'hang on MCP server "fx" did not answer within 0.3 s; the server was asked to cancel it.',
    );
    expect(await cancellations()).toMatch(/^cancelled \d+/);
  });

  it("is stopped by the caller's signal, and the server is told to cancel it", async () => {
    const pool = fixturePool();
    await pool.connect();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("user pressed stop")), 300);
    const error = await caught(pool.call("fx__hang", {}, controller.signal));
    expect(error.code).toBe("aborted");
    expect(error.message).toContain("was stopped before it answered");
    expect(await cancellations()).toMatch(/^cancelled \d+/);
  });

  it("a tool that runs as a task (server-everything's research query) is answered with timeout past timeoutMs", async () => {
    // The research takes four stages of a second each, polled a second apart: far past 1.5 s.
    const pool = createMcpPool([{ name: "everything", command: NODE, args: [EVERYTHING, "stdio"] }], {
      timeoutMs: 1_500,
    });
    pools.push(pool);
    await pool.connect();
    const error = await caught(pool.call("everything__simulate-research-query", { topic: "tides" }));
    expect(error.code).toBe("timeout");
    expect(error.message).toBe(
      'simulate-research-query on MCP server "everything" did not answer within 1.5 s; the server was asked to cancel it.',
    );
    await closeBusy(pool);
  });

  it("a tool that runs as a task is stopped by the caller's signal, between two polls", async () => {
    const pool = createMcpPool([{ name: "everything", command: NODE, args: [EVERYTHING, "stdio"] }]);
    pools.push(pool);
    await pool.connect();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("user pressed stop")), 200);
    const error = await caught(
      pool.call("everything__simulate-research-query", { topic: "tides" }, controller.signal),
    );
    expect(error.code).toBe("aborted");
    // The pool still serves: the next call is answered.
    expect(await pool.call("everything__echo", { message: "still here" })).toContain("still here");
    await closeBusy(pool);
  });

  it("a time bound past what a Node timer holds (timeoutMs, connectTimeoutMs 3e9) waits, not fails at once", async () => {
    const pool = fixturePool({ timeoutMs: 3e9, connectTimeoutMs: Number.MAX_SAFE_INTEGER });
    expect(await pool.call("fx__whoami", {})).toMatch(/^\d+$/);
    const pid = await pool.callTool("fx__whoami", {}, { timeoutMs: 2 ** 31 });
    expect(pid.text).toMatch(/^\d+$/);
  });

  it("a stop while the server is still starting ends the wait at once", async () => {
    const pool = fixturePool();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("stop")), 50);
    const error = await caught(pool.call("fx__whoami", {}, controller.signal));
    // Answered on the stop, while the server was still starting, not once it had.
    expect(pool.status()[0]?.state).toBe("connecting");
    expect(error.code).toBe("aborted");
    expect(error.message).toBe("fx__whoami was stopped before its MCP server had started.");
    // The start went on: the next call finds the server up.
    expect(await pool.call("fx__whoami", {})).toMatch(/^\d+$/);
  });

  it("a stop mid-run through runAgentLoop answers the call and ends the run", async () => {
    const pool = fixturePool();
    const controller = new AbortController();
    const { startServer } = await import("@loopwright/testkit");
    const { runAgentLoop, failedRun } = await import("@loopwright/loop");
    const model = await startServer({ replies: [{ toolCalls: [{ name: "fx__hang", arguments: "{}" }] }] });
    try {
      const error = await runAgentLoop({
        config: { baseUrl: model.baseUrl, model: "sim", maxToolIterations: 2 },
        messages: [{ role: "user", content: "hang" }],
        tools: await pool.tools(),
        dispatch: ({ name, args }, signal) => {
          setTimeout(() => controller.abort(new Error("stop")), 200);
          return pool.call(name, args, signal);
        },
        signal: controller.signal,
      }).catch((e: unknown) => e);
      const run = failedRun(error);
      expect(run?.messages.at(-1)).toMatchObject({
        role: "tool",
        content: expect.stringMatching(/^Stopped/),
      });
      expect(await cancellations()).toMatch(/^cancelled \d+/);
    } finally {
      await model.close();
    }
  });
});

describe("a server that dies mid-call", () => {
  it("answers the call in flight with an error naming the server, restarts it once, then gives up", async () => {
    const notices: string[] = [];
    const pool = createMcpPool([{ name: "everything", command: NODE, args: [EVERYTHING, "stdio"] }], {
      onNotice: (t) => notices.push(t),
    });
    pools.push(pool);
    await pool.connect();
    const firstPid = pool.status()[0]?.pid;
    expect(firstPid).toBeGreaterThan(0);

    const running = pool.call("everything__trigger-long-running-operation", { duration: 30, steps: 30 });
    await new Promise((r) => setTimeout(r, 300));
    process.kill(firstPid as number, "SIGKILL");
    const error = await caught(running);
    expect(error.code).toBe("server-died");
    expect(error.server).toBe("everything");
    expect(error.message).toMatch(
      /^MCP server "everything" stopped while trigger-long-running-operation was running, so the call has no answer\. It is being restarted/,
    );

    // Restarted: the next call works, on a new process.
    expect(await pool.call("everything__get-sum", { a: 1, b: 1 })).toContain("2");
    const second = pool.status()[0];
    expect(second).toMatchObject({ state: "connected", restarts: 1 });
    expect(second?.pid).not.toBe(firstPid);
    const restarted = notices.find((n) =>
      n.startsWith('MCP server "everything" stopped; restarting it (restart 1).'),
    );
    expect(restarted).toBeDefined();
    // The call's error quotes the dead process's stderr, as the notice does (the published server
    // announces itself there), not the restarted one's: before, it said "It wrote nothing to stderr".
    const tail = restarted?.split(" Its stderr ended with:\n")[1];
    expect(tail).toBeTruthy();
    expect(error.message.endsWith(` Its stderr ended with:\n${tail}`)).toBe(true);

    // Dead again: not restarted a second time, and calls say why.
    process.kill(second?.pid as number, "SIGKILL");
    // Its death is noticed when the pipe closes: wait for that rather than a fixed while.
    for (let i = 0; i < 250 && pool.status()[0]?.state === "connected"; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(pool.status()[0]).toMatchObject({ state: "failed" });
    const after = await caught(pool.call("everything__get-sum", { a: 1, b: 1 }));
    expect(after.code).toBe("unknown-tool");
    expect(after.message).toContain("Not connected: everything.");
    expect(pool.status()[0]?.error?.code).toBe("server-died");
  });
});

describe("a server that fails to start", () => {
  it("is reported with its stderr tail, its secrets masked, while the others work", async () => {
    const notices: string[] = [];
    const pool = createMcpPool(
      {
        mcpServers: {
          broken: { command: NODE, args: [FIXTURE, "--fail"], env: { API_TOKEN: "sk-live-1234567890" } },
          fx: { command: NODE, args: [FIXTURE] },
        },
      },
      { onNotice: (t) => notices.push(t) },
    );
    pools.push(pool);
    const statuses = await pool.connect();
    expect(statuses.map((s) => [s.name, s.state])).toEqual([
      ["broken", "failed"],
      ["fx", "connected"],
    ]);
    const error = statuses[0]?.error;
    expect(error?.code).toBe("connect-failed");
    expect(error?.message).toContain('MCP server "broken"');
    expect(error?.message).toContain("fixture: cannot start without a database");
    expect(error?.message).toContain("token=***");
    const everything = JSON.stringify([notices, statuses, error?.message]);
    expect(everything).not.toContain("sk-live-1234567890");
    // Not even the head of it, where a long stderr line was cut.
    expect(everything).not.toContain("sk-live");
    expect(await pool.call("fx__whoami", {})).toMatch(/^\d+$/);
    expect((await pool.servers()).map((s) => s.name)).toEqual(["fx"]);
  });

  it("a command that does not exist is reported without the credentials its arguments carry, as a host would log it", async () => {
    const { inspect } = await import("node:util");
    const { mcpServers } = await import("./index.js");
    const configs = mcpServers(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a .mcp.json ${VAR} reference, meant literally.
      { mcpServers: { ghost: { command: "/nonexistent/mcp-server", args: ["--token", "${GHOST_TOKEN}"] } } },
      { env: { GHOST_TOKEN: "ghost-secret-24680" } },
    );
    const pool = createMcpPool(configs);
    pools.push(pool);
    const [status] = await pool.connect();
    expect(status?.state).toBe("failed");
    const logged = inspect(status?.error, { depth: 8 });
    expect(logged).toContain("ENOENT");
    expect(logged).not.toContain("ghost-secret-24680");
  });

  it("does not quote a credential written literally in its arguments when it prints them", async () => {
    const message = await failedWithArgs(pools, [
      "--api-key",
      "literal-key-24680",
      "--token=literal-token-13579",
      "-e",
      "GH_TOKEN=literal-env-97531",
      "--org",
      "acme-corp",
    ]);
    expect(message).toContain(
      "fixture: started with --fail --api-key *** --token=*** -e GH_TOKEN=*** --org acme-corp",
    );
    for (const secret of ["literal-key-24680", "literal-token-13579", "literal-env-97531"]) {
      expect(message).not.toContain(secret);
    }
  });

  it("a command that does not exist is reported by name", async () => {
    const pool = createMcpPool([{ name: "ghost", command: "/nonexistent/mcp-server" }]);
    pools.push(pool);
    const [status] = await pool.connect();
    expect(status?.state).toBe("failed");
    expect(status?.error?.message).toMatch(
      /^MCP server "ghost" \(\/nonexistent\/mcp-server\) could not be started: .*ENOENT/,
    );
  });
});

describe("a server whose error quotes its credentials", () => {
  it("reaches the model, the error and its causes with the credential masked", async () => {
    const secret = "sk-live-1234567890";
    const pool = createMcpPool([{ name: "fx", command: NODE, args: [FIXTURE], env: { API_TOKEN: secret } }]);
    pools.push(pool);
    const error = await caught(pool.call("fx__refuse", {}));
    expect(error.code).toBe("call-failed");
    expect(error.message).toContain("refusing token=***");
    const chain: string[] = [];
    for (let e: unknown = error; e instanceof Error; e = e.cause) chain.push(e.message, e.stack ?? "");
    expect(chain.length).toBeGreaterThan(2);
    expect(chain.join("\n")).not.toContain(secret);
    // The loop adds a cause's message to what the model reads.
    const { results } = await callEachOnce(pool, [{ name: "fx__refuse", args: {} }]);
    expect(results.get("fx__refuse")?.content).toMatch(
      /^Error: refuse on MCP server "fx" failed: .*token=\*\*\*/,
    );
    expect(results.get("fx__refuse")?.content).not.toContain(secret);
  });
});

describe("a server whose result quotes its credentials", () => {
  const TOKEN = "sk-live/AbC+xyz=1234567890";
  const leaky = () => {
    const pool = createMcpPool([
      {
        name: "fx",
        command: NODE,
        args: [FIXTURE, "--leaky"],
        env: { API_TOKEN: TOKEN, MODE: "production" },
      },
    ]);
    pools.push(pool);
    return pool;
  };
  /** The token as the fixture writes it, in any form a reader could take back. */
  const holdsToken = (text: string) =>
    [TOKEN, encodeURIComponent(TOKEN), Buffer.from(TOKEN).toString("base64").slice(0, 32)].some((form) =>
      text.includes(form),
    );

  it("hands the model its text, resource and link with the credential masked, in each encoding", async () => {
    const pool = leaky();
    const text = (await pool.call("fx__leak", { form: "all" })) as string;
    expect(text).toContain("my token is ***; mode production");
    expect(text).toContain("[resource secret://creds?key=***");
    expect(text).toContain("token=***");
    expect(text).toContain("[resource link] creds: https://api.example/v1?key=***");
    expect(holdsToken(text)).toBe(false);
    const output = await pool.callTool("fx__leak", { form: "all" });
    expect(holdsToken(JSON.stringify(output))).toBe(false);
    expect(output.structured).toEqual({ token: "***", nested: { list: ["Bearer ***"] }, mode: "production" });
  });

  it("never hands the model the credential through a tool's description or schema", async () => {
    const pool = leaky();
    const definitions = await pool.tools();
    const leak = definitions.find((d) => d.function.name === "fx__leak");
    expect(leak?.function.description).toMatch(/^Answers with its API_TOKEN \(\*\*\*\)/);
    expect(holdsToken(JSON.stringify(definitions))).toBe(false);
    expect(holdsToken(JSON.stringify(await pool.servers()))).toBe(false);
    // The tool is still called by its own name.
    expect(await pool.call("fx__leak", { form: "all" })).toContain("my token is ***");
  });

  it("masks structured content that is the whole result, and an isError result's text", async () => {
    const pool = leaky();
    const text = (await pool.call("fx__leak", { form: "structured" })) as string;
    expect(JSON.parse(text)).toEqual({ token: "***", nested: { list: ["Bearer ***"] }, mode: "production" });
    const error = await caught(pool.call("fx__leak", { form: "error" }));
    expect(error.code).toBe("tool-error");
    expect(error.message).toBe('refused: {"token":"***"}');
  });

  it("never lets server-everything's get-env hand the model the key it was given", async () => {
    const pool = createMcpPool([
      {
        name: "everything",
        command: NODE,
        args: [EVERYTHING, "stdio"],
        env: { OPENAI_API_KEY: TOKEN, GITHUB_TOKEN: "gh-plain-token-value", LOG_LEVEL: "info" },
      },
    ]);
    pools.push(pool);
    const { results } = await callEachOnce(pool, [{ name: "everything__get-env", args: {} }]);
    const content = String(results.get("everything__get-env")?.content);
    const env = JSON.parse(content) as Record<string, string>;
    expect(env.OPENAI_API_KEY).toBe("***");
    expect(env.GITHUB_TOKEN).toBe("***");
    // An ordinary value beside them is left as the server wrote it (and so is every "info" in a result).
    expect(env.LOG_LEVEL).toBe("info");
    expect(holdsToken(content)).toBe(false);
  });
});

describe("the environment a stdio server gets", () => {
  it("is what its entry gives plus a small safe default (PATH, HOME), never the host's whole environment", async () => {
    // A variable only the host has: a credential of the host's own must not reach a server.
    process.env.LOOPWRIGHT_HOST_ONLY_SECRET = "host-secret-value";
    try {
      const pool = createMcpPool([
        { name: "everything", command: NODE, args: [EVERYTHING, "stdio"], env: { MODE: "asked-for" } },
      ]);
      pools.push(pool);
      const env = JSON.parse(String(await pool.call("everything__get-env", {}))) as Record<string, string>;
      expect(env.MODE).toBe("asked-for");
      expect(env.PATH).toBe(process.env.PATH);
      expect(env.LOOPWRIGHT_HOST_ONLY_SECRET).toBeUndefined();
      expect(Object.keys(env).length).toBeLessThan(12);
    } finally {
      delete process.env.LOOPWRIGHT_HOST_ONLY_SECRET;
    }
  });
});

describe("a result nested deeper than JSON can be written by recursion", () => {
  const TOKEN = "sk-live/AbC+xyz=1234567890";
  const DEPTH = 100_000;
  const deepPool = (env: Record<string, string>) => {
    const pool = createMcpPool([{ name: "fx", command: NODE, args: [FIXTURE, "--deep"], env }]);
    pools.push(pool);
    return pool;
  };
  /** How many objects deep `value` goes along `next`, and what stands at the end. */
  const descend = (value: unknown) => {
    let levels = 0;
    let at = value;
    while (typeof at === "object" && at !== null && "next" in at) {
      at = (at as { next: unknown }).next;
      levels++;
    }
    return { levels, end: at };
  };

  it("is handed on whole when the server has no credential to mask", async () => {
    const pool = deepPool({ MODE: "production" });
    const output = await pool.callTool("fx__deep", { depth: DEPTH, text: true });
    expect(output.text).toBe(`a result ${DEPTH} levels deep`);
    expect(descend(output.structured)).toEqual({ levels: DEPTH + 1, end: { token: "" } });
  });

  it("is masked down to 256 levels and cut there with a note the model can read, when it has one", async () => {
    const pool = deepPool({ API_TOKEN: TOKEN });
    const output = await pool.callTool("fx__deep", { depth: DEPTH, text: true });
    expect(output.structured?.token).toBe("***");
    expect(descend(output.structured)).toEqual({
      levels: 256,
      end: "[left out: nested more than 256 levels deep]",
    });
    expect(JSON.stringify(output)).not.toContain(TOKEN);
  });

  it("that cannot be written as text is refused with McpPoolError, not a RangeError", async () => {
    const pool = deepPool({ API_TOKEN: TOKEN });
    const error = await caught(pool.callTool("fx__deep", { depth: DEPTH }));
    expect(error.code).toBe("call-failed");
    expect(error.message).toMatch(/^deep on MCP server "fx" answered with a result that could not be read: /);
    expect(error.message).not.toContain(TOKEN);
  });
});

describe("tools that change", () => {
  it("notifications/tools/list_changed refreshes the tools, and the new one can be called", async () => {
    let changed = 0;
    const pool = fixturePool({ onToolsChanged: () => changed++ });
    expect((await pool.tools()).map((t) => t.function.name)).not.toContain("fx__added_tool");
    const before = changed;
    expect(await pool.call("fx__add_tool", {})).toBe("added");
    for (let i = 0; i < 100 && changed === before; i++) await new Promise((r) => setTimeout(r, 20));
    expect(changed).toBeGreaterThan(before);
    expect((await pool.tools()).map((t) => t.function.name)).toContain("fx__added_tool");
    expect((await pool.servers())[0]?.tools).toContainEqual({
      name: "fx__added_tool",
      description: "Appeared later.",
    });
    expect(await pool.call("fx__added_tool", {})).toBe("the added tool ran");
  });
});

describe("what the model reads", () => {
  it("an isError result and an unknown tool reach the model as text through runAgentLoop", async () => {
    const pool = fixturePool();
    const { results } = await callEachOnce(pool, [
      { name: "fx__fail", args: {} },
      { name: "fx__nothing", args: {} },
    ]);
    expect(results.get("fx__fail")).toMatchObject({ ok: false, content: "Error: the disk is full" });
    expect(results.get("fx__nothing")?.content).toMatch(
      /^Error: No MCP tool is named "fx__nothing"\. Tools: fx__add_tool, /,
    );
  });

  it("an illegal name is made legal for the endpoint and mapped back to the server's tool", async () => {
    const pool = fixturePool();
    const names = (await pool.tools()).map((t) => t.function.name);
    expect(names).toContain("fx__set_flag");
    expect(names).not.toContain("fx__set.flag");
    expect(await pool.call("fx__set_flag", { on: true })).toBe("flag on");
    expect(pool.policy("fx__set_flag")).toMatchObject({ idempotent: true, dedupe: true, parallel: false });
    const { dispatched, results } = await callEachOnce(pool, [{ name: "fx__set_flag", args: { on: false } }]);
    expect(dispatched).toEqual(["fx__set_flag"]);
    expect(results.get("fx__set_flag")?.content).toBe("flag off");
  });

  it("a null the strict schema made the model write for an optional parameter is dropped before the call", async () => {
    const pool = fixturePool();
    const parameters = (await pool.tools()).find((t) => t.function.name === "fx__read_note")?.function
      .parameters;
    expect(parameters?.required).toEqual(["tag"]);
    expect(await pool.call("fx__read_note", { tag: null })).toMatch(/^tag absent/);
    expect(await pool.call("fx__read_note", { tag: "x" })).toMatch(/^tag "x"/);
  });
});

describe("connecting", () => {
  it("starts nothing until a method needs a server", async () => {
    const pool = fixturePool();
    expect(pool.status()).toEqual([{ name: "fx", state: "idle", tools: 0, restarts: 0 }]);
    expect(await pool.call("fx__whoami", {})).toMatch(/^\d+$/);
    expect(pool.status()[0]).toMatchObject({ state: "connected", transport: "stdio", tools: 10 });
  });

  it("an HTTP server that cannot be reached is reported without its credentials", async () => {
    // Port 2: no server of this run can hold it (a probe's freed port could be taken by another test's).
    const port = 2;
    const pool = createMcpPool([
      {
        name: "remote",
        url: `http://someone:pa55word-xyz@127.0.0.1:${port}/mcp?token=query-secret-123`,
        headers: { authorization: "Bearer header-secret-456", "x-api-key": "key-secret-789" },
      },
    ]);
    pools.push(pool);
    const [status] = await pool.connect();
    expect(status?.state).toBe("failed");
    expect(status?.error?.message).toMatch(
      new RegExp(`^MCP server "remote" \\(http://127\\.0\\.0\\.1:${port}/mcp\\) could not be started`),
    );
    const shown = `${status?.error?.message} ${JSON.stringify(status)}`;
    for (const secret of ["pa55word-xyz", "query-secret-123", "header-secret-456", "key-secret-789"]) {
      expect(shown).not.toContain(secret);
    }
  });
});

describe("a server that writes its credential encoded", () => {
  // Characters that URL-encoding and JSON writers change, so each form differs from the value.
  const TOKEN = "sk-live/AbC+xyz=1234567890";
  const HEX = "9f86d081884c7d659a2feaa0c55ad015";
  /** The forms of the credentials a reader could take back from `text`. */
  const leaks = (text: string): string[] => {
    const b64 = (value: string) => Buffer.from(value).toString("base64");
    const forms = [
      TOKEN,
      encodeURIComponent(TOKEN),
      JSON.stringify(TOKEN).slice(1, -1).replaceAll("/", "\\/"),
      b64(TOKEN).slice(0, 32),
      b64(`user:${TOKEN}`).slice(8, 36),
      HEX,
      HEX.toUpperCase(),
      TOKEN.slice(0, 10),
      TOKEN.slice(10),
      TOKEN.slice(7),
    ];
    return forms.filter((form) => text.includes(form));
  };

  it("is masked in every form in the stderr tail: URL-encoded, JSON-escaped, base64, in capitals, wrapped, chunked", async () => {
    const notices: string[] = [];
    const pool = createMcpPool(
      [
        {
          name: "broken",
          command: NODE,
          args: [FIXTURE, "--fail-encoded"],
          env: { API_TOKEN: TOKEN, HEX_TOKEN: HEX },
        },
      ],
      { onNotice: (t) => notices.push(t) },
    );
    pools.push(pool);
    const [status] = await pool.connect();
    const message = status?.error?.message ?? "";
    expect(message).toContain("fixture: cannot start without a database");
    expect(message).toContain("fixture: GET https://api.example/v1/items?key=*** failed");
    expect(message).toContain('fixture: config {"token":"***"}');
    expect(message).toContain("fixture: key *** refused");
    expect(message).toContain("(end)");
    expect(leaks([message, ...notices].join("\n"))).toEqual([]);
  });

  it("is masked in a call's error when the server quotes it JSON-escaped and URL-encoded", async () => {
    const pool = createMcpPool([{ name: "fx", command: NODE, args: [FIXTURE], env: { API_TOKEN: TOKEN } }]);
    pools.push(pool);
    const error = await caught(pool.call("fx__refuse_encoded", {}));
    expect(error.code).toBe("call-failed");
    expect(error.message).toContain('refusing {"token":"***"} from https://api.example/v1?key=***');
    const chain: string[] = [];
    for (let e: unknown = error; e instanceof Error; e = e.cause) chain.push(e.message, e.stack ?? "");
    expect(leaks(chain.join("\n"))).toEqual([]);
  });
});

describe("an HTTP server that refuses the credentials", () => {
  it("that echoes the Authorization header it refused is reported with the header masked, causes included", async () => {
    const { createServer } = await import("node:http");
    const echoing = createServer((request, response) => {
      response
        .writeHead(401, { "content-type": "application/json" })
        .end(JSON.stringify({ error: `refused ${request.headers.authorization}` }));
    });
    await new Promise<void>((resolve) => echoing.listen(0, "127.0.0.1", resolve));
    const { port } = echoing.address() as { port: number };
    const pool = createMcpPool([
      {
        name: "locked",
        url: `http://127.0.0.1:${port}/mcp`,
        headers: { authorization: "Bearer tok-9f8e7d6c5b" },
      },
    ]);
    pools.push(pool);
    try {
      const [status] = await pool.connect();
      expect(status?.error?.message).toMatch(/HTTP 401: .*refused \*\*\*"/);
      const chain: string[] = [];
      for (let e: unknown = status?.error; e instanceof Error; e = e.cause)
        chain.push(e.message, e.stack ?? "");
      expect(chain.length).toBeGreaterThan(2);
      expect(chain.join("\n")).not.toContain("tok-9f8e7d6c5b");
    } finally {
      echoing.close();
    }
  });

  it("is reported as it answered (401), not retried over SSE", async () => {
    const { createServer } = await import("node:http");
    const refusing = createServer((_request, response) => {
      response.writeHead(401, { "content-type": "application/json" }).end('{"error":"unauthorized"}');
    });
    await new Promise<void>((resolve) => refusing.listen(0, "127.0.0.1", resolve));
    const { port } = refusing.address() as { port: number };
    const notices: string[] = [];
    const pool = createMcpPool([{ name: "locked", url: `http://127.0.0.1:${port}/mcp` }], {
      onNotice: (t) => notices.push(t),
    });
    pools.push(pool);
    try {
      const [status] = await pool.connect();
      expect(status?.state).toBe("failed");
      expect(status?.error?.message).toMatch(
        /^MCP server "locked" \(http:\/\/127\.0\.0\.1:\d+\/mcp\) could not be started: HTTP 401: .*unauthorized.*\.$/,
      );
      expect(notices.join("\n")).not.toContain("SSE");
    } finally {
      refusing.close();
    }
  });
});

describe("the loop's dedupe, from the annotations", () => {
  it("an identical read-only call in one step runs once; an identical write runs twice", async () => {
    const pool = fixturePool();
    const { dispatched } = await callEachOnce(pool, [
      { name: "fx__read_note", args: { tag: "a" } },
      { name: "fx__read_note", args: { tag: "a" } },
      { name: "fx__write_note", args: { text: "x" } },
      { name: "fx__write_note", args: { text: "x" } },
    ]);
    expect(dispatched).toEqual(["fx__read_note", "fx__write_note", "fx__write_note"]);
  });
});

describe("a server's question for the user", () => {
  it("reaches elicit with its schema, and fields the answer leaves out get the schema's defaults", async () => {
    const asked: { server: string; message: string; fields: string[] }[] = [];
    const pool = createMcpPool([{ name: "e", command: NODE, args: [EVERYTHING, "stdio"] }], {
      elicit: async (request) => {
        asked.push({
          server: request.server,
          message: request.message,
          fields: Object.keys((request.requestedSchema.properties ?? {}) as object),
        });
        return { action: "accept", content: { name: "Ada Lovelace" } };
      },
    });
    pools.push(pool);
    expect((await pool.tools()).map((t) => t.function.name)).toContain("e__trigger-elicitation-request");
    const text = await pool.call("e__trigger-elicitation-request", {});
    expect(asked).toEqual([
      {
        server: "e",
        message: "Please provide inputs for the following fields:",
        fields: expect.arrayContaining(["name", "firstLine"]),
      },
    ]);
    expect(text).toContain("Ada Lovelace");
    expect(text).toContain("It was a dark and stormy night.");
  });

  it("without elicit the server is told the client cannot ask, and offers no such tool", async () => {
    const pool = createMcpPool([{ name: "e", command: NODE, args: [EVERYTHING, "stdio"] }]);
    pools.push(pool);
    expect((await pool.tools()).map((t) => t.function.name)).not.toContain("e__trigger-elicitation-request");
  });
});

describe("plain tool names", () => {
  it("keep the server's names, prefixing only one an earlier server already uses", async () => {
    const pool = createMcpPool(
      [
        { name: "one", command: NODE, args: [FIXTURE] },
        { name: "two", command: NODE, args: [FIXTURE] },
      ],
      { toolNames: "plain" },
    );
    pools.push(pool);
    const names = (await pool.tools()).map((t) => t.function.name);
    expect(names).toContain("whoami");
    expect(names).toContain("two__whoami");
    expect(names).toContain("set_flag");
    const [first, second] = await Promise.all([pool.call("whoami", {}), pool.call("two__whoami", {})]);
    expect(first).not.toBe(second);
    expect(pool.status().map((s) => String(s.pid))).toEqual([first, second]);
  });
});

describe("parallel safety", () => {
  it("read-only calls run together and writes one at a time, even when the loop runs calls in parallel", async () => {
    const pool = fixturePool();
    await pool.connect();
    const reads = await Promise.all([1, 2, 3].map(() => pool.call("fx__read_note", {})));
    expect(reads.at(-1)).toMatch(/most reads at once: 3$/);
    const writes = await Promise.all(["a", "b", "c"].map((text) => pool.call("fx__write_note", { text })));
    expect(writes.at(-1)).toMatch(/most writes at once: 1$/);
  });
});

describe("runHooks", () => {
  it("calls each hook's tool for its event and reports outcomes a HookRunner reader takes", async () => {
    const pool = fixturePool({
      hooks: [
        { id: "recall", events: ["beforeTurn", "beforeCompact"], server: "fx", tool: "hook", maxTokens: 300 },
        { id: "nowhere", events: ["beforeTurn"], server: "missing", tool: "hook" },
        { id: "later", events: ["afterTurn"], server: "fx", tool: "hook" },
      ],
    });
    const outcomes = await pool.runHooks("beforeTurn", { prompt: "hi" }, { session: { id: "s1" } });
    expect(outcomes).toEqual([
      {
        id: "recall",
        name: "recall",
        event: "beforeTurn",
        ok: true,
        context: "context for beforeTurn in session s1",
        maxTokens: 300,
        ms: expect.any(Number),
      },
      {
        id: "nowhere",
        name: "nowhere",
        event: "beforeTurn",
        ok: false,
        error: 'hook "nowhere" names MCP server "missing", which the pool does not have.',
        ms: expect.any(Number),
      },
    ]);
    const compact = await pool.runHooks("beforeCompact", { from: 0, through: 4 });
    expect(compact).toMatchObject([{ id: "recall", ok: true, veto: true }]);
    expect(await pool.runHooks("sessionEnd", {})).toEqual([]);
  });

  it("a hook that hangs past its timeout is an outcome marked timedOut, not a rejection", async () => {
    const pool = fixturePool({
      hooks: [{ id: "slow", events: ["afterTurn"], server: "fx", tool: "hang", timeoutSeconds: 0.3 }],
    });
    const [outcome] = await pool.runHooks("afterTurn", {});
    expect(outcome).toMatchObject({
      id: "slow",
      ok: false,
      timedOut: true,
      error: expect.stringContaining("did not answer within 0.3 s"),
    });
  });

  it("a hook given more time than a timer holds (timeoutSeconds 1e7) runs, not times out at once", async () => {
    const pool = fixturePool({
      hooks: [{ id: "patient", events: ["afterTurn"], server: "fx", tool: "hook", timeoutSeconds: 1e7 }],
    });
    const [outcome] = await pool.runHooks("afterTurn", {}, { session: { id: "s1" } });
    expect(outcome).toMatchObject({
      id: "patient",
      ok: true,
      context: "context for afterTurn in session s1",
    });
  });

  it("passes straight to the ledger's compaction as its hook runner, whose veto it honours", async () => {
    const pool = fixturePool({
      hooks: [{ id: "keep-it", events: ["beforeCompact"], server: "fx", tool: "hook" }],
    });
    const run: CompactionHookRunner = pool.runHooks;
    const notes: string[] = [];
    const messages = [
      { role: "user", content: "first question" },
      { role: "assistant", content: "first answer" },
      { role: "user", content: "second question" },
    ];
    const fold = await runCompaction(
      messages,
      { from: 0, through: 2, limit: 1000 } as CompactionPlan,
      () => "summary",
      {
        hooks: { run, honourVeto: true, onNote: (note) => notes.push(note) },
      },
    );
    expect(fold).toBeUndefined();
    expect(notes).toEqual(["Compaction skipped: keep-it vetoed it."]);
  });
});

describe("closing", () => {
  it("ends the servers, and a call after close says the pool is closed", async () => {
    const pool = fixturePool();
    await pool.connect();
    const pid = pool.status()[0]?.pid as number;
    await pool.close();
    const error = await caught(pool.call("fx__whoami", {}));
    expect(error.code).toBe("closed");
    await new Promise((r) => setTimeout(r, 200));
    expect(() => process.kill(pid, 0)).toThrow();
  });

  it("answers a call still running with closed, not as a server that died", async () => {
    const pool = fixturePool();
    await pool.connect();
    const running = caught(pool.call("fx__hang", {}));
    await new Promise((r) => setTimeout(r, 100));
    await pool.close();
    const error = await running;
    expect(error.code).toBe("closed");
    expect(error.message).toContain("closed");
    expect(error.message).not.toContain("not restarted");
  });

  it("ends a server still starting (one that never answers initialize): no process is left running", async () => {
    const marker = `never-initializes-${process.pid}-${Date.now()}`;
    // A real process that reads its stdin and never answers: its start would wait the whole connect timeout.
    const pool = createMcpPool(
      [{ name: "mute", command: NODE, args: ["-e", "process.stdin.resume()", marker] }],
      { connectTimeoutMs: 60_000 },
    );
    pools.push(pool);
    const connecting = pool.connect();
    for (let i = 0; i < 100 && childrenWith(marker).length === 0; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(childrenWith(marker)).toHaveLength(1);
    await pool.close();
    const statuses = await connecting;
    expect(statuses[0]?.state).toBe("closed");
    for (let i = 0; i < 100 && childrenWith(marker).length > 0; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(childrenWith(marker)).toEqual([]);
  });
});
