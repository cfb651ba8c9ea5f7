/**
 * The loop against a real llama.cpp server whose chat template opens a thinking block in the
 * generation prompt but that the server does not read as a thinking template (it never names
 * `reasoning_content`, as many hand-made and converted GGUF templates do not). The server then
 * leaves the scratchpad in the content, ending at a lone `</think>` the model wrote — with
 * `--reasoning-format deepseek` as with `none`. The reply is forced with a GBNF grammar (the tiny
 * model knows nothing), so the bytes are what a thinking model writes. Skipped with a message where
 * LOOPWRIGHT_LIVE_LLAMA names no live server.
 */
import { fold } from "@loopwright/events";
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage, RunEvent } from "./index.js";
import { createRuntime } from "./runtime.js";

if (!liveServerPath)
  console.warn(
    "loop live tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

/** ChatML that opens a scratchpad for every reply and never writes one back. */
const OPEN_SCRATCHPAD_TEMPLATE = `{%- for message in messages %}
    {{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n<think>\\n' }}
{%- endif %}`;

/** What a thinking model writes after the template's `<think>`: its reasoning, the closer, the answer. */
const FORCED = 'root ::= "I should greet them back." "\\n</think>\\n\\n" "Hello!"';

(liveServerPath ? describe : describe.skip)(
  "against a live llama.cpp server whose template opens a scratchpad it does not read back",
  { timeout: 120_000 },
  () => {
    const servers: LiveServer[] = [];
    beforeAll(async () => {
      servers.push(await startLive({ contextSize: 1024, chatTemplate: OPEN_SCRATCHPAD_TEMPLATE }));
      servers.push(
        await startLive({
          contextSize: 1024,
          chatTemplate: OPEN_SCRATCHPAD_TEMPLATE,
          reasoningFormat: "none",
        }),
      );
    }, 90_000);
    afterAll(() => Promise.all(servers.map((server) => server.stop())), 20_000);

    it("the server leaves the scratchpad in the content, up to a lone closer", async () => {
      for (const server of servers) {
        const response = await fetch(`${server.baseUrl}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "tiny",
            temperature: 0,
            max_tokens: 40,
            grammar: FORCED,
            messages: [{ role: "user", content: "Hello there." }],
          }),
        });
        const body = (await response.json()) as { choices: { message: Record<string, unknown> }[] };
        expect(body.choices[0]?.message.content).toBe("I should greet them back.\n</think>\n\nHello!");
        expect(body.choices[0]?.message.reasoning_content).toBeUndefined();
      }
    });

    it("answers with the text after the closer, keeps the scratchpad as reasoning, and sends it back as neither", async () => {
      for (const server of servers) {
        const runtime = createRuntime();
        const config = {
          baseUrl: server.baseUrl,
          model: "tiny",
          maxTokens: 40,
          temperature: 0,
          requestTimeoutSeconds: 110,
          extraBody: { grammar: FORCED },
        };
        const events: RunEvent[] = [];
        const first = await runtime.runAgentLoop({
          config,
          messages: [{ role: "user", content: "Hello there." }],
          dispatch: () => "",
          onEvent: (event) => events.push(event),
        });
        expect(first.turn.content).toBe("Hello!");
        expect(first.turn.reasoning).toBe("I should greet them back.");
        expect(first.messages.at(-1)).toEqual({ role: "assistant", content: "Hello!" });
        // What a watcher draws: the streamed scratchpad was taken back out of the answer.
        expect(fold(events)).toEqual([
          { kind: "reasoning", text: "I should greet them back." },
          { kind: "text", text: "Hello!" },
        ]);

        const sent: ChatMessage[][] = [];
        await runtime.runAgentLoop({
          config: { ...config, extraBody: { grammar: 'root ::= "Again!"' } },
          messages: [...first.messages, { role: "user", content: "Once more?" }],
          dispatch: () => "",
          onRequest: (request) => sent.push(request.messages as ChatMessage[]),
        });
        expect(sent[0]).toEqual([
          { role: "user", content: "Hello there." },
          { role: "assistant", content: "Hello!" },
          { role: "user", content: "Once more?" },
        ]);
      }
    });
  },
);
