import { closeSync, openSync, readdirSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { countWork, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  AgentError,
  type AgentTool,
  createSession,
  listSessions,
  readSessionFile,
  sessionPath,
  ToolRegistry,
} from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

// Review round r77: the session file store, runs on one session, tools and options.

let server: TestServer | undefined;
const tmpDir = useTempDirs("r77");
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A server answering every request "ok". */
async function okServer(): Promise<TestServer> {
  return startServer({ replies: () => ({ content: "ok" }) });
}

/** What `f` throws, as an `AgentError` (the test fails on anything else, or on no throw). */
async function refusal(f: () => unknown): Promise<AgentError> {
  try {
    await f();
  } catch (error) {
    expect(error).toBeInstanceOf(AgentError);
    return error as AgentError;
  }
  throw new Error("expected a refusal, got none");
}

describe("session ids the file system cannot name as given", () => {
  it("an id holding a lone surrogate is refused, not opened as the U+FFFD file of every such id", async () => {
    server = await okServer();
    const dir = tmpDir();
    const config = { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 };
    for (const sessionId of ["\uD800", "a\uDBFFb", "\uDC00"]) {
      const error = await refusal(() => createSession({ config, sessionDir: dir, sessionId }));
      expect(error.code).toBe("invalid-input");
      expect(error.message).toMatch(/lone UTF-16 surrogate/);
      expect(() => sessionPath(dir, sessionId)).toThrow(/lone UTF-16 surrogate/);
    }
    expect(readdirSync(dir)).toEqual([]);
    // A well-formed id with a surrogate pair (an emoji) is one path segment like any other.
    const s = await createSession({ config, sessionDir: dir, sessionId: "chat-\u{1F600}" });
    await s.prompt("hi");
    await s.close();
    expect(listSessions(dir).map((m) => m.id)).toEqual(["chat-\u{1F600}"]);
  });

  it("an id too long for its files' names is refused with the limit named, nothing created", async () => {
    server = await okServer();
    const dir = tmpDir();
    const config = { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 };
    for (const sessionId of ["x".repeat(240), "é".repeat(120)]) {
      const error = await refusal(() => createSession({ config, sessionDir: dir, sessionId }));
      expect(error.code).toBe("invalid-input");
      expect(error.message).toMatch(/at most 229 bytes in UTF-8/);
    }
    expect(readdirSync(dir)).toEqual([]);
    // The longest id taken works through every write of the file (the rewrite's temporary file too).
    const longest = `${"é".repeat(114)}x`;
    const s = await createSession({ config, sessionDir: dir, sessionId: longest });
    expect((await s.prompt("hi")).status).toBe("ok");
    await s.save();
    await s.close();
    const again = await createSession({ config, sessionDir: dir, sessionId: longest });
    expect(again.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    await again.close();
  });
});

describe("a path option given as empty text (an environment variable set to nothing)", () => {
  for (const name of ["sessionDir", "importPath"] as const) {
    it(`${name}: "" is refused, naming it, not read as "none" with nothing stored or seeded`, async () => {
      server = await okServer();
      const config = { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 };
      const error = await refusal(() => createSession({ config, sessionId: "kept", [name]: "" }));
      expect(error.code).toBe("invalid-input");
      expect(error.message).toBe(
        `createSession: ${name} must be a non-empty path; got "" (leave ${name} out, or give it as undefined or null, for none).`,
      );
      expect(server.chatRequests).toHaveLength(0);
    });
  }
});

describe("a lock file of another host holding fields no loopwright writes", () => {
  const lock = (fields: Record<string, unknown>) =>
    JSON.stringify({ pid: 4242, host: "build-box-7", token: "t-1", leaseMs: 2_147_483_647, ...fields });
  /** Why opening session `s` in a folder holding only that lock file (with `fields`) is refused. */
  const openRefused = (fields: Record<string, unknown>) => {
    const dir = tmpDir();
    writeFileSync(join(dir, "s.jsonl.lock"), lock(fields));
    return refusal(() =>
      createSession({
        config: { baseUrl: "http://127.0.0.1:9/v1", model: "m" },
        sessionDir: dir,
        sessionId: "s",
      }),
    );
  };

  it("a since that is not text (an object whose toString is no function) is refused as locked, not a TypeError", async () => {
    const error = await openRefused({ since: { toString: 1 } });
    expect(error.code).toBe("locked");
    expect(error.message).toMatch(/is open in process 4242 on host build-box-7\. /);
  });

  it("a since or host of a megabyte is shown cut short in the refusal", async () => {
    const host = `h${"o".repeat(1_000_000)}`;
    const error = await openRefused({ host, since: `2026-${"9".repeat(1_000_000)}` });
    expect(error.code).toBe("locked");
    expect(error.message).toContain(`on host ${host.slice(0, 99)}…, since 2026-${"9".repeat(94)}…`);
    expect(error.message.length).toBeLessThan(1500);
  });
});

describe("an AskUser question's header longer than 12 code units", () => {
  it("is cut before a character it would split (an emoji), so the header shown holds no lone surrogate", async () => {
    const ask = (header: string, id: string) => ({
      id,
      name: "AskUser",
      arguments: JSON.stringify({
        questions: [{ question: `Pick ${id}?`, header, options: [{ label: "A" }, { label: "B" }] }],
      }),
    });
    server = await startServer({
      replies: [
        { toolCalls: [ask("a\u{1F4C5}\u{1F4C5}\u{1F4C5}\u{1F4C5}\u{1F4C5}\u{1F4C5}", "c1")] },
        { toolCalls: [ask("\u{1F4C5}".repeat(7), "c2")] },
        { content: "Done." },
      ],
    });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      builtInTools: { askUser: true },
    });
    const headers: (string | undefined)[] = [];
    session.onEvent((event) => {
      if (event.type !== "question") return;
      headers.push(event.questions[0]?.header);
      session.submitAnswer(event.id, ["A"]);
    });
    expect((await session.prompt("Go")).status).toBe("ok");
    expect(headers).toEqual([`a${"\u{1F4C5}".repeat(5)}`, "\u{1F4C5}".repeat(6)]);
    expect(headers.every((header) => header?.isWellFormed())).toBe(true);
    await session.close();
  });
});

