/**
 * The loop against a real llama.cpp server whose chat template makes roles alternate (Gemma's and
 * Mistral's do; the one here raises the same exception, and opens every reply in a thinking block
 * the server reads as reasoning): a run whose reply is all reasoning — no text, no call — and then
 * another question. The empty answer is left out of the next request and the two questions go as
 * one user message, which the real server accepts where it refuses two user messages in a row
 * (recorded: errors/llamacpp/roles-must-alternate-jinja-b9749.json). Skipped with a message where
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

/**
 * Two messages of one role in a row raise "Conversation roles must alternate", as Gemma's and
 * Mistral's templates do; an assistant turn's reasoning is written in a thinking block, and the
 * generation prompt opens one, so everything the model writes is reasoning (the server's
 * `--reasoning-format deepseek` parser takes it out of the content).
 */
const ALTERNATING_TEMPLATE = `{%- for message in messages %}
    {%- if loop.index0 > 0 and message['role'] == messages[loop.index0 - 1]['role'] -%}
        {{- raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif %}
{%- endfor %}
{%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message['role'] == 'user' %}
        {{- '<|im_start|>user\\n' + message['content'] + '<|im_end|>\\n' }}
    {%- elif message['role'] == 'assistant' %}
        {{- '<|im_start|>assistant\\n' }}
        {%- if message['reasoning_content'] is defined and message['reasoning_content'] %}
            {{- '<think>\\n' + message['reasoning_content'] + '\\n</think>\\n\\n' }}
        {%- endif %}
        {{- message['content'] + '<|im_end|>\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n<think>\\n' }}
{%- endif %}`;

// The tiny model on a shared CPU answers a few tokens a second: small ceilings, generous bounds.
(liveServerPath ? describe : describe.skip)(
  "against a live llama.cpp server whose template makes roles alternate",
  {
    timeout: 120_000,
  },
  () => {
    let server: LiveServer;
    beforeAll(async () => {
      server = await startLive({
        contextSize: 1024,
        chatTemplate: ALTERNATING_TEMPLATE,
        reasoningFormat: "deepseek",
      });
    }, 90_000);
    afterAll(() => server?.stop(), 20_000);

    /** Sends `messages` to the live server as they are, with no loop between; answers its reply. */
    const sendRaw = (messages: { role: string; content: string }[]) =>
      fetch(`${server.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "tiny", max_tokens: 4, messages }),
      });

    it("refuses two questions in a row, as the recording says", async () => {
      const response = await sendRaw([
        { role: "user", content: "What is 2 + 3?" },
        { role: "user", content: "Thanks. And then?" },
      ]);
      expect(response.status).toBe(400);
      expect(await response.text()).toMatch(/Conversation roles must alternate/);
    });

    it("refuses two system messages in a row (a system prompt, then a transcript opening with one)", async () => {
      const response = await sendRaw([
        { role: "system", content: "You add numbers." },
        { role: "system", content: "Summary of the conversation so far: the user asked about sums." },
        { role: "user", content: "What is 2 + 3?" },
      ]);
      expect(response.status).toBe(400);
      expect(await response.text()).toMatch(/Conversation roles must alternate/);
    });

    it("takes a run whose system prompt meets a transcript opening with a system message (a compaction's summary)", async () => {
      const sent: ChatMessage[][] = [];
      const result = await createRuntime().runAgentLoop({
        config: { baseUrl: server.baseUrl, model: "tiny", maxTokens: 8, requestTimeoutSeconds: 110 },
        system: "You add numbers.",
        messages: [
          { role: "system", content: "Summary of the conversation so far: the user asked about sums." },
          { role: "user", content: "What is 2 + 3?" },
        ],
        dispatch: () => "",
        onRequest: (request) => sent.push(request.messages as ChatMessage[]),
      });
      expect(["stop", "length"]).toContain(result.turn.finishReason);
      expect(sent[0]?.map((m) => m.role)).toEqual(["system", "user"]);
      // The transcript handed back keeps the summary as its own message.
      expect(result.messages[0]?.role).toBe("system");
    });

    it("takes the next question after an answer that was all reasoning, sent joined to the one before", async () => {
      const runtime = createRuntime();
      const config = { baseUrl: server.baseUrl, model: "tiny", maxTokens: 8, requestTimeoutSeconds: 110 };
      const first = await runtime.runAgentLoop({
        config,
        messages: [{ role: "user", content: "What is 2 + 3?" }],
        dispatch: () => "",
      });
      // The real server read everything the model wrote as reasoning: the answer is empty.
      expect(first.turn.content).toBe("");
      expect(first.messages.at(-1)).toMatchObject({ role: "assistant", content: "" });

      const sent: ChatMessage[][] = [];
      const next = await runtime.runAgentLoop({
        config,
        messages: [...first.messages, { role: "user", content: "Thanks. And then?" }],
        dispatch: () => "",
        onRequest: (request) => sent.push(request.messages as ChatMessage[]),
      });
      // Answered, not refused: the run ended on the server's reply.
      expect(["stop", "length"]).toContain(next.turn.finishReason);
      const [request] = sent;
      expect(request?.map((m) => m.role)).toEqual(["user"]);
      expect(JSON.stringify(request?.[0]?.content)).toMatch(/What is 2 \+ 3\?[\s\S]*Thanks\. And then\?/);
      // The transcript handed back keeps both questions and the empty answer as they were.
      expect(next.messages.slice(0, 3).map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    });
  },
);
