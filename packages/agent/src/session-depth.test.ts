// How deep a message a session writes may nest: the writer and the reader hold one bound
// (MAX_RECORD_DEPTH), so a session never writes a line it drops on the next open (r19 #1).
// Over HTTP with the testkit's scripted model.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  AgentError,
  type AgentMessage,
  createSession,
  MAX_RECORD_DEPTH,
  readSessionFile,
  type Session,
} from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

let server: TestServer | undefined;
const tempDir = useTempDirs("session-depth");
let dir: string;
const sessions: Session[] = [];
beforeEach(() => {
  dir = tempDir();
});
afterEach(async () => {
  for (const session of sessions.splice(0)) await session.close();
  await server?.close();
  server = undefined;
});

/** An app-only message holding a directory tree `levels` directories deep (two levels of nesting each). */
function snapshot(levels: number): AgentMessage {
  let tree: Record<string, unknown> = { name: "leaf" };
  for (let at = 0; at < levels; at++) tree = { name: `d${at}`, children: [tree] };
  return { role: "workspace-snapshot", tree } as unknown as AgentMessage;
}

/** An app-only message whose line's record nests exactly `depth` levels (record 1, message 2, `tree` 3, …). */
function nestedTo(depth: number): AgentMessage {
  let tree: unknown = [];
  for (let level = 3; level < depth; level++) tree = [tree];
  return { role: "workspace-snapshot", tree } as unknown as AgentMessage;
}

