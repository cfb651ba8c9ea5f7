// A closed session (r10 #11): after close() or dispose(), prompt and its agent's prompt and
// continue reject (never throw) with AgentError `closed`; nothing is sent and the file is not written.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentError, createSession, type Session } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

let server: TestServer;
const tempDir = useTempDirs("agent-session-closed");
let dir: string;
beforeEach(async () => {
  server = await startServer({ replies: () => ({ content: "done" }) });
  dir = tempDir();
});
afterEach(async () => {
  await server.close();
});

/**
 * What `run` rejects with: it must return a rejected promise, never throw (a host's
 * `void session.agent.prompt(text).catch(show)` would miss a throw).
 */
async function thrown(run: () => Promise<unknown>): Promise<unknown> {
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

function expectClosed(error: unknown, method: RegExp): void {
  expect(AgentError.isInstance(error), String(error)).toBe(true);
  expect((error as AgentError).code).toBe("closed");
  expect((error as AgentError).message).toMatch(method);
  expect((error as AgentError).message).toMatch(/closed/);
}

describe.each([
  ["close()", (session: Session) => session.close()],
  ["dispose()", (session: Session) => session.dispose()],
])("a session after %s", (_, end) => {
  it("refuses prompt, agent.prompt and agent.continue: nothing sent, the file unchanged", async () => {
    const session = await createSession({
      config: { baseUrl: server.baseUrl, model: "m" },
      sessionDir: dir,
      sessionId: "s",
    });
    expect((await session.prompt("hello")).status).toBe("ok");
    const file = join(dir, "s.jsonl");
    const stored = readFileSync(file, "utf8");
    const timeline = session.getSnapshot();
    const requests = server.chatRequests.length;
    await end(session);
    expectClosed(await thrown(() => session.prompt("add 1 and 2")), /^Session\.prompt/);
    expectClosed(await thrown(() => session.agent.prompt("add 1 and 2")), /^Agent\.prompt/);
    // A transcript ending in a user message would be run by continue().
    session.agent.messages = [...session.agent.messages, { role: "user", content: "go on" }];
    expectClosed(await thrown(() => session.agent.continue()), /^Agent\.continue/);
    expect(server.chatRequests).toHaveLength(requests);
    expect(readFileSync(file, "utf8")).toBe(stored);
    expect(session.getSnapshot()).toBe(timeline);
    expect(session.running).toBe(false);
  });
});
