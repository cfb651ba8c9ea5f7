import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  type AgentMessage,
  type AgentTool,
  type ChatMessageLike,
  createSession,
  NOT_RECORDED,
  readSessionFile,
  type Session,
} from "./test-exports.js";
import { bundleChild } from "./test-support/bundle-child.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const here = dirname(fileURLToPath(import.meta.url));

// Review round r68: what a session file edited by hand (or by another program) resumes into, and
// what a session does at the edges of a run.

let server: TestServer | undefined;
const tempDir = useTempDirs("agent-r68");
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A session file `<dir>/s.jsonl` holding a header and these messages. */
function sessionFile(dir: string, messages: readonly unknown[]): string {
  const file = join(dir, "s.jsonl");
  writeFileSync(
    file,
    [
      { type: "session", version: 1, id: "s", createdAt: "2026-01-01T00:00:00.000Z" },
      ...messages.map((message) => ({ type: "message", message })),
    ]
      .map((record) => `${JSON.stringify(record)}\n`)
      .join(""),
  );
  return file;
}

function lastSent(s: TestServer): ChatMessageLike[] {
  return (s.chatRequests.at(-1)!.body as { messages: ChatMessageLike[] }).messages;
}

const call = {
  role: "assistant",
  content: null,
  tool_calls: [{ id: "c1", type: "function", function: { name: "look", arguments: "{}" } }],
};

describe("a session file line the loop would refuse", () => {
  const cases: [string, unknown[], string][] = [
    [
      "a tool message without content",
      [{ role: "user", content: "q" }, call, { role: "tool", tool_call_id: "c1" }],
      "a tool message without content",
    ],
    [
      "a tool message with null content",
      [{ role: "user", content: "q" }, call, { role: "tool", tool_call_id: "c1", content: null }],
      "a tool message without content",
    ],
    [
      "a user message without content",
      [{ role: "user" }, { role: "assistant", content: "a" }],
      "a user message without content",
    ],
    [
      "a system message with null content",
      [
        { role: "system", content: null },
        { role: "user", content: "q" },
        { role: "assistant", content: "a" },
      ],
      "a system message without content",
    ],
    [
      "a message with an empty role",
      [
        { role: "user", content: "q" },
        { role: "", content: "x" },
        { role: "assistant", content: "a" },
      ],
      "a message without a role",
    ],
  ];
  for (const [name, messages, said] of cases) {
    it(`${name} is dropped with a notice, and the resumed session's next prompt is answered`, async () => {
      server = await startServer({ replies: () => ({ content: "Fine." }) });
      const dir = tempDir();
      const file = sessionFile(dir, messages);
      expect(readSessionFile(file).notices.join("\n")).toContain(said);
      const session = await createSession({
        config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
        sessionDir: dir,
        sessionId: "s",
      });
      try {
        const result = await session.prompt("next");
        expect(result.error).toBeUndefined();
        expect(result).toMatchObject({ status: "ok", reply: "Fine." });
        // What was sent: every message with content but an assistant's, every call answered.
        const sent = lastSent(server);
        for (const m of sent) if (m.role !== "assistant") expect(m.content ?? null).not.toBeNull();
        if (sent.some((m) => m.role === "assistant" && m.tool_calls)) {
          expect(sent).toContainEqual({ role: "tool", tool_call_id: "c1", content: NOT_RECORDED });
        }
        // The line as it was is kept beside the file.
        const kept = readFileSync(`${file}.dropped`, "utf8").trim().split("\n").slice(1);
        expect(kept.length).toBeGreaterThan(0);
      } finally {
        await session.close();
      }
    });
  }
});

