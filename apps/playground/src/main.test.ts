import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { cliForFile, runCli } from "./cli-build.js";
import { phaseMarks } from "./printable.js";

// The current src/main.ts, bundled once for the file (cli-build.ts says why); `node <main()>` starts it.
const main = cliForFile();

const run = (args: string[], env: Record<string, string | undefined> = {}, input?: string) =>
  runCli(main, args, env, input);

type Sent = { role: string; content: unknown }[];
/** The messages of the `index`th chat request the server received. */
function sentMessages(server: { chatRequests: { body: unknown }[] }, index: number): Sent {
  const body = server.chatRequests[index]?.body as { messages?: Sent } | undefined;
  return body?.messages ?? [];
}

/** Starts the CLI against `baseUrl` with its output collected, and waits until its first request reached the server. */
function startCli(server: { baseUrl: string; chatRequests: unknown[] }) {
  const child = spawn(process.execPath, [main()], {
    env: { ...process.env, OPENAI_BASE_URL: server.baseUrl, NO_COLOR: "1" },
  });
  const output = { text: "" };
  const collect = (d: Buffer) => {
    output.text += d.toString();
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
  const firstRequest = async () => {
    const deadline = Date.now() + 30_000;
    while (server.chatRequests.length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
  };
  return { child, output, exited, firstRequest };
}

/** A reply asking one AskUser question: "Which colour?" (red or blue). */
const ASK_COLOUR = {
  toolCalls: [
    {
      name: "AskUser",
      arguments: JSON.stringify({
        questions: [
          { question: "Which colour?", options: [{ label: "red" }, { label: "blue" }], multiSelect: false },
        ],
      }),
    },
  ],
};

describe("playground CLI", () => {
  // The first four start a process each and share nothing, signal nothing and time nothing: they
  // run side by side (the unreachable endpoint's answer waits out the loop's retry backoff).
  it.concurrent("answers a prompt on the simulator with a streamed answer that used a tool, then exits 0", async () => {
    const { code, out } = await run(["--prompt", "What is 17 * 23?"]);
    expect(code).toBe(0);
    expect(out).toContain("Simulator:");
    expect(out).toContain('→ calculator {"expression":"17 * 23"}');
    expect(out).toContain("← calculator: 391");
    expect(out).toMatch(/391/);
    expect(out).toMatch(/\[2 requests, 1 tool call; tokens: \d+ prompt \(\d+ cached\)/);
  }, 60_000);

  it.concurrent("shows an unreachable endpoint as one error line and exits 1", async () => {
    // Port 2: below the ephemeral range every test server's port 0 draws from (and not on fetch's
    // list of bad ports, as 1 is), so no server of this run can hold it. A port freed by a probe
    // server could be taken by another test's server before the CLI connects (CI saw a 404 from one).
    const closed = 2;
    const { code, out } = await run(["--prompt", "hi"], { OPENAI_BASE_URL: `http://127.0.0.1:${closed}/v1` });
    expect(code).toBe(1);
    expect(out).toMatch(/^error: Connection error\. \(ECONNREFUSED\)$/m);
    expect(out).not.toMatch(/\n\s+at /);
  }, 60_000);

  it.concurrent("never prints credentials written into OPENAI_BASE_URL (user:password, a key in the query)", async () => {
    const { code, out } = await run(["--prompt", "hi"], {
      OPENAI_BASE_URL: "http://me:sk-pass-secret-1@127.0.0.1:9/v1?api-key=sk-query-secret-2",
    });
    expect(code).toBe(1);
    // Refused at start since r95b (the client would refuse it at every run), naming the URL without them.
    expect(out).toContain("give it as http://127.0.0.1:9/v1 (a key goes in OPENAI_API_KEY)");
    expect(out).not.toMatch(/sk-pass-secret-1|sk-query-secret-2/);
  }, 60_000);

  // The refusal of an OPENAI_BASE_URL that is no http(s) URL names what is wrong and shows only the
  // value's scheme-like start and host: never a `user:password@`, however the scheme before it is
  // missing or misspelt, nor a query's values, nor what follows `user:` when no `@host` follows.
  it.concurrent.each<[string, RegExp]>([
    [
      "admin:S3cretPassw0rd@llm.internal:8080/v1",
      /not "\[credentials\]@llm\.internal:8080\/…": it does not start with http:\/\/ or https:\/\/\.$/,
    ],
    [
      "http//admin:S3cretPassw0rd@llm.internal/v1",
      /not "http\/\/\[credentials\]@llm\.internal\/…": it starts with "http\/\/", not http:\/\/ or https:\/\/\.$/,
    ],
    [
      "htp://admin:S3cretPassw0rd@llm.internal/v1",
      /not "htp:\/\/\[credentials\]@llm\.internal\/…": its scheme is "htp"\.$/,
    ],
    [
      "ftp://admin:S3cretPassw0rd@llm.internal/v1",
      /not "ftp:\/\/\[credentials\]@llm\.internal\/…": its scheme is "ftp"\.$/,
    ],
    // A credential in the query (Azure-style `api_key`, `key`): before, printed whole.
    [
      "http//llm.internal/v1?api_key=S3cretPassw0rdXY",
      /not "http\/\/llm\.internal\/…": it starts with "http\/\/", not http:\/\/ or https:\/\/\.$/,
    ],
    [
      "llm.internal:8080/v1?key=S3cretPassw0rdXY",
      /not "llm\.internal:8080\/…": it does not start with http:\/\/ or https:\/\/\.$/,
    ],
    // `user:password` with its `@host` left off: before, printed whole. A port (all digits) is shown.
    [
      "http://admin:S3cretPassw0rd",
      /not "http:\/\/admin:…": the URL parser refuses it \(check the host and port;/,
    ],
    [
      "http://me@llm.internal:S3cretPassw0rd/v1",
      /not "http:\/\/\[credentials\]@llm\.internal:…": the URL parser refuses it/,
    ],
    // A key given as OPENAI_BASE_URL (the two variables swapped), or a key after a word: before,
    // printed whole, as the "host". A value with no scheme shows a host only where it looks like
    // one (a dot, a port or a path after it).
    ["sk-proj-S3cretPassw0rdXY", /not "…": it does not start with http:\/\/ or https:\/\/\.$/],
    ["Bearer sk-S3cretPassw0rdXY", /not "…": it does not start with http:\/\/ or https:\/\/\.$/],
    [
      "localhost:8080/v1?k=S3cretPassw0rdXY",
      /not "localhost:8080\/…": it does not start with http:\/\/ or https:\/\/\.$/,
    ],
  ])(
    "refuses OPENAI_BASE_URL %j in one line that names the fault and not the password",
    async (url, expected) => {
      const { code, out } = await run(["--prompt", "hi"], { OPENAI_BASE_URL: url });
      expect(code).toBe(1);
      expect(out.trim().split("\n")).toHaveLength(1);
      expect(out).not.toContain("S3cret");
      expect(out).not.toContain("Passw0rd");
      expect(out).not.toContain("XY");
      expect(out.trim()).toMatch(/^error: OPENAI_BASE_URL must be an http:\/\/ or https:\/\/ URL /);
      expect(out.trim()).toMatch(expected);
    },
    60_000,
  );

  it.concurrent("answers every line of piped interactive input, in order, then exits 0 at the end of input", async () => {
    const { code, out } = await run([], {}, "what is 17 * 23\nwhat is 6 * 7\n/exit\nwhat is 1 + 1\n");
    expect(code).toBe(0);
    expect(out).toContain('→ calculator {"expression":"17 * 23"}');
    expect(out).toContain('→ calculator {"expression":"6 * 7"}');
    expect(out.indexOf("← calculator: 391")).toBeLessThan(out.indexOf("← calculator: 42"));
    // /exit ends the session: the line after it is never asked.
    expect(out).not.toContain('{"expression":"1 + 1"}');
  }, 60_000);

  it("says, on a line of its own, that printed answer text a late lone </think> turned into reasoning was reasoning", async () => {
    const server = await startServer({ replies: [{ content: "plan</think>Answer", chunkChars: 2 }] });
    try {
      const { code, out } = await run(["--prompt", "hi"], { OPENAI_BASE_URL: server.baseUrl });
      expect(code).toBe(0);
      const marker = out.indexOf("\n(↑ that was reasoning, not the answer)\n");
      expect(marker).toBeGreaterThan(0);
      expect(out.slice(0, marker)).toMatch(/plan$/);
      // Without colour the re-sent reasoning and the answer after it are marked.
      expect(out.slice(marker)).toMatch(/\)\n\nreasoning:\nplan\nanswer:\nAnswer/);
    } finally {
      await server.close();
    }
  }, 60_000);

  it("marks nothing with colour, and reasoning then answer (afresh after a reset) without", () => {
    const coloured = phaseMarks(true);
    expect([coloured.thinking(), coloured.answer()]).toEqual(["", ""]);
    const plain = phaseMarks(false);
    expect([plain.answer(), plain.thinking(), plain.thinking(), plain.answer(), plain.answer()]).toEqual([
      "",
      "\nreasoning:\n",
      "",
      "\nanswer:\n",
      "",
    ]);
    plain.reset();
    expect([plain.thinking(), plain.answer()]).toEqual(["\nreasoning:\n", "\nanswer:\n"]);
  });

  it("marks, without colour, where reasoning starts and where the answer after it starts, with --prompt and interactive", async () => {
    const reply = { content: "<think>hidden thoughts</think>Fenced answer.", chunkChars: 3 };
    const server = await startServer({ replies: [reply, reply] });
    try {
      const once = await run(["--prompt", "hi"], { OPENAI_BASE_URL: server.baseUrl });
      expect(once.code).toBe(0);
      expect(once.out).toMatch(/\nreasoning:\nhidden thoughts\nanswer:\nFenced answer\./);
      expect(once.out).not.toContain("thoughtsFenced");
      const piped = await run([], { OPENAI_BASE_URL: server.baseUrl }, "hi\n");
      expect(piped.code).toBe(0);
      expect(piped.out).toMatch(/\nreasoning:\nhidden thoughts\nanswer:\nFenced answer\./);
    } finally {
      await server.close();
    }
  }, 60_000);

  it("Ctrl-C stops the answer in progress and the next question is still answered", async () => {
    const server = await startServer({
      replies: [{ content: "I will never finish", silentAfterChunk: 2 }, { content: "The second answer." }],
    });
    try {
      const { child, output, exited, firstRequest } = startCli(server);
      child.stdin.end("first question\nsecond question\n");
      // The first answer has started and then gone silent: the request is in, a chunk is shown.
      await firstRequest();
      const shown = Date.now() + 30_000;
      while (!output.text.includes("I will") && Date.now() < shown)
        await new Promise((r) => setTimeout(r, 20));
      child.kill("SIGINT");
      const code = await exited;
      const out = output.text;
      expect(out).toMatch(/^error: Stopped by Ctrl-C\.$/m);
      expect(out).toContain("The second answer.");
      expect(code).toBe(0);
      expect(server.chatRequests).toHaveLength(2);
    } finally {
      await server.close();
    }
  }, 60_000);

  it("--session stores the interactive conversation as JSONL and a second start resumes it", async () => {
    const dir = await mkdtemp(join(tmpdir(), "playground-session-"));
    const server = await startServer({ scriptedModel: true });
    try {
      const env = { OPENAI_BASE_URL: server.baseUrl };
      const first = await run(["--session", dir], env, "what is 17 * 23\n");
      expect(first.code).toBe(0);
      expect(first.out).toMatch(/\(session [\w-]+: new, stored in /);
      expect(first.out).toContain("← calculator: 391");
      const files = await readdir(dir);
      expect(files).toHaveLength(1);
      const lines = (await readFile(join(dir, files[0]!), "utf8")).trim().split("\n");
      const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(JSON.stringify(records)).toContain("what is 17 * 23");
      expect(JSON.stringify(records)).toContain("391");

      const before = server.chatRequests.length;
      const second = await run(["--session", dir], env, "what is 6 * 7\n");
      expect(second.code).toBe(0);
      expect(second.out).toMatch(/\(session [\w-]+: resumed, 4 messages from /);
      expect(second.out).toContain("← calculator: 42");
      // The resumed conversation is sent: the next request carries the earlier question and its tool result.
      const sent = JSON.stringify(server.chatRequests[before]?.body);
      expect(sent).toContain("what is 17 * 23");
      expect(sent).toContain("391");
      expect(sent).toContain("what is 6 * 7");
      expect(await readdir(dir)).toEqual(files);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("asks an AskUser question on the terminal and sends the chosen option back", async () => {
    const server = await startServer({
      replies: [ASK_COLOUR, { content: "Blue it is." }],
    });
    try {
      const { code, out } = await run([], { OPENAI_BASE_URL: server.baseUrl }, "pick a colour\n2\n");
      expect(code).toBe(0);
      expect(out).toContain("? Which colour?");
      expect(out).toContain("  2. blue");
      expect(out).toContain("Blue it is.");
      const answer = sentMessages(server, 1).find((m) => m.role === "tool");
      expect(JSON.stringify(answer?.content)).toContain("blue");
    } finally {
      await server.close();
    }
  }, 60_000);

  it("asks again when the answer is not an option, and takes the next line that is", async () => {
    const server = await startServer({
      replies: [ASK_COLOUR, { content: "Blue it is." }],
    });
    try {
      // Was a crash on a terminal, and with piped input an exit 0 with the run left waiting:
      // submitAnswer refuses an answer the question did not offer.
      const { code, out } = await run(
        [],
        { OPENAI_BASE_URL: server.baseUrl },
        "pick a colour\ngreen\n7\n2\n",
      );
      expect(out).not.toMatch(/AgentError|\n\s+at /);
      expect(out).toContain('not an option: "green"');
      expect(out).toContain('not an option: "7"');
      expect(out).toContain("Blue it is.");
      expect(code).toBe(0);
      expect(server.chatRequests).toHaveLength(2);
      const answer = sentMessages(server, 1).find((m) => m.role === "tool");
      expect(JSON.parse(String(answer?.content))).toEqual({ "Which colour?": "blue" });
    } finally {
      await server.close();
    }
  }, 60_000);

  it("reads a multi-select answer as a list of options (a repeat counted once), asking again for one it does not offer", async () => {
    const askColours = {
      toolCalls: [
        {
          name: "AskUser",
          arguments: JSON.stringify({
            questions: [
              {
                question: "Which colours?",
                options: [{ label: "red" }, { label: "blue" }, { label: "green" }],
                multiSelect: true,
              },
            ],
          }),
        },
      ],
    };
    const server = await startServer({ replies: [askColours, { content: "Two colours." }] });
    try {
      const { code, out } = await run(
        [],
        { OPENAI_BASE_URL: server.baseUrl },
        "pick colours\n1,gren\n3, 1,3\n",
      );
      expect(out).not.toMatch(/AgentError|\n\s+at /);
      expect(out).toContain('not an option: "gren"');
      expect(out).toContain("Two colours.");
      expect(code).toBe(0);
      const answer = sentMessages(server, 1).find((m) => m.role === "tool");
      expect(JSON.parse(String(answer?.content))).toEqual({ "Which colours?": ["green", "red"] });
    } finally {
      await server.close();
    }
  }, 60_000);

  it("reads an answer that is an option's exact text as that option before reading it as a number", async () => {
    const replicas = (question: string) => ({
      question,
      options: [{ label: "3" }, { label: "5" }, { label: "7" }],
      multiSelect: false,
    });
    const askReplicas = {
      toolCalls: [
        {
          name: "AskUser",
          arguments: JSON.stringify({
            questions: [
              replicas("Replicas here?"),
              replicas("Replicas there?"),
              replicas("Replicas elsewhere?"),
            ],
          }),
        },
      ],
    };
    const server = await startServer({ replies: [askReplicas, { content: "Scaled." }] });
    try {
      // 9 is neither an option's text nor a position: asked again. 5 is the option "5" (it was
      // refused as an index out of range); 2 is the second option, "5"; 3 is the option "3", not
      // the third option.
      const { code, out } = await run([], { OPENAI_BASE_URL: server.baseUrl }, "scale it\n9\n5\n2\n3\n");
      expect(out).not.toMatch(/AgentError|\n\s+at /);
      expect(out).toContain('not an option: "9"');
      expect(out).not.toContain('not an option: "5"');
      expect(out).toContain("Scaled.");
      expect(code).toBe(0);
      expect(server.chatRequests).toHaveLength(2);
      const answer = sentMessages(server, 1).find((m) => m.role === "tool");
      expect(JSON.parse(String(answer?.content))).toEqual({
        "Replicas here?": "5",
        "Replicas there?": "5",
        "Replicas elsewhere?": "3",
      });
    } finally {
      await server.close();
    }
  }, 60_000);

  it("skips a question whose last piped line was not an option, and finishes the run", async () => {
    const server = await startServer({
      replies: [ASK_COLOUR, { content: "Fine, no colour." }],
    });
    try {
      const { code, out } = await run([], { OPENAI_BASE_URL: server.baseUrl }, "pick a colour\ngreen\n");
      expect(out).toContain('not an option: "green"');
      expect(out).toContain("Fine, no colour.");
      expect(code).toBe(0);
      expect(server.chatRequests).toHaveLength(2);
      const answer = sentMessages(server, 1).find((m) => m.role === "tool");
      expect(JSON.parse(String(answer?.content))).toEqual({ "Which colour?": "" });
    } finally {
      await server.close();
    }
  }, 60_000);

  it("skips an AskUser question asked after piped input ended, and exits 0", async () => {
    const server = await startServer({
      replies: [ASK_COLOUR, { content: "Fine, no colour." }],
    });
    try {
      // Was a hang: the question waited for a line that could no longer come.
      const { code, out } = await run([], { OPENAI_BASE_URL: server.baseUrl }, "pick a colour\n");
      expect(out).toContain("? Which colour?");
      expect(out).toContain("Fine, no colour.");
      expect(code).toBe(0);
      const answer = sentMessages(server, 1).find((m) => m.role === "tool");
      expect(JSON.parse(String(answer?.content))).toEqual({ "Which colour?": "" });
    } finally {
      await server.close();
    }
  }, 90_000);

  it("Ctrl-C while an AskUser question waits stops the run, and the next line is the next question", async () => {
    const server = await startServer({
      replies: [ASK_COLOUR, { content: "Four." }],
    });
    try {
      const { child, output, exited } = startCli(server);
      child.stdin.write("pick a colour\n");
      const seen = async (text: string) => {
        const deadline = Date.now() + 30_000;
        while (!output.text.includes(text) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 50));
      };
      await seen("? Which colour?");
      child.kill("SIGINT");
      await seen("Stopped by Ctrl-C.");
      // Was read as the answer to the question the stop had already answered: the playground
      // crashed with "No question group "q1" is waiting for an answer."
      child.stdin.end("what is 2 + 2\n");
      const code = await exited;
      expect(output.text).not.toMatch(/No question group|\n\s+at /);
      expect(output.text).toContain("Four.");
      expect(code).toBe(0);
      expect(server.chatRequests).toHaveLength(2);
      expect(JSON.stringify(sentMessages(server, 1).at(-1)?.content)).toContain("what is 2 + 2");
    } finally {
      await server.close();
    }
  }, 60_000);

  it("steers a line sent with /steer during a run into that run's next request", async () => {
    const server = await startServer({
      replies: [
        // Held back long enough for the /steer line to reach the CLI while the run is on: the line
        // is sent once the request has arrived, and a loaded machine is slow to pass it along.
        { toolCalls: [{ name: "clock", arguments: "{}" }], firstByteDelayMs: 4000 },
        { content: "Noted, in French." },
      ],
    });
    try {
      const { child, output, exited, firstRequest } = startCli(server);
      child.stdin.write("what time is it\n");
      await firstRequest();
      child.stdin.end("/steer answer in French\n");
      expect(await exited).toBe(0);
      const out = output.text;
      expect(out).toContain("(steering: answer in French)");
      expect(out).toContain("Noted, in French.");
      expect(server.chatRequests).toHaveLength(2);
      const last = sentMessages(server, 1).at(-1);
      expect(last?.role).toBe("user");
      expect(JSON.stringify(last?.content)).toContain("answer in French");
    } finally {
      await server.close();
    }
  }, 60_000);
});
