import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import { createRuntime, runCalls } from "./index.js";
import { polluted } from "./test-support/polluted.js";

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

describe("R85-1: the loop reads what it built itself as it built it", () => {
  // Nineteen whole runs over HTTP: about a second on an idle machine, more beside other work.
  it("an inherited field changes nothing in a run: the same tools run, answers, notices and request bodies", {
    timeout: 30_000,
  }, async () => {
    const clean = await weatherRun();
    expect(clean.ran).toEqual(["get_weather", "clock"]);
    expect(clean.sent[1]).toContain('"content":"sunny"');
    // Each with a value that changed the run before (a string where the field is read as text or
    // called, `true` where it is tested).
    const fields: [string, unknown][] = [
      ["answer", "P0LLUTED"],
      ["onRun", "P0LLUTED"],
      ["held", true],
      ["stopped", "P0LLUTED"],
      ["hooks", "P0LLUTED"],
      ["compaction", "P0LLUTED"],
      ["calibration", "P0LLUTED"],
      ["capabilities", "P0LLUTED"],
      ["clients", "P0LLUTED"],
      ["rawContent", true],
      ["discardedUsage", "P0LLUTED"],
      ["uncached", "P0LLUTED"],
      ["reasoningTokens", "P0LLUTED"],
      ["reasoningField", "P0LLUTED"],
      ["scratchpadClosed", true],
      ["timings", "P0LLUTED"],
      ["asks", "P0LLUTED"],
      ["what", "P0LLUTED"],
    ];
    for (const [name, value] of fields) {
      const run = await polluted(name, value, () => weatherRun().catch((error: Error) => error.message));
      expect({ name, run }).toEqual({ name, run: clean });
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

describe("R85-2: a message's tool calls are the ones it holds itself", () => {
  it("an inherited tool_calls makes no text answer in the transcript given an open call", async () => {
    const given = [
      { role: "user" as const, content: "Hello" },
      { role: "assistant" as const, content: "Hi." },
      { role: "user" as const, content: "The time?" },
    ];
    const run = async () => {
      const server = await startServer({ replies: [{ content: "Noon." }] });
      const notices: string[] = [];
      try {
        const result = await createRuntime().runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "m", apiKey: "k" },
          messages: given,
          tools: TOOLS,
          dispatch: () => "12:00",
          onEvent: (event) => {
            if (event.kind === "notice") notices.push(event.text);
          },
        });
        return { messages: result.messages, notices, sent: server.chatRequests.map((r) => r.raw) };
      } finally {
        await server.close();
      }
    };
    const clean = await run();
    const ghost = [{ id: "ghost", type: "function", function: { name: "clock", arguments: "{}" } }];
    // Before: the run said the transcript had a call no tool message answered and sent
    // {"role":"tool","tool_call_id":"ghost","content":"Not run…"} after "Hi.".
    expect(await polluted("tool_calls", ghost, run)).toEqual(clean);
    expect(clean.sent[0]).not.toContain("ghost");
  });
});

describe("R85-3: a route's decision is read by the keys it holds", () => {
  it("on demand: an inherited answer or refusal changes neither the load nor the calls it routes", async () => {
    const tool = (name: string): ToolDefinition => ({
      type: "function",
      function: { name, parameters: { type: "object", properties: { path: { type: "string" } } } },
    });
    const run = async () => {
      const server = await startServer({
        replies: [
          { toolCalls: [{ id: "l1", name: "load_tools", arguments: '{"names":["fs.read"]}' }] },
          {
            toolCalls: [
              { id: "c1", name: "call_tool", arguments: '{"name":"fs.read","arguments":{"path":"a.txt"}}' },
              { id: "c2", name: "fs_read", arguments: '{"path":"b.txt"}' },
            ],
          },
          { content: "done" },
        ],
      });
      const ran: string[] = [];
      try {
        const result = await createRuntime().runAgentLoop({
          config: { baseUrl: server.baseUrl, model: "m", apiKey: "k", toolDiscovery: "ondemand" },
          messages: [{ role: "user", content: "Read the notes." }],
          tools: [tool("fs.read"), tool("fs.write")],
          dispatch: ({ name, args }) => {
            ran.push(`${name} ${JSON.stringify(args)}`);
            return "ran";
          },
        });
        return { ran, messages: result.messages, sent: server.chatRequests.map((r) => r.raw) };
      } finally {
        await server.close();
      }
    };
    const clean = await run();
    expect(clean.ran).toEqual(['fs.read {"path":"a.txt"}', 'fs.read {"path":"b.txt"}']);
    // Before: with `answer` every routed call was answered by the loop, unrun and with no content.
    for (const name of ["answer", "refusal"]) {
      expect({ name, run: await polluted(name, "P0LLUTED", run) }).toEqual({ name, run: clean });
    }
  });
});
