import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type ChatMessageLike, createSession, OPEN_TODOS_NOTE, type Session } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

// What a session keeps of a conversation no model turn answered: a failed or stopped run's follow-up
// or steered message, the loop's own preselection exchange, a prompt the host died waiting on — and
// an importPath given again for a session whose file already holds a conversation.

let server: TestServer | undefined;
const tempDir = useTempDirs("agent-unanswered");
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function lastSent(s: TestServer): ChatMessageLike[] {
  return (s.chatRequests.at(-1)!.body as { messages: ChatMessageLike[] }).messages;
}

function fileRoles(file: string): string[] {
  return readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { type: string; message?: { role: string } })
    .filter((r) => r.type === "message")
    .map((r) => r.message!.role);
}

function notices(session: Session): string[] {
  return session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
}

describe("importPath on a session whose file holds a conversation", () => {
  it("opened twice with the same options, the second keeps the first's conversation", async () => {
    server = await startServer({ replies: [{ content: "Real answer." }] });
    const dir = tempDir();
    const seed = join(dir, "seed.jsonl");
    writeFileSync(
      seed,
      [
        { type: "session", version: 1, id: "seed", createdAt: "2026-01-01T00:00:00.000Z" },
        { type: "message", message: { role: "user", content: "Seed question" } },
        { type: "message", message: { role: "assistant", content: "Seed answer." } },
      ]
        .map((r) => `${JSON.stringify(r)}\n`)
        .join(""),
    );
    const options = {
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "work",
      importPath: seed,
    };
    const first = await createSession(options);
    expect(first.messages).toHaveLength(2);
    expect((await first.prompt("My real work")).status).toBe("ok");
    first.dispose();

    const second = await createSession(options);
    // Before: the seed's two messages again; the real work gone from the file, not in .dropped.
    expect(second.messages.map((m) => (m as ChatMessageLike).content)).toEqual([
      "Seed question",
      "Seed answer.",
      "My real work",
      "Real answer.",
    ]);
    expect(readFileSync(join(dir, "work.jsonl"), "utf8")).toContain("My real work");
    expect(notices(second)).toEqual([
      expect.stringMatching(/importPath .*seed\.jsonl was not applied.*4 messages/),
    ]);
    second.dispose();
  });

  it("still seeds a session whose own file is new", async () => {
    const dir = tempDir();
    const seed = join(dir, "seed.jsonl");
    writeFileSync(
      seed,
      `${JSON.stringify({ type: "message", message: { role: "user", content: "Seed" } })}\n`,
    );
    appendFileSync(
      seed,
      `${JSON.stringify({ type: "message", message: { role: "assistant", content: "Ok." } })}\n`,
    );
    const session = await createSession({
      config: { baseUrl: "http://127.0.0.1:9", model: "sim" },
      sessionDir: dir,
      sessionId: "fresh",
      importPath: seed,
    });
    expect(session.messages).toHaveLength(2);
    expect(notices(session)).toEqual([]);
    session.dispose();
  });

  it("refuses a seed that does not exist for a new session, writing nothing; once the session holds a conversation the seed is not looked for", async () => {
    server = await startServer({ replies: [{ content: "Ok." }] });
    const dir = tempDir();
    const missing = join(dir, "no-such-seed.jsonl");
    const options = {
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "fresh",
      importPath: missing,
    };
    // Before: the session opened empty, with no word that its seed was never read.
    await expect(createSession(options)).rejects.toMatchObject({
      code: "invalid-input",
      message: expect.stringMatching(/^importPath .*no-such-seed\.jsonl does not exist/),
    });
    expect(existsSync(join(dir, "fresh.jsonl"))).toBe(false);
    // The lock was let go: the same id opens without the seed.
    const plain = await createSession({ ...options, importPath: undefined });
    expect((await plain.prompt("Hello")).status).toBe("ok");
    plain.dispose();
    const again = await createSession(options);
    expect(again.messages).toHaveLength(2);
    expect(notices(again)).toEqual([
      expect.stringMatching(/importPath .*no-such-seed\.jsonl was not applied/),
    ]);
    again.dispose();
  });
});

