import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  type AgentEvent,
  type ChatMessageLike,
  createSession,
  type SessionEvent,
} from "./test-exports.js";

// Review round r81: what a run's side tasks cost, told where the agent tells usage; long sessions.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A talk long enough that a 1600-token window folds it before the next request. */
function longHistory(): ChatMessageLike[] {
  const history: ChatMessageLike[] = [];
  for (const chapter of ["one", "two", "three", "four"]) {
    history.push(
      { role: "user", content: `Summarise chapter ${chapter}.` },
      { role: "assistant", content: `Chapter ${chapter}: ${"lorem ".repeat(250).trim()}` },
    );
  }
  return history;
}

/** The summary is a side task's request: not streamed, where every turn is. */
const isSummary = (request: { body: unknown }) => (request.body as { stream?: boolean }).stream !== true;

const SUMMARY = { prompt: 900, completion: 40, total: 940, cached: 300 };
const ZERO = { prompt: 0, completion: 0, total: 0, cached: 0 };
const SIDE = { ...SUMMARY, summary: SUMMARY, preselect: ZERO };

/** A server that writes the summary at 900 + 40 tokens (300 cached) and answers a turn with `turn`. */
async function summarising(turn: object): Promise<TestServer> {
  return startServer({
    replies: (request) =>
      isSummary(request)
        ? {
            content: "Notes: chapters one to four.",
            usage: { prompt_tokens: 900, completion_tokens: 40, cached_tokens: 300 },
          }
        : turn,
  });
}

const CONFIG = { model: "m", maxRetries: 0, contextLength: 1600 };

describe("a run's side costs (a compaction summary) as the agent tells them", () => {
  it("are on the turn's usage event, on agent_end and on the prompt's result, apart from the turn's usage", async () => {
    server = await summarising({
      content: "Chapter five is next.",
      usage: { prompt_tokens: 200, completion_tokens: 5 },
    });
    const agent = new Agent({ config: { ...CONFIG, baseUrl: server.baseUrl }, autoCompact: true });
    agent.messages = longHistory();
    const events: AgentEvent[] = [];
    agent.subscribe((event) => {
      events.push(event);
    });
    const result = await agent.prompt("And chapter five?");
    expect(result.status).toBe("ok");
    expect(server.chatRequests.filter(isSummary)).toHaveLength(1);
    const usage = events.filter((e) => e.type === "usage");
    expect(usage).toHaveLength(1);
    expect(usage[0]).toMatchObject({ usage: { prompt: 200, completion: 5 }, sideUsage: SIDE });
    expect(events.find((e) => e.type === "agent_end")).toMatchObject({ status: "ok", sideUsage: SIDE });
    expect(result.sideUsage).toEqual(SIDE);
  });

  it("of a fold for a request that then failed are on agent_end and the result (no usage event came after it)", async () => {
    server = await summarising({
      type: "error",
      status: 400,
      body: { error: { message: "model m is not served here" } },
    });
    const agent = new Agent({ config: { ...CONFIG, baseUrl: server.baseUrl }, autoCompact: true });
    agent.messages = longHistory();
    const events: AgentEvent[] = [];
    agent.subscribe((event) => {
      events.push(event);
    });
    const result = await agent.prompt("And chapter five?");
    expect(result.status).toBe("error");
    expect(events.filter((e) => e.type === "usage")).toEqual([]);
    expect(events.find((e) => e.type === "agent_end")).toMatchObject({ status: "error", sideUsage: SIDE });
    expect(result.sideUsage).toEqual(SIDE);
  });

  it("a run with no side task says none", async () => {
    server = await startServer({
      replies: [{ content: "hi", usage: { prompt_tokens: 10, completion_tokens: 1 } }],
    });
    const agent = new Agent({ config: { model: "m", baseUrl: server.baseUrl } });
    const events: AgentEvent[] = [];
    agent.subscribe((event) => {
      events.push(event);
    });
    const result = await agent.prompt("hello");
    expect(result.status).toBe("ok");
    for (const event of events) expect(Object.hasOwn(event, "sideUsage")).toBe(false);
    expect(Object.hasOwn(result, "sideUsage")).toBe(false);
  });

  it("are counted in a session's run_metrics (side tokens apart from the turns'), also for a failed request", async () => {
    for (const [turn, status] of [
      [{ content: "Chapter five is next.", usage: { prompt_tokens: 200, completion_tokens: 5 } }, "ok"],
      [{ type: "error", status: 400, body: { error: { message: "model m is not served here" } } }, "error"],
    ] as const) {
      server = await summarising(turn);
      const session = await createSession({
        config: { ...CONFIG, baseUrl: server.baseUrl },
        autoCompact: true,
      });
      session.agent.messages = longHistory();
      const events: SessionEvent[] = [];
      session.onEvent((event) => events.push(event));
      expect((await session.prompt("And chapter five?")).status).toBe(status);
      const metrics = events.filter((e) => e.type === "run_metrics").at(-1);
      expect(metrics).toMatchObject({
        running: false,
        sideCacheInputTokens: 300,
        sideMissInputTokens: 600,
        sideOutputTokens: 40,
        ...(status === "ok"
          ? { cacheInputTokens: 0, missInputTokens: 200, outputTokens: 5 }
          : { cacheInputTokens: 0, missInputTokens: 0, outputTokens: 0 }),
      });
      await session.close();
      await server.close();
      server = undefined;
    }
  });
});
