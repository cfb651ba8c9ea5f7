// r95r: since the loop words a broken stream's error for the host of `runAgentLoop` ("…on this
// error's `cause.partial` … run again from `failedRun(error).messages`"), an Agent's host and a
// session's user read those words too — in `result.error`, `agent_end`, the timeline — though the
// one holds a string (the loop's error is `result.cause`) and resumes with continue(), and the
// other holds no error at all and is told by the session's notice to send the prompt again.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent, createSession } from "./test-exports.js";

let server: TestServer;
let answers: object[] = [];

beforeAll(async () => {
  server = await startServer({
    replies: () => answers.shift() ?? { content: "Fine." },
    personality: "llamacpp",
  });
});

afterAll(async () => {
  await server?.close();
});

/** The reply the endpoint starts, then drops the connection under. */
const broken = { content: "Working on it", chunkChars: 4, dropAfterChunk: 3 };

describe("a broken stream's error as an Agent's host or a session's user reads it", () => {
  it("tells an Agent's host where the partial reply is on what it holds, and to continue()", async () => {
    answers = [broken];
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "tiny" } });
    const told: string[] = [];
    agent.subscribe((e) => {
      if (e.type === "agent_end" && e.error !== undefined) told.push(e.error);
    });
    const result = await agent.prompt("hi");
    expect(result.status).toBe("error");
    expect(result.error).toContain("The connection failed before the stream ended");
    expect(result.error).toContain(
      "The reply so far is not in the transcript (it is on `result.cause.cause.partial`); continue() asks again.",
    );
    expect(result.error).not.toContain("failedRun");
    expect(told).toEqual([result.error]);
    // What it points at is there, and what it says to do does.
    const partial = (result.cause as { cause?: { partial?: { content?: string } } }).cause?.partial;
    expect(partial?.content).toBe("Working ");
    const again = await agent.continue();
    expect(again.status).toBe("ok");
    expect(agent.messages.at(-1)).toEqual({ role: "assistant", content: "Fine." });
  });

  it("tells a session's user the reply was not kept, with nothing to look up, in the result and the timeline", async () => {
    answers = [broken];
    const session = await createSession({ config: { baseUrl: server.baseUrl, model: "tiny" } });
    const result = await session.prompt("hi");
    expect(result.status).toBe("error");
    expect(result.error).toBe(
      "The connection failed before the stream ended (terminated). The reply so far was not kept. (UND_ERR_SOCKET)",
    );
    const timeline = session.getSnapshot().timeline;
    expect(timeline.filter((e) => e.type === "error")).toEqual([{ type: "error", text: result.error }]);
    // What to do is the session's own notice.
    expect(timeline.at(-1)).toEqual({
      type: "notice",
      text: "The prompt was not kept in the conversation (the run failed before the model answered): send it again.",
    });
    await session.close();
  });
});
