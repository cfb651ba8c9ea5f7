/**
 * `tasks.toolSelect` with an endpoint the side task cannot read (a URL string, the `openai` SDK's
 * `baseURL`): the run is refused before anything is sent, naming the option — never the
 * preselection sent to the agent's endpoint under the agent's key.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { AgentLoopError, LoopOptionError } from "./errors.js";
import { createRuntime } from "./runtime.js";

let servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.map((s) => s.close()));
  servers = [];
});

const tools = [
  {
    type: "function" as const,
    function: {
      name: "read_file",
      description: "Read a file",
      parameters: { type: "object", properties: {} },
    },
  },
];
const catalog = [{ name: "fs", tools: [{ name: "read_file", description: "Read a file" }] }];

async function runWith(endpoint: unknown, main: TestServer) {
  return createRuntime().runAgentLoop({
    config: {
      baseUrl: main.baseUrl,
      apiKey: "sk-MAIN",
      model: "big",
      toolDiscovery: "ondemand",
      preselect: true,
      tasks: { toolSelect: { model: "small", endpoint } },
    } as never,
    messages: [{ role: "user", content: "read notes.txt" }],
    tools,
    catalog,
    dispatch: async () => "x",
  });
}

describe("tasks.toolSelect with an endpoint it cannot read", () => {
  it("refuses the run before anything is sent, naming the option", async () => {
    const main = await startServer({ replies: () => ({ content: '{"tools":["read_file"]}' }) });
    const small = await startServer({ replies: () => ({ content: '{"tools":["read_file"]}' }) });
    servers.push(main, small);
    for (const endpoint of [small.baseUrl, { baseURL: small.baseUrl, apiKey: "sk-small" }]) {
      const error = await runWith(endpoint, main).catch((e: unknown) => e);
      expect(AgentLoopError.isInstance(error)).toBe(true);
      const cause = (error as AgentLoopError).cause as LoopOptionError;
      expect(LoopOptionError.isInstance(cause)).toBe(true);
      expect(cause.option).toBe("config.tasks.toolSelect");
      expect(cause.message).toMatch(/^config\.preselect: taskCall: the task's endpoint must be \{ baseUrl/);
    }
    expect(main.chatRequests).toHaveLength(0);
    expect(small.chatRequests).toHaveLength(0);
  });

  it("sends the preselection to the task's own endpoint when it is { baseUrl }", async () => {
    const main = await startServer({ replies: () => ({ content: "done" }) });
    const small = await startServer({ replies: () => ({ content: '{"tools":["read_file"]}' }) });
    servers.push(main, small);
    await runWith({ baseUrl: small.baseUrl, apiKey: "sk-small" }, main);
    expect(small.chatRequests).toHaveLength(1);
    expect(small.chatRequests[0]?.headers.authorization).toBe("Bearer sk-small");
    expect(main.chatRequests.map((r) => (r.body as { model: string }).model)).toEqual(["big"]);
  });
});
