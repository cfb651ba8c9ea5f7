import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import { createRuntime, runCalls } from "./index.js";

// Review r85: a sweep set each field name the packages read on Object.prototype in turn and ran one
// whole run. Besides the options r83 fixed, the loop read the objects it builds itself through the
// prototype where a field was left out: an inherited `answer` answered every tool call unrun and sent
// tool messages with no content (a transcript every endpoint refuses); `stopped` failed every run
// with its value; `hooks`, `compaction`, `calibration`, `capabilities`, `clients` broke every run;
// `rawContent`, `discardedUsage`, `uncached`, `reasoningTokens` were read as every turn's; `asks`
// (the option table's own test of a value) refused every run.

const TOOLS: ToolDefinition[] = [
  {
    type: "function",
    function: {
      name: "get_weather",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
  },
  { type: "function", function: { name: "clock", parameters: { type: "object", properties: {} } } },
];

/** One run over two tool calls and an answer: what it returned, ran, told and sent. */
async function weatherRun() {
  const server = await startServer({
    replies: [
      {
        toolCalls: [
          { name: "get_weather", arguments: '{"city": "Paris"}' },
          { name: "clock", arguments: "{}" },
        ],
      },
      { content: "It is sunny." },
    ],
  });
  const ran: string[] = [];
  const notices: string[] = [];
  try {
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "m", apiKey: "k", contextLength: 8192, temperature: 0.2 },
      messages: [{ role: "user", content: "The weather in Paris?" }],
      system: "Be brief.",
      tools: TOOLS,
      dispatch: ({ name }) => {
        ran.push(name);
        return name === "clock" ? "12:00" : "sunny";
      },
      onEvent: (event) => {
        if (event.kind === "notice") notices.push(event.text);
      },
    });
    return {
      stop: result.stopReason,
      answer: result.turn.content,
      usage: result.usage,
      ran,
      notices,
      sent: server.chatRequests.map((request) => request.raw),
    };
  } finally {
    await server.close();
  }
}

/** `body` run with `Object.prototype[name] = value`, taken out again however it ends. */
async function polluted<T>(name: string, value: unknown, body: () => Promise<T>): Promise<T> {
  Object.defineProperty(Object.prototype, name, {
    value,
    configurable: true,
    writable: true,
    enumerable: true,
  });
  try {
    return await body();
  } finally {
    delete (Object.prototype as Record<string, unknown>)[name];
  }
}

describe("R85-1: the loop reads what it built itself as it built it", () => {
  it("an inherited field changes nothing in a run: the same tools run, answers, notices and request bodies", async () => {
    const clean = await weatherRun();
    expect(clean.ran).toEqual(["get_weather", "clock"]);
    expect(clean.sent[1]).toContain('"content":"sunny"');
    const names = [
      "answer",
      "onRun",
      "held",
      "stopped",
      "hooks",
      "compaction",
      "calibration",
      "capabilities",
      "clients",
      "rawContent",
      "discardedUsage",
      "uncached",
      "reasoningTokens",
      "reasoningField",
      "scratchpadClosed",
      "timings",
      "asks",
      "what",
    ];
    for (const name of names) {
      for (const value of ["P0LLUTED", true, 1]) {
        const run = await polluted(name, value, () => weatherRun().catch((error: Error) => error.message));
        expect({ name, value, run }).toEqual({ name, value, run: clean });
      }
    }
  });

  it("runCalls' result always holds its own stopped, so an inherited one is never read as the step's", async () => {
    const result = await polluted("stopped", "P0LLUTED", () =>
      runCalls([{ id: "c1", type: "function", function: { name: "clock", arguments: "{}" } }], {
        tools: TOOLS,
        dispatch: () => "12:00",
      }),
    );
    expect(Object.hasOwn(result, "stopped")).toBe(true);
    expect(result.stopped).toBeUndefined();
    expect(result.results).toEqual([{ role: "tool", tool_call_id: "c1", content: "12:00" }]);
  });
});
