// Review r78: the terminal side (main.ts, interactive.ts, mcp.ts), each test driving the CLI as a
// child process against the testkit's loopback server, as main.test.ts does.
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { cliForFile, runCli } from "./cli-build.js";

const main = cliForFile();

const run = (args: string[], env: Record<string, string | undefined> = {}, input?: string) =>
  runCli(main, args, env, input);

/** The `model` of each chat request the server received. */
const modelsAsked = (server: { chatRequests: { body: unknown }[] }) =>
  server.chatRequests.map((r) => (r.body as { model?: unknown }).model);

describe("the model the terminal playground names", () => {
  it("reads an empty LOOPWRIGHT_MODEL as unset, as an empty OPENAI_BASE_URL is: the default model answers", async () => {
    const server = await startServer({ scriptedModel: true });
    try {
      const { code, out } = await run(["--prompt", "hi"], {
        OPENAI_BASE_URL: server.baseUrl,
        LOOPWRIGHT_MODEL: "",
      });
      expect(out).toContain("model gpt-4o-mini");
      expect(out).not.toContain("error:");
      expect(code).toBe(0);
      expect(modelsAsked(server)).toEqual(["gpt-4o-mini"]);
    } finally {
      await server.close();
    }
  }, 60_000);

  it.each([[[]], [["--web"]]])(
    "refuses an empty --model at start, in one line, before anything is sent (%j)",
    async (mode) => {
      const server = await startServer({ scriptedModel: true });
      try {
        for (const model of ["", "  "]) {
          const { code, out } = await run(
            [...mode, "--model", model, ...(mode.length ? [] : ["--prompt", "hi"])],
            {
              OPENAI_BASE_URL: server.baseUrl,
            },
          );
          expect(code).toBe(1);
          expect(out.trim()).toBe(
            "error: --model needs a model's name at the endpoint (as gpt-4o-mini); it was given an empty one.",
          );
        }
        expect(server.chatRequests).toHaveLength(0);
      } finally {
        await server.close();
      }
    },
    60_000,
  );

  it("prints a --model holding control characters escaped, as --web prints a spec's model", async () => {
    const server = await startServer({ scriptedModel: true });
    try {
      const { code, out } = await run(["--prompt", "hi", "--model", "m\x1b]0;pwned\x07\u202e"], {
        OPENAI_BASE_URL: server.baseUrl,
      });
      expect(code).toBe(0);
      expect(out).toContain("model m\\x1b]0;pwned\\x07\\u202e");
      for (const raw of ["\x1b", "\x07", "\u202e"]) expect(out).not.toContain(raw);
    } finally {
      await server.close();
    }
  }, 60_000);
});

describe("paths and ids from the command line, as the terminal prints them", () => {
  it("escapes a --session directory and --session-id holding control characters in the session line", async () => {
    const dir = await mkdtemp(join(tmpdir(), "r78-session-"));
    try {
      const { code, out } = await run([
        "--session",
        join(dir, "s\x1b]0;T\x07"),
        "--session-id",
        "a\x1b[2Jb",
        "--prompt",
        "hi",
      ]);
      expect(code).toBe(0);
      expect(out).toContain("(session a\\x1b[2Jb: new, stored in ");
      expect(out).toContain("s\\x1b]0;T\\x07");
      for (const raw of ["\x1b", "\x07"]) expect(out).not.toContain(raw);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("escapes a missing --mcp file's path in the error line", async () => {
    const { code, out } = await run(["--mcp", "/nonexistent/m\x1b]0;T\x07.json", "--prompt", "hi"]);
    expect(code).toBe(1);
    expect(out).toMatch(/^error: .*\/nonexistent\/m\\x1b\]0;T\\x07\.json/m);
    for (const raw of ["\x1b", "\x07"]) expect(out).not.toContain(raw);
  }, 60_000);
});

describe("empty paths on the command line", () => {
  it('refuses --session "" at start instead of keeping nothing, and --mcp "" instead of reading the directory', async () => {
    for (const [args, line] of [
      [
        ["--session", "", "--prompt", "hi"],
        "error: --session needs a directory to keep the conversation in (as .sessions); it was given an empty one.",
      ],
      [
        ["--session", " ", "--prompt", "hi"],
        "error: --session needs a directory to keep the conversation in (as .sessions); it was given an empty one.",
      ],
      [
        ["--mcp", "", "--prompt", "hi"],
        "error: --mcp needs the path of a .mcp.json file (as servers.json); it was given an empty one.",
      ],
    ] as const) {
      const { code, out } = await run([...args]);
      expect(code).toBe(1);
      expect(out.trim()).toBe(line);
    }
  }, 60_000);
});

describe("output piped into a reader that leaves", () => {
  // `pnpm playground --prompt … | head -1`: before, the next write threw an unhandled EPIPE, and its
  // stack trace was what the user saw.
  it.each([[["--prompt", "What is 17 * 23?"]], [[]]])(
    "exits 1 without a stack trace when stdout's reader is gone (%j)",
    async (args) => {
      const child = spawn(process.execPath, [main(), ...args], {
        env: { ...process.env, OPENAI_BASE_URL: undefined, NO_COLOR: "1" },
      });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
      });
      // The reader takes the first piece, then leaves; piped questions keep the interactive mode writing.
      child.stdout.once("data", () => child.stdout.destroy());
      child.stdin.end(args.length ? undefined : "What is 17 * 23?\nwhat is 6 * 7\n");
      const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
      expect(stderr).toBe("");
      expect(code).toBe(1);
    },
    60_000,
  );
});

describe("/steer with odd arguments", () => {
  it("says /steer with no text needs some, and sends it to no one; /steer text with no run is asked", async () => {
    const server = await startServer({ scriptedModel: true });
    try {
      const { code, out } = await run(
        [],
        { OPENAI_BASE_URL: server.baseUrl },
        "/steer\n  /steer   \n  /steer what is 6 * 7\n",
      );
      expect(code).toBe(0);
      expect(out.match(/\(\/steer needs the text to steer with: \/steer <text>\)/g)).toHaveLength(2);
      // Before, "/steer" was asked as a question twice, and the indented `/steer …` as it was written.
      const asked = server.chatRequests.map((r) => {
        const messages = (r.body as { messages: { role: string; content: unknown }[] }).messages;
        return messages.filter((m) => m.role === "user").at(-1)?.content;
      });
      expect(asked.filter((c) => JSON.stringify(c).includes("/steer"))).toEqual([]);
      expect(JSON.stringify(asked)).toContain("what is 6 * 7");
      expect(out).toContain("← calculator: 42");
    } finally {
      await server.close();
    }
  }, 60_000);
});

describe("--prompt with --session", () => {
  it("asks a prompt that reads like a command as written, as --prompt alone does", async () => {
    const dir = await mkdtemp(join(tmpdir(), "r78-scripted-"));
    const server = await startServer({ replies: [{ content: "one." }, { content: "two." }] });
    try {
      for (const prompt of ["/exit", "/steer"]) {
        const { code, out } = await run(["--session", dir, "--prompt", prompt], {
          OPENAI_BASE_URL: server.baseUrl,
        });
        // Before: `/exit` ended the session with nothing asked and exit 0; `/steer` said it needs text.
        expect(code).toBe(0);
        expect(out).not.toContain("/steer needs");
      }
      const asked = server.chatRequests.map((r) =>
        (r.body as { messages: { role: string; content: unknown }[] }).messages.at(-1),
      );
      expect(asked).toEqual([
        { role: "user", content: "/exit" },
        { role: "user", content: "/steer" },
      ]);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
