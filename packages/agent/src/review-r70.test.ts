import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  AgentError,
  type ChatMessageLike,
  createSession,
  listSessions,
  type Session,
} from "./test-exports.js";
import { bundleChild } from "./test-support/bundle-child.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const here = dirname(fileURLToPath(import.meta.url));

// Review round r70: queued messages at the edges of runs, and the lock's clock.

let server: TestServer | undefined;
const skewDir = useTempDirs("r70-skew");
const tmpDirFor = useTempDirs("r70-tmp");
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** The text of the last user message of a chat request's body. */
function lastUser(body: unknown): string {
  const messages = (body as { messages: ChatMessageLike[] }).messages;
  const user = messages.filter((m) => m.role === "user").at(-1);
  return typeof user?.content === "string" ? user.content : "";
}

/** A server answering each request "Answer <the last user message's text>." */
async function echoServer(): Promise<TestServer> {
  return startServer({ replies: (request) => ({ content: `Answer ${lastUser(request.body)}.` }) });
}

function sentUsers(s: TestServer, at: number): string[] {
  const messages = (s.chatRequests[at]!.body as { messages: ChatMessageLike[] }).messages;
  return messages.flatMap((m) => (m.role === "user" && typeof m.content === "string" ? [m.content] : []));
}

const notices = (session: Session) =>
  session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));

describe("a message queued in an agent_end listener of a run the host started on session.agent", () => {
  for (const queue of ["followUp", "steer"] as const) {
    it(`(${queue}) is dropped with a notice when that run ends, never answered as the next prompt's reply`, async () => {
      server = await echoServer();
      const session = await createSession({
        config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      });
      try {
        let once = true;
        session.agent.subscribe((event) => {
          if (event.type !== "agent_end" || !once) return;
          once = false;
          session.agent[queue]("late");
        });
        const first = await session.agent.prompt("A");
        expect(first.status).toBe("ok");
        expect(notices(session).join("\n")).toContain(
          `"late" queued with steer() or followUp() was never sent (the run had ended by the time it was queued)`,
        );
        expect(session.agent.hasQueuedMessages()).toBe(false);
        const second = await session.prompt("B");
        expect(second).toMatchObject({ status: "ok", reply: "Answer B." });
        expect(server.chatRequests).toHaveLength(2);
        expect(sentUsers(server, 1)).toEqual(["A", "B"]);
      } finally {
        await session.close();
      }
    });
  }

  it("is kept queued when the host's shouldStopAfterTurn stopped that run, as for the session's own prompts", async () => {
    server = await echoServer();
    let stop = true;
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      shouldStopAfterTurn: () => stop,
    });
    try {
      // Queued in the run: after the answer the host's hook stops the run with it still queued.
      session.agent.subscribe((event) => {
        if (event.type === "message_end" && (event.message as ChatMessageLike).role === "user") {
          if ((event.message as ChatMessageLike).content === "A") session.agent.followUp("kept");
        }
      });
      expect((await session.agent.prompt("A")).status).toBe("stopped");
      expect(session.agent.hasQueuedMessages()).toBe(true);
      expect(notices(session).join("\n")).not.toContain("never sent");
      stop = false;
      const resumed = await session.agent.continue();
      expect(resumed.status).toBe("ok");
      expect(sentUsers(server, 1)).toEqual(["A", "kept"]);
    } finally {
      await session.close();
    }
  });
});

describe("a message steered between prompts, sent with the next session prompt's first request", () => {
  it("is named in the notice when that prompt fails before the model answered, not taken out in silence", async () => {
    server = await startServer({ replies: [{ type: "error", status: 500, body: "the server fell over" }] });
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
    });
    try {
      session.agent.steer("Use metric units.");
      const result = await session.prompt("How far is Paris?");
      expect(result.status).toBe("error");
      expect(sentUsers(server, 0).join("\n\n")).toBe("How far is Paris?\n\nUse metric units.");
      expect(session.messages).toEqual([]);
      expect(notices(session).join("\n")).toContain(
        'The prompt was not kept in the conversation, nor the message "Use metric units." sent with it (the run failed before the model answered): send them again.',
      );
    } finally {
      await session.close();
    }
  });
});

