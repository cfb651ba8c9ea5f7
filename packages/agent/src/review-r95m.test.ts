// r95m: a session's prompt whose stream broke on a turn after a finished tool step kept the prompt
// and the step's results (nothing to send again), yet its result and timeline said only "The reply
// so far was not kept." — nothing told the user that `session.agent.continue()` goes on from there.
// A notice now says so, worded as a reopened session ending in tool results is told; a prompt that
// broke on its first turn keeps its own notice ("… send it again") and gets no such one.
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createSession, defineTool, type Session } from "./test-exports.js";

const servers: TestServer[] = [];
const sessions: Session[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  for (const s of servers.splice(0)) await s.close();
});

const look = defineTool({
  name: "look",
  description: "Looks.",
  parameters: { type: "object", properties: {} },
  execute: () => "seen",
});

/** A session with the `look` tool whose endpoint gives these replies in turn, then "Fine.". */
async function open(...replies: Reply[]): Promise<Session> {
  const server = await startServer({
    personality: "llamacpp",
    replies: () => replies.shift() ?? { content: "Fine." },
  });
  servers.push(server);
  const session = await createSession({ config: { baseUrl: server.baseUrl, model: "tiny" }, tools: [look] });
  sessions.push(session);
  return session;
}

/** A turn that asks for the tool. */
const lookCall: Reply = { toolCalls: [{ id: "t1", name: "look", arguments: "{}" }] };
/** A reply whose stream the endpoint drops after three chunks. */
const broken: Reply = { content: "Working on it", chunkChars: 4, dropAfterChunk: 3 };

const BROKEN_ERROR =
  "The connection failed before the stream ended (terminated). The reply so far was not kept. (UND_ERR_SOCKET)";
const GO_ON =
  "The conversation ends in tool results the model has not answered yet (the run failed before the model answered them): the next prompt is sent after them, and session.agent.continue() has the model go on from them.";
const SEND_AGAIN =
  "The prompt was not kept in the conversation (the run failed before the model answered): send it again.";

describe("a session's stream that broke after a finished tool step", () => {
  it("tells the user the prompt and results stay and continue() goes on, which it does", async () => {
    const session = await open(lookCall, broken);
    const result = await session.prompt("what is there?");
    expect(result).toEqual({ status: "error", reply: "", error: BROKEN_ERROR });
    const timeline = session.getSnapshot().timeline;
    expect(timeline.map((e) => e.type)).toEqual(["user", "tool", "error", "notice"]);
    expect(timeline.at(-1)).toEqual({ type: "notice", text: GO_ON });
    expect(timeline.some((e) => e.type === "notice" && e.text.includes("send it again"))).toBe(false);
    // What the notice says holds: the prompt and the step are kept, and continue() answers them.
    expect(session.agent.messages.map((m) => (m as { role: string }).role)).toEqual([
      "user",
      "assistant",
      "tool",
    ]);
    const again = await session.agent.continue();
    expect(again.status).toBe("ok");
    expect(session.agent.messages.at(-1)).toEqual({ role: "assistant", content: "Fine." });
  });

  it("says nothing of continue() when the stream broke on the prompt's first turn", async () => {
    const session = await open(broken);
    const result = await session.prompt("hi");
    expect(result.error).toBe(BROKEN_ERROR);
    const notices = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    expect(notices).toEqual([SEND_AGAIN]);
  });

  it("says nothing of continue() for a later prompt that broke on its first turn after such a failure", async () => {
    const session = await open(lookCall, broken, broken);
    await session.prompt("what is there?");
    // The transcript still ends in the first prompt's tool results, but this prompt was taken out.
    const second = await session.prompt("and now?");
    expect(second.error).toBe(BROKEN_ERROR);
    const notices = session.getSnapshot().timeline.flatMap((e) => (e.type === "notice" ? [e.text] : []));
    expect(notices).toEqual([GO_ON, SEND_AGAIN]);
  });

  it("says nothing of continue() when the run after the tool step answered", async () => {
    const session = await open(lookCall, { content: "A tree." });
    const result = await session.prompt("what is there?");
    expect(result).toEqual({ status: "ok", reply: "A tree." });
    expect(session.getSnapshot().timeline.some((e) => e.type === "notice")).toBe(false);
  });
});
