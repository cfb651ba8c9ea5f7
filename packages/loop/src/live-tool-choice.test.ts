/**
 * A step's `tool_choice` (beforeStep's plan) against a real llama.cpp server (b9749, the tiny model
 * with Qwen2.5's template, which calls a tool whenever tools are offered and no result is in yet).
 * `"none"`: the server still renders the tools, and the model writes the call markup into its text
 * anyway; the loop runs nothing and hands the text back. `"required"`: a call, run, then `stop`
 * ends the run on the next step with every call answered.
 * Skipped with a message where LOOPWRIGHT_LIVE_LLAMA names no live server.
 */
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ToolDefinition } from "./config.js";
import { createRuntime } from "./runtime.js";

if (!liveServerPath)
  console.warn(
    "loop live tool_choice tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

const WEATHER: ToolDefinition = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Weather for a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
};

(liveServerPath ? describe : describe.skip)(
  "a step's tool_choice, against a live llama.cpp server",
  { timeout: 120_000 },
  () => {
    let server: LiveServer;
    beforeAll(async () => {
      server = await startLive({ contextSize: 2048 });
    }, 90_000);
    afterAll(() => server?.stop(), 20_000);

    const config = () => ({
      baseUrl: server.baseUrl,
      model: "tiny",
      maxTokens: 120,
      // Greedy, so the random-weight model writes the same reply every run.
      temperature: 0,
      requestTimeoutSeconds: 110,
    });

    it('"none": the model writes call markup as text, and the loop runs nothing', async () => {
      const ran: string[] = [];
      const run = (plan: boolean) =>
        createRuntime().runAgentLoop({
          config: config(),
          messages: [{ role: "user", content: "What is the weather in Paris?" }],
          tools: [WEATHER],
          dispatch: ({ name }) => {
            ran.push(name);
            return "sunny";
          },
          ...(plan ? { beforeStep: () => ({ toolChoice: "none" as const }) } : {}),
        });
      // Without a plan this model calls the tool it is offered.
      await run(false);
      expect(ran).toEqual(["get_weather"]);
      ran.length = 0;
      const result = await run(true);
      expect(ran).toEqual([]);
      expect(result.turn.toolCalls).toEqual([]);
      expect(result.stopReason).toBe("answered");
      expect(result.steps).toBe(1);
      // What this server does under "none": the tools are still in the prompt, and the model opens a call in its text.
      expect(result.turn.content).toMatch(/<tool_call>/);
    });

    it('"required" makes the model call; a stop on the next step ends the run with the call answered', async () => {
      const ran: string[] = [];
      const result = await createRuntime().runAgentLoop({
        config: config(),
        messages: [{ role: "user", content: "What is the weather in Paris?" }],
        tools: [WEATHER],
        dispatch: ({ name }) => {
          ran.push(name);
          return "sunny";
        },
        beforeStep: (_messages, step) => (step === 1 ? { toolChoice: "required" } : { stop: true }),
      });
      expect(ran).toEqual(["get_weather"]);
      expect(result.stopReason).toBe("stopped");
      expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    });

    it("takes a tool result the host cut in the middle of an emoji (llama.cpp's JSON reader refuses a lone surrogate)", async () => {
      const forecast = "Paris: sunny \u{1F31E} all day";
      const result = await createRuntime().runAgentLoop({
        config: { ...config(), maxRetries: 0 },
        messages: [{ role: "user", content: "What is the weather in Paris?" }],
        tools: [WEATHER],
        // A host that caps output by UTF-16 units, cutting the emoji's pair in half.
        dispatch: () => forecast.slice(0, forecast.indexOf("\u{1F31E}") + 1),
      });
      expect(result.stopReason).toBe("answered");
      expect(result.steps).toBe(2);
      const answer = result.messages.find((m) => m.role === "tool");
      expect(answer?.content).toBe("Paris: sunny \uFFFD");
    });
  },
);
