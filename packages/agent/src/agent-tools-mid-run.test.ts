// Tools that join or leave an Agent while a prompt runs: declared (or no longer) from the run's next
// step on, through the loop's per-step plan; a step after which nothing changed hands over nothing.
// Over HTTP with the testkit's scripted model.
import type { StepPlan } from "@loopwright/loop";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import {
  Agent,
  AgentError,
  type AgentTool,
  type ChatMessageLike,
  loopBackend,
  ToolRegistry,
} from "./test-exports.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function tool(name: string, execute: AgentTool["execute"]): AgentTool {
  return {
    name,
    description: `The ${name} tool`,
    parameters: { type: "object", properties: { n: { type: "number" } } },
    execute,
  };
}
const call = (id: string, name: string, n = 1) => ({
  toolCalls: [{ id, name, arguments: JSON.stringify({ n }) }],
});

type Body = { tools?: Array<{ function: { name: string } }>; messages: ChatMessageLike[] };
const bodies = (): Body[] => (server?.chatRequests ?? []).map((r) => r.body as Body);
const toolNames = (body: Body | undefined) => (body?.tools ?? []).map((t) => t.function.name);
const systemOf = (body: Body | undefined) =>
  body?.messages[0]?.role === "system" ? String(body.messages[0].content) : undefined;
/** What the request holds ahead of its messages (the tools among it), as sent. */
const headOf = (index: number) => {
  const raw = server?.chatRequests[index]?.raw ?? "";
  const body = JSON.parse(raw) as Record<string, unknown>;
  return JSON.stringify({ tools: body.tools, system: (body.messages as ChatMessageLike[])[0] });
};
const answerTo = (messages: readonly ChatMessageLike[], id: string) =>
  String(messages.find((m) => m.role === "tool" && m.tool_call_id === id)?.content);

/** The loop backend, with each plan the agent handed the loop kept, by step. */
function watchedBackend(plans: Array<[number, StepPlan | undefined]>) {
  const loop = loopBackend();
  return {
    run: ((options) =>
      loop.run({
        ...options,
        beforeStep: async (messages, step, context) => {
          const plan = (await options.beforeStep?.(messages, step, context)) as StepPlan | undefined;
          plans.push([step, plan]);
          return plan;
        },
      })) as ReturnType<typeof loopBackend>["run"],
  };
}

describe("Agent: tools registered or unregistered while a prompt runs", () => {
  it("declares a tool registered from a tool's execute on the next step, and the model's call to it runs", async () => {
    server = await startServer({
      replies: [
        call("c1", "install"),
        call("c2", "weather"),
        call("c3", "weather", 2),
        { content: "Sunny." },
      ],
    });
    const ran: string[] = [];
    const plans: Array<[number, StepPlan | undefined]> = [];
    const weather = tool("weather", ({ n }) => {
      ran.push(`weather ${n}`);
      return "sunny";
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      system: "You help.",
      backend: watchedBackend(plans),
      tools: [
        tool("install", () => {
          ran.push("install");
          agent.tools.register(weather);
          return "installed weather";
        }),
      ],
    });
    const result = await agent.prompt("What is the weather?");
    expect(result.status).toBe("ok");
    expect(toolNames(bodies()[0])).toEqual(["install"]);
    expect(toolNames(bodies()[1])).toEqual(["install", "weather"]);
    expect(ran).toEqual(["install", "weather 1", "weather 2"]);
    expect(answerTo(agent.messages, "c2")).toBe("sunny");
    // Step 2 was handed the new tools; steps 1, 3 and 4 nothing of them, and step 3's and 4's
    // requests open as step 2's did, byte for byte.
    expect(plans.map(([step, plan]) => [step, plan?.tools?.map((t) => t.function.name)])).toEqual([
      [1, undefined],
      [2, ["install", "weather"]],
      [3, undefined],
      [4, undefined],
    ]);
    expect(headOf(2)).toBe(headOf(1));
    expect(headOf(3)).toBe(headOf(1));
    expect(systemOf(bodies()[3])).toBe("You help.");
  });

  it("declares a tool an event listener registered mid-prompt from the next step", async () => {
    server = await startServer({ replies: [call("c1", "ping"), call("c2", "pong"), { content: "Done." }] });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [tool("ping", () => "pinged")],
    });
    agent.subscribe((event) => {
      if (event.type === "tool_execution_end" && event.toolName === "ping" && !agent.tools.get("pong")) {
        agent.tools.register(tool("pong", () => "ponged"));
      }
    });
    expect((await agent.prompt("Ping, then pong.")).status).toBe("ok");
    expect(toolNames(bodies()[0])).toEqual(["ping"]);
    expect(toolNames(bodies()[1])).toEqual(["ping", "pong"]);
    expect(answerTo(agent.messages, "c2")).toBe("ponged");
  });

  it("stops declaring a tool unregistered mid-prompt; the model's call to it is answered as unknown", async () => {
    server = await startServer({
      replies: [call("c1", "retire"), call("c2", "retire"), { content: "It is gone." }],
    });
    let runs = 0;
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        tool("keep", () => "kept"),
        tool("retire", () => {
          runs++;
          agent.tools.unregister("retire");
          return "retired";
        }),
      ],
    });
    expect((await agent.prompt("Retire it.")).status).toBe("ok");
    expect(toolNames(bodies()[0])).toEqual(["keep", "retire"]);
    expect(toolNames(bodies()[1])).toEqual(["keep"]);
    expect(runs).toBe(1);
    expect(answerTo(agent.messages, "c2")).toMatch(/Unknown tool "retire"/);
  });

  it("hands nothing to a step after a tool was registered again as it was (an MCP refresh that changed nothing)", async () => {
    server = await startServer({ replies: [call("c1", "echo"), call("c2", "echo"), { content: "ok" }] });
    const plans: Array<[number, StepPlan | undefined]> = [];
    const echo: AgentTool = tool("echo", () => {
      agent.tools.register({ ...echo }, { replace: true });
      return "echoed";
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      backend: watchedBackend(plans),
      tools: [echo],
    });
    expect((await agent.prompt("Echo twice.")).status).toBe("ok");
    expect(plans.every(([, plan]) => plan?.tools === undefined)).toBe(true);
    expect(headOf(1)).toBe(headOf(0));
    expect(headOf(2)).toBe(headOf(0));
  });

  it("on demand: a catalogue and tools assigned mid-prompt are listed from the next step, the text changed on that step only", async () => {
    server = await startServer({
      replies: [
        call("c1", "connect"),
        { toolCalls: [{ id: "c2", name: "load_tools", arguments: JSON.stringify({ names: ["forecast"] }) }] },
        call("c3", "forecast"),
        { content: "Rain." },
      ],
    });
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim", toolDiscovery: "ondemand" },
      system: "You help.",
      catalog: [{ name: "base", tools: [{ name: "connect", description: "Connect the weather server" }] }],
      tools: [
        tool("connect", () => {
          agent.tools.register(tool("forecast", () => "rain"));
          agent.catalog = [
            { name: "base", tools: [{ name: "connect", description: "Connect the weather server" }] },
            { name: "weather", tools: [{ name: "forecast", description: "The forecast" }] },
          ];
          return "connected";
        }),
      ],
    });
    expect((await agent.prompt("Will it rain?")).status).toBe("ok");
    const [first, second, third, fourth] = bodies();
    expect(systemOf(first)).not.toContain("forecast");
    expect(systemOf(second)).toContain("weather");
    expect(systemOf(third)).toBe(systemOf(second));
    expect(systemOf(fourth)).toBe(systemOf(second));
    expect(toolNames(third)).toContain("forecast");
    expect(answerTo(agent.messages, "c3")).toBe("rain");
    expect(agent.loaded).toContain("forecast");
  });
});

