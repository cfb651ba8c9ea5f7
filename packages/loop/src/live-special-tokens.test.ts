/**
 * The loop against a real llama.cpp server started with `--special`, which prints special tokens
 * into the text, as hosts do to see their model's tokens. Its replies end with `<|im_end|>`, and
 * with tools its own tool-call parser meets them and fails the turn mid-stream with a 500 ("does
 * not match the expected peg-native format") — the wording it uses when a schema's grammar let the
 * model out of a string. Skipped with a message where LOOPWRIGHT_LIVE_LLAMA names no live server.
 */
import type { RunEvent } from "@loopwright/events";
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "./config.js";
import { AgentLoopError } from "./errors.js";
import { createRuntime } from "./runtime.js";

if (!liveServerPath)
  console.warn(
    "loop live tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

const LS: ToolDefinition = {
  type: "function",
  function: {
    name: "ls",
    description: "List a folder",
    parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  },
};

// The tiny model on a shared CPU answers a few tokens a second: small ceilings, generous bounds.
(liveServerPath ? describe : describe.skip)(
  "against a live llama.cpp server that prints special tokens (--special)",
  { timeout: 120_000 },
  () => {
    let server: LiveServer;
    beforeAll(async () => {
      server = await startLive({ contextSize: 1024, special: true });
    }, 90_000);
    afterAll(() => server?.stop(), 20_000);

    // Greedy (temperature 0): the tiny model samples otherwise, and a sampled run may end at the
    // ceiling or write a call the parser reads.
    const config = () => ({
      baseUrl: server.baseUrl,
      model: "tiny",
      maxTokens: 64,
      temperature: 0,
      requestTimeoutSeconds: 110,
    });

    it("ends a reply with <|im_end|> in its text, as sent by the server", async () => {
      const response = await fetch(`${server.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "tiny",
          max_tokens: 64,
          temperature: 0,
          messages: [{ role: "user", content: "Hi." }],
        }),
      });
      const body = (await response.json()) as {
        choices: Array<{ message: { content: string }; finish_reason: string }>;
      };
      expect(body.choices[0]?.finish_reason).toBe("stop");
      expect(body.choices[0]?.message.content).toMatch(/<\|im_end\|>$/);
    });

    it("keeps the token out of the answer, the transcript and the next request, and says so", async () => {
      const runtime = createRuntime();
      const events: RunEvent[] = [];
      const sent: ChatMessage[][] = [];
      const first = await runtime.runAgentLoop({
        config: config(),
        messages: [{ role: "user", content: "Hi." }],
        dispatch: () => "",
        onEvent: (event) => events.push(event),
      });
      expect(first.turn.finishReason).toBe("stop");
      expect(first.turn.content).not.toContain("<|im_");
      expect(
        events.some((e) => e.kind === "notice" && /^Took \d+ characters out of the answer/.test(e.text)),
      ).toBe(true);
      await runtime.runAgentLoop({
        config: config(),
        messages: [...first.messages, { role: "user", content: "And then?" }],
        dispatch: () => "",
        onRequest: (request) => sent.push(request.messages as ChatMessage[]),
      });
      const replayed = sent[0]?.find((m) => m.role === "assistant");
      expect(replayed?.content).toBe(first.turn.content);
      expect(JSON.stringify(sent[0])).not.toContain("<|im_end|>");
    });

    it("with tools: the parser's 500 is tried once with relaxed tools, then fails typed, saying the schemas do not explain it", async () => {
      const notices: string[] = [];
      const dispatched: string[] = [];
      const error = await createRuntime()
        .runAgentLoop({
          config: config(),
          messages: [{ role: "user", content: "List the files." }],
          tools: [LS],
          dispatch: ({ name }) => {
            dispatched.push(name);
            return "a.txt";
          },
          onEvent: (event) => {
            if (event.kind === "notice") notices.push(event.text);
          },
        })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(AgentLoopError);
      expect(String((error as Error).message)).toMatch(/does not match the expected peg-native format/);
      // A call from a turn the server never finished is never run.
      expect(dispatched).toEqual([]);
      expect(
        notices.filter((n) => n.startsWith("The server failed on the tool schemas' grammar")),
      ).toHaveLength(1);
      expect(
        notices.filter((n) => n.startsWith("The server failed the same way with relaxed tools")),
      ).toEqual([expect.stringContaining("started with --special")]);
    });
  },
);
