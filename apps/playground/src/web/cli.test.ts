// `playground --web` as a user starts it: a child process that prints the page's URL and serves it.
import { spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@redis/client";
import { describe, expect, it, vi } from "vitest";
import { HAS_REDIS, RedisServer } from "../../../../packages/redis/test/redis-server.js";
import { cliForFile, pageUrlOf } from "../cli-build.js";
import { runWeb } from "./cli.js";

// The current src/main.ts, bundled once for the file (cli-build.ts says why); `node <main()>` starts it.
const main = cliForFile();

// Each test starts its own playground (and port, or Redis) and signals only that child, timing
// nothing: they run side by side.
describe.concurrent("playground --web", () => {
  it("prints a 127.0.0.1 URL that serves the API on the simulator, and exits 0 on Ctrl-C", async () => {
    const child = spawn(process.execPath, [main(), "--web"], {
      env: { ...process.env, OPENAI_BASE_URL: "", NO_COLOR: "1" },
    });
    const page = pageUrlOf(child);
    const url = await page.url;
    expect(page.printed()).toContain("Simulator:");
    const state = (await (await fetch(`${url}api/state`)).json()) as { mode: string; contextLength: number };
    expect(state).toMatchObject({ mode: "simulator", contextLength: 8192 });
    const code = await new Promise<number | null>((resolve) => {
      child.once("exit", resolve);
      child.kill("SIGINT");
    });
    expect(code).toBe(0);
  }, 60_000);

  /** Runs the CLI to its exit; its stdout and exit code. */
  const runCli = async (args: string[], env: Record<string, string> = {}) => {
    const child = spawn(process.execPath, [main(), ...args], {
      env: { ...process.env, OPENAI_BASE_URL: "", NO_COLOR: "1", ...env },
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    // One that starts serving instead of refusing is stopped, so the test fails rather than hangs.
    const stop = setTimeout(() => child.kill("SIGINT"), 20_000);
    // "close", not "exit": the exit event may come before the last of stdout has been read.
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    clearTimeout(stop);
    return { code, out };
  };

  it("refuses a port that is not a number with one error line and exit 1", async () => {
    const { code, out } = await runCli(["--web", "--port", "http"]);
    expect(code).toBe(1);
    expect(out.trim()).toBe('error: --port must be a whole number from 0 to 65535, not "http"');
  }, 60_000);

  it("refuses an empty --port, which Number() read as 0, a random port (r77c)", async () => {
    // Served on some port other than the one asked before, with no word of it.
    const { code, out } = await runCli(["--web", "--port", ""]);
    expect(code).toBe(1);
    expect(out.trim()).toBe('error: --port must be a whole number from 0 to 65535, not ""');
  }, 60_000);

  it("refuses a --port written in hex, with an exponent, a space or a fraction, before starting anything (r77c)", async () => {
    // In the process: runWeb answers before it starts a server, so no child is needed for each.
    const written: string[] = [];
    const write = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      for (const port of ["0x1f90", "8e3", " 8080", "8080.0", "99999"]) {
        written.length = 0;
        expect(await runWeb({ port })).toBe(1);
        expect(written.join("").trim()).toBe(
          `error: --port must be a whole number from 0 to 65535, not ${JSON.stringify(port)}`,
        );
      }
    } finally {
      write.mockRestore();
    }
  });

  it("names a --port another program holds in one error line and exits 1, leaving nothing running", async () => {
    const holder = createServer();
    const port = await new Promise<number>((resolve) =>
      holder.listen(0, "127.0.0.1", () => resolve((holder.address() as { port: number }).port)),
    );
    try {
      const child = spawn(process.execPath, [main(), "--web", "--port", String(port)], {
        env: { ...process.env, OPENAI_BASE_URL: "", NO_COLOR: "1" },
      });
      let out = "";
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
      });
      // The simulator it started first kept the process alive after the error: it never exited.
      const exited = await new Promise<number | null | "still running">((resolve) => {
        const timer = setTimeout(() => resolve("still running"), 20_000);
        // "close", not "exit": the exit event may come before the last of stdout has been read.
        child.once("close", (code) => {
          clearTimeout(timer);
          resolve(code);
        });
      });
      if (exited === "still running") child.kill("SIGKILL");
      expect(exited).toBe(1);
      expect(out.trim().split("\n")).toHaveLength(1);
      expect(out).toMatch(new RegExp(`^error: .*127\\.0\\.0\\.1:${port}.*--port`));
    } finally {
      holder.close();
    }
  }, 60_000);

  it("names a Redis it cannot reach in one error line and exits 1", async () => {
    // Port 2: below the ephemeral range every test server's port 0 draws from, so nothing of this
    // run can listen there. A port freed by a probe could be taken by another test's server first.
    const closed = 2;
    const { code, out } = await runCli(["--web", "--redis", `redis://127.0.0.1:${closed}`]);
    expect(code).toBe(1);
    expect(out.trim().split("\n")).toHaveLength(1);
    expect(out).toMatch(new RegExp(`^error: .*redis://127\\.0\\.0\\.1:${closed}`));
  }, 60_000);

  /** Starts `--web` with `env` and resolves with what it printed up to its page's URL, then stops it. */
  const startOutput = async (args: string[], env: Record<string, string>) => {
    const child = spawn(process.execPath, [main(), "--web", ...args], {
      env: { ...process.env, OPENAI_BASE_URL: "", NO_COLOR: "1", ...env },
    });
    let out = "";
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          if (/Playground page: /.test(out)) resolve();
        });
        child.once("exit", () => reject(new Error(`exited early: ${out}`)));
      });
    } finally {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGINT");
      await exited;
    }
    return out;
  };

  it("never prints credentials written into OPENAI_BASE_URL", async () => {
    // Refused at start since r95b (the client would refuse it at every run), naming the URL without them.
    const { code, out } = await runCli(["--web"], {
      OPENAI_BASE_URL: "http://me:sk-pass-secret-1@127.0.0.1:9/v1?api-key=sk-query-secret-2",
    });
    expect(code).toBe(1);
    expect(out).toContain("give it as http://127.0.0.1:9/v1 (a key goes in OPENAI_API_KEY)");
    expect(out).not.toMatch(/sk-pass-secret-1|sk-query-secret-2/);
  }, 60_000);

  it.skipIf(!HAS_REDIS)(
    "never prints the password of a --redis URL",
    async () => {
      const redis = await RedisServer.start();
      try {
        const admin = createClient({ url: redis.url });
        await admin.connect();
        await admin.configSet("requirepass", "redis-pass-secret-3");
        admin.destroy();
        const url = `redis://:redis-pass-secret-3@127.0.0.1:${redis.port}`;
        const out = await startOutput(["--redis", url], {});
        expect(out).toContain(`Runs shared through Redis at redis://127.0.0.1:${redis.port}`);
        expect(out).not.toContain("redis-pass-secret-3");
      } finally {
        await redis.kill();
      }
    },
    60_000,
  );

  it("refuses an empty --redis rather than running unshared under a line saying the runs are shared (r77c)", async () => {
    const { code, out } = await runCli(["--web", "--redis", ""]);
    expect(code).toBe(1);
    expect(out.trim()).toBe(
      "error: --redis needs a Redis URL (as redis://127.0.0.1:6379); it was given an empty one.",
    );
  }, 60_000);

  it("refuses --redis without --web", async () => {
    const { code, out } = await runCli(["--redis", "redis://127.0.0.1:6379"]);
    expect(code).toBe(1);
    expect(out.trim()).toBe(
      "error: --redis is read with --web only (the web page's runs are what it shares).",
    );
  }, 60_000);

  it("names the endpoint a --spec points at, not the simulator, and prints the spec's errors with exit 1", async () => {
    const dir = await mkdtemp(join(tmpdir(), "playground-spec-"));
    const good = join(dir, "agent.json");
    await writeFile(
      good,
      JSON.stringify({
        spec: "loopwright.agent/1",
        model: { name: "sim", endpoint: { baseUrl: "http://127.0.0.1:9/v1" } },
        prompt: [{ text: "You are the spec agent." }],
      }),
    );
    const out = await startOutput(["--spec", good], {});
    expect(out).not.toContain("Simulator:");
    expect(out).toContain(`Spec ${good}: model sim at Endpoint http://127.0.0.1:9/v1\n`);
    const bad = join(dir, "bad.json");
    await writeFile(bad, JSON.stringify({ spec: "loopwright.agent/1", prompt: "text" }));
    const refused = await runCli(["--web", "--spec", bad]);
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(
      new RegExp(`^error: --spec ${bad.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: .*prompt`),
    );
    expect(refused.out).not.toContain("Playground page:");
  }, 60_000);

  it.each<[string[], Record<string, string>, RegExp]>([
    [["--session-id", "abc", "--prompt", "hi"], {}, /^error: --session-id .*--session/],
    [["--web", "--model", "m"], {}, /^error: --model with --web .*simulator/],
    [["--prompt", "hi"], { LOOPWRIGHT_CONTEXT_LENGTH: "2k" }, /^error: LOOPWRIGHT_CONTEXT_LENGTH .*"2k"/],
    [["--web"], { LOOPWRIGHT_CONTEXT_LENGTH: "-5" }, /^error: LOOPWRIGHT_CONTEXT_LENGTH .*"-5"/],
    // A value with no scheme, dot, port or path is not echoed (r101: it may be a key given in the
    // wrong variable); the reason still says what is wrong with it.
    [
      ["--prompt", "hi"],
      { OPENAI_BASE_URL: "not a url" },
      /^error: OPENAI_BASE_URL .*"…": it does not start with http:\/\/ or https:\/\//,
    ],
    [
      ["--web"],
      { OPENAI_BASE_URL: "localhost:8080/v1" },
      /^error: OPENAI_BASE_URL .*"localhost:8080\/…": it does not start with http:\/\/ or https:\/\//,
    ],
    [["--prompt", ""], {}, /^error: --prompt needs some text/],
    [["--spec", "agent.json"], {}, /^error: --spec is read with --web only/],
  ])(
    "refuses %j (env %j), which it would otherwise ignore or fail on later, with one error line",
    async (args, env, expected) => {
      const { code, out } = await runCli(args, env);
      expect(code).toBe(1);
      expect(out.trim()).toMatch(expected);
      expect(out.trim().split("\n")).toHaveLength(1);
    },
    60_000,
  );

  it("warns, in one line, that --mcp is not read with --web", async () => {
    const out = await startOutput(["--mcp", "servers.json"], {});
    expect(out).toMatch(/^warning: --mcp is not read with --web yet/m);
  }, 60_000);
});
