// Cases the combinations property (combinations.test.ts) found, each pinned as a plain test over
// HTTP against the testkit's scripted model.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Agent, AgentError, type AgentTool, createSession, type Session } from "./test-exports.js";
import { useTempDirs } from "./test-support/temp-dirs.js";

const tempDir = useTempDirs("agent-r88");
let server: TestServer | undefined;
const open: Session[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  await server?.close();
  server = undefined;
});

async function session(dir: string, tools: AgentTool[] = []): Promise<{ s: Session; notices: string[] }> {
  const s = await createSession({
    config: { baseUrl: (server as TestServer).baseUrl, model: "sim", maxRetries: 0 },
    tools,
    sessionDir: dir,
    sessionId: "r88",
  });
  open.push(s);
  const notices: string[] = [];
  s.onEvent((e) => {
    if (e.type === "notice") notices.push(e.text);
  });
  return { s, notices };
}

describe("a closed session and the messages the host queued on its agent", () => {
  it("says, to the host's listeners, that a message queued between prompts was never sent when the session is closed", async () => {
    server = await startServer({ replies: [{ content: "Hello." }] });
    const dir = tempDir();
    const { s, notices } = await session(dir);
    expect((await s.prompt("Hi")).status).toBe("ok");
    // A UI queues the user's next words for the next prompt, then the page reloads.
    s.agent.followUp("And the weather?");
    await s.close();
    // Before: nothing was said; the message was simply gone.
    expect(notices.filter((n) => n.includes("And the weather?"))).toEqual([
      'The message "And the weather?" queued with steer() or followUp() was never sent (the session was closed first), so not kept for the next prompt; send it again.',
    ]);
    const { s: again } = await session(dir);
    expect(again.messages.map((m) => (m as { content?: unknown }).content)).toEqual(["Hi", "Hello."]);
  });

  it("says so for a message queued while a tool ran, when the session is closed during that tool (a UI reload mid-run)", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "c1", name: "echo", arguments: "{}" }] }, { content: "Done." }],
    });
    let closing: Promise<void> | undefined;
    let current: Session | undefined;
    const echo: AgentTool = {
      name: "echo",
      description: "Echoes",
      parameters: { type: "object", properties: {} },
      execute: async () => {
        current?.agent.steer("Use the other file.");
        closing = current?.close();
        return "echoed";
      },
    };
    const { s, notices } = await session(tempDir(), [echo]);
    current = s;
    expect((await s.prompt("Read it")).status).toBe("aborted");
    await closing;
    // Before: the run's end dropped it with a notice only after close() had dropped every listener.
    expect(notices.some((n) => n.includes('"Use the other file."') && n.includes("never sent"))).toBe(true);
  });

  it("refuses steer() and followUp() on a closed session's agent with AgentError closed, nothing queued", async () => {
    server = await startServer({ replies: [{ content: "Hello." }] });
    const { s } = await session(tempDir());
    await s.close();
    for (const method of ["steer", "followUp"] as const) {
      let thrown: unknown;
      try {
        s.agent[method]("Still there?");
      } catch (error) {
        thrown = error;
      }
      // Before: taken without a word and queued for a prompt a closed session never runs.
      expect(AgentError.isInstance(thrown) && thrown.code).toBe("closed");
      expect((thrown as Error).message).toContain(`Agent.${method}: the session is closed`);
    }
    expect(s.agent.hasQueuedMessages()).toBe(false);
  });
});

describe("a run the host starts on a session's agent has a turn budget of its own", () => {
  it("continue() after a prompt that ended maxTurns runs the model's next call, not an error at 0 tool steps", async () => {
    const call = (id: string) => ({ toolCalls: [{ id, name: "echo", arguments: "{}" }] });
    server = await startServer({ replies: [call("a"), call("b"), call("c"), { content: "Done." }] });
    const ran: string[] = [];
    const echo: AgentTool = {
      name: "echo",
      description: "Echoes",
      parameters: { type: "object", properties: {} },
      execute: (_args, { toolCallId }) => {
        ran.push(String(toolCallId));
        return "echoed";
      },
    };
    const s = await createSession({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      tools: [echo],
      maxTurns: 1,
    });
    open.push(s);
    // One tool step, then the reserved final turn, where the model still calls: maxTurns.
    expect((await s.prompt("Go")).status).toBe("maxTurns");
    // The user presses "continue". Before: the prompt's turn was counted against this run too, so
    // its first request was already the reserved final turn and the model's call ended it `error`
    // ("… after 0 tool steps (maxToolIterations)").
    const result = await s.agent.continue();
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("ok");
    expect(ran).toEqual(["a", "c"]);
    const choices = server.chatRequests.map((r) => (r.body as { tool_choice?: unknown }).tool_choice);
    expect(choices).toEqual([undefined, "none", undefined, "none"]);
  });
});

describe("a prompt stopped by close() before the model answered", () => {
  it("is told on the next open (the file ends in it, as after a crash), not taken out where no listener hears it", async () => {
    // The model is still thinking (no answer text yet) when the page reloads.
    server = await startServer({
      replies: [
        {
          reasoning: "Let me think about the numbers for a while.",
          content: "4.",
          chunkChars: 2,
          chunkDelayMs: 5,
        },
      ],
    });
    const dir = tempDir();
    const { s } = await session(dir);
    s.agent.steer("Show your working.");
    let closing: Promise<void> | undefined;
    s.agent.subscribe((event) => {
      if (event.type === "message_update" && event.delta.type === "thinking") closing ??= s.close();
    });
    expect((await s.prompt("What is 2 + 2?")).status).toBe("aborted");
    await closing;
    const { s: again } = await session(dir);
    // Before: the prompt and the steered message were taken out of the file with a notice given
    // after close() had dropped every listener, so the reopened session showed them simply gone.
    expect(again.messages).toEqual([]);
    const notices = again
      .getSnapshot()
      .timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []))
      .filter((n) => n.includes("never answered"));
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain('"What is 2 + 2?"');
    expect(notices[0]).toContain('"Show your working."');
    expect(notices[0]).toContain("send it again");
  });
});

describe("continue() on a transcript that ends in a system message", () => {
  // The combinations property (seed -1475522086): a compaction folded the run into its notes, the
  // host rewound past the question, and continue() sent a request ending in the system message,
  // which Mistral refuses ("Expected last role User or Tool").
  it("asks nothing: rejects cannot-continue with nothing sent, or runs what is queued", async () => {
    server = await startServer({ replies: [{ content: "Queued one answered." }] });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim" } });
    agent.messages = [{ role: "system", content: "Notes so far: the user set up CI." }];
    const error = await agent.continue().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AgentError);
    expect(error).toMatchObject({ code: "cannot-continue" });
    expect((error as Error).message).toContain("ends in a system message");
    expect(server.chatRequests).toHaveLength(0);
    agent.followUp("What next?");
    await agent.continue();
    const body = server.chatRequests[0]?.body as { messages?: { role: string }[] } | undefined;
    expect(body?.messages?.map((m) => m.role)).toEqual(["system", "user"]);
  });
});
