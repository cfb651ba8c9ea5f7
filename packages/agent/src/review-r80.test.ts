import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { Agent, type AgentTool, type ChatMessageLike } from "./test-exports.js";

// Review round r80: the agent's listeners, its tool errors, what reaches the wire, compaction.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function tool(name: string, execute: AgentTool["execute"] = () => "ok"): AgentTool {
  return { name, description: `The ${name} tool`, parameters: { type: "object", properties: {} }, execute };
}

/** The tool message answering call `id`, as text. */
function answerTo(messages: readonly unknown[], id: string): string {
  const found = (messages as ChatMessageLike[]).find(
    (m) => m.role === "tool" && (m as { tool_call_id?: string }).tool_call_id === id,
  );
  return String((found as { content?: unknown } | undefined)?.content);
}

describe("a call to a tool the agent does not have", () => {
  it("names forty of 2,001 tools, the one it meant first, and counts the rest (was every one: 85 kB)", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "github_create_issue", arguments: "{}" }] },
        { content: "done" },
      ],
    });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 } });
    for (let i = 0; i < 2000; i++) agent.tools.register(tool(`tool_number_${i}_with_a_longish_name`));
    agent.tools.register(tool("github__create_issue"));
    expect((await agent.prompt("go")).status).toBe("ok");
    const answer = answerTo(agent.messages, "c1");
    expect(answer).toMatch(
      /^Error: Unknown tool "github_create_issue"\. Available tools: github__create_issue, tool_number_0_with_a_longish_name, /,
    );
    expect(answer).toMatch(/tool_number_38_with_a_longish_name and 1961 more\.$/);
    expect(answer.length).toBeLessThan(2000);
  });

  it("quotes a made-up name of 50,000 characters by its first 200", async () => {
    const name = "x".repeat(50_000);
    server = await startServer({
      replies: [{ toolCalls: [{ id: "c1", name, arguments: "{}" }] }, { content: "done" }],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      tools: [tool("read"), tool("write")],
    });
    expect((await agent.prompt("go")).status).toBe("ok");
    expect(answerTo(agent.messages, "c1")).toBe(
      `Error: Unknown tool "${"x".repeat(200)}…". Available tools: read, write.`,
    );
  });

  it("with no tools at all, says none", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "c1", name: "ghost", arguments: "{}" }] }, { content: "done" }],
    });
    const agent = new Agent({ config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 } });
    expect((await agent.prompt("go")).status).toBe("ok");
    expect(answerTo(agent.messages, "c1")).toBe('Error: Unknown tool "ghost". Available tools: none.');
  });
});