describe("a message queued into a session's prompt that the run never delivered", () => {
  /** A session whose tool `work` runs `during(session)` as it is called. */
  async function workSession(during: (session: Session) => void, options: { maxTurns?: number } = {}) {
    let session: Session | undefined;
    const work: AgentTool = {
      name: "work",
      description: "Works",
      parameters: { type: "object", properties: {} },
      execute: () => {
        during(session as Session);
        return "worked";
      },
    };
    session = await createSession({
      config: { baseUrl: server!.baseUrl, model: "sim", maxRetries: 0 },
      tools: [work],
      ...options,
    });
    return session;
  }
  const workCall = (id: string) => ({ toolCalls: [{ id, name: "work", arguments: "{}" }] });
  const userTexts = (session: Session) =>
    session.messages.flatMap((m) =>
      (m as ChatMessageLike).role === "user" ? [(m as ChatMessageLike).content] : [],
    );
  const notices = (session: Session) =>
    session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));

  it("queued before an abort: the next prompt is answered for itself, not joined by the stale follow-up", async () => {
    server = await startServer({
      replies: [
        workCall("w1"),
        { content: "Answer to the second prompt." },
        { content: "Answer to the stale one." },
      ],
    });
    const session = await workSession((s) => {
      s.agent.followUp("Also check the tests.");
      s.abort();
    });
    expect((await session.prompt("First prompt")).status).toBe("aborted");
    expect(notices(session).join("\n")).toContain(
      '"Also check the tests." queued with steer() or followUp() was never sent (the run was stopped first)',
    );
    const second = await session.prompt("Second prompt");
    expect(second).toMatchObject({ status: "ok", reply: "Answer to the second prompt." });
    expect(userTexts(session)).toEqual(["First prompt", "Second prompt"]);
    expect(server.chatRequests).toHaveLength(2);
    await session.close();
  });

  it("steered in the last step the turn budget allows: not delivered after the next prompt's answer", async () => {
    server = await startServer({
      replies: [
        workCall("w1"),
        workCall("w2"),
        { content: "Second answered." },
        { content: "Stale answered." },
      ],
    });
    let calls = 0;
    const session = await workSession(
      (s) => {
        if (++calls === 1) s.agent.followUp("Then tidy up.");
      },
      { maxTurns: 1 },
    );
    expect((await session.prompt("First prompt")).status).toBe("maxTurns");
    expect(notices(session).join("\n")).toContain(
      '"Then tidy up." queued with steer() or followUp() was never sent',
    );
    expect(await session.prompt("Second prompt")).toMatchObject({ status: "ok", reply: "Second answered." });
    expect(userTexts(session)).toEqual(["First prompt", "Second prompt"]);
    await session.close();
  });

  it("queued while the run's end is told (an agent_end listener): dropped with a notice, not sent after the next prompt", async () => {
    server = await startServer({
      replies: [
        { content: "First answered." },
        { content: "Second answered." },
        { content: "Late answered." },
      ],
    });
    const session = await createSession({ config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 } });
    let once = true;
    session.agent.subscribe(async (event) => {
      if (event.type !== "agent_end" || !once) return;
      once = false;
      await new Promise((resolve) => setTimeout(resolve, 5));
      // The session still runs: a host sends its follow-up into the run.
      expect(session.running).toBe(true);
      session.agent.followUp("One more thing.");
    });
    expect(await session.prompt("First prompt")).toMatchObject({ status: "ok", reply: "First answered." });
    expect(notices(session).join("\n")).toContain(
      '"One more thing." queued with steer() or followUp() was never sent (the run had ended by the time it was queued)',
    );
    expect(await session.prompt("Second prompt")).toMatchObject({ status: "ok", reply: "Second answered." });
    expect(userTexts(session)).toEqual(["First prompt", "Second prompt"]);
    await session.close();
  });
});

describe("a resumed timeline when two steps of the file give their calls one id", () => {
  it("shows each call with its own step's result", async () => {
    const dir = tempDir();
    const step = {
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_0", type: "function", function: { name: "look", arguments: "{}" } }],
    };
    sessionFile(dir, [
      { role: "user", content: "q" },
      step,
      { role: "tool", tool_call_id: "call_0", content: "Error: the first look failed" },
      step,
      { role: "tool", tool_call_id: "call_0", content: "the second look found it" },
      { role: "assistant", content: "Found." },
    ]);
    const session = await createSession({
      config: { baseUrl: "http://127.0.0.1:9/v1", model: "sim" },
      sessionDir: dir,
      sessionId: "s",
    });
    try {
      const tools = session
        .getSnapshot()
        .timeline.flatMap((e) => (e.type === "tool" ? [[e.result, e.isError]] : []));
      expect(tools).toEqual([
        ["Error: the first look failed", true],
        ["the second look found it", false],
      ]);
    } finally {
      await session.close();
    }
  });
});