function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("Agent: a tool registered mid-prompt under a name another tool is declared as (r19 #2)", () => {
  it("refuses the register call (duplicate-tool) and the running prompt finishes; the model reads the refusal", async () => {
    server = await startServer({
      replies: [call("c1", "install"), call("c2", "fs_read"), { content: "finished" }, { content: "again" }],
    });
    let refused: unknown;
    const agent = new Agent({
      config: { baseUrl: server.baseUrl, model: "sim" },
      tools: [
        tool("fs_read", () => "contents"),
        tool("install", () => {
          try {
            agent.tools.register(tool("fs.read", () => "other"));
          } catch (error) {
            refused = error;
            throw error;
          }
          return "installed fs.read";
        }),
      ],
    });
    const result = await agent.prompt("go");
    expect(result.status).toBe("ok");
    // The caller of register got the typed error naming both tools; nothing was registered.
    expect(AgentError.isInstance(refused)).toBe(true);
    expect(refused).toMatchObject({ code: "duplicate-tool" });
    expect((refused as Error).message).toMatch(
      /The tools "fs_read" and "fs.read" would both be declared to the model as "fs_read"/,
    );
    expect(agent.tools.get("fs.read")).toBeUndefined();
    // The model was told (the tool's failure is its answer), and its call to fs_read ran the one tool.
    expect(answerTo(bodies()[1]!.messages, "c1")).toMatch(/^Error: The tools "fs_read" and "fs.read"/);
    expect(answerTo(bodies()[2]!.messages, "c2")).toBe("contents");
    expect(toolNames(bodies()[2])).toEqual(["fs_read", "install"]);
    // The next prompt runs too: no collision was left behind in the registry.
    expect((await agent.prompt("again")).status).toBe("ok");
  });

  it("refuses such a name whatever replace says, and takes it once the other tool is gone", () => {
    const registry = new ToolRegistry([tool("fs_read", () => "a")]);
    for (const options of [{}, { replace: true }]) {
      let error: unknown;
      try {
        registry.register(
          tool("fs.read", () => "b"),
          options,
        );
      } catch (caught) {
        error = caught;
      }
      expect(error).toMatchObject({ code: "duplicate-tool" });
    }
    expect(() => new ToolRegistry([tool("a.b", () => ""), tool("a_b", () => "")])).toThrow(
      /"a\.b" and "a_b" would both be declared to the model as "a_b"/,
    );
    // Given together at construction, the agent refuses them there, not at the first prompt.
    expect(
      thrownBy(
        () =>
          new Agent({
            config: { baseUrl: "http://127.0.0.1:9/v1", model: "sim" },
            tools: [tool("a.b", () => ""), tool("a_b", () => "")],
          }),
      ),
    ).toMatchObject({ code: "duplicate-tool" });
    // The same name again with replace is a replacement, not a collision.
    registry.register(
      tool("fs_read", () => "c"),
      { replace: true },
    );
    expect(registry.unregister("fs_read")).toBe(true);
    registry.register(tool("fs.read", () => "b"));
    expect(registry.list().map((t) => t.name)).toEqual(["fs.read"]);
  });
});
