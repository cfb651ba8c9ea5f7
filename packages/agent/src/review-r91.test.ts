// A typed tool of @loopwright/tools (zod input, its own dispatch) handed to an Agent through
// `toAgentTool`. Before r91 the two packages' tools were two shapes, so a host rewrote each tool by
// hand (the type test to-agent-tool.test-d.ts shows the user's code not compiling without the
// adapter). Each case runs a whole Agent prompt over HTTP against the testkit's scripted model, and
// the same script through `runAgentLoop` with the tool's own toolset `dispatch`: the model must be
// sent the same schema and read the same answers either way.
import { runAgentLoop } from "@loopwright/loop";
import { type Reply, startServer, type TestServer } from "@loopwright/testkit";
import { createToolset, defineTool, type Tool } from "@loopwright/tools";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Agent, AgentError, toAgentTool } from "./index.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type WireRequest = {
  tools?: unknown[];
  messages: { role: string; content?: unknown; tool_call_id?: string }[];
};

/** What each chat request the server received sent: its tools, and the tool messages' text. */
function sent(test: TestServer) {
  return test.chatRequests.map((request) => {
    const body = request.body as WireRequest;
    return {
      tools: body.tools,
      answers: body.messages.filter((m) => m.role === "tool").map((m) => m.content),
    };
  });
}

/** Runs `replies` through an Agent holding `toAgentTool(tool)`; what the server was sent, and the run. */
async function throughAgent(tool: Tool, replies: Reply[], during?: (agent: Agent) => void) {
  server = await startServer({ replies });
  const agent = new Agent({
    config: { baseUrl: server.baseUrl, model: "m", maxRetries: 0 },
    tools: [toAgentTool(tool)],
  });
  during?.(agent);
  const run = await agent.prompt("go");
  const seen = sent(server);
  await server.close();
  server = undefined;
  return { run, seen };
}

/** Runs `replies` through runAgentLoop with the tool's own toolset; what the server was sent. */
async function throughToolset(tool: Tool, replies: Reply[]) {
  server = await startServer({ replies });
  const toolset = createToolset([tool]);
  await runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "m", maxRetries: 0 },
    messages: [{ role: "user", content: "go" }],
    tools: toolset.tools,
    dispatch: toolset.dispatch,
  });
  const seen = sent(server);
  await server.close();
  server = undefined;
  return seen;
}

type Seen = { args: unknown; id: string; signal: unknown };

function weatherTool(seen: Seen[], run?: (args: { city: string; days: number }) => unknown) {
  return defineTool({
    name: "weather",
    description: "The weather for a city.",
    input: z.object({
      city: z.string(),
      days: z.number().int().default(1),
      unit: z.enum(["C", "F"]).optional(),
      zone: z.string().nullable().optional(),
    }),
    execute: (args, context) => {
      seen.push({ args, id: context.id, signal: context.signal });
      return run ? run(args) : { city: args.city, days: args.days, forecast: "sun" };
    },
  });
}

const call = (id: string, args: string): Reply => ({ toolCalls: [{ id, name: "weather", arguments: args }] });

