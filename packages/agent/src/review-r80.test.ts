import { countWork, startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  type AgentError,
  type AgentMessage,
  type AgentTool,
  type ChatMessageLike,
  ToolRegistry,
} from "./test-exports.js";

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

  it("quotes a made-up name of 50,000 characters by its first 60, its length said", async () => {
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
      `Error: Unknown tool "${"x".repeat(60)}… (50000 characters)". Available tools: read, write.`,
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

describe("thirty tool calls of one step, each listening to its signal", () => {
  it("hang no listener each on the run's signal (no MaxListenersExceededWarning at the eleventh), and a stop still ends every one", async () => {
    const calls = Array.from({ length: 30 }, (_, i) => ({
      id: `c${i}`,
      name: "wait",
      arguments: JSON.stringify({ n: i }),
    }));
    server = await startServer({ replies: [{ toolCalls: calls }, { content: "never asked" }] });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on("warning", onWarning);
    let started = 0;
    let stopped = 0;
    const agent: Agent = new Agent({
      // No time limit: the loop hands each call the run's own signal.
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0, toolTimeoutSeconds: 0 },
      tools: [
        tool("wait", (_args, { signal }) => {
          if (++started === 30) setTimeout(() => agent.abort(), 20);
          return new Promise((_resolve, reject) => {
            signal?.addEventListener(
              "abort",
              () => {
                stopped++;
                reject(new Error("stopped"));
              },
              { once: true },
            );
          });
        }),
      ],
    });
    try {
      const result = await agent.prompt("go");
      expect(result.status).toBe("aborted");
      expect(started).toBe(30);
      expect(stopped).toBe(30);
      for (const call of calls) expect(answerTo(agent.messages, call.id)).not.toBe("undefined");
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Before: "MaxListenersExceededWarning: Possible EventTarget memory leak detected. 11 abort
      // listeners added to [AbortSignal]": each tool's listener went on the run's signal.
      expect(warnings.filter((w) => w.includes("MaxListeners"))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
  });
});

describe("the transcript handed to transformContext and the hooks, changed in place", () => {
  it("transformContext's in-place addition goes with that request only (was stored: each prompt stacked another)", async () => {
    server = await startServer({ replies: [{ content: "one" }, { content: "two" }] });
    let n = 0;
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      transformContext: (messages) => {
        (messages as AgentMessage[]).unshift({ role: "system", content: `Context ${++n}` });
        return messages;
      },
    });
    expect((await agent.prompt("a")).status).toBe("ok");
    expect((await agent.prompt("b")).status).toBe("ok");
    const sent = server.chatRequests.map((request) =>
      (request.body as { messages: ChatMessageLike[] }).messages.map((m) => `${m.role}:${String(m.content)}`),
    );
    expect(sent).toEqual([
      ["system:Context 1", "user:a"],
      // Before: "system:Context 2\n\nContext 1" — the first request's context had become the transcript's.
      ["system:Context 2", "user:a", "assistant:one", "user:b"],
    ]);
    expect(agent.messages.map((m) => (m as ChatMessageLike).role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
  });

  for (const hook of ["beforeToolCall", "afterToolCall"] as const) {
    it(`a push from ${hook} is refused (busy), as agent.messages' is: the call's answer stays right after it and the next prompt goes`, async () => {
      server = await startServer({
        replies: [
          { toolCalls: [{ id: "c1", name: "look", arguments: "{}" }] },
          { content: "Looked." },
          { content: "Again." },
        ],
      });
      let refused: unknown;
      const push = ({ messages }: { messages: readonly AgentMessage[] }) => {
        try {
          (messages as AgentMessage[]).push({ role: "user", content: "pushed" });
        } catch (error) {
          refused = error;
        }
        return undefined;
      };
      const agent = new Agent({
        config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
        tools: [tool("look")],
        [hook]: push,
      });
      expect(await agent.prompt("go")).toMatchObject({ status: "ok" });
      expect((refused as AgentError | undefined)?.code).toBe("busy");
      expect(agent.messages.map((m) => (m as ChatMessageLike).role)).toEqual([
        "user",
        "assistant",
        "tool",
        "assistant",
      ]);
      // Before: the push landed between the call and its answer, and every later prompt failed
      // ("messages[3] is a tool message for "c1", which no call of the assistant message right before it made").
      expect(await agent.prompt("And?")).toMatchObject({ status: "ok" });
    });
  }
});

describe("a tool's progress report after its call ended", () => {
  it("is not told: none after the call's tool_execution_end, from a tool that ignores its stop or reports once it returned", async () => {
    server = await startServer({
      replies: [
        {
          toolCalls: [
            { id: "c1", name: "quick", arguments: "{}" },
            { id: "c2", name: "stubborn", arguments: "{}" },
          ],
        },
        { content: "never asked" },
      ],
    });
    const reporters: ((partial: unknown) => void)[] = [];
    let finish: (() => void) | undefined;
    const agent: Agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      tools: [
        tool("quick", (_args, { onUpdate }) => {
          reporters.push(onUpdate);
          onUpdate("quick: working");
          return "done";
        }),
        // Ignores its signal: goes on after the stop, reporting.
        tool("stubborn", (_args, { onUpdate }) => {
          reporters.push(onUpdate);
          onUpdate("stubborn: working");
          setTimeout(() => agent.abort(), 20);
          return new Promise<string>((resolve) => {
            finish = () => resolve("finished anyway");
          });
        }),
      ],
    });
    const told: string[] = [];
    agent.subscribe((event) => {
      if (event.type === "tool_execution_update") told.push(`update ${String(event.partialResult)}`);
      if (event.type === "tool_execution_end") told.push(`end ${event.toolCallId}`);
      if (event.type === "agent_end") told.push("agent_end");
    });
    expect((await agent.prompt("go")).status).toBe("aborted");
    for (const report of reporters) report("late");
    finish?.();
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Before: "update late" twice after agent_end, for calls long ended.
    expect(told.filter((t) => t.startsWith("update"))).toEqual([
      "update quick: working",
      "update stubborn: working",
    ]);
    expect(told.at(-1)).toBe("agent_end");
  });
});

describe("registering many tools", () => {
  it("takes time in proportion: 8 times the tools, about 8 times as long (a search of every registered one per register: 20,000 took 8 to 11 s)", async () => {
    // Counted, not timed (r103c: a ratio of two CPU timings moves 3 to 4 times on a loaded CI host,
    // and this one's bound of 30 was within that of the 8 it reads): the Map, Set, Array and RegExp
    // steps of registering n tools, against 8 times as many. About 8 when each register costs the
    // same; with a search of every tool held per register (the fault), about 64, and past 100 steps
    // a tool the count stops the run at once.
    const registerMany = async (n: number) =>
      (
        await countWork(() => {
          const many = new ToolRegistry();
          for (let i = 0; i < n; i++) many.register(tool(`tool_${i}`));
        }, 100 * n)
      ).total;
    const [few, many] = [await registerMany(500), await registerMany(4_000)];
    expect(many / few).toBeLessThan(16);
    const registry = new ToolRegistry();
    for (let i = 0; i < 100; i++) registry.register(tool(`tool_${i}`));
    expect(registry.list()).toHaveLength(100);
    // The wire-name clash is still refused, and freed by unregister.
    expect(() => registry.register(tool("tool.7"))).toThrow(
      /would both be declared to the model as "tool_7"/,
    );
    expect(registry.unregister("tool_7")).toBe(true);
    registry.register(tool("tool.7"));
    expect(registry.get("tool.7")?.name).toBe("tool.7");
  }, 60_000);
});

describe("a tool that throws what JSON cannot write", () => {
  it("is answered with what it threw, not JSON.stringify's crash", async () => {
    const cycle: Record<string, unknown> = { why: "disk full" };
    cycle.self = cycle;
    const thrown: unknown[] = [5n, cycle, { code: 7n }];
    server = await startServer({
      replies: [
        {
          toolCalls: thrown.map((_, n) => ({ id: `c${n}`, name: "fail", arguments: JSON.stringify({ n }) })),
        },
        { content: "done" },
      ],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", maxRetries: 0 },
      tools: [
        {
          ...tool("fail"),
          parameters: { type: "object", properties: { n: { type: "number" } } },
          execute: (args) => {
            throw thrown[(args as { n: number }).n];
          },
        },
      ],
    });
    expect((await agent.prompt("go")).status).toBe("ok");
    // Before: "Error: Do not know how to serialize a BigInt", "Error: Converting circular structure to JSON …".
    expect([0, 1, 2].map((n) => answerTo(agent.messages, `c${n}`))).toEqual([
      "Error: 5",
      'Error: {"why":"disk full","self":"[Circular]"}',
      'Error: {"code":"7"}',
    ]);
  });
});
