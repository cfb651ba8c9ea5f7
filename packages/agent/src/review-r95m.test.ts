// r95m: a session's prompt whose stream broke on a turn after a finished tool step kept the prompt
// and the step's results (nothing to send again), yet its result and timeline said only "The reply
// so far was not kept." — nothing told the user that `session.agent.continue()` goes on from there.
// A notice now says so, worded as a reopened session ending in tool results is told; a prompt that
// broke on its first turn keeps its own notice ("… send it again") and gets no such one.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSession, defineTool } from "./test-exports.js";

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
const lookCall = { toolCalls: [{ id: "t1", name: "look", arguments: "{}" }] };
const look = defineTool({
  name: "look",
  description: "Looks.",
  parameters: { type: "object", properties: {} },
  execute: () => "seen",
});

const BROKEN_ERROR =
  "The connection failed before the stream ended (terminated). The reply so far was not kept. (UND_ERR_SOCKET)";
const GO_ON =
  "The conversation ends in tool results the model has not answered yet (the run failed before the model answered them): the next prompt is sent after them, and session.agent.continue() has the model go on from them.";
const SEND_AGAIN =
  "The prompt was not kept in the conversation (the run failed before the model answered): send it again.";

const open = () => createSession({ config: { baseUrl: server.baseUrl, model: "tiny" }, tools: [look] });

describe("a session's stream that broke after a finished tool step", () => {
  it("tells the user the prompt and results stay and continue() goes on, which it does", async () => {
    answers = [lookCall, broken];
    const session = await open();
    const result = await session.prompt("what is there?");
    expect(result).toEqual({ status: "error", reply: "", error: BROKEN_ERROR });
    const timeline = session.getSnapshot().timeline;
    expect(timeline.map((e) => e.type)).toEqual(["user", "tool", "error", "notice"]);
    expect(timeline.at(-1)).toEqual({ type: "notice", text: GO_ON });
    expect(timeline.some((e) => e.type === "notice" && e.text.includes("send it again"))).toBe(false);
    // What the notice says holds: the prompt and the step are kept, and continue() answers them.
    expect(session.agent.messages.map((m) => (m as { role: string }).role)).toEqual(["user", "assistant", "tool"]);
    const again = await session.agent.continue();
    expect(again.status).toBe("ok");
    expect(session.agent.messages.at(-1)).toEqual({ role: "assistant", content: "Fine." });
    await session.close();
  });

  it("says nothing of continue() when the stream broke on the prompt's first turn", async () => {
    answers = [broken];
    const session = await open();
    const result = await session.prompt("hi");
    expect(result.error).toBe(BROKEN_ERROR);
    const notices = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    expect(notices).toEqual([SEND_AGAIN]);
    await session.close();
  });

  it("says nothing of continue() for a later prompt that broke on its first turn after such a failure", async () => {
    answers = [lookCall, broken, broken];
    const session = await open();
    await session.prompt("what is there?");
    // The transcript still ends in the first prompt's tool results, but this prompt was taken out.
    const second = await session.prompt("and now?");
    expect(second.error).toBe(BROKEN_ERROR);
    const notices = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    expect(notices).toEqual([GO_ON, SEND_AGAIN]);
    await session.close();
  });

  it("says nothing of continue() when the run after the tool step answered", async () => {
    answers = [lookCall, { content: "A tree." }];
    const session = await open();
    const result = await session.prompt("what is there?");
    expect(result).toEqual({ status: "ok", reply: "A tree." });
    expect(session.getSnapshot().timeline.some((e) => e.type === "notice")).toBe(false);
    await session.close();
  });
});
