import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import {
  AgentError,
  createSession,
  type Session,
  SessionBusyError,
  type SessionEvent,
} from "./test-exports.js";

// Session.prompt asks the file's lock, then hands its run to its agent, which asks again. The lease
// may lapse between the two (the event loop blocked, the process stopped) while another opener takes
// the file: whichever check finds the loss, the prompt is refused as Session.prompt, leaving nothing.
// A loss during what the run shows (a slow listener of its user entry) is found by the run instead.

const root = mkdtempSync(join(tmpdir(), "agent-lock-race-"));
let server: TestServer;

beforeAll(async () => {
  server = await startServer({ replies: (_request, index) => ({ content: `reply ${index}` }) });
});

afterEach(() => {
  vi.restoreAllMocks();
});

afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

const other = { pid: 77, host: "web-other", token: "theirs", since: "2026-01-01T00:00:00.000Z" };
/** Another host's session takes the file's lock over (as seen over a shared volume). */
const takeOver = (lockPath: string) => writeFileSync(lockPath, JSON.stringify({ ...other, leaseMs: 30_000 }));
const entries = (session: Session) =>
  session.getSnapshot().timeline.map((e) => `${e.type}${"text" in e ? `: ${e.text}` : ""}`);

async function refusal(run: Promise<unknown>): Promise<AgentError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(AgentError.isInstance(error), String(error)).toBe(true);
  return error as AgentError;
}

async function open(
  id: string,
  leaseMs: number,
): Promise<{ session: Session; file: string; lockPath: string }> {
  const session = await createSession({
    config: { baseUrl: server.baseUrl, model: "sim" },
    sessionDir: root,
    sessionId: id,
    lockLeaseMs: leaseMs,
  });
  expect((await session.prompt("first")).status).toBe("ok");
  const file = join(root, `${id}.jsonl`);
  return { session, file, lockPath: `${file}.lock` };
}

describe("Session.prompt when the lease lapses between its lock check and its agent's (r40 #2)", () => {
  it("refused by the agent's check: names Session.prompt, and adds nothing to the timeline, the transcript, the metrics or the file; sends nothing", async () => {
    const { session, file, lockPath } = await open("agent-check", 5000);
    const stored = readFileSync(file, "utf8");
    const messages = [...session.messages];
    const timeline = session.getSnapshot().timeline;
    const events: SessionEvent[] = [];
    session.onEvent((event) => events.push(event));
    const requests = server.chatRequests.length;
    takeOver(lockPath);
    // The clock jumps past the lease right after the session's own check has read it (within the
    // lease: no look at the file), as a process stopped between the two checks would see it: only the
    // agent's check looks at the lock file, and finds it another's.
    const now = Date.now.bind(Date);
    let reads = 0;
    vi.spyOn(Date, "now").mockImplementation(() => now() + (reads++ === 0 ? 0 : 10_000));
    const refused = await refusal(session.prompt("second"));
    vi.restoreAllMocks();
    expect(reads).toBeGreaterThan(1);
    expect(refused.code).toBe("locked");
    expect(refused.message).toMatch(
      /^Session\.prompt: nothing was sent or written\. The session file's lock .* is no longer this session's: it now names process 77 on host web-other/,
    );
    // Only the loss's notice: no user entry, no run metrics.
    expect(session.getSnapshot().timeline.slice(0, timeline.length)).toEqual(timeline);
    expect(entries(session).slice(timeline.length)).toEqual([
      expect.stringMatching(/^notice: The session file's lock .* is no longer this session's/),
    ]);
    expect(events.map((e) => e.type)).toEqual(["notice"]);
    expect(session.messages).toEqual(messages);
    expect(session.running).toBe(false);
    expect(server.chatRequests.length).toBe(requests);
    expect(readFileSync(file, "utf8")).toBe(stored);
    // Refused the same way from then on, by the session's own check.
    expect((await refusal(session.prompt("third"))).message).toMatch(
      /^Session\.prompt: nothing was sent or written\./,
    );
    expect(session.messages).toEqual(messages);
    await session.close();
    expect(JSON.parse(readFileSync(lockPath, "utf8")).token).toBe("theirs");
    rmSync(lockPath);
  });

  it("lost while a listener of the prompt's user entry blocks past the lease: the run goes on, writing nothing, with the notice (the old code refused it as Agent.prompt and kept the entry)", async () => {
    const { session, file, lockPath } = await open("slow-listener", 300);
    const stored = readFileSync(file, "utf8");
    // A renewal has just run.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const requests = server.chatRequests.length;
    let slow = true;
    session.onEvent((event) => {
      if (slow && event.type === "user") {
        slow = false;
        takeOver(lockPath);
        const began = Date.now();
        while (Date.now() - began < 400) {}
      }
    });
    const result = await session.prompt("second");
    expect(result.status).toBe("ok");
    expect(entries(session)).toEqual([
      "user: first",
      expect.stringMatching(/^assistant: reply \d+$/),
      "user: second",
      expect.stringMatching(
        /^notice: The session file's lock .* is no longer this session's: .*Nothing more is written/,
      ),
      expect.stringMatching(/^assistant: reply \d+$/),
    ]);
    // Every user entry is a message of the transcript, answered.
    expect(session.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(server.chatRequests.length).toBe(requests + 1);
    // The file is the other opener's: nothing of the run is written to it.
    expect(readFileSync(file, "utf8")).toBe(stored);
    expect((await refusal(session.prompt("third"))).message).toMatch(
      /^Session\.prompt: nothing was sent or written\./,
    );
    await session.close();
    expect(JSON.parse(readFileSync(lockPath, "utf8")).token).toBe("theirs");
    rmSync(lockPath);
  });

  it("closed by a listener of the prompt's user entry: refused (closed) as Session.prompt, and nothing is sent", async () => {
    const { session } = await open("closed-listener", 5000);
    const requests = server.chatRequests.length;
    let closing: Promise<void> | undefined;
    session.onEvent((event) => {
      if (event.type === "user" && !closing) closing = session.close();
    });
    const refused = await refusal(session.prompt("second"));
    expect(refused.code).toBe("closed");
    expect(refused.message).toMatch(/^Session\.prompt: the session is closed/);
    expect(session.running).toBe(false);
    expect(server.chatRequests.length).toBe(requests);
    await closing;
  });

  it("while a run the host started on session.agent is going: refused (SessionBusyError) before anything is shown, not by the agent after the user entry", async () => {
    const slow = await startServer({
      replies: async () => {
        await new Promise((resolve) => setTimeout(resolve, 200));
        return { content: "host's reply" };
      },
    });
    try {
      const session = await createSession({ config: { baseUrl: slow.baseUrl, model: "sim" } });
      const events: SessionEvent[] = [];
      session.onEvent((event) => {
        if (event.type !== "run_metrics") events.push(event);
      });
      const hostRun = session.agent.prompt("the host's own run");
      const timeline = session.getSnapshot().timeline;
      const refused = await refusal(session.prompt("second"));
      expect(SessionBusyError.isInstance(refused)).toBe(true);
      expect(refused.message).toMatch(/^Session\.prompt\(\) was called while a run is in progress/);
      expect(session.getSnapshot().timeline).toEqual(timeline);
      expect(events.some((e) => e.type === "user" && e.text === "second")).toBe(false);
      await hostRun;
      expect(session.messages.map((m) => m.content)).toEqual(["the host's own run", "host's reply"]);
      expect(slow.chatRequests.length).toBe(1);
      await session.close();
    } finally {
      await slow.close();
    }
  });
});
