import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { AssistantToolCall, ToolDefinition } from "./config.js";
import { AgentLoopError, createRuntime, failedRun, runCalls } from "./index.js";
import { polluted } from "./test-support/polluted.js";

// Review r83: the loop read its options, their config, a step plan and runCalls' options through a
// polluted Object.prototype. Some code in the host's process setting a field there (prototype
// pollution) changed every run: `maxToolIterations = 0` ended each before its first tool, `system`
// put its text on every request, `stop = true` stopped every run whose plan left `stop` out.

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const WEATHER: ToolDefinition = {
  type: "function",
  function: {
    name: "get_weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

/** A run over a tool call and its answer, `extra` merged into the options. */
async function weatherRun(extra: Record<string, unknown> = {}) {
  server = await startServer({
    replies: [
      { toolCalls: [{ name: "get_weather", arguments: '{"city": "Paris"}' }] },
      { content: "It is sunny." },
    ],
  });
  const ran: string[] = [];
  const result = await createRuntime().runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "m", apiKey: "k" },
    messages: [{ role: "user", content: "The weather in Paris?" }],
    tools: [WEATHER],
    dispatch: ({ name }) => {
      ran.push(name);
      return "sunny";
    },
    ...extra,
  });
  const bodies = server.chatRequests.map((r) => r.body as Record<string, unknown>);
  return { result, ran, bodies };
}

