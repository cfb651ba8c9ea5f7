// Story (d), the thin loop: a host with a transcript typed for the `openai` SDK runs it through
// `runAgentLoop` (in a runtime of its own, watched through the runtime's bus) with two typed tools,
// then sends the run's messages back through the SDK. Guided by the READMEs of @loopwright/loop and
// @loopwright/tools; installs loop, tools, zod and openai.
import assert from "node:assert/strict";
import { createRuntime, fold, runMetrics } from "@loopwright/loop";
import { startServer } from "@loopwright/testkit";
import { createToolset, defineTool } from "@loopwright/tools";
import OpenAI from "openai";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { z } from "zod";

const ran: string[] = [];
const search = defineTool({
  name: "search_files",
  description: "Find files under a directory.",
  input: z.object({
    path: z.string().describe("Where to look."),
    limit: z.number().int().min(1).default(10),
  }),
  execute: async ({ path, limit }) => {
    ran.push(`search_files ${path} ${limit}`);
    return `${limit} files under ${path}`;
  },
});
const add = defineTool({
  name: "add",
  description: "Add two numbers.",
  input: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => {
    ran.push(`add ${a} ${b}`);
    return a + b;
  },
});
const toolset = createToolset([search, add]);

// The host's stored conversation, typed for the SDK.
const history: ChatCompletionMessageParam[] = [
  { role: "user", content: "Add 2 and 3, then find files in src." },
];

const server = await startServer({
  replies: [
    {
      toolCalls: [
        { id: "call_add", name: "add", arguments: '{"a": 2, "b": 3}' },
        { id: "call_bad", name: "search_files", arguments: '{"path": 7}' },
      ],
    },
    { toolCalls: [{ id: "call_good", name: "search_files", arguments: '{"path": "src"}' }] },
    { content: "2 + 3 = 5; 10 files under src." },
    { content: "Yes: 5." },
    { toolCalls: [{ id: "call_add2", name: "add", arguments: '{"a": 4, "b": 4}' }] },
  ],
});
const runtime = createRuntime();
try {
  const runId = "story/run-1";
  const result = await runtime.runAgentLoop({
    runId,
    config: { baseUrl: server.baseUrl, model: "sim", maxToolIterations: 4 },
    system: "Answer briefly.",
    messages: history,
    tools: toolset.tools,
    dispatch: toolset.dispatch,
  });
  assert.equal(result.turn.content, "2 + 3 = 5; 10 files under src.");
  // The wrong argument never reached `execute`; the model was told why, and called again.
  assert.deepEqual(ran, ["add 2 3", "search_files src 10"]);
  const answers = result.messages.flatMap((message) =>
    message.role === "tool" ? [`${message.tool_call_id}: ${String(message.content)}`] : [],
  );
  assert.equal(answers[0], "call_add: 5");
  assert.match(answers[1] ?? "", /^call_bad: Error: search_files was not run: .*path/);
  assert.equal(answers[2], "call_good: 10 files under src");
  assert.equal(result.steps, 3);

  // The runtime's bus holds the whole run, closed by `done`: a watcher needs nothing else.
  const events = runtime.bus.history(runId);
  assert.equal(events.at(-1)?.kind, "done");
  assert.ok(fold(events).length > 0);
  assert.equal(runMetrics(events).toolCalls, 3);

  // The run's messages go back to the SDK as they are: `result.messages` is the SDK's message type.
  const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "test", maxRetries: 0 });
  const reply = await client.chat.completions.create({
    model: "sim",
    messages: result.messages,
    tools: toolset.tools,
  });
  assert.equal(reply.choices[0]?.message.content, "Yes: 5.");
  const sent = server.chatRequests.at(-1)?.body;
  assert.ok(sent && typeof sent === "object" && "messages" in sent && Array.isArray(sent.messages));
  assert.equal(sent.messages.length, result.messages.length);
  // A step plan (the loop README's "Per step"): name the tool for the first step, end after it.
  ran.length = 0;
  const planned = await runtime.runAgentLoop({
    config: { baseUrl: server.baseUrl, model: "sim" },
    messages: [{ role: "user", content: "Add 4 and 4 with the add tool." }],
    tools: toolset.tools,
    dispatch: toolset.dispatch,
    beforeStep: (_messages, step) =>
      step === 1 ? { toolChoice: { type: "function", function: { name: "add" } } } : { stop: true },
  });
  assert.equal(planned.stopReason, "stopped");
  assert.deepEqual(ran, ["add 4 4"]);
  assert.deepEqual(
    planned.messages.map((message) => message.role),
    ["user", "assistant", "tool"],
  );
  const asked = server.chatRequests.at(-1)?.body;
  assert.ok(asked && typeof asked === "object" && "tool_choice" in asked);
  assert.deepEqual(asked.tool_choice, { type: "function", function: { name: "add" } });
  console.log("story agent-loop: ok");
} finally {
  runtime.close();
  await server.close();
}
