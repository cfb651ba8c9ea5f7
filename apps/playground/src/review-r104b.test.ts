// Review r104b: what a hostile endpoint streams reaches the terminal escaped, with --prompt and in the
// interactive mode: its reasoning, its answer, a tool call's name and arguments, the tool's result
// and its error message. The tests so far fed such text through an MCP server, a --model and a
// session's name only; the model's own output (main.ts's and interactive.ts's `streamed`, the error
// line's `printable`) had no test driving the CLI.
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { cliForFile, runCli } from "./cli-build.js";

const main = cliForFile();

/** Sets the window title, clears the screen, moves the cursor, and reverses what follows. */
const ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x1b[1A\r\u009b2K\u202e";
/** The same as the terminal playground prints it. */
const SHOWN = "\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[1A\\r\\x9b2K\\u202e";
/** What must never reach the terminal raw. */
const RAW = ["\x1b", "\x07", "\r", "\u009b", "\u202e"];

/** Each way the terminal playground asks: its arguments and what is piped to it. */
const MODES: [string, string[], string | undefined][] = [
  ["--prompt", ["--prompt", "hi"], undefined],
  ["the interactive mode", [], "hi\n"],
];

describe("a hostile endpoint's output at the terminal", () => {
  it.each(MODES)(
    "is printed escaped with %s: reasoning, answer, tool call and result",
    async (_mode, args, input) => {
      const server = await startServer({
        replies: [
          {
            reasoning: `thinking ${ESCAPES} on`,
            toolCalls: [
              {
                id: "c1",
                name: `calculator${ESCAPES}`,
                arguments: JSON.stringify({ expression: `1+${ESCAPES}` }),
              },
            ],
          },
          { content: `answer ${ESCAPES} done` },
        ],
        scriptedModel: { chunkDelayMs: 0 },
      });
      try {
        const { out } = await runCli(main, args, { OPENAI_BASE_URL: server.baseUrl }, input);
        for (const raw of RAW) expect(out).not.toContain(raw);
        expect(out).toContain(`thinking ${SHOWN} on`);
        expect(out).toContain(`answer ${SHOWN} done`);
        expect(out).toContain(`→ calculator${SHOWN}`);
        // The unknown tool's failure, naming it as the model wrote it.
        expect(out).toContain(`✗ calculator${SHOWN}: `);
      } finally {
        await server.close();
      }
    },
    60_000,
  );

  it.each(MODES)(
    "prints an endpoint's error message escaped with %s",
    async (_mode, args, input) => {
      const server = await startServer({
        replies: [
          {
            type: "error",
            status: 400,
            body: { error: { message: `bad request ${ESCAPES} here`, code: 400 } },
          },
        ],
      });
      try {
        const { out } = await runCli(main, args, { OPENAI_BASE_URL: server.baseUrl }, input);
        for (const raw of RAW) expect(out).not.toContain(raw);
        expect(out).toMatch(
          /error: .*bad request \\x1b\]0;PWNED\\x07\\x1b\[2J\\x1b\[1A\\r\\x9b2K\\u202e here/,
        );
      } finally {
        await server.close();
      }
    },
    60_000,
  );
});
