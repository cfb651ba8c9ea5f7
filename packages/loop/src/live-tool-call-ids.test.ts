/**
 * The loop against a real llama.cpp server whose chat template checks tool-call ids as Mistral's v3
 * templates do (an id whose length is not nine raises "Tool call IDs should be alphanumeric strings
 * with length 9!"; recorded: errors/llamacpp/tool-call-ids-length-9-jinja-b9749.json): a transcript
 * holding a call the loop recovered from text (`call_recovered_0`) is refused once, latched for the
 * model, and taken when sent again with nine-character ids. Skipped with a message where
 * LOOPWRIGHT_LIVE_LLAMA names no live server.
 */
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { createRuntime } from "./runtime.js";

if (!liveServerPath)
  console.warn(
    "loop live tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

/** Renders a transcript as Qwen's template does, refusing a tool-call id of any length but nine. */
const ID_TEMPLATE = `{%- for message in messages %}
    {%- if message['role'] == 'assistant' and message.tool_calls is defined and message.tool_calls is not none %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.id is not defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
        {%- endfor %}
    {%- elif message['role'] == 'tool' %}
        {%- if message.tool_call_id is not defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message['role'] == 'tool' %}
        {{- '<|im_start|>user\\n<tool_response>\\n' + message['content'] + '\\n</tool_response><|im_end|>\\n' }}
    {%- elif message['role'] == 'assistant' and message.tool_calls is defined and message.tool_calls is not none %}
        {{- '<|im_start|>assistant\\n' }}
        {%- for tool_call in message.tool_calls %}
            {{- '<tool_call>\\n{"name": "' + tool_call.function.name + '"}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') + '<|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}`;

const TRANSCRIPT: ChatMessage[] = [
  { role: "user", content: "What is 2 + 3?" },
  {
    role: "assistant",
    content: "",
    tool_calls: [
      { id: "call_recovered_0", type: "function", function: { name: "add", arguments: '{"a":2,"b":3}' } },
    ],
  },
  { role: "tool", tool_call_id: "call_recovered_0", content: "5" },
];

// The tiny model on a shared CPU answers a few tokens a second: small ceilings, generous bounds.
(liveServerPath ? describe : describe.skip)(
  "against a live llama.cpp server whose template takes only nine-character tool-call ids",
  { timeout: 120_000 },
  () => {
    let server: LiveServer;
    beforeAll(async () => {
      server = await startLive({ contextSize: 1024, chatTemplate: ID_TEMPLATE });
    }, 90_000);
    afterAll(() => server?.stop(), 20_000);

    it("refuses the loop's own id as sent, as the recording says", async () => {
      const response = await fetch(`${server.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "tiny", max_tokens: 4, messages: TRANSCRIPT }),
      });
      expect(response.status).toBe(400);
      expect(await response.text()).toMatch(/Tool call IDs should be alphanumeric strings with length 9!/);
    });

    it("finishes a run over that transcript: latched for the model, sent again with ids it takes", async () => {
      const notices: string[] = [];
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "tiny", maxTokens: 8, requestTimeoutSeconds: 110 },
        messages: TRANSCRIPT,
        dispatch: () => "",
        onEvent: (event) => {
          if (event.kind === "notice") notices.push(event.text);
        },
      });
      expect(["stop", "length"]).toContain(result.turn.finishReason);
      expect(notices.some((text) => /tiny refused a tool-call id/.test(text))).toBe(true);
      // The transcript handed back keeps the loop's own id.
      expect(result.messages[1]).toMatchObject({ tool_calls: [{ id: "call_recovered_0" }] });
      expect(result.messages[2]).toMatchObject({ tool_call_id: "call_recovered_0" });
    });
  },
);
