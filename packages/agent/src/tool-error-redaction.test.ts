// The Agent runs its tools through the loop, which answers a failed call with the error's text:
// the endpoint's key and header values are redacted out of it — a tool that threw, a call its
// beforeToolCall blocked with a reason quoting the request, an afterToolCall that turned a result
// into an error — in what the model is sent, the agent's messages and its tool_execution_end
// events. A successful result is the tool's own output, as it returned it.
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Agent, type AgentTool, type ChatMessageLike } from "./test-exports.js";

const KEY = "sk-live-7Yh3Tn8Qw2Zr5Lp9";
const HEADER_SECRET = "proxy-token-3Kd8Wq2Xs6";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function tool(name: string, execute: AgentTool["execute"]): AgentTool {
  return { name, description: `The ${name} tool`, parameters: { type: "object", properties: {} }, execute };
}

describe("an Agent's tool errors reach the model without the endpoint's credentials", () => {
  it("a thrown error, a blocked call's reason and an afterToolCall error are redacted; a success is not", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "c1", name: "fetch", arguments: "{}" },
            { id: "c2", name: "deploy", arguments: "{}" },
            { id: "c3", name: "lookup", arguments: "{}" },
            { id: "c4", name: "env", arguments: "{}" },
          ],
        },
        { content: "Done." },
      ],
    });
    const ended: unknown[] = [];
    const agent = new Agent({
      config: {
        baseUrl: server.baseUrl,
        model: "sim",
        apiKey: KEY,
        headers: { "x-proxy-token": HEADER_SECRET },
        maxRetries: 0,
      },
      tools: [
        tool("fetch", () => {
          throw new Error(`GET /v1/items failed, sent Authorization: Bearer ${KEY}`);
        }),
        tool("deploy", () => "deployed"),
        tool("lookup", () => "found"),
        tool("env", () => `OPENAI_API_KEY=${KEY}`),
      ],
      beforeToolCall: ({ toolCall }) =>
        toolCall.name === "deploy"
          ? { block: true, reason: `not with x-proxy-token ${HEADER_SECRET}` }
          : undefined,
      afterToolCall: ({ toolCall }) =>
        toolCall.name === "lookup" ? { result: `lookup used key ${KEY}`, isError: true } : undefined,
    });
    agent.subscribe((event) => {
      if (event.type === "tool_execution_end") ended.push(event);
    });
    await agent.prompt("Go");
    const sent = (server.chatRequests[1]!.body as { messages: ChatMessageLike[] }).messages;
    const answers = (messages: readonly unknown[]) =>
      (messages as ChatMessageLike[]).filter((m) => m.role === "tool").map((m) => m.content);
    expect(answers(sent)).toEqual([
      "Error: GET /v1/items failed, sent Authorization: Bearer [redacted]",
      "Error: not with x-proxy-token [redacted]",
      "Error: lookup used key [redacted]",
      `OPENAI_API_KEY=${KEY}`,
    ]);
    expect(answers(agent.messages)).toEqual(answers(sent));
    const told = JSON.stringify(ended.slice(0, 3));
    expect(told).not.toContain(KEY);
    expect(told).not.toContain(HEADER_SECRET);
    expect(JSON.stringify(ended[3])).toContain(KEY);
  });
});