describe("toAgentTool: a @loopwright/tools tool run by an Agent", () => {
  it("runs a valid call with zod's parsed arguments, the call's id and the run's signal", async () => {
    const seen: Seen[] = [];
    const script = () => [call("c1", '{"city":"Oslo","days":3,"unit":"C"}'), { content: "Sunny." }];
    const { run, seen: wire } = await throughAgent(weatherTool(seen), script());
    expect(run.status).toBe("ok");
    expect(seen).toHaveLength(1);
    expect(seen[0]?.args).toEqual({ city: "Oslo", days: 3, unit: "C" });
    expect(seen[0]?.id).toBe("c1");
    expect(seen[0]?.signal).toBeInstanceOf(AbortSignal);
    // The model read the result as the toolset gives it, and was sent the same schema (made strict
    // once, by the loop: the declaration is handed on as zod wrote it).
    const direct = await throughToolset(weatherTool([]), script());
    expect(wire).toEqual(direct);
    expect(wire[1]?.answers).toEqual(['{"city":"Oslo","days":3,"forecast":"sun"}']);
    const declared = wire[0]?.tools?.[0] as { function: { parameters: { required: string[] } } } | undefined;
    expect(declared?.function.parameters.required).toEqual(["city", "days", "unit", "zone"]);
  });

  it("restores a strict dialect's nulls and fills defaults before the tool runs", async () => {
    const seen: Seen[] = [];
    // Strict: every field required, the optional ones nullable, so the model writes null for each.
    const { run } = await throughAgent(weatherTool(seen), [
      call("c1", '{"city":"Oslo","days":null,"unit":null,"zone":null}'),
      { content: "Sunny." },
    ]);
    expect(run.status).toBe("ok");
    // `days` left out → its default; `unit` (never null) left out → absent; `zone` takes null → kept.
    expect(seen[0]?.args).toEqual({ city: "Oslo", days: 1, zone: null });
    expect(Object.hasOwn(seen[0]?.args as object, "unit")).toBe(false);
  });

  it("answers invalid arguments as the toolset does, and runs the model's second try", async () => {
    const seen: Seen[] = [];
    const script = () => [
      call("c1", '{"city":5,"days":1.5,"unit":null,"zone":null}'),
      call("c2", '{"city":"Oslo","days":2,"unit":null,"zone":null}'),
      { content: "Sunny." },
    ];
    const { run, seen: wire } = await throughAgent(weatherTool(seen), script());
    expect(run.status).toBe("ok");
    const refused = wire[1]?.answers[0];
    expect(refused).toMatch(
      /^Error: weather was not run: its arguments do not match its schema \(city: .*; days: .*\)/,
    );
    // The refused call never reached the tool; the second try did.
    expect(seen.map((s) => s.id)).toEqual(["c2"]);
    expect(wire[2]?.answers[1]).toBe('{"city":"Oslo","days":2,"forecast":"sun"}');
    expect(wire).toEqual(await throughToolset(weatherTool([]), script()));
  });

  it("awaits an asynchronous refinement as the toolset does", async () => {
    const seen: string[] = [];
    const tool = () =>
      defineTool({
        name: "weather",
        description: "The weather for a known city.",
        input: z.object({
          city: z.string().refine(async (city) => {
            await new Promise((resolve) => setTimeout(resolve, 5));
            return city !== "Atlantis";
          }, "no such city"),
        }),
        execute: ({ city }) => {
          seen.push(city);
          return `sun in ${city}`;
        },
      });
    const script = () => [
      call("c1", '{"city":"Atlantis"}'),
      call("c2", '{"city":"Oslo"}'),
      { content: "Ok." },
    ];
    const { run, seen: wire } = await throughAgent(tool(), script());
    expect(run.status).toBe("ok");
    expect(wire[1]?.answers[0]).toContain("city: no such city");
    expect(wire[2]?.answers[1]).toBe("sun in Oslo");
    expect(seen).toEqual(["Oslo"]);
    expect(wire).toEqual(await throughToolset(tool(), script()));
  });

  it("answers a tool that throws with its message, and the run goes on", async () => {
    const tool = () =>
      weatherTool([], () => {
        throw new Error("the weather service is down");
      });
    const script = () => [
      call("c1", '{"city":"Oslo","days":1,"unit":null,"zone":null}'),
      { content: "Sorry." },
    ];
    const { run, seen: wire } = await throughAgent(tool(), script());
    expect(run.status).toBe("ok");
    expect(wire[1]?.answers).toEqual(["Error: the weather service is down"]);
    expect(wire).toEqual(await throughToolset(tool(), script()));
  });

  it("hands the tool the run's stop: a stop mid-tool aborts its signal and ends the run", async () => {
    const seen: Seen[] = [];
    let stoppedInside = false;
    const tool = weatherTool(seen, () => {
      const signal = seen[0]?.signal as AbortSignal;
      return new Promise((_, reject) => {
        signal.addEventListener("abort", () => {
          stoppedInside = true;
          reject(signal.reason);
        });
      });
    });
    const { run } = await throughAgent(
      tool,
      [call("c1", '{"city":"Oslo","days":1,"unit":null,"zone":null}'), { content: "never asked" }],
      (agent) =>
        agent.subscribe((event) => {
          if (event.type === "tool_execution_start") setTimeout(() => agent.abort(), 10);
        }),
    );
    expect(run.status).toBe("aborted");
    expect(stoppedInside).toBe(true);
    expect(seen).toHaveLength(1);
  });

  it("refuses what is not a typed tool, naming what it takes", () => {
    const plain = { name: "x", description: "x", parameters: {}, execute: () => "" };
    expect(() => toAgentTool(plain as never)).toThrow(AgentError);
    expect(() => toAgentTool(plain as never)).toThrow(/defineTool of @loopwright\/tools/);
    const old = { ...weatherTool([]), check: undefined };
    expect(() => toAgentTool(old as never)).toThrow(/named "weather" without check/);
  });
});