describe("a failed or stopped run's user messages no model turn answered", () => {
  it("takes out the open-todos follow-up whose turn failed: the next prompt is sent alone", async () => {
    const todos = JSON.stringify({ todos: [{ content: "find the key", status: "inProgress" }] });
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "t1", name: "TodoWrite", arguments: todos }] },
        { content: "Working on it." },
        { type: "error", status: 400, body: { error: { message: "bad request" } } },
        { content: "Next answer." },
        { content: "Done." },
      ],
    });
    const dir = tempDir();
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      builtInTools: { todoWrite: true },
      sessionDir: dir,
      sessionId: "n",
    });
    expect((await session.prompt("Find the key.")).status).toBe("error");
    // The nudge's request was sent (and failed); it is no longer the transcript's last message.
    expect(server.chatRequests).toHaveLength(3);
    expect(session.messages.map((m) => (m as ChatMessageLike).role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(fileRoles(join(dir, "n.jsonl"))).toEqual(["user", "assistant", "tool", "assistant"]);
    // The session's own nudge goes silently.
    expect(notices(session).some((n) => n.includes(OPEN_TODOS_NOTE))).toBe(false);
    await session.prompt("What now?");
    expect(server.chatRequests[3]!.body).toMatchObject({
      messages: expect.arrayContaining([expect.objectContaining({ role: "user", content: "What now?" })]),
    });
    const fourth = (server.chatRequests[3]!.body as { messages: ChatMessageLike[] }).messages;
    expect(fourth.at(-1)).toEqual({ role: "user", content: "What now?" });
    expect(fourth.at(-2)).toMatchObject({ role: "assistant", content: "Working on it." });
    session.dispose();
  });

  it("takes out a steered message the model never answered, with a notice naming it", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "look", arguments: "{}" }] },
        { content: "never", firstByteDelayMs: 30_000 },
        { content: "Four." },
      ],
    });
    let release: (() => void) | undefined;
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      tools: [
        {
          name: "look",
          description: "Looks",
          parameters: { type: "object" },
          execute: () =>
            new Promise<string>((resolve) => {
              release = () => resolve("a door");
            }),
        },
      ],
    });
    const run = session.prompt("Look around.");
    while (!release) await new Promise((r) => setTimeout(r, 10));
    session.agent.steer("Only the north side, please.");
    release();
    while (server.chatRequests.length < 2) await new Promise((r) => setTimeout(r, 10));
    session.abort();
    expect((await run).status).toBe("aborted");
    expect(session.messages.map((m) => (m as ChatMessageLike).role)).toEqual(["user", "assistant", "tool"]);
    expect(notices(session)).toContainEqual(
      expect.stringMatching(/"Only the north side, please\." was never answered.*send it again/),
    );
    await session.prompt("What is 2+2?");
    expect(lastSent(server).at(-1)).toEqual({ role: "user", content: "What is 2+2?" });
    session.dispose();
  });

  it("rolls back a proxy + preselect prompt whose first request failed: the loop's load_tools exchange is no answer", async () => {
    server = await startServer({
      replies: [
        { type: "error", status: 400, body: { error: { message: "bad request" } } },
        { content: "Four." },
      ],
    });
    const dir = tempDir();
    const session = await createSession({
      config: {
        baseUrl: server.baseUrl,
        model: "sim",
        maxRetries: 0,
        toolDiscovery: "proxy",
        preselect: true,
        toolSelectModel: "picker",
        preselectKeywords: true,
      },
      tools: [
        {
          name: "uninstall_helm_chart",
          description: "Uninstall a helm release (chart) from the cluster",
          parameters: { type: "object", properties: { release: { type: "string" } } },
          execute: () => "gone",
        },
        {
          name: "get_forecast",
          description: "Weather forecast for a city",
          parameters: { type: "object", properties: { city: { type: "string" } } },
          execute: () => "sunny",
        },
      ],
      sessionDir: dir,
      sessionId: "p",
    });
    const result = await session.prompt("Uninstall the prometheus helm release");
    expect(result.status).toBe("error");
    // The preselection ran (its exchange went with the first request)...
    expect(JSON.stringify(server.chatRequests[0]!.body)).toContain("uninstall_helm_chart");
    // ...but no model turn answered: prompt and exchange are out of the transcript and the file.
    expect(session.messages).toEqual([]);
    expect(fileRoles(join(dir, "p.jsonl"))).toEqual([]);
    expect(notices(session)).toContainEqual(expect.stringMatching(/not kept.*send it again/));
    await session.prompt("What is 2+2?");
    const sent = lastSent(server).filter((m) => m.role !== "system");
    expect(JSON.stringify(sent)).not.toMatch(/Uninstall the prometheus/);
    expect(sent.filter((m) => m.role === "user")).toEqual([{ role: "user", content: "What is 2+2?" }]);
    session.dispose();
  });
});

