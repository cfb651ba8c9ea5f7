// Review r95b: the terminal playground as a first-time user of the root README meets it, pointed at
// a real endpoint. Each test speaks HTTP to the testkit, through the bundled CLI.
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { cliForFile, runCli } from "./cli-build.js";

const main = cliForFile();

describe("an OPENAI_BASE_URL the client would refuse at every request", () => {
  it.concurrent.each([
    ["a user name and password", "http://bob:hunter2pass@HOST/v1", "a user name or password"],
    ["a key in the query", "http://HOST/v1?api_key=sk-abcdef0123456789", "a query (?…)"],
    ["a query of another kind", "http://HOST/v1?api-version=2024-10-01", "a query (?…)"],
  ])(
    "is refused at start, naming OPENAI_API_KEY, when it carries %s",
    async (_, shape, said) => {
      const server = await startServer({ replies: () => ({ content: "never asked" }) });
      try {
        const baseUrl = shape.replace("HOST", new URL(server.baseUrl).host);
        for (const args of [["--prompt", "hello"], ["--web"], []]) {
          const { code, out } = await runCli(
            main,
            args,
            { OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: "" },
            "hi\n",
          );
          // Was: the playground started (`--web` served its page), printed the URL cut, and then failed
          // every prompt with the client's advice in its own API's words ("put the key in apiKey").
          expect(code).toBe(1);
          expect(out).toContain(`error: OPENAI_BASE_URL carries ${said}`);
          expect(out).toContain("OPENAI_API_KEY");
          expect(out).not.toContain("Playground page:");
          expect(out).not.toMatch(/hunter2pass|sk-abcdef|2024-10-01/);
        }
        expect(server.chatRequests).toHaveLength(0);
      } finally {
        await server.close();
      }
    },
    60_000,
  );
});

describe("a long conversation at the terminal", () => {
  it("compacts against the window the endpoint lists, where LOOPWRIGHT_CONTEXT_LENGTH is unset", async () => {
    // llama.cpp as `-c 2048` serves it: the window in its listing, and a prompt past it refused.
    const server = await startServer({ personality: { name: "llamacpp", nCtx: 2048 }, scriptedModel: true });
    try {
      const lines = Array.from(
        { length: 8 },
        (_, i) => `${`tell me about loops and tools number ${i} `.repeat(40).trim()}\n`,
      ).join("");
      const { code, out } = await runCli(
        main,
        [],
        { OPENAI_BASE_URL: server.baseUrl, LOOPWRIGHT_CONTEXT_LENGTH: undefined },
        lines,
      );
      expect(code).toBe(0);
      // Was: no compaction without the variable, so the conversation overflowed the window and every
      // later prompt failed the same way, told to "compact it", which the terminal has no way to do.
      expect(out).not.toContain("does not fit the model's context window");
      expect(out).toContain("(Compacted:");
    } finally {
      await server.close();
    }
  }, 120_000);
});

describe("`pnpm playground` started from the repository's root", () => {
  it("reads --mcp, --session and read_file's files where the command was typed (pnpm's INIT_CWD)", async () => {
    const typedIn = await mkdtemp(join(tmpdir(), "r95b-root-"));
    try {
      await writeFile(join(typedIn, "servers.json"), JSON.stringify({ mcpServers: {} }));
      await writeFile(join(typedIn, "note.txt"), "the note written beside servers.json");
      // What pnpm gives the package's `start` script when `pnpm playground` runs it through
      // `pnpm --filter`: the directory the user was in, while the script itself runs in apps/playground.
      const pnpmStart = {
        npm_lifecycle_event: "start",
        npm_package_name: "@loopwright/playground",
        INIT_CWD: typedIn,
      };
      const { code, out } = await runCli(
        main,
        ["--mcp", "servers.json", "--session", ".sessions", "--prompt", "read the file note.txt"],
        pnpmStart,
      );
      // Was: "error: Could not read …/apps/playground/servers.json: ENOENT", exit 1.
      expect(out).not.toContain("ENOENT");
      expect(code).toBe(0);
      expect(out).toContain("← read_file: the note written beside servers.json");
      expect(await readdir(join(typedIn, ".sessions"))).toHaveLength(1);
    } finally {
      await rm(typedIn, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("an endpoint that is wrong or away, at the terminal", () => {
  it.concurrent("says what to check under the error: nothing answering, a 404, a refused key, no such model", async () => {
    const away = await startServer({ replies: [] });
    const awayUrl = away.baseUrl;
    await away.close();
    const refusing = (status: number, message: string) =>
      startServer({ replies: () => ({ type: "error", status, body: { error: { message, code: status } } }) });
    const notFound = await refusing(404, "File Not Found");
    const badKey = await refusing(401, "Invalid API key");
    // OpenAI's answer for a model it does not serve (recorded): a 404 too, but the URL is right.
    const noModel = await startServer({
      replies: () => ({
        type: "replay",
        fixture: "errors/openai/404-model-not-found-chat.json",
        status: 404,
      }),
    });
    try {
      const said = [
        [awayUrl, "Nothing answered at"],
        [notFound.baseUrl, "has no such route (404): check OPENAI_BASE_URL"],
        [badKey.baseUrl, "refused the key: check OPENAI_API_KEY"],
        [noModel.baseUrl, 'serves no model "gpt-4o-mini": check LOOPWRIGHT_MODEL (or --model)'],
      ] as const;
      for (const [baseUrl, hint] of said) {
        // Once with --prompt and once piped into the interactive session: the same advice.
        for (const [args, input] of [
          [["--prompt", "hi"], undefined],
          [[], "hi\n"],
        ] as const) {
          const { code, out } = await runCli(main, [...args], { OPENAI_BASE_URL: baseUrl }, input);
          // --prompt fails with 1; the piped session goes on to the end of its input, then exits 0.
          expect(code).toBe(input === undefined ? 1 : 0);
          // Was: the endpoint's words alone ("Connection error. (ECONNREFUSED)", "404 File Not
          // Found"), naming neither the URL asked nor the setting to change.
          expect(out).toMatch(/error: (Connection error|404|401)/);
          if (baseUrl === noModel.baseUrl) expect(out).not.toContain("check OPENAI_BASE_URL");
          expect(out).toContain(hint);
          expect(out).toContain(new URL(baseUrl).host);
        }
      }
    } finally {
      await notFound.close();
      await badKey.close();
      await noModel.close();
    }
  }, 90_000);

  it.concurrent("gives no such advice on the simulator", async () => {
    const { code, out } = await runCli(main, ["--prompt", "what is 2 + 2"]);
    expect(code).toBe(0);
    expect(out).not.toContain("OPENAI_BASE_URL name it");
  }, 60_000);
});
