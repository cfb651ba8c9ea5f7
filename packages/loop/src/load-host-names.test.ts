/**
 * A load naming a renamed tool by the host's name (`fs.read`, which goes on the wire as `fs_read`)
 * loads it, as call_tool and a direct call take that name, over HTTP against the testkit.
 */
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { createRuntime } from "./runtime.js";

const tool = (name: string): ToolDefinition => ({
  type: "function",
  function: { name, description: `The ${name} tool`, parameters: { type: "object", properties: {} } },
});
const TOOLS = [tool("fs.read"), tool("fs.write"), tool("list_pods")];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Body = { tools?: Array<{ function: { name: string } }>; messages: ChatMessage[] };

async function load(mode: "ondemand" | "proxy", args: string) {
  const replies: Reply[] = [
    { toolCalls: [{ id: "l1", name: "load_tools", arguments: args }] },
    { content: "done" },
  ];
  server = await startServer({ replies });
  const result = await createRuntime().runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: mode },
    messages: [{ role: "user", content: "Read notes.txt" }],
    tools: TOOLS,
    dispatch: () => "ran",
  });
  const second = server.chatRequests[1]?.body as Body;
  const answer = String(second.messages.find((m) => m.role === "tool" && m.tool_call_id === "l1")?.content);
  return { result, second, answer };
}

describe("load_tools with a renamed tool's host name", () => {
  it("on demand loads it: the next request declares it under the wire's name, and loaded says the host's", async () => {
    const { result, second, answer } = await load("ondemand", JSON.stringify({ names: ["fs.read"] }));
    expect((second.tools ?? []).map((t) => t.function.name)).toContain("fs_read");
    expect(answer).not.toContain("Not in the catalogue");
    expect(result.loaded).toEqual(["fs.read"]);
    expect(result.metrics.toolsLoaded).toBe(1);
    expect(result.metrics.unknownToolNames).toEqual([]);
  });

  it("proxied, answers each definition, read from names written as one string, beside a wire name", async () => {
    const { result, answer } = await load("proxy", JSON.stringify({ names: "fs.read, fs_write" }));
    const lines = answer.split("\n").filter((line) => line.startsWith("{"));
    expect(lines.map((line) => (JSON.parse(line) as { name: string }).name)).toEqual(["fs_read", "fs_write"]);
    expect(result.metrics.toolsLoaded).toBe(2);
    expect(result.metrics.unknownToolNames).toEqual([]);
  });

  it("still refuses, in words, a name that is neither a host's nor the wire's", async () => {
    const { result, answer } = await load("ondemand", JSON.stringify({ names: ["fs.delete"] }));
    expect(answer).toContain("Not in the catalogue: fs.delete");
    expect(result.metrics.unknownToolNames).toEqual(["fs.delete"]);
  });
});