describe("a prompt started from the run_metrics event that ends the one before it", () => {
  it("is waited for by close(), which neither resolves early nor starves the event loop", async () => {
    server = await startServer({
      replies: [
        { content: "First." },
        { toolCalls: [{ id: "w1", name: "wait", arguments: "{}" }] },
        { content: "Second." },
      ],
    });
    const dir = tempDir();
    const child = await bundleChild(join(here, "test-support/chain-child.ts"));
    const proc = spawn(process.execPath, [child.file, dir, server.baseUrl], {
      cwd: join(here, ".."),
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    const exited = new Promise<boolean>((resolve) => proc.once("exit", () => resolve(true)));
    try {
      // Closing spun on an already-resolved promise: the process never got to print, nor to exit.
      const done = await Promise.race([
        exited,
        new Promise<false>((r) => setTimeout(() => r(false), 15_000)),
      ]);
      expect(done, "the child finished").toBe(true);
    } finally {
      proc.kill("SIGKILL");
      await child.remove();
    }
    // close() resolved once the second prompt had ended (it waited for the run's end, its listener included).
    expect(out).toMatch(/^closed \d+ false\n$/);
    expect(existsSync(join(dir, "chain.jsonl.lock"))).toBe(false);
  }, 30_000);
});

describe("a session file append that fails part way (a disk that filled up mid-write)", () => {
  const hasPrlimit = spawnSync("prlimit", ["--version"]).status === 0;
  it.skipIf(!hasPrlimit)(
    "writes its retry on a line of its own: the answer is read back",
    async () => {
      const story = `Once upon a time ${"and then ".repeat(200)}the end.`;
      server = await startServer({ replies: [{ content: story }] });
      const dir = tempDir();
      const child = await bundleChild(join(here, "test-support/full-disk-child.ts"));
      let out = "";
      let err = "";
      try {
        // Not spawnSync: the model's server runs in this process.
        const proc = spawn(process.execPath, [child.file, dir, server.baseUrl], { cwd: join(here, "..") });
        proc.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
        });
        proc.stderr.on("data", (chunk: Buffer) => {
          err += chunk.toString();
        });
        const code = await new Promise<number | null>((resolve) => proc.once("exit", resolve));
        expect(code, err).toBe(0);
      } finally {
        await child.remove();
      }
      const told = JSON.parse(out) as { status: string; errors: string[] };
      expect(told.status).toBe("ok");
      // The answer's append failed once (EFBIG), and was written again at the prompt's end.
      expect(told.errors).toHaveLength(1);
      expect(told.errors[0]).toMatch(/Could not append to the session file .*EFBIG/);
      const read = readSessionFile(join(dir, "full.jsonl"));
      // What the failed append wrote was cut off again: no fragment is left to drop.
      expect(read.notices).toEqual([]);
      expect(read.messages).toEqual([
        { role: "user", content: "Tell me the whole story." },
        { role: "assistant", content: story },
      ]);
    },
    60_000,
  );
});

describe("a session whose agent's transcript the host edits between prompts", () => {
  const edits: [string, (session: Session) => void][] = [
    [
      "assigning a shorter agent.messages",
      (s) => {
        s.agent.messages = s.messages.slice(0, 2);
      },
    ],
    [
      "splicing agent.messages in place",
      (s) => {
        s.agent.messages.splice(2);
      },
    ],
    [
      "agent.reset() and a first exchange pushed back",
      (s) => {
        const head = s.messages.slice(0, 2);
        s.agent.reset();
        s.agent.messages.push(...head);
      },
    ],
  ];
  for (const [name, edit] of edits) {
    it(`${name}: the file is written whole at the next prompt, and resumes as the session holds it`, async () => {
      server = await startServer({ replies: (_request, index) => ({ content: `Answer ${index}.` }) });
      const dir = tempDir();
      const options = { config: { baseUrl: server.baseUrl, model: "sim" }, sessionDir: dir, sessionId: "s" };
      const session = await createSession(options);
      await session.prompt("one");
      await session.prompt("two");
      await session.prompt("three");
      edit(session);
      await session.prompt("two, edited");
      const held = [...session.messages];
      expect(held.map((m) => (m as ChatMessageLike).content)).toEqual([
        "one",
        "Answer 0.",
        "two, edited",
        "Answer 3.",
      ]);
      await session.close();
      expect(readSessionFile(join(dir, "s.jsonl")).messages).toEqual(held);
    });
  }
});