describe("text the store cuts short for a title or a notice", () => {
  it("never ends inside a character: an emoji on the cut is left out whole, no lone surrogate", async () => {
    const dir = tmpDir();
    // The 60th and 61st code units of the prompt are one emoji, as are the 74th and 75th.
    const prompt = `${"p".repeat(59)}\u{1F4C5}${"q".repeat(12)}\u{1F4C5}tail`;
    const header = JSON.stringify({
      type: "session",
      version: 1,
      id: "t",
      createdAt: "2026-01-01T00:00:00.000Z",
    });
    const asked = JSON.stringify({ type: "message", message: { role: "user", content: prompt } });
    writeFileSync(join(dir, "t.jsonl"), `${header}\n${asked}\n`);
    const [meta] = listSessions(dir);
    expect(meta?.title).toBe("p".repeat(59));
    expect(meta?.title?.isWellFormed()).toBe(true);
    // Read as a session opening its own file: the unanswered prompt is dropped, named in a notice.
    const loaded = readSessionFile(join(dir, "t.jsonl"));
    expect(loaded.messages).toHaveLength(1);
    server = await okServer();
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "t",
    });
    const notices = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    await session.close();
    const named = notices.find((text) => text.includes("never answered"));
    expect(named).toContain(`"${"p".repeat(59)}\u{1F4C5}${"q".repeat(12)}…"`);
    expect(notices.every((text) => text.isWellFormed())).toBe(true);
  });
});

