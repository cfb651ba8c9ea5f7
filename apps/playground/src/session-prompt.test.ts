import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { cliForFile } from "./cli-build.js";

// The current src/main.ts, bundled once for the file (cli-build.ts says why); `node <main()>` starts it.
const main = cliForFile();

function run(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number; out: string }>((resolve) => {
    const child = execFile(
      process.execPath,
      [main(), ...args],
      { env: { ...process.env, NO_COLOR: "1", ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, out: stdout + stderr }),
    );
    child.stdin?.end();
  });
}

describe("--prompt with --session", () => {
  it("keeps the one-shot prompt in the stored conversation, and the next one resumes it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "playground-session-prompt-"));
    const server = await startServer({ scriptedModel: true });
    try {
      // Two one-shot prompts in a row: the second is asked inside the conversation the first stored.
      const asked = [
        { prompt: "what is 17 * 23", answer: "← calculator: 391", said: /\(session [\w-]+: new, stored in / },
        {
          prompt: "what is 6 * 7",
          answer: "← calculator: 42",
          said: /\(session [\w-]+: resumed, 4 messages from /,
        },
      ];
      const firstRequest: number[] = [];
      for (const { prompt, answer, said } of asked) {
        firstRequest.push(server.chatRequests.length);
        const result = await run(["--session", dir, "--prompt", prompt], { OPENAI_BASE_URL: server.baseUrl });
        expect([result.code, result.out]).toEqual([0, expect.stringMatching(said)]);
        expect(result.out).toContain(answer);
      }
      const files = await readdir(dir);
      expect(files).toHaveLength(1);
      const stored = await readFile(join(dir, files[0]!), "utf8");
      expect(stored).toContain("what is 17 * 23");
      expect(stored).toContain("what is 6 * 7");
      expect(JSON.stringify(server.chatRequests[firstRequest[1]!]?.body)).toContain("what is 17 * 23");
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("exits 1 when the prompt's run fails, and does not keep the unanswered question in the session", async () => {
    const dir = await mkdtemp(join(tmpdir(), "playground-session-prompt-"));
    const server = await startServer({
      replies: [{ type: "error", status: 400, body: { error: { message: "no such model" } } }],
    });
    try {
      const result = await run(["--session", dir, "--prompt", "hello there"], {
        OPENAI_BASE_URL: server.baseUrl,
      });
      expect(result.code).toBe(1);
      expect(result.out).toMatch(/error:.*no such model/);
      // Kept, it was joined onto every later prompt of the session (and an overflow made each one overflow).
      expect(result.out).toMatch(/not kept.*send it again/);
      const files = await readdir(dir);
      expect(await readFile(join(dir, files[0]!), "utf8")).not.toContain("hello there");
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("exits 1, as --prompt alone does, when the run ends at the tool-step limit", async () => {
    const dir = await mkdtemp(join(tmpdir(), "playground-session-prompt-"));
    // A model that never stops calling the clock: the playground allows 8 tool steps.
    const clock = { toolCalls: [{ name: "clock", arguments: "{}" }] };
    const server = await startServer({ replies: Array.from({ length: 12 }, () => clock) });
    try {
      const result = await run(["--session", dir, "--prompt", "what time is it"], {
        OPENAI_BASE_URL: server.baseUrl,
      });
      expect(result.out).toContain("← clock:");
      expect(result.code).toBe(1);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