describe("an app-only message queued into a run after the model's answer", () => {
  const note = { role: "ui-note", text: "Shown to the user only." } as unknown as AgentMessage;

  it("is kept where it was delivered, and no request ending in the model's own answer is sent for it", async () => {
    server = await startServer({ replies: (_request, index) => ({ content: `Answer ${index}.` }) });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim" } });
    let once = true;
    agent.subscribe((event) => {
      if (event.type !== "message_end" || (event.message as ChatMessageLike).role !== "user" || !once) return;
      once = false;
      agent.followUp(note);
    });
    const result = await agent.prompt("Hello");
    expect(result.status).toBe("ok");
    expect(server.chatRequests).toHaveLength(1);
    expect(agent.messages).toEqual([
      { role: "user", content: "Hello" },
      { role: "assistant", content: "Answer 0." },
      note,
    ]);
    // The same message sent as a user message by the host's converter is answered.
    const converting = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      convertToLlm: (messages) =>
        messages.map((m) =>
          (m as { role: string }).role === "ui-note"
            ? { role: "user" as const, content: (m as unknown as { text: string }).text }
            : (m as ChatMessageLike),
        ),
    });
    converting.followUp(note);
    await converting.prompt("Hi");
    expect(server.chatRequests).toHaveLength(3);
    expect((server.chatRequests.at(-1)!.body as { messages: ChatMessageLike[] }).messages.at(-1)).toEqual({
      role: "user",
      content: "Shown to the user only.",
    });
  });

  it("queued alone, continue() adds it without asking the model to answer its own answer", async () => {
    server = await startServer({ replies: (_request, index) => ({ content: `Answer ${index}.` }) });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim" } });
    await agent.prompt("Hello");
    agent.steer(note);
    expect((await agent.continue()).status).toBe("ok");
    expect(server.chatRequests).toHaveLength(1);
    expect(agent.messages.at(-1)).toEqual(note);
  });
});

describe("a subscribe (snapshot) listener that throws", () => {
  const question = {
    questions: [{ question: "Which one?", options: [{ label: "A" }, { label: "B" }], multiSelect: false }],
  };

  it("neither makes a stopped prompt reject nor loses the answer to a question", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "q1", name: "AskUser", arguments: JSON.stringify(question) }] },
        { content: "You chose." },
      ],
    });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim" },
      builtInTools: { askUser: true },
    });
    let failing = false;
    session.subscribe(() => {
      if (failing) throw new Error("render failed");
    });
    session.onEvent((event) => {
      if (event.type !== "question") return;
      // The host's view fails to render from here on; the answer still reaches the model.
      failing = true;
      setTimeout(() => session.submitAnswer(event.id, ["B"]), 0);
    });
    const result = await Promise.race([
      session.prompt("Ask me."),
      new Promise<"waiting">((resolve) => setTimeout(() => resolve("waiting"), 5_000)),
    ]);
    expect(result).toEqual({ status: "ok", reply: "You chose." });
    expect((server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages.at(-1)).toMatchObject({
      role: "tool",
      content: JSON.stringify({ "Which one?": "B" }),
    });
    await session.close();
  });

  it("does not make an aborted prompt reject with its error", async () => {
    server = await startServer({ replies: [{ toolCalls: [{ id: "w1", name: "work", arguments: "{}" }] }] });
    let session: Session | undefined;
    const work: AgentTool = {
      name: "work",
      description: "Works",
      parameters: { type: "object", properties: {} },
      execute: () => {
        session?.abort();
        return "worked";
      },
    };
    session = await createSession({ config: { baseUrl: server.baseUrl, model: "sim" }, tools: [work] });
    let failing = false;
    session.subscribe(() => {
      if (failing) throw new Error("render failed");
    });
    session.onEvent((event) => {
      if (event.type === "tool_start") failing = true;
    });
    await expect(session.prompt("Work.")).resolves.toMatchObject({ status: "aborted" });
    expect(session.getSnapshot().timeline.at(-1)).toEqual({ type: "interrupted" });
    await session.close();
  });
});

describe("a prompt stopped after answer text streamed", () => {
  it("replies with the text it kept in the conversation", async () => {
    server = await startServer({
      replies: [{ content: "The answer is forty-two, and here is why.", chunkChars: 5, silentAfterChunk: 4 }],
    });
    const session = await createSession({ config: { baseUrl: server.baseUrl, model: "sim" } });
    let deltas = 0;
    session.onEvent((event) => {
      if (event.type === "assistant_delta" && ++deltas === 3) setTimeout(() => session.abort(), 20);
    });
    const result = await session.prompt("Why?");
    const kept = session.messages.at(-1) as ChatMessageLike;
    expect(kept.role).toBe("assistant");
    expect(kept.content).toMatch(/^The answer is/);
    expect(result).toEqual({ status: "aborted", reply: kept.content });
    await session.close();
  });
});