describe("a session file of many lines the reader drops (each told in a notice)", () => {
  it("opens in well under the 31 s it took: the notices join the timeline in one go, not copying it once each", async () => {
    const dir = tmpDir();
    const header = JSON.stringify({
      type: "session",
      version: 1,
      id: "x",
      createdAt: "2026-01-01T00:00:00.000Z",
    });
    // Written afresh for each open: the open sets the lines it drops aside.
    let opened = 0;
    const open = async (lines: number) => {
      const id = `bad${opened++}`;
      const body = Array.from({ length: lines }, (_, at) => `not json ${at}`).join("\n");
      writeFileSync(join(dir, `${id}.jsonl`), `${header}\n${body}\n`);
      let length = 0;
      const work = await countWork(async () => {
        const session = await createSession({
          config: { baseUrl: "http://127.0.0.1:9/v1", model: "m" },
          sessionDir: dir,
          sessionId: id,
        });
        length = session.getSnapshot().timeline.length;
        await session.close();
      });
      expect(length).toBe(lines + 1); // and the .dropped notice
      return work.total;
    };
    // 20,000 such lines took 31 s when each notice copied the timeline (40,000: 135 s). Counted,
    // not timed (r103c: a ratio of two CPU timings moves 3 to 4 times on a loaded CI host, and this
    // one's bound of 30 was within that of the 8 it reads): the Array, Map, Set and RegExp steps of
    // the open, against 8 times the lines. About 8 when the notices join the timeline in one go;
    // with a copy of the timeline per notice, the copies alone grow as the square of the lines.
    const [few, many] = [await open(1_000), await open(8_000)];
    expect(many / few).toBeLessThan(16);
  }, 120_000);
});

describe("a tool whose parameters, description or executionMode is of the wrong kind", () => {
  const base = {
    name: "deploy",
    description: "Deploys",
    parameters: { type: "object", properties: {} },
    execute: () => "ok",
  };
  const cases: [string, Record<string, unknown>, string][] = [
    [
      "parameters given as the schema's JSON text",
      { parameters: '{"type":"object","properties":{"env":{"type":"string"}}}' },
      'The tool "deploy" has parameters that are not a JSON Schema object; got a string ("{\\"type\\":\\"object\\",\\"properties\\":{\\"env\\":{\\"type\\":\\"string\\"}}}") (give the schema object, not its JSON text); it was not registered.',
    ],
    [
      "parameters given as a list",
      { parameters: [] },
      'The tool "deploy" has parameters that are not a JSON Schema object; got a list; it was not registered.',
    ],
    [
      "a description that is a number",
      { description: 5 },
      'The tool "deploy" has a description that is not text; got a number (5); it was not registered.',
    ],
    [
      'executionMode misspelt "serial" (its calls would run together)',
      { executionMode: "serial" },
      'The tool "deploy" has executionMode a string ("serial"); it must be "parallel" or "sequential"; it was not registered.',
    ],
  ];
  for (const [name, fields, message] of cases) {
    it(`${name}: refused with invalid-input naming the tool, by new Agent, createSession and register`, async () => {
      server = await okServer();
      const config = { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 };
      const tool = { ...base, ...fields } as unknown as AgentTool;
      const byAgent = await refusal(() => new Agent({ config, tools: [tool] }));
      expect([byAgent.code, byAgent.message]).toEqual(["invalid-input", message]);
      const bySession = await refusal(() => createSession({ config, tools: [tool] }));
      expect([bySession.code, bySession.message]).toEqual(["invalid-input", `createSession: ${message}`]);
      const registry = new ToolRegistry();
      const byRegister = await refusal(() => registry.register(tool));
      expect(byRegister.message).toBe(message);
      expect(registry.list()).toEqual([]);
      expect(server.chatRequests).toHaveLength(0);
    });
  }

  it("left out or null, each is taken as before (no description, an empty schema, parallel)", async () => {
    server = await okServer();
    const config = { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 };
    const { description: _, ...bare } = base;
    const tool = { ...bare, parameters: null, executionMode: null } as unknown as AgentTool;
    expect((await new Agent({ config, tools: [tool] }).prompt("hi")).status).toBe("ok");
    const sent = (server.chatRequests[0]!.body as { tools: { function: Record<string, unknown> }[] }).tools;
    expect(sent[0]!.function.name).toBe("deploy");
    expect(sent[0]!.function.description).toBeUndefined();
  });
});

