/**
 * The loop against a real llama.cpp server with one slot (`--parallel 1`) that another request
 * keeps busy. llama.cpp queues the second request and sends nothing — not even response headers —
 * until the slot frees, so the wait counts against `firstTokenSeconds`; when it runs out the loop
 * closes the request (the server takes it out of its queue), sends it once more, and on a second
 * silence ends the run with `EndpointSilent` (`first-chunk`) whose message names the queue. Skipped
 * with a message where LOOPWRIGHT_LIVE_LLAMA names no live server.
 */
import { EndpointSilent } from "@loopwright/stream";
import { type LiveServer, liveServerPath, startLive } from "@loopwright/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentLoopError } from "./errors.js";
import type { RunEvent } from "./index.js";
import { createRuntime } from "./runtime.js";

if (!liveServerPath)
  console.warn(
    "loop live tests skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run them.",
  );

(liveServerPath ? describe : describe.skip)(
  "against a live llama.cpp server whose one slot is busy",
  { timeout: 120_000 },
  () => {
    let server: LiveServer;
    beforeAll(async () => {
      server = await startLive({ contextSize: 4096, slots: 1 });
    }, 90_000);
    afterAll(() => server?.stop(), 20_000);

    it("a queued request gets no headers; the run ends EndpointSilent after one re-send, and runs once the slot is free", async () => {
      // Holds the one slot: generates until the context is full unless stopped first.
      const busy = new AbortController();
      const holder = await fetch(`${server.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: "tiny",
          stream: true,
          max_tokens: 4000,
          ignore_eos: true,
          messages: [{ role: "user", content: "Talk for a long time." }],
        }),
        signal: busy.signal,
      });
      expect(holder.status).toBe(200);
      const reading = holder.body?.pipeTo(new WritableStream()).catch(() => {});

      const runtime = createRuntime();
      const config = { baseUrl: server.baseUrl, model: "tiny", maxTokens: 8, firstTokenSeconds: 1 };
      const notices: string[] = [];
      const failure = await runtime
        .runAgentLoop({
          config,
          messages: [{ role: "user", content: "Hello?" }],
          dispatch: () => "",
          onEvent: (event: RunEvent) => {
            if (event.kind === "notice") notices.push(event.text);
          },
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(AgentLoopError.isInstance(failure)).toBe(true);
      const silent = (failure as AgentLoopError).cause;
      expect(EndpointSilent.isInstance(silent)).toBe(true);
      expect((silent as EndpointSilent).code).toBe("first-chunk");
      expect((silent as EndpointSilent).message).toMatch(/queued behind other requests/);
      expect(notices.some((notice) => /sending it once more/.test(notice))).toBe(true);

      busy.abort();
      await reading;
      // The slot is free and the two abandoned requests left the queue: the next run is answered.
      const next = await runtime.runAgentLoop({
        config: { ...config, firstTokenSeconds: 60 },
        messages: [{ role: "user", content: "Hello?" }],
        dispatch: () => "",
      });
      expect(["stop", "length"]).toContain(next.turn.finishReason);
    });
  },
);
