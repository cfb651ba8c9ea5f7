/**
 * A load naming a catalogued server whose name holds a blank (`git hub`), as one entry of `names`,
 * loads its tools, on demand and proxied, over HTTP against the testkit — beside a renamed tool's
 * host name too, where the loop rewrites the load's names to the wire's before tool-loading reads them.
 */
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { createRuntime } from "./runtime.js";

const tool = (name: string): ToolDefinition => ({
  type: "function",
  function: { name, description: `The ${name} tool`, parameters: { type: "object", properties: {} } },
});
const TOOLS = [tool("fs.read"), tool("list_pods"), tool("get_pod")];
const CATALOG = [
  { name: "fs", tools: [{ name: "fs.read" }] },
  { name: "git hub", tools: [{ name: "list_pods" }, { name: "get_pod" }] },
];

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Body = { tools?: Array<{ function: { name: string } }>; messages: ChatMessage[] };

async function load(mode: "ondemand" | "proxy", names: unknown) {
  const replies: Reply[] = [
    { toolCalls: [{ id: "l1", name: "load_tools", arguments: JSON.stringify({ names }) }] },
    { content: "done" },
  ];
  server = await startServer({ replies });
  const result = await createRuntime().runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: mode },
    messages: [{ role: "user", content: "List the pods" }],
    tools: TOOLS,
    catalog: CATALOG,
    dispatch: () => "ran",
  });
  const second = server.chatRequests[1]?.body as Body;
  const answer = String(second.messages.find((m) => m.role === "tool" && m.tool_call_id === "l1")?.content);
  return { result, second, answer };
}

describe("load_tools with a server named 'git hub' as one entry of names", () => {
  it.each([
    ["alone", ["git hub"]],
    ["beside a renamed tool's host name", ["fs.read", "git hub"]],
  ])("on demand, %s, loads its tools", async (_, names) => {
    const { result, second, answer } = await load("ondemand", names);
    expect((second.tools ?? []).map((t) => t.function.name)).toEqual(
      expect.arrayContaining(["get_pod", "list_pods"]),
    );
    expect(answer).not.toContain("Not in the catalogue");
    expect(result.metrics.unknownToolNames).toEqual([]);
  });

  it.each([
    ["alone", ["git hub"]],
    ["beside a renamed tool's host name", ["fs.read", "git hub"]],
  ])("proxied, %s, answers its definitions", async (_, names) => {
    const { result, answer } = await load("proxy", names);
    const lines = answer.split("\n").filter((line) => line.startsWith("{"));
    expect(lines.map((line) => (JSON.parse(line) as { name: string }).name)).toEqual(
      expect.arrayContaining(["get_pod", "list_pods"]),
    );
    expect(answer).not.toContain("Not in the catalogue");
    expect(result.metrics.unknownToolNames).toEqual([]);
  });

  it("names written as one string are still split: 'git hub' is two unknown names", async () => {
    const { result } = await load("ondemand", "git hub");
    expect(result.metrics.unknownToolNames).toEqual(["git", "hub"]);
  });
});
