/**
 * `maxContinuations` against a real llama.cpp server (b9749, the tiny model). That server takes a
 * trailing assistant message as a prefill, but streams the whole prefill again at the start of its
 * content before the new tokens (`completion_tokens` counts only the new ones). The loop must take
 * that echo off: the turn and the streamed output hold each piece once, and the model is not
 * latched `assistantPrefill: false` as if it had started over. Greedy decoding and a ceiling of a
 * few tokens keep it short and the same on every run.
 * Skipped with a message where LOOPWRIGHT_LIVE_LLAMA names no live server.
 */
import type { RunEvent } from "@loopwright/events";
import { modelCapabilitiesFor } from "@loopwright/negotiate";
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { createRuntime } from "./runtime.js";

if (!liveServerPath)
  console.warn(
    "loop live continuation tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

const QUESTION: ChatMessage[] = [{ role: "user", content: "Tell me a long story about boats." }];

(liveServerPath ? describe : describe.skip)(
  "carrying a cut-off answer on, against a live llama.cpp server that echoes the prefill",
  { timeout: 120_000 },
  () => {
    let server: LiveServer;
    beforeAll(async () => {
      server = await startLive({ contextSize: 1024 });
    }, 90_000);
    afterAll(() => server?.stop(), 20_000);

    const config = (maxContinuations: number) => ({
      baseUrl: server.baseUrl,
      model: "tiny",
      maxTokens: 2,
      maxContinuations,
      // Greedy, so the random-weight model writes the same reply every run.
      temperature: 0,
      requestTimeoutSeconds: 110,
    });

    it("the server itself sends the whole prefill again before the new text", async () => {
      const prefill = " Once upon a time";
      const res = await fetch(`${server.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "tiny",
          messages: [...QUESTION, { role: "assistant", content: prefill }],
          max_tokens: 2,
          temperature: 0,
        }),
      });
      const body = (await res.json()) as { choices: { message: { content: string } }[] };
      expect(body.choices[0]!.message.content.startsWith(prefill)).toBe(true);
    });

    it("joins each piece once: no echo in the turn or the streamed output, and no assistantPrefill latch", async () => {
      const runtime = createRuntime();
      // The answer cut off at the ceiling, not carried on.
      const cut = await runtime.runAgentLoop({ config: config(0), messages: QUESTION, dispatch: () => "" });
      expect(cut.turn.finishReason).toBe("length");
      const soFar = cut.turn.content;
      expect(soFar.trim()).not.toBe("");

      const events: RunEvent[] = [];
      const result = await runtime.runAgentLoop({
        config: config(2),
        messages: QUESTION,
        dispatch: () => "",
        onEvent: (e) => events.push(e),
      });
      const notices = events.flatMap((e) => (e.kind === "notice" ? [e.text] : []));
      const output = events.flatMap((e) => (e.kind === "output" ? [e.text] : [])).join("");
      const continuations = (result.turn as { continuations?: number }).continuations;
      expect(notices.join("\n")).toMatch(/carrying it on/);
      expect(notices.join("\n")).not.toMatch(/started the answer over/);
      expect(continuations).toBeGreaterThanOrEqual(1);
      // The same opening, said once: the echo of the answer so far is not joined in again.
      expect(result.turn.content.startsWith(soFar)).toBe(true);
      expect(result.turn.content.slice(soFar.length).startsWith(soFar)).toBe(false);
      expect(result.turn.content.length).toBeGreaterThan(soFar.length);
      // Greedy: the pieces joined are the reply one request with the whole ceiling (3 × 2 tokens) writes.
      const once = await runtime.runAgentLoop({
        config: { ...config(0), maxTokens: 6 },
        messages: QUESTION,
        dispatch: () => "",
      });
      expect(result.turn.content).toBe(once.turn.content);
      // Each piece's new tokens only: at most the ceiling a piece, counted as the server counted them.
      expect(result.turn.usage.completion).toBeLessThanOrEqual(2 * (1 + (continuations ?? 0)));
      expect(output).toBe(result.turn.content);
      expect(result.messages.at(-1)).toEqual({ role: "assistant", content: result.turn.content });
      const caps = modelCapabilitiesFor(runtime.capabilities.capabilitiesFor(server.baseUrl), "tiny");
      expect(caps.assistantPrefill).not.toBe(false);
      // It echoed: the server is not remembered as one that does not.
      expect(caps.prefillEcho).not.toBe(false);
    });

    it("carries a longer answer so far on (16 characters and more), which the echo once latched off", async () => {
      const runtime = createRuntime();
      const longer = (maxContinuations: number, maxTokens: number) => ({
        ...config(maxContinuations),
        maxTokens,
      });
      const cut = await runtime.runAgentLoop({
        config: longer(0, 6),
        messages: QUESTION,
        dispatch: () => "",
      });
      expect(cut.turn.finishReason).toBe("length");
      expect(cut.turn.content.trim().length).toBeGreaterThanOrEqual(16);
      const notices: string[] = [];
      const result = await runtime.runAgentLoop({
        config: longer(1, 6),
        messages: QUESTION,
        dispatch: () => "",
        onEvent: (e) => e.kind === "notice" && notices.push(e.text),
      });
      expect(notices.join("\n")).not.toMatch(/started the answer over/);
      const once = await runtime.runAgentLoop({
        config: longer(0, 12),
        messages: QUESTION,
        dispatch: () => "",
      });
      expect(result.turn.content).toBe(once.turn.content);
      expect(result.turn.content.length).toBeGreaterThan(cut.turn.content.length);
      const caps = modelCapabilitiesFor(runtime.capabilities.capabilitiesFor(server.baseUrl), "tiny");
      expect(caps.assistantPrefill).not.toBe(false);
      // The capability snapshot a host stores keeps the model continuing.
      expect(JSON.stringify(runtime.capabilities.exportCapabilities())).not.toMatch(
        /"assistantPrefill":false/,
      );
    });
  },
);
