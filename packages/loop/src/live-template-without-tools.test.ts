/**
 * The loop against a real llama.cpp server serving a chat template that takes no tools (ChatML, as
 * `--chat-template chatml` or an old GGUF's own template gives): the server renders the request
 * without the tools and says nothing — its `/props` lists `chat_template_caps.supports_tools: false`
 * — so the model never sees them. The loop reads it off the prompt count and says so. Skipped with a
 * message where LOOPWRIGHT_LIVE_LLAMA names no live server.
 */
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import { createRuntime } from "./runtime.js";

if (!liveServerPath)
  console.warn(
    "loop live tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

const CHATML = `{%- for message in messages -%}
  {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|im_start|>assistant\\n' -}}
{%- endif -%}`;

const described = (name: string): ToolDefinition => ({
  type: "function",
  function: {
    name,
    description: `Does ${name} over the project, and answers what it found or what went wrong.`,
    parameters: {
      type: "object",
      properties: { path: { type: "string", description: "Where, relative to the project root." } },
      required: ["path"],
    },
  },
});

(liveServerPath ? describe : describe.skip)(
  "against a live llama.cpp server whose chat template takes no tools",
  { timeout: 120_000 },
  () => {
    let server: LiveServer;
    beforeAll(async () => {
      server = await startLive({ contextSize: 1024, chatTemplate: CHATML });
    }, 90_000);
    afterAll(() => server?.stop(), 20_000);

    it("says so in /props", async () => {
      const props = (await (await fetch(`${server.origin}/props`)).json()) as {
        chat_template_caps?: { supports_tools?: boolean };
      };
      expect(props.chat_template_caps?.supports_tools).toBe(false);
    });

    it("answers without the tools, and the loop tells the host the model never saw them", async () => {
      const notices: string[] = [];
      const dispatched: string[] = [];
      const result = await createRuntime().runAgentLoop({
        config: {
          baseUrl: server.baseUrl,
          model: "tiny",
          maxTokens: 32,
          temperature: 0,
          requestTimeoutSeconds: 110,
        },
        messages: [{ role: "user", content: "List the files." }],
        tools: ["find", "grep", "read"].map(described),
        dispatch: ({ name }) => {
          dispatched.push(name);
          return "";
        },
        onEvent: (event) => {
          if (event.kind === "notice") notices.push(event.text);
        },
      });
      expect(dispatched).toEqual([]);
      expect(result.toolCalls).toEqual([]);
      expect(
        notices.filter((n) => n.includes("its chat template does not show the tools to tiny")),
      ).toHaveLength(1);
    });
  },
);
