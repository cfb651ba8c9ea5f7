// Story (c), a loop of one's own: the host copies the loop in @loopwright/loop's COMPOSE.md into its
// project as compose-loop.ts (the check writes that file from the installed tarball's COMPOSE.md, so
// the guide as shipped is what runs), hands it the `openai` SDK's messages and tools, and sends the
// transcript it returns back through the SDK. Installs client, negotiate, schema-compat, stream,
// tool-calls and openai.
import assert from "node:assert/strict";
import { startServer } from "@loopwright/testkit";
import OpenAI from "openai";
import type {
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
} from "openai/resources/chat/completions";
import { miniLoop } from "./compose-loop.js";

const tools: ChatCompletionFunctionTool[] = [
  {
    type: "function",
    function: {
      name: "add",
      description: "Add two numbers",
      parameters: {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "clock",
      description: "The time, in a time zone",
      parameters: { type: "object", properties: { zone: { type: "string" } } },
      strict: null,
    },
  },
];
const history: ChatCompletionMessageParam[] = [
  { role: "system", content: "Answer briefly." },
  { role: "user", content: "What is 2 + 3, and what time is it?" },
];

const server = await startServer({
  replies: [
    {
      // Almost-JSON from the model (single quotes), and `null` for the optional zone.
      toolCalls: [
        { id: "call_add", name: "add", arguments: "{'a': 2, 'b': 3}" },
        { id: "call_clock", name: "clock", arguments: '{"zone": null}' },
      ],
    },
    { content: "5, and it is noon." },
    { content: "You asked about a sum and the time." },
  ],
});
try {
  const seen: Array<[string, Record<string, unknown>]> = [];
  const { turn, messages } = await miniLoop({
    endpoint: { baseUrl: server.baseUrl, model: "sim" },
    messages: history,
    tools,
    run: (name, args) => {
      seen.push([name, args]);
      if (name === "add") return Number(args.a) + Number(args.b);
      if (name === "clock") return "12:00";
      throw new Error(`no tool named ${name}`);
    },
  });
  assert.equal(turn.content, "5, and it is noon.");
  // The optional null is gone before the tool runs; the repaired JSON is what is replayed.
  assert.deepEqual(seen, [
    ["add", { a: 2, b: 3 }],
    ["clock", {}],
  ]);
  const assistant = messages[2];
  assert.ok(assistant?.role === "assistant" && assistant.tool_calls);
  const replayed = assistant.tool_calls.map((call) =>
    call.type === "function" ? call.function.arguments : "",
  );
  assert.deepEqual(replayed, ['{"a":2,"b":3}', '{"zone":null}']);
  assert.deepEqual(
    messages
      .slice(3, 5)
      .map((message) => (message.role === "tool" ? [message.tool_call_id, message.content] : [])),
    [
      ["call_add", "5"],
      ["call_clock", "12:00"],
    ],
  );

  // The transcript goes back to the SDK as it is: no cast, and the server receives every message.
  const client = new OpenAI({ baseURL: server.baseUrl, apiKey: "test", maxRetries: 0 });
  const followUp = await client.chat.completions.create({
    model: "sim",
    messages: [...messages, { role: "user", content: "What did I ask?" }],
    tools,
  });
  assert.equal(followUp.choices[0]?.message.content, "You asked about a sum and the time.");
  const lastBody = server.chatRequests.at(-1)?.body;
  assert.ok(lastBody && typeof lastBody === "object" && "messages" in lastBody);
  assert.ok(Array.isArray(lastBody.messages));
  assert.equal(lastBody.messages.length, messages.length + 1);
  console.log("story custom-loop: ok");
} finally {
  await server.close();
}
