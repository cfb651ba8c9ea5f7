import { execFile, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("./main.ts", import.meta.url));

function run(args: string[], env: Record<string, string | undefined> = {}, input?: string) {
  return new Promise<{ code: number; out: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", main, ...args],
      { env: { ...process.env, OPENAI_BASE_URL: undefined, NO_COLOR: "1", ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, out: stdout + stderr }),
    );
    child.stdin?.end(input);
  });
}

describe("playground CLI", () => {
  it("answers a prompt on the simulator with a streamed answer that used a tool, then exits 0", async () => {
    const { code, out } = await run(["--prompt", "What is 17 * 23?"]);
    expect(code).toBe(0);
    expect(out).toContain("Simulator:");
    expect(out).toContain('→ calculator {"expression":"17 * 23"}');
    expect(out).toContain("← calculator: 391");
    expect(out).toMatch(/391/);
    expect(out).toMatch(/\[2 requests, 1 tool call; tokens: \d+ prompt \(\d+ cached\)/);
  }, 60_000);

  it("shows an unreachable endpoint as one error line and exits 1", async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const { code, out } = await run(["--prompt", "hi"], { OPENAI_BASE_URL: `http://127.0.0.1:${closed}/v1` });
    expect(code).toBe(1);
    expect(out).toMatch(/^error: Connection error\. \(ECONNREFUSED\)$/m);
    expect(out).not.toMatch(/\n\s+at /);
  }, 60_000);

  it("answers every line of piped interactive input, in order, then exits 0 at the end of input", async () => {
    const { code, out } = await run([], {}, "what is 17 * 23\nwhat is 6 * 7\n/exit\nwhat is 1 + 1\n");
    expect(code).toBe(0);
    expect(out).toContain('→ calculator {"expression":"17 * 23"}');
    expect(out).toContain('→ calculator {"expression":"6 * 7"}');
    expect(out.indexOf("← calculator: 391")).toBeLessThan(out.indexOf("← calculator: 42"));
    // /exit ends the session: the line after it is never asked.
    expect(out).not.toContain('{"expression":"1 + 1"}');
  }, 60_000);

  it("Ctrl-C stops the answer in progress and the next question is still answered", async () => {
    const server = await startServer({
      replies: [{ content: "I will never finish", silentAfterChunk: 2 }, { content: "The second answer." }],
    });
    try {
      const child = spawn(process.execPath, ["--import", "tsx", main], {
        env: { ...process.env, OPENAI_BASE_URL: server.baseUrl, NO_COLOR: "1" },
      });
      let out = "";
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
      });
      child.stderr.on("data", (d: Buffer) => {
        out += d.toString();
      });
      const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
      child.stdin.end("first question\nsecond question\n");
      const deadline = Date.now() + 30_000;
      // The first answer has started and then gone silent: the request is in, a chunk is out.
      while (server.chatRequests.length === 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 300));
      child.kill("SIGINT");
      const code = await exited;
      expect(out).toMatch(/^error: Stopped by Ctrl-C\.$/m);
      expect(out).toContain("The second answer.");
      expect(code).toBe(0);
      expect(server.chatRequests).toHaveLength(2);
    } finally {
      await server.close();
    }
  }, 60_000);
});
