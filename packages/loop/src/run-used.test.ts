/**
 * A run's `used` (the seed's `const { messages, used } = await runAgentLoop(…)`, and `failedRun`'s
 * "messages, usage, toolCalls, loaded, used, preselected"): the tools the run dispatched, each once,
 * under the host's names, the same in every discovery mode — over HTTP against the testkit.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import { failedRun } from "./errors.js";
import { createRuntime } from "./runtime.js";
import { call, discoveryServer } from "./test-support/discovery.js";

const discovery = discoveryServer();

describe("a run's used", () => {
  it("eager: each dispatched tool once, in the order of its first call; a call refused unrun (arguments not an object) adds nothing, a shared repeat nothing new", async () => {
    const { result } = await discovery.run(
      [
        call("c1", "write_file", { path: "a.txt", text: "x" }),
        {
          toolCalls: [
            { id: "c2", name: "read_file", arguments: '{"path":"a.txt"}' },
            { id: "c3", name: "read_file", arguments: '{"path":"a.txt"}' },
            { id: "c4", name: "list_pods", arguments: "[1, 2]" },
          ],
        },
        call("c5", "write_file", { path: "b.txt", text: "y" }),
        { content: "done" },
      ],
      {},
    );
    expect(result.toolCalls.map((c) => [c.name, c.source])).toEqual([
      ["write_file", "dispatched"],
      ["read_file", "dispatched"],
      ["read_file", "repeat"],
      ["list_pods", "refused"],
      ["write_file", "dispatched"],
    ]);
    expect(result.used).toEqual(["write_file", "read_file"]);
  });

  it("counts a tool that ran and failed: it was used", async () => {
    const { result } = await discovery.run(
      [call("c1", "read_file", { path: "a.txt" }), { content: "done" }],
      {},
      {
        dispatch: () => {
          throw new Error("disk gone");
        },
      },
    );
    expect(result.toolCalls[0]).toMatchObject({ name: "read_file", source: "dispatched", ok: false });
    expect(result.used).toEqual(["read_file"]);
  });

  it("on demand: the tool loaded and run, not load_tools", async () => {
    const { result } = await discovery.run(
      [
        call("l1", "load_tools", { names: ["read_file"] }),
        call("c1", "read_file", { path: "a" }),
        { content: "ok" },
      ],
      { toolDiscovery: "ondemand" },
    );
    expect(result.loaded).toEqual(["read_file"]);
    expect(result.used).toEqual(["read_file"]);
  });

  it("proxied: a call_tool counts as the tool it named", async () => {
    const { result, dispatched } = await discovery.run(
      [
        call("c1", "call_tool", { name: "list_pods", arguments: { namespace: "default" } }),
        { content: "ok" },
      ],
      { toolDiscovery: "proxy" },
    );
    expect(dispatched.map((d) => d.name)).toEqual(["list_pods"]);
    expect(result.used).toEqual(["list_pods"]);
  });

  it("is [] for a run that called nothing", async () => {
    const { result } = await discovery.run([{ content: "hello" }], {});
    expect(result.used).toEqual([]);
  });
});

describe("a failed run's used", () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("holds what ran before the stop, under the host's name of a renamed tool", async () => {
    const tool = (name: string): ToolDefinition => ({
      type: "function",
      function: { name, description: `The ${name} tool`, parameters: { type: "object", properties: {} } },
    });
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "fs_read", arguments: "{}" }] },
        { toolCalls: [{ id: "c2", name: "list_pods", arguments: "{}" }] },
        { content: "never read" },
      ],
    });
    const stop = new AbortController();
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: [{ role: "user", content: "Read notes.txt" }],
        tools: [tool("fs.read"), tool("list_pods")],
        signal: stop.signal,
        dispatch: ({ name }) => {
          if (name === "list_pods") stop.abort();
          return "ran";
        },
      })
      .catch((e: unknown) => e);
    const run = failedRun(error);
    expect(run?.used).toEqual(["fs.read", "list_pods"]);
    expect(server.chatRequests).toHaveLength(2);
  });
});