async function open(sessionId: string): Promise<Session> {
  const session = await createSession({
    config: { baseUrl: (server as TestServer).baseUrl, model: "sim" },
    sessionDir: dir,
    sessionId,
  });
  sessions.push(session);
  return session;
}

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** What `run` rejected with: like `Agent.prompt`, the session's agent rejects and never throws. */
async function rejected(run: () => Promise<unknown>): Promise<unknown> {
  let promise: Promise<unknown>;
  try {
    promise = run();
  } catch (error) {
    throw new Error(`threw instead of rejecting: ${String(error)}`);
  }
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("a session reads back whole every message it wrote (r19 #1)", () => {
  it("writes a 70-level app-only message and a message at the bound, and reopens them whole: no drop, no .bak", async () => {
    server = await startServer({ replies: [{ content: "ok" }, { content: "again" }, { content: "after" }] });
    const session = await open("deep");
    const tree = snapshot(35); // 70 levels of nesting inside the message
    const edge = nestedTo(MAX_RECORD_DEPTH);
    expect((await session.agent.prompt([tree, { role: "user", content: "What changed?" }])).status).toBe(
      "ok",
    );
    expect((await session.agent.prompt([edge, { role: "user", content: "And now?" }])).status).toBe("ok");
    const written = [...session.agent.messages];
    await session.close();
    sessions.splice(0);

    const path = join(dir, "deep.jsonl");
    const loaded = readSessionFile(path);
    expect(loaded.notices).toEqual([]);
    expect(loaded.messages).toEqual(written);
    const reopened = await open("deep");
    expect(reopened.agent.messages).toEqual(written);
    expect(reopened.getSnapshot().timeline.filter((e) => e.type === "notice" || e.type === "error")).toEqual(
      [],
    );
    expect(existsSync(`${path}.bak`)).toBe(false);
    // The reopened session still runs, sending what it read.
    expect(await reopened.prompt("After reopening?")).toEqual({ status: "ok", reply: "after" });
    expect(server.chatRequests).toHaveLength(3);
  });

  it("refuses, where it is given, a message nested past the bound (AgentError invalid-input naming it); nothing is sent or written", async () => {
    server = await startServer({ replies: [{ content: "fine" }] });
    const session = await open("refused");
    const path = join(dir, "refused.jsonl");
    const before = readFileSync(path, "utf8");
    const past = nestedTo(MAX_RECORD_DEPTH + 1);
    const refusals = [
      await rejected(() => session.agent.prompt([{ role: "user", content: "hi" }, past])),
      await rejected(() => session.agent.prompt(past)),
      thrown(() => session.agent.steer(past)),
      thrown(() => session.agent.followUp(past)),
      thrown(() => {
        session.agent.messages = [past];
      }),
    ];
    for (const error of refusals) {
      expect(AgentError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: "invalid-input" });
      expect((error as Error).message).toMatch(
        /the message with role "workspace-snapshot"\) nests deeper than a session file holds: more than 999 levels, the message itself the first/,
      );
    }
    expect((refusals[0] as Error).message).toMatch(/^Agent\.prompt: message 1 \(/);
    expect((refusals[4] as Error).message).toMatch(/^Agent\.messages\[0\] \(/);
    expect(session.agent.messages).toEqual([]);
    expect(session.agent.hasQueuedMessages()).toBe(false);
    expect(server.chatRequests).toHaveLength(0);
    expect(readFileSync(path, "utf8")).toBe(before);

    // One put into the transcript around the checks is told as an error and left out of the file,
    // which then reads back whole (every later message written).
    session.agent.messages.push(past);
    expect(await session.prompt("Still there?")).toEqual({ status: "ok", reply: "fine" });
    expect(session.getSnapshot().timeline).toContainEqual({
      type: "error",
      text: expect.stringMatching(
        /^Message 0 of the transcript \(the message with role "workspace-snapshot"\) was not written to the session file: it nests deeper/,
      ),
    });
    const loaded = readSessionFile(path);
    expect(loaded.notices).toEqual([]);
    expect(loaded.messages).toEqual(session.agent.messages.slice(1));
    // Writing the file whole would write it: save() refuses, naming it, and the file stays as it was.
    const kept = readFileSync(path, "utf8");
    await expect(session.save()).rejects.toMatchObject({
      code: "invalid-input",
      message: expect.stringMatching(
        /was not written: its message 0 \(the message with role "workspace-snapshot"\) nests deeper/,
      ),
    });
    expect(readFileSync(path, "utf8")).toBe(kept);
  });

  it("measures what is written (r22 #3): a message whose toJSON writes 1,200 levels is refused where it is given; nothing is written", async () => {
    server = await startServer({ replies: [] });
    const session = await open("hidden");
    const path = join(dir, "hidden.jsonl");
    const before = readFileSync(path, "utf8");
    // Nothing deep in the object; 1,200 levels in what JSON.stringify writes of it.
    const hidden = {
      role: "workspace-snapshot",
      tree: { toJSON: () => (nestedTo(1200 + 1) as unknown as { tree: unknown }).tree },
    } as unknown as AgentMessage;
    const refusals = [
      await rejected(() => session.agent.prompt([hidden, { role: "user", content: "hi" }])),
      thrown(() => session.agent.steer(hidden)),
      thrown(() => {
        session.agent.messages = [hidden];
      }),
    ];
    for (const error of refusals) {
      expect(AgentError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({
        code: "invalid-input",
        message: expect.stringContaining(
          '(the message with role "workspace-snapshot") nests deeper than a session file holds',
        ),
      });
    }
    expect(session.agent.messages).toEqual([]);
    expect(server.chatRequests).toHaveLength(0);
    expect(readFileSync(path, "utf8")).toBe(before);
  });

  it("measures what is written (r22 #3): a 1,500-cell linked list whose toJSON writes a flat array is taken, written and read back whole", async () => {
    server = await startServer({ replies: [{ content: "flat is fine" }] });
    const session = await open("written");
    const path = join(dir, "written.jsonl");
    // 1,500 cells nest 1,500 levels deep as objects, but write themselves as one flat array.
    class Cell {
      constructor(
        readonly head: number,
        readonly tail: Cell | null,
      ) {}
      toJSON(): number[] {
        const out: number[] = [];
        for (let cell: Cell | null = this; cell; cell = cell.tail) out.push(cell.head);
        return out;
      }
    }
    let list: Cell | null = null;
    for (let at = 0; at < 1500; at++) list = new Cell(at, list);
    const history = { role: "workspace-snapshot", history: list } as unknown as AgentMessage;
    expect(await session.agent.prompt([history, { role: "user", content: "Flat?" }])).toMatchObject({
      status: "ok",
    });
    const written = JSON.parse(JSON.stringify(session.agent.messages)) as AgentMessage[];
    expect((written[0] as unknown as { history: number[] }).history).toHaveLength(1500);
    await session.close();
    sessions.splice(0);
    const loaded = readSessionFile(path);
    expect(loaded.notices).toEqual([]);
    expect(loaded.messages).toEqual(written);
    const reopened = await open("written");
    expect(reopened.agent.messages).toEqual(written);
    expect(reopened.getSnapshot().timeline.filter((e) => e.type === "notice" || e.type === "error")).toEqual(
      [],
    );
  });

  it("counts a shared object at every place it is written (r25 #3): one reached shallow and again 600 levels down is refused at prompt(); shared only shallow, it is taken", async () => {
    server = await startServer({ replies: [{ content: "shallow is fine" }] });
    const session = await open("shared");
    const path = join(dir, "shared.jsonl");
    const before = readFileSync(path, "utf8");
    const nested = (levels: number, leaf: unknown = []) => {
      let tree = leaf;
      for (let at = 0; at < levels; at++) tree = [tree];
      return tree;
    };
    // 601 levels, written twice: right under `near`, and again under 600 more levels in `far`.
    const shared = nested(600);
    const deep = { role: "workspace-snapshot", tree: { near: shared, far: nested(600, shared) } };
    // Its line as JSON writes it nests 1,204 levels (no string here holds a bracket).
    let level = 0;
    let deepest = 0;
    for (const char of JSON.stringify({ type: "message", message: deep })) {
      if (char === "[" || char === "{") deepest = Math.max(deepest, ++level);
      else if (char === "]" || char === "}") level--;
    }
    expect(deepest).toBe(1204);
    const error = await rejected(() =>
      session.agent.prompt([deep as unknown as AgentMessage, { role: "user", content: "hi" }]),
    );
    // The old code measured `shared` only where it is first reached (shallow), took the message,
    // wrote it, and the next open dropped it as nested deeper than 1,000 levels.
    expect(AgentError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({
      code: "invalid-input",
      message: expect.stringContaining(
        'message 0 (the message with role "workspace-snapshot") nests deeper than a session file holds',
      ),
    });
    expect(session.agent.messages).toEqual([]);
    expect(server.chatRequests).toHaveLength(0);
    expect(readFileSync(path, "utf8")).toBe(before);

    // The same object shared by two shallow fields, and by 300 fields at once: written 600 levels
    // deep at most, so taken, written and read back whole.
    const wide = {
      role: "workspace-snapshot",
      tree: { a: shared, b: shared, many: Array.from({ length: 300 }, () => shared) },
    } as unknown as AgentMessage;
    expect(await session.agent.prompt([wide, { role: "user", content: "Wide?" }])).toMatchObject({
      status: "ok",
    });
    const written = JSON.parse(JSON.stringify(session.agent.messages)) as AgentMessage[];
    await session.close();
    sessions.splice(0);
    const loaded = readSessionFile(path);
    expect(loaded.notices).toEqual([]);
    expect(loaded.messages).toEqual(written);
    // About 1.2–3.3 s of depth walks and JSON on a quiet machine; the default 5 s bound was met
    // once under a load average of 7 (r68c), so it gets a bound that only a hang meets.
  }, 30_000);
});