describe("a plain Agent's steer() queued in an agent_end listener", () => {
  it("is sent with the next prompt's first request, not after its answer", async () => {
    server = await echoServer();
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 } });
    let once = true;
    agent.subscribe((event) => {
      if (event.type !== "agent_end" || !once) return;
      once = false;
      agent.steer("Use metric units.");
    });
    expect((await agent.prompt("A")).status).toBe("ok");
    const second = await agent.prompt("B");
    expect(second.status).toBe("ok");
    // One request for B, carrying the steer; the run ends on B's answer.
    expect(server.chatRequests).toHaveLength(2);
    // (The wire joins two user messages in a row into one.)
    expect(sentUsers(server, 1).join("\n\n")).toBe("A\n\nB\n\nUse metric units.");
    expect(agent.hasQueuedMessages()).toBe(false);
    const texts = agent.messages.map((m) => (m as ChatMessageLike).content);
    expect(texts.slice(0, 4)).toEqual(["A", "Answer A.", "B", "Use metric units."]);
    expect(texts).toHaveLength(5);
  });
});

describe("a lock of another host whose modification time is ahead of this host's clock (clock skew)", () => {
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  /** A session directory holding the lock `s.jsonl.lock` of another host, its time `aheadMs` ahead. */
  function skewedLock(content: string, aheadMs: number): { dir: string; lock: string } {
    const dir = skewDir();
    const lock = join(dir, "s.jsonl.lock");
    writeFileSync(lock, content);
    const ahead = new Date(Date.now() + aheadMs);
    utimesSync(lock, ahead, ahead);
    return { dir, lock };
  }
  const holder = (leaseMs: number) =>
    JSON.stringify({
      pid: 4242,
      host: "r70-other-host",
      token: "t",
      since: "2026-01-01T00:00:00.000Z",
      leaseMs,
    });
  /** createSession of `s` in `dir`: the session's notices, or the error it was refused with. */
  async function open(dir: string): Promise<string[] | AgentError> {
    return createSession({
      config: { baseUrl: "http://127.0.0.1:9/v1", model: "sim" },
      sessionDir: dir,
      sessionId: "s",
    }).then(
      async (session) => {
        const said = notices(session);
        await session.close();
        return said;
      },
      (error: unknown) => error as AgentError,
    );
  }

  it("left by a holder that is gone: taken over once this process has seen it unchanged for its lease, not an hour later", async () => {
    const { dir, lock } = skewedLock(holder(300), 3_600_000);
    const first = await open(dir);
    expect(first).toBeInstanceOf(AgentError);
    expect((first as AgentError).code).toBe("locked");
    expect((first as AgentError).message).toMatch(
      /Its lease was last renewed at a time 3(599|600) s ahead of this host's clock .* if that process is gone, an open in this process once the lock has stayed unchanged for 0\.3 s \(in about 0\.3 s\) takes it over\./,
    );
    await sleep(450);
    const second = await open(dir);
    expect(second).not.toBeInstanceOf(AgentError);
    expect((second as string[]).join("\n")).toMatch(
      /was taken over: its holder, process 4242 on host r70-other-host, has not renewed its lease in the 0\.\d s this process saw the lock unchanged \(its modification time stays 3(599|600) s ahead of this host's clock\): the 0\.3 s lease lapsed 0\.\d s ago\./,
    );
    // It was this session's while open, and let go at close().
    expect(() => readFileSync(lock, "utf8")).toThrow(/ENOENT/);
  });

  it("kept by a holder that renews it (its time changes): refused at every look, however long", async () => {
    const { dir, lock } = skewedLock(holder(300), 3_600_000);
    for (let look = 1; look <= 6; look++) {
      const refused = await open(dir);
      expect(refused, `look ${look}`).toBeInstanceOf(AgentError);
      expect((refused as AgentError).code).toBe("locked");
      await sleep(150);
      // The holder renews every third of its lease, by its own clock (an hour ahead).
      const renewed = new Date(Date.now() + 3_600_000);
      utimesSync(lock, renewed, renewed);
    }
    expect(JSON.parse(readFileSync(lock, "utf8"))).toMatchObject({ pid: 4242 });
  });

  it("a lock naming no holder (its writer stopped before writing it): taken over once seen unchanged for 2 s", async () => {
    const { dir } = skewedLock("", 3_600_000);
    expect(await open(dir)).toBeInstanceOf(AgentError);
    await sleep(2100);
    const second = await open(dir);
    expect(second).not.toBeInstanceOf(AgentError);
    expect((second as string[]).join("\n")).toContain(
      "it names no holder (its writer stopped before writing it)",
    );
  });
});

describe("a prompt whose own message a mid-run fold (autoCompact) took into the summary", () => {
  // About 900 tokens at four characters a token: past 75 % of a 1,000-token window on its own.
  const LONG = `The first question, at length: ${"a detail worth keeping in mind ".repeat(120)}`;
  const userTexts = (session: Session) =>
    session.messages.flatMap((m) =>
      (m as ChatMessageLike).role === "user" ? [String((m as ChatMessageLike).content)] : [],
    );

  for (const end of ["error", "aborted"] as const) {
    it(`(${end}) takes out the follow-up no turn answered, as without the fold, with a notice`, async () => {
      let session: Session | undefined;
      server = await startServer({
        replies: (_request, index) => {
          if (index === 0) return { content: "The first answer." };
          if (index === 1) return { content: "SUMMARY: a long first question, answered." };
          if (index === 2) {
            if (end === "aborted") {
              session?.abort();
              return { content: "Too late.", firstByteDelayMs: 2000 };
            }
            return { type: "error", status: 500, body: "the server fell over" };
          }
          return { content: `Answer ${lastUser(_request.body)}.` };
        },
      });
      session = await createSession({
        config: { baseUrl: server.baseUrl, model: "m", contextLength: 1000, maxRetries: 0 },
        autoCompact: true,
      });
      let once = true;
      session.agent.subscribe((event) => {
        if (event.type === "message_end" && (event.message as ChatMessageLike).content === LONG && once) {
          once = false;
          session?.agent.followUp("Short follow-up?");
        }
      });
      try {
        const first = await session.prompt(LONG);
        expect(first.status).toBe(end);
        // The fold happened: the summary heads the transcript, the long question is gone.
        expect(JSON.stringify(session.messages)).toContain("SUMMARY: a long first question, answered.");
        expect(JSON.stringify(session.messages)).not.toContain("a detail worth keeping in mind");
        // The follow-up no turn answered is not left at the transcript's end for the next prompt.
        expect(userTexts(session)).not.toContain("Short follow-up?");
        expect(notices(session).join("\n")).toContain('"Short follow-up?" was never answered');
        const second = await session.prompt("B");
        expect(second).toMatchObject({ status: "ok", reply: "Answer B." });
        const last = (server.chatRequests.at(-1)!.body as { messages: ChatMessageLike[] }).messages;
        expect(JSON.stringify(last)).not.toContain("Short follow-up?");
      } finally {
        await session.close();
      }
    });
  }
});

describe("temporary files of a session file's rewrite", () => {
  function tempDir(): string {
    const dir = tmpDirFor();
    return dir;
  }
  const temps = (dir: string) => readdirSync(dir).filter((name) => name.endsWith(".tmp"));

  it("a rewrite that fails (the rename refused) removes its temporary file", async () => {
    const dir = tempDir();
    const session = await createSession({
      config: { baseUrl: "http://127.0.0.1:9/v1", model: "sim" },
      sessionDir: dir,
      sessionId: "s",
    });
    try {
      // The session file becomes a directory: the temporary file is written, its rename refused.
      rmSync(join(dir, "s.jsonl"));
      mkdirSync(join(dir, "s.jsonl"));
      const refused = await session.save().then(
        () => undefined,
        (error: unknown) => error as AgentError,
      );
      expect(refused).toBeInstanceOf(AgentError);
      expect(refused?.code).toBe("storage");
      expect(temps(dir)).toEqual([]);
    } finally {
      await session.close();
    }
  });

  const hasPrlimit = spawnSync("prlimit", ["--version"]).status === 0;
  it.skipIf(!hasPrlimit)(
    "a rewrite that fails part way (a disk that filled up mid-write) removes what it wrote of its temporary file",
    async () => {
      const dir = tempDir();
      const header = (id: string) => ({
        type: "session",
        version: 1,
        id,
        createdAt: "2026-01-01T00:00:00.000Z",
      });
      const lines = (records: unknown[]) => records.map((r) => `${JSON.stringify(r)}\n`).join("");
      // s: a session file of about 20 KiB, its rewrite cut off at the 16 KiB limit.
      writeFileSync(
        join(dir, "s.jsonl"),
        lines([
          header("s"),
          { type: "message", message: { role: "user", content: "q".repeat(20_000) } },
          { type: "message", message: { role: "assistant", content: "a" } },
        ]),
      );
      // d: a torn last line to drop, and a .dropped file of two opens' blocks, 2.5 MiB each: the
      // next block takes it past 4 MiB, so it is rewritten without the oldest (a 2.5 MiB temporary file).
      writeFileSync(join(dir, "d.jsonl"), `${lines([header("d")])}{"type":"mess`);
      const block = lines([
        { type: "open", at: "2026-01-01T00:00:00.000Z", pid: 1, notices: [] },
        ...Array.from({ length: 25 }, (_, k) => ({ type: "line", line: k + 1, text: "x".repeat(100_000) })),
      ]);
      writeFileSync(join(dir, "d.jsonl.dropped"), block + block);
      const child = await bundleChild(join(here, "test-support/full-rewrite-child.ts"));
      let out = "";
      let err = "";
      try {
        const proc = spawn(process.execPath, [child.file, dir, String(16 * 1024)], { cwd: join(here, "..") });
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
      const told = JSON.parse(out) as { saved: string; opened: string };
      expect(told.saved).toMatch(/^storage: Could not write the session file .*EFBIG/);
      expect(told.opened).toMatch(/^storage: Could not write the dropped lines of .*EFBIG/);
      expect(temps(dir)).toEqual([]);
      // The files are as they were.
      expect(readFileSync(join(dir, "d.jsonl.dropped"), "utf8")).toBe(block + block);
    },
    60_000,
  );

  it("left by a process stopped mid-rewrite: removed by the next open, which resumes the file as it was, with a notice", async () => {
    const dir = tempDir();
    const header = { type: "session", version: 1, id: "s", createdAt: "2026-01-01T00:00:00.000Z" };
    const records = [
      header,
      { type: "message", message: { role: "user", content: "q" } },
      { type: "message", message: { role: "assistant", content: "a" } },
    ];
    writeFileSync(join(dir, "s.jsonl"), records.map((r) => `${JSON.stringify(r)}\n`).join(""));
    // A rewrite's temporary file cut off by the crash, and one of the dropped-lines file's.
    writeFileSync(join(dir, "s.jsonl.4242.tmp"), `${JSON.stringify(header)}\n{"type":"mess`);
    writeFileSync(join(dir, "s.jsonl.dropped.4242.tmp"), '{"type":"open"');
    // Another session's, and files that are no temporary file of this one's, stay.
    writeFileSync(join(dir, "s2.jsonl.4242.tmp"), "x");
    writeFileSync(join(dir, "s.jsonl.notes.tmp"), "x");
    expect(listSessions(dir).map((meta) => meta.id)).toEqual(["s"]);
    const session = await createSession({
      config: { baseUrl: "http://127.0.0.1:9/v1", model: "sim" },
      sessionDir: dir,
      sessionId: "s",
    });
    try {
      expect(session.messages).toEqual([
        { role: "user", content: "q" },
        { role: "assistant", content: "a" },
      ]);
      expect(temps(dir).sort()).toEqual(["s.jsonl.notes.tmp", "s2.jsonl.4242.tmp"]);
      expect(notices(session).join("\n")).toContain(
        `removed 2 temporary files a rewrite of the session file left unfinished (the process stopped before renaming them): s.jsonl.4242.tmp, s.jsonl.dropped.4242.tmp`,
      );
    } finally {
      await session.close();
    }
  });
});
