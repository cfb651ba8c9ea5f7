// Every turn ends in a `usage` event (loop r91c/r91h): the agent's says which did not finish, so a
// host adding up turns, or drawing each turn's counts, can tell a stopped or failed turn's zeros
// from a measured turn's. Over HTTP against the testkit.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Agent, type AgentEvent } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function usages(
  replies: Parameters<typeof startServer>[0],
  during?: (agent: Agent, events: AgentEvent[]) => void,
) {
  server = await startServer(replies);
  const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "m", maxRetries: 0 } });
  const events: AgentEvent[] = [];
  agent.subscribe((event) => {
    events.push(event);
    during?.(agent, events);
  });
  const result = await agent.prompt("go");
  return { status: result.status, usage: events.filter((e) => e.type === "usage") };
}

describe("the agent's usage event for a turn that did not finish", () => {
  it("is marked stopped when the run is stopped mid-reply", async () => {
    let stopped = false;
    const { status, usage } = await usages(
      { replies: [{ content: "slow ".repeat(200), chunkChars: 5, chunkDelayMs: 20 }] },
      (agent, events) => {
        if (!stopped && events.some((e) => e.type === "message_update")) {
          stopped = true;
          agent.abort();
        }
      },
    );
    expect(status).toBe("aborted");
    expect(usage).toEqual([
      { type: "usage", usage: { prompt: 0, completion: 0, total: 0, cached: 0 }, ended: "stopped" },
    ]);
  });

  it("is marked failed when the reply breaks off", async () => {
    const { status, usage } = await usages({
      replies: [{ content: "cut ".repeat(50), chunkChars: 8, dropAfterChunk: 2 }],
    });
    expect(status).toBe("error");
    expect(usage).toEqual([
      { type: "usage", usage: { prompt: 0, completion: 0, total: 0, cached: 0 }, ended: "failed" },
    ]);
  });

  it("is not marked for a turn that finished", async () => {
    const { status, usage } = await usages({ replies: [{ content: "done" }] });
    expect(status).toBe("ok");
    expect(usage).toHaveLength(1);
    expect(usage[0]).not.toHaveProperty("ended");
  });
});
