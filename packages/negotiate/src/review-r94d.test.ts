/**
 * Round 94 (d): a host composing its own loop from the READMEs, run against a server whose chat
 * template takes one tool call per assistant message.
 */
import { startServer, type TestServer } from "@loopwright/testkit";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { afterEach, describe, expect, it } from "vitest";
import { negotiatedTurn } from "../test/wire.js";
import { createCapabilityStore } from "./capabilities.js";
import { readRefusal } from "./refusal.js";
import type { ToolDefinition } from "./request-body.js";
import { isTransient } from "./retry.js";
import { withTemplateRoles } from "./template-roles.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

// llama-server b9749 (`/work/shared/live`, `--jinja`) given a chat template that raises as Llama
// 3.1's does over an assistant message with two calls (`raise_exception("This model only supports
// single tool-calls at once!")`), probed with curl: a 400 with this body, streamed or not.
const LLAMACPP_SINGLE_CALL = {
  error: {
    code: 400,
    message:
      "Unable to generate parser for this template. Automatic parser generation failed: \n------------\n" +
      "While executing CallExpression at line 2, column 116 in source:\n...l_calls|length > 1 -%}{{ " +
      'raise_exception("This model only supports single tool-c...\n' +
      "                                           ^\n" +
      "Error: Jinja Exception: This model only supports single tool-calls at once!",
    type: "invalid_request_error",
  },
};

const TOOLS: ToolDefinition[] = [
  {
    type: "function",
    function: { name: "add", parameters: { type: "object", properties: { a: { type: "number" } } } },
  },
  {
    type: "function",
    function: {
      name: "get_weather",
      parameters: { type: "object", properties: { city: { type: "string" } } },
    },
  },
];

/** A step in which the model called two tools at once, both answered. */
const TRANSCRIPT: ChatCompletionMessageParam[] = [
  { role: "user", content: "Weather in Paris, and 2+3?" },
  {
    role: "assistant",
    content: "Checking both.",
    tool_calls: [
      { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
      { id: "call_b", type: "function", function: { name: "add", arguments: '{"a":2,"b":3}' } },
    ],
  },
  { role: "tool", tool_call_id: "call_a", content: "Sunny" },
  { role: "tool", tool_call_id: "call_b", content: "5" },
];

describe("a chat template that takes one tool call per assistant message", () => {
  it("is read as a refusal negotiate answers, never retried as a fault", () => {
    // Before: readRefusal answered undefined (the Jinja exception is excluded from the grammar
    // wordings), so negotiate passed the 400 on and every later request of the run failed alike.
    const error = Object.assign(new Error(`400 ${LLAMACPP_SINGLE_CALL.error.message}`), {
      status: 400,
      error: LLAMACPP_SINGLE_CALL.error,
    });
    expect(readRefusal(error)).toEqual({ kind: "parallel-calls" });
    const sglang = Object.assign(new Error("500 This model only supports single tool-calls at once!"), {
      status: 500,
    });
    expect(readRefusal(sglang)).toEqual({ kind: "parallel-calls" });
    expect(isTransient(sglang)).toBe(false);
  });

  it("re-sends the step's calls one per assistant message, each with its result, and latches it", async () => {
    server = await startServer({
      personality: "llamacpp",
      replies: [{ type: "error", status: 400, body: LLAMACPP_SINGLE_CALL }, { content: "Sunny, and 5." }],
    });
    const config = { baseUrl: server.baseUrl, model: "llama-3.1-8b" };
    const store = createCapabilityStore();
    const supports = store.capabilitiesFor(config.baseUrl);
    const notices: string[] = [];
    const turn = await negotiatedTurn(config, TRANSCRIPT, TOOLS, {
      supports,
      onNotice: (text) => notices.push(text),
    });
    expect(turn.content).toBe("Sunny, and 5.");
    expect(server.chatRequests).toHaveLength(2);
    const sent = server.chatRequests[1]?.body as { messages: unknown[] };
    expect(sent.messages).toEqual([
      TRANSCRIPT[0],
      {
        role: "assistant",
        content: "Checking both.",
        tool_calls: [
          {
            id: "call_a",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
          },
        ],
      },
      TRANSCRIPT[2],
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_b", type: "function", function: { name: "add", arguments: '{"a":2,"b":3}' } },
        ],
      },
      TRANSCRIPT[3],
    ]);
    expect(store.modelCapabilitiesFor(supports, config.model).parallelCalls).toBe(false);
    expect(notices).toEqual([
      "llama-3.1-8b takes one tool call per assistant message (its chat template refused several); sending " +
        "each call of a step as an assistant message of its own, its result after it, from now on (the " +
        "transcript keeps its own).",
    ]);
    // The caller's transcript is untouched, and the latch goes into a snapshot and back.
    expect(TRANSCRIPT[1] && "tool_calls" in TRANSCRIPT[1] && TRANSCRIPT[1].tool_calls).toHaveLength(2);
    const snapshot = store.exportCapabilities();
    expect(snapshot.endpoints[0]?.models["llama-3.1-8b"]?.parallelCalls).toBe(false);
    const restored = createCapabilityStore();
    restored.importCapabilities(JSON.stringify(snapshot));
    const again = restored.modelCapabilitiesFor(restored.capabilitiesFor(config.baseUrl), config.model);
    expect(again.parallelCalls).toBe(false);
  });

  it("keeps a result that answers none of the calls after the last, and leaves one-call steps alone", () => {
    const store = createCapabilityStore();
    const model = store.modelCapabilitiesFor(store.capabilitiesFor("http://127.0.0.1:9/v1"), "m");
    model.parallelCalls = false;
    const stray: ChatCompletionMessageParam = { role: "tool", tool_call_id: "call_zz", content: "?" };
    const [user, step, resultA, resultB] = TRANSCRIPT;
    if (!user || !step || !resultA || !resultB) throw new Error("the transcript has four messages");
    const out = withTemplateRoles([user, step, resultB, stray, resultA], model);
    expect(out.map((m) => `${m.role}:${"tool_call_id" in m ? m.tool_call_id : ""}`)).toEqual([
      "user:",
      "assistant:",
      "tool:call_a",
      "assistant:",
      "tool:call_b",
      "tool:call_zz",
    ]);
    const single = [
      TRANSCRIPT[0],
      { role: "assistant", content: null, tool_calls: [{ id: "x", type: "function" }] },
    ];
    expect(withTemplateRoles(single, model)).toEqual(single);
    // A snapshot written before the latch existed reads it as open.
    const written = JSON.parse(JSON.stringify(store.exportCapabilities()));
    delete written.endpoints[0].models.m.parallelCalls;
    const old = createCapabilityStore();
    old.importCapabilities(written);
    expect(old.exportCapabilities().endpoints[0]?.models.m?.parallelCalls).toBe(true);
  });
});
