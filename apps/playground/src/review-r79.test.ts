// Review r79: commands the terminal playground reads, and startWebServer's numeric options.
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { cliForFile, runCli } from "./cli-build.js";
import { startWebServer } from "./web/server.js";

const main = cliForFile();

/** The last user message of each chat request the server received. */
const askedOf = (server: { chatRequests: { body: unknown }[] }) =>
  server.chatRequests.map(
    (r) =>
      (r.body as { messages: { role: string; content: unknown }[] }).messages
        .filter((m) => m.role === "user")
        .at(-1)?.content,
  );

describe("slash commands at the terminal", () => {
  it("answers /help with the commands and a mistyped command with a line, sending neither to the model", async () => {
    const server = await startServer({ scriptedModel: true });
    try {
      const { code, out } = await runCli(
        main,
        [],
        { OPENAI_BASE_URL: server.baseUrl },
        "/help\n/quit\n  /Exit now\nwhat is 6 * 7\n",
      );
      expect(code).toBe(0);
      // Before, each went to the model as a question ("/help", "/quit", "/Exit now").
      expect(out).toContain("/steer <text>");
      expect(out).toContain("(no command /quit: /help lists them; nothing was sent.");
      expect(out).toContain("(no command /Exit:");
      // One question (its tool step and its answer: two requests), none of the commands.
      expect(new Set(askedOf(server))).toEqual(new Set(["what is 6 * 7"]));
      expect(out).toContain("← calculator: 42");
    } finally {
      await server.close();
    }
  }, 60_000);

  it("asks a line starting // with one slash taken off, and a path as written", async () => {
    const server = await startServer({ replies: [{ content: "one." }, { content: "two." }] });
    try {
      const { code, out } = await runCli(
        main,
        [],
        { OPENAI_BASE_URL: server.baseUrl },
        "//quit means what?\n/etc/hosts holds what?\n",
      );
      expect(code).toBe(0);
      expect(out).not.toContain("no command");
      expect(askedOf(server)).toEqual(["/quit means what?", "/etc/hosts holds what?"]);
    } finally {
      await server.close();
    }
  }, 60_000);

  it("keeps --prompt with --session as written: a scripted /help is asked", async () => {
    const { mkdtemp, rm } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = await mkdtemp(join(tmpdir(), "r79-scripted-"));
    const server = await startServer({ replies: [{ content: "one." }] });
    try {
      const { code } = await runCli(main, ["--session", dir, "--prompt", "/help"], {
        OPENAI_BASE_URL: server.baseUrl,
      });
      expect(code).toBe(0);
      expect(askedOf(server)).toEqual(["/help"]);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("startWebServer's numeric options", () => {
  it.each([Number.NaN, -1, 0, Number.POSITIVE_INFINITY, "600000"])(
    "refuses retainEndedMs %s by name (the bus read it as its default while the server forgot runs at once)",
    async (value) => {
      await expect(startWebServer({ retainEndedMs: value as number })).rejects.toThrow(
        /`retainEndedMs` must be a number of ms above 0/,
      );
    },
  );

  it.each([-5, 0, 1.5, Number.NaN, "8192"])("refuses endpoint.contextLength %s by name", async (value) => {
    await expect(
      startWebServer({ endpoint: { baseUrl: "http://127.0.0.1:9/v1", contextLength: value as number } }),
    ).rejects.toThrow(/`endpoint.contextLength` must be a whole number of tokens above 0/);
  });

  it("sends a good contextLength as the run's window: the state reads it without asking the endpoint", async () => {
    const endpoint = await startServer({ scriptedModel: true });
    const web = await startWebServer({
      endpoint: { baseUrl: endpoint.baseUrl, model: "m", contextLength: 5000 },
    });
    try {
      const state = (await (await fetch(`${web.url}api/state`)).json()) as { contextLength: number };
      expect(state.contextLength).toBe(5000);
    } finally {
      await web.close();
      await endpoint.close();
    }
  }, 30_000);
});
