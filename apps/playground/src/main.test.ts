import { execFile } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("./main.ts", import.meta.url));

function run(args: string[], env: Record<string, string | undefined> = {}) {
  return new Promise<{ code: number; out: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", main, ...args],
      { env: { ...process.env, OPENAI_BASE_URL: undefined, NO_COLOR: "1", ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, out: stdout + stderr }),
    );
    child.stdin?.end();
  });
}

describe("playground CLI", () => {
  it("answers a prompt on the simulator with a streamed answer that used a tool, then exits 0", async () => {
    const { code, out } = await run(["--prompt", "What is 17 * 23?"]);
    expect(code).toBe(0);
    expect(out).toContain("Simulator:");
    expect(out).toContain('→ calculator {"expression":"17 * 23"}');
    expect(out).toContain("← 391");
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
});