describe("R83-1: runAgentLoop reads its options and config as the host wrote them", () => {
  it("an inherited maxToolIterations = 0 does not end the run before its first tool", async () => {
    const { result, ran } = await polluted("maxToolIterations", 0, () => weatherRun());
    expect(ran).toEqual(["get_weather"]);
    expect(result.stopReason).toBe("answered");
    expect(result.turn.content).toBe("It is sunny.");
  });

  it("an inherited system, temperature, maxTokens and reasoningEffort go into no request", async () => {
    const fields: [string, unknown][] = [
      ["system", "POLLUTED SYSTEM PROMPT"],
      ["temperature", 1.5],
      ["maxTokens", 1],
      ["reasoningEffort", "high"],
      ["extraBody", { polluted: true }],
    ];
    for (const [name, value] of fields) {
      const { bodies } = await polluted(name, value, () => weatherRun());
      await server?.close();
      server = undefined;
      for (const body of bodies) {
        expect({ name, roles: (body.messages as { role: string }[]).map((m) => m.role)[0] }).toEqual({
          name,
          roles: "user",
        });
        expect({ name, keys: Object.keys(body).sort() }).toEqual({
          name,
          keys: expect.not.arrayContaining([
            "temperature",
            "max_tokens",
            "max_completion_tokens",
            "reasoning_effort",
            "polluted",
          ]),
        });
      }
    }
  });

  it("an inherited toolDiscovery, compact or contextLength changes nothing: every tool declared, the run answered", async () => {
    const fields: [string, unknown][] = [
      ["toolDiscovery", "proxy"],
      ["compact", true],
      ["contextLength", 10],
      ["preselect", true],
    ];
    for (const [name, value] of fields) {
      const { result, bodies } = await polluted(name, value, () => weatherRun());
      await server?.close();
      server = undefined;
      expect({ name, stop: result.stopReason }).toEqual({ name, stop: "answered" });
      expect({
        name,
        declared: ((bodies[0]?.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name),
      }).toEqual({ name, declared: ["get_weather"] });
    }
  });

  it("a step plan without `stop` under an inherited stop = true goes on to its answer", async () => {
    const { result, ran } = await polluted("stop", true, () => weatherRun({ beforeStep: () => ({}) }));
    expect(ran).toEqual(["get_weather"]);
    expect(result.stopReason).toBe("answered");
  });

  it("still reads options and config a class's getters give", async () => {
    server = await startServer({ replies: [{ content: "Hello." }] });
    const baseUrl = server.baseUrl;
    class Settings {
      get baseUrl() {
        return baseUrl;
      }
      get model() {
        return "from-a-getter";
      }
    }
    class Options {
      readonly messages = [{ role: "user" as const, content: "hi" }];
      readonly dispatch = () => "";
      get config() {
        return new Settings();
      }
    }
    const result = await createRuntime().runAgentLoop(new Options() as never);
    expect(result.turn.content).toBe("Hello.");
    expect((server.chatRequests[0]?.body as { model?: string } | undefined)?.model).toBe("from-a-getter");
  });

  it("asks an options getter each time the loop reads it (a host's parallel, read as each step's calls start)", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ name: "get_weather", arguments: '{"city": "Paris"}' }] },
        { toolCalls: [{ name: "get_weather", arguments: '{"city": "Rome"}' }] },
        { content: "Both sunny." },
      ],
    });
    let asked = 0;
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m" },
      messages: [{ role: "user", content: "Paris, then Rome?" }],
      tools: [WEATHER],
      dispatch: () => "sunny",
      get parallel() {
        asked++;
        return false;
      },
    });
    expect(result.turn.content).toBe("Both sunny.");
    expect(asked).toBeGreaterThanOrEqual(2);
  });

  it("asks it each time under a runId too (the bus's run: its options are not spread into values)", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ name: "get_weather", arguments: '{"city": "Paris"}' }] },
        { toolCalls: [{ name: "get_weather", arguments: '{"city": "Rome"}' }] },
        { content: "Both sunny." },
      ],
    });
    let asked = 0;
    const result = await createRuntime().runAgentLoop({
      runId: "getter-run",
      config: { baseUrl: server.baseUrl, model: "m" },
      messages: [{ role: "user", content: "Paris, then Rome?" }],
      tools: [WEATHER],
      dispatch: () => "sunny",
      get parallel() {
        asked++;
        return false;
      },
    });
    expect(result.turn.content).toBe("Both sunny.");
    expect(asked).toBeGreaterThanOrEqual(2);
  });

  it("reads a config's defaults from Object.create(defaults), and a class's dispatch method with its private fields", async () => {
    server = await startServer({
      replies: [
        { toolCalls: [{ name: "get_weather", arguments: '{"city": "Paris"}' }] },
        { content: "It is sunny." },
      ],
    });
    const defaults = { baseUrl: server.baseUrl, model: "from-defaults" };
    const config = Object.create(defaults) as typeof defaults;
    class Host {
      readonly #ran: string[] = [];
      readonly config = config;
      readonly messages = [{ role: "user" as const, content: "The weather in Paris?" }];
      readonly tools = [WEATHER];
      dispatch({ name }: { name: string }) {
        this.#ran.push(name);
        return "sunny";
      }
      get ran() {
        return this.#ran;
      }
    }
    const host = new Host();
    const result = await createRuntime().runAgentLoop(host as never);
    expect(result.turn.content).toBe("It is sunny.");
    expect(host.ran).toEqual(["get_weather"]);
    expect((server.chatRequests[0]?.body as { model?: string } | undefined)?.model).toBe("from-defaults");
  });

  it("an options getter that throws is the loop's refusal at the start, with the transcript given", async () => {
    const messages = [{ role: "user" as const, content: "hi" }];
    const options = {
      messages,
      dispatch: () => "",
      get config(): never {
        throw new Error("config is not ready");
      },
    };
    const error = await createRuntime()
      .runAgentLoop(options as never)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AgentLoopError);
    expect((error as Error).message).toContain("config is not ready");
    expect(failedRun(error)?.messages).toEqual(messages);
  });
});

describe("R83-2: runCalls reads its options as the host wrote them", () => {
  const call = (id: string): AssistantToolCall => ({
    id,
    type: "function",
    function: { name: "read", arguments: '{"path": "x"}' },
  });

  it("an inherited dedupe = false does not run an identical call twice", async () => {
    let runs = 0;
    const ran = await polluted("dedupe", false, () =>
      runCalls([call("a"), call("b")], {
        dispatch: () => {
          runs++;
          return "contents";
        },
      }),
    );
    expect(runs).toBe(1);
    expect(ran.results.map((r) => (r as { tool_call_id?: string }).tool_call_id)).toEqual(["a", "b"]);
  });
});