describe("a session file deleted while its session is open", () => {
  it("is written whole again at the next write, not restarted without its header and its first exchanges", async () => {
    server = await okServer();
    const dir = tmpDir();
    const config = { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 };
    const session = await createSession({ config, sessionDir: dir, sessionId: "kept" });
    await session.prompt("first question");
    unlinkSync(session.filePath as string);
    expect((await session.prompt("second question")).status).toBe("ok");
    const notices = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    expect(notices).toEqual([
      `The session file ${session.filePath} was gone (deleted while this session was open); it was written again whole from the conversation this session holds, so it resumes from it.`,
    ]);
    await session.close();
    expect(listSessions(dir).map((meta) => [meta.id, meta.title])).toEqual([["kept", "first question"]]);
    const resumed = await createSession({ config, sessionDir: dir, sessionId: "kept" });
    expect(resumed.messages.map((m) => [m.role, (m as { content?: unknown }).content])).toEqual([
      ["user", "first question"],
      ["assistant", "ok"],
      ["user", "second question"],
      ["assistant", "ok"],
    ]);
    await resumed.close();
  });
});

describe("Agent.messages assigned while a run's loop goes", () => {
  const wipeReplies = () => [
    { toolCalls: [{ id: "c1", name: "wipe", arguments: "{}" }] },
    { content: "After the wipe." },
    { content: "Next answer." },
  ];

  it("from a session tool's execute: refused (busy), the run and every later prompt go on with one whole transcript", async () => {
    server = await startServer({ replies: wipeReplies() });
    const dir = tmpDir();
    let session: Awaited<ReturnType<typeof createSession>> | undefined;
    let refused: unknown;
    session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "w",
      tools: [
        {
          name: "wipe",
          description: "Starts the conversation over",
          parameters: { type: "object", properties: {} },
          execute: () => {
            try {
              (session as NonNullable<typeof session>).agent.messages = [];
            } catch (error) {
              refused = error;
              throw error;
            }
            return "wiped";
          },
        },
      ],
    });
    expect(await session.prompt("Go")).toEqual({ status: "ok", reply: "After the wipe." });
    expect(refused).toBeInstanceOf(AgentError);
    expect((refused as AgentError).code).toBe("busy");
    expect(session.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(await session.prompt("And now?")).toEqual({ status: "ok", reply: "Next answer." });
    await session.close();
    const resumed = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      sessionDir: dir,
      sessionId: "w",
    });
    expect(resumed.messages).toHaveLength(6);
    await resumed.close();
  });

  it("in an agent_end listener: taken, as before", async () => {
    server = await okServer();
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 } });
    agent.subscribe((event) => {
      if (event.type === "agent_end") agent.messages = agent.messages.slice(-1);
    });
    expect((await agent.prompt("Hello")).status).toBe("ok");
    expect(agent.messages).toEqual([{ role: "assistant", content: "ok" }]);
  });
});

describe("the file store's functions given a path that is not text", () => {
  it("refuse it (invalid-input) rather than read a number as an open file descriptor or list nothing for undefined", () => {
    const dir = tmpDir();
    const file = join(dir, "s.jsonl");
    const header = JSON.stringify({
      type: "session",
      version: 1,
      id: "s",
      createdAt: "2026-01-01T00:00:00.000Z",
    });
    writeFileSync(
      file,
      `${header}\n${JSON.stringify({ type: "message", message: { role: "user", content: "Private note" } })}\n`,
    );
    const fd = openSync(file, "r");
    try {
      const refused = (f: () => unknown) => {
        let caught: unknown = "no refusal";
        try {
          f();
        } catch (error) {
          caught = error;
        }
        expect(caught).toBeInstanceOf(AgentError);
        return [(caught as AgentError).code, (caught as AgentError).message];
      };
      expect(refused(() => readSessionFile(fd as unknown as string))).toEqual([
        "invalid-input",
        `readSessionFile: path must be a path (a non-empty string); got a number (${fd}).`,
      ]);
      expect(refused(() => listSessions(undefined as unknown as string))).toEqual([
        "invalid-input",
        "listSessions: dir must be a path (a non-empty string); got undefined.",
      ]);
      expect(refused(() => sessionPath(dir, 5 as unknown as string))).toEqual([
        "invalid-input",
        "sessionPath: sessionId must be a string; got a number (5).",
      ]);
      expect(refused(() => sessionPath(7 as unknown as string, "s"))).toEqual([
        "invalid-input",
        "sessionPath: dir must be a path (a non-empty string); got a number (7).",
      ]);
    } finally {
      closeSync(fd);
    }
  });
});