describe("a reopened file that ends in a prompt never answered", () => {
  const header = { type: "session", version: 1, id: "s", createdAt: "2026-01-01T00:00:00.000Z" };
  const line = (r: unknown) => `${JSON.stringify(r)}\n`;

  it("keeps it out of the conversation, in <file>.dropped, with a notice: the next prompt goes alone", async () => {
    server = await startServer({ replies: [{ content: "Blue." }] });
    const dir = tempDir();
    const file = join(dir, "s.jsonl");
    const unanswered = { type: "message", message: { role: "user", content: "Was that about Spain?" } };
    writeFileSync(
      file,
      line(header) +
        line({ type: "message", message: { role: "user", content: "Capital of France?" } }) +
        line({ type: "message", message: { role: "assistant", content: "Paris." } }) +
        line(unanswered),
    );
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "s",
    });
    expect(session.messages.map((m) => (m as ChatMessageLike).content)).toEqual([
      "Capital of France?",
      "Paris.",
    ]);
    expect(notices(session)).toContainEqual(
      expect.stringMatching(/"Was that about Spain\?"\) the model never answered.*send it again/),
    );
    const kept = readFileSync(`${file}.dropped`, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; text?: string });
    expect(kept).toContainEqual({ type: "line", line: 4, text: JSON.stringify(unanswered) });
    expect(fileRoles(file)).toEqual(["user", "assistant"]);
    await session.prompt("What colour is the sky?");
    expect(lastSent(server).at(-1)).toEqual({ role: "user", content: "What colour is the sky?" });
    expect(lastSent(server).at(-2)).toMatchObject({ role: "assistant", content: "Paris." });
    session.dispose();
  });

  it("keeps a cut-off tool step as before (its calls answered NOT_RECORDED), dropping nothing", async () => {
    const dir = tempDir();
    const file = join(dir, "s.jsonl");
    writeFileSync(
      file,
      line(header) +
        line({ type: "message", message: { role: "user", content: "Look." } }) +
        line({
          type: "message",
          message: {
            role: "assistant",
            content: "",
            tool_calls: [{ id: "c1", type: "function", function: { name: "look", arguments: "{}" } }],
          },
        }),
    );
    const session = await createSession({
      config: { baseUrl: "http://127.0.0.1:9", model: "sim" },
      sessionDir: dir,
      sessionId: "s",
    });
    expect(session.messages.map((m) => (m as ChatMessageLike).role)).toEqual(["user", "assistant", "tool"]);
    expect(notices(session).some((n) => /never answered/.test(n))).toBe(false);
    expect(existsSync(`${file}.dropped`)).toBe(false);
    session.dispose();
  });

  it("looks past app-only messages after the prompt: the prompt is dropped, the app-only messages kept", async () => {
    server = await startServer({ replies: [{ content: "Blue." }] });
    const dir = tempDir();
    const file = join(dir, "s.jsonl");
    const unanswered = { type: "message", message: { role: "user", content: "Was that about Spain?" } };
    const note = { type: "message", message: { role: "ui-note", text: "typing…" } };
    writeFileSync(
      file,
      line(header) +
        line({ type: "message", message: { role: "user", content: "Capital of France?" } }) +
        line({ type: "message", message: { role: "assistant", content: "Paris." } }) +
        line(unanswered) +
        line(note),
    );
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "s",
    });
    expect(session.messages.map((m) => (m as { role: string }).role)).toEqual([
      "user",
      "assistant",
      "ui-note",
    ]);
    expect(notices(session)).toContainEqual(
      expect.stringMatching(/"Was that about Spain\?"\) the model never answered.*send it again/),
    );
    const kept = readFileSync(`${file}.dropped`, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; text?: string });
    expect(kept).toContainEqual({ type: "line", line: 4, text: JSON.stringify(unanswered) });
    expect(kept.some((k) => k.text === JSON.stringify(note))).toBe(false);
    expect(fileRoles(file)).toEqual(["user", "assistant", "ui-note"]);
    await session.prompt("What colour is the sky?");
    const sent = lastSent(server);
    expect(sent.some((m) => m.content === "Was that about Spain?")).toBe(false);
    expect(sent.at(-1)).toEqual({ role: "user", content: "What colour is the sky?" });
    expect(sent.at(-2)).toMatchObject({ role: "assistant", content: "Paris." });
    session.dispose();
  });

  it("an importPath seed that ends in a prompt seeds the new session without it, the notices naming the seed; the seed file is untouched", async () => {
    server = await startServer({ replies: [{ content: "Blue." }] });
    const dir = tempDir();
    const seed = join(dir, "seed.jsonl");
    const seedText =
      line(header) +
      line({ type: "message", message: { role: "user", content: "Capital of France?" } }) +
      "{not json\n" +
      line({ type: "message", message: { role: "assistant", content: "Paris." } }) +
      line({ type: "message", message: { role: "user", content: "Was that about Spain?" } }) +
      line({ type: "message", message: { role: "ui-note", text: "typing…" } });
    writeFileSync(seed, seedText);
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      sessionDir: dir,
      sessionId: "fresh",
      importPath: seed,
    });
    expect(session.messages.map((m) => (m as { role: string }).role)).toEqual([
      "user",
      "assistant",
      "ui-note",
    ]);
    // The new session's own file never held either: each notice names the seed it tells of (r35 #8).
    expect(notices(session)).toEqual([
      `importPath ${seed}: Line 3 of the seed is not JSON and was dropped.`,
      `importPath ${seed}: The seed ends in a prompt ("Was that about Spain?") the model never answered: not carried into the new session, so its next prompt is not joined onto it; send it again if still wanted.`,
    ]);
    expect(readFileSync(seed, "utf8")).toBe(seedText);
    expect(existsSync(`${seed}.dropped`)).toBe(false);
    expect(fileRoles(join(dir, "fresh.jsonl"))).toEqual(["user", "assistant", "ui-note"]);
    await session.prompt("What colour is the sky?");
    const sent = lastSent(server);
    expect(sent.some((m) => m.content === "Was that about Spain?")).toBe(false);
    expect(sent.at(-1)).toEqual({ role: "user", content: "What colour is the sky?" });
    session.dispose();
  });
});
