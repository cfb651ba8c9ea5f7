// `playground --web` as a user starts it: a child process that prints the page's URL and serves it.
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../main.ts", import.meta.url));

describe("playground --web", () => {
  it("prints a 127.0.0.1 URL that serves the API on the simulator, and exits 0 on Ctrl-C", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", main, "--web"], {
      env: { ...process.env, OPENAI_BASE_URL: "", NO_COLOR: "1" },
    });
    let out = "";
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const found = /Playground page: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)?.[1];
        if (found) resolve(found);
      });
      child.once("exit", () => reject(new Error(`exited early: ${out}`)));
    });
    expect(out).toContain("Simulator:");
    const state = (await (await fetch(`${url}api/state`)).json()) as { mode: string; contextLength: number };
    expect(state).toMatchObject({ mode: "simulator", contextLength: 8192 });
    const code = await new Promise<number | null>((resolve) => {
      child.once("exit", resolve);
      child.kill("SIGINT");
    });
    expect(code).toBe(0);
  }, 60_000);

  /** Runs the CLI to its exit; its stdout and exit code. */
  const runCli = async (args: string[]) => {
    const child = spawn(process.execPath, ["--import", "tsx", main, ...args], {
      env: { ...process.env, OPENAI_BASE_URL: "", NO_COLOR: "1" },
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    return { code, out };
  };

  it("refuses a port that is not a number with one error line and exit 1", async () => {
    const { code, out } = await runCli(["--web", "--port", "http"]);
    expect(code).toBe(1);
    expect(out.trim()).toBe("error: --port must be a whole number from 0 to 65535, not http");
  }, 60_000);

  it("names a Redis it cannot reach in one error line and exits 1", async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    const { code, out } = await runCli(["--web", "--redis", `redis://127.0.0.1:${closed}`]);
    expect(code).toBe(1);
    expect(out.trim().split("\n")).toHaveLength(1);
    expect(out).toMatch(new RegExp(`^error: .*redis://127\\.0\\.0\\.1:${closed}`));
  }, 60_000);

  it("refuses --redis without --web", async () => {
    const { code, out } = await runCli(["--redis", "redis://127.0.0.1:6379"]);
    expect(code).toBe(1);
    expect(out.trim()).toBe(
      "error: --redis is read with --web only (the web page's runs are what it shares).",
    );
  }, 60_000);
});
