/**
 * ondemand over HTTP: a catalogued tool the model calls unloaded, spelled the way load_tools and
 * call_tool take it (server-qualified, functions.<name>, another case), is loaded and run as that
 * tool, rather than dispatched under a name the host has no tool for.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import type { DispatchRequest } from "./run-calls.js";
import { createRuntime } from "./runtime.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const readFile: ToolDefinition = {
  type: "function",
  function: {
    name: "read_file",
    description: "Read a file from disk",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
};

describe("toolDiscovery: ondemand, a catalogued tool called unloaded", () => {
  it("runs under the catalogued name however the model spelled it", async () => {
    for (const written of ["files.read_file", "functions.read_file", "Read_File"]) {
      server = await startServer({
        replies: [
          { toolCalls: [{ id: "c1", name: written, arguments: '{"path":"notes.txt"}' }] },
          { content: "It says hello." },
        ],
      });
      const dispatched: DispatchRequest[] = [];
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: "ondemand" },
        messages: [{ role: "user", content: "What does notes.txt say?" }],
        tools: [readFile],
        catalog: [{ name: "files", tools: [{ name: "read_file" }] }],
        dispatch: (request) => {
          dispatched.push(request);
          return "hello";
        },
      });
      expect(dispatched).toMatchObject([{ id: "c1", name: "read_file", args: { path: "notes.txt" } }]);
      expect(result.loaded).toEqual(["read_file"]);
      const second = server.chatRequests[1]?.body as { messages: { role: string; content?: unknown }[] };
      expect(second.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "c1", content: "hello" });
      await server.close();
      server = undefined;
    }
  });
});
