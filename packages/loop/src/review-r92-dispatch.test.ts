/**
 * Review r92: a run that declares no tools needs no `dispatch`.
 *
 * A host asking a question with hooks, or on a runtime of its own, and no tools was refused
 * ("dispatch must be a function") until it wrote a dummy `dispatch: () => "no tools here"`, as the
 * README's own examples did. Now `dispatch` may be left out where there are no tools: the run goes
 * out and answers, and a tool call the model writes anyway is answered that there is no such tool.
 * Where there are tools (the option, a catalogue, or a `beforeStep` plan giving some), leaving it out
 * is still refused before anything is sent, naming the tools that would need it. Over HTTP.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError, failedRun, LoopOptionError } from "./errors.js";
import { createRuntime, type RunOptions } from "./runtime.js";

const question: ChatMessage[] = [{ role: "user", content: "Say hello." }];
const tool = (name: string): ToolDefinition => ({
  type: "function",
  function: { name, parameters: { type: "object", properties: {} } },
});

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a run with no tools and no dispatch", () => {
  it("goes out and comes back answered", async () => {
    server = await startServer({ replies: [{ content: "Hello." }] });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
    });
    expect(result.stopReason).toBe("answered");
    expect(result.turn.content).toBe("Hello.");
    expect(server.chatRequests).toHaveLength(1);
    expect(Object.keys(server.chatRequests[0]?.body ?? {})).not.toContain("tools");
  });

  it("answers a tool call the model writes anyway that there is no such tool, and goes on", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ id: "c1", name: "web_search", arguments: "{}" }] },
        { content: "No tools, then." },
      ],
    });
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "sim" },
      messages: question,
    });
    expect(result.turn.content).toBe("No tools, then.");
    const answer = result.messages.find((m) => m.role === "tool");
    expect(String(answer?.content)).toMatch(/There is no tool "web_search": this run offers no tools/);
    expect(result.toolCalls).toMatchObject([{ name: "web_search", ok: false }]);
    expect(server.chatRequests).toHaveLength(2);
  });
});

describe("a run with tools and no dispatch is still refused before anything is sent", () => {
  /** A run of `extra` options against a server that must not be asked; what it rejected with. */
  async function refusedRun(extra: Partial<RunOptions>): Promise<unknown> {
    server = await startServer({ replies: [{ content: "never" }] });
    const error = await createRuntime()
      .runAgentLoop({ config: { baseUrl: server.baseUrl, model: "sim" }, messages: question, ...extra })
      .catch((e: unknown) => e);
    expect(AgentLoopError.isInstance(error)).toBe(true);
    expect(server.chatRequests).toHaveLength(0);
    return (error as Error).cause;
  }

  it("naming the tools the option declares", async () => {
    const cause = await refusedRun({ tools: [tool("read_file"), tool("write_file")] });
    expect(cause).toBeInstanceOf(TypeError);
    expect((cause as Error).message).toMatch(/dispatch must be a function .*\("read_file", "write_file"\)/);
  });

  it("naming a catalogue's tools", async () => {
    const cause = await refusedRun({ catalog: [{ name: "gh", tools: [{ name: "list_issues" }] }] });
    expect((cause as Error).message).toMatch(/\("list_issues"\)/);
  });

  it("and a dispatch that is no function is refused as before", async () => {
    const cause = await refusedRun({ dispatch: "run it" as never });
    expect((cause as Error).message).toMatch(/dispatch must be a function/);
  });

  it("a beforeStep plan giving tools to a run without dispatch is refused, naming them", async () => {
    server = await startServer({
      replies: [{ toolCalls: [{ id: "c1", name: "imagined", arguments: "{}" }] }, { content: "never" }],
    });
    const error = await createRuntime()
      .runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "sim" },
        messages: question,
        beforeStep: (_messages, step) => (step === 2 ? { tools: [tool("read_file")] } : undefined),
      })
      .catch((e: unknown) => e);
    const cause = (error as Error).cause;
    expect(LoopOptionError.isInstance(cause)).toBe(true);
    expect((cause as Error).message).toMatch(/planned tools \("read_file"\) for a run given no dispatch/);
    expect(failedRun(error)?.messages).toHaveLength(3);
    expect(server.chatRequests).toHaveLength(1);
  });
});
