/**
 * The llamacpp personality's reading of the token budget (review r75, see review-r75.test.ts) against
 * the real b9749 server. In a file named live so that .ci/run's live step, which runs the live test
 * files with LOOPWRIGHT_LIVE_LLAMA set, runs it; it skips with a message elsewhere.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type LiveServer, liveServerPath, startLive } from "./live-llama.js";
import { startServer, type TestServer } from "./server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

if (!liveServerPath)
  console.warn(
    "testkit live token-budget test skipped: set LOOPWRIGHT_LIVE_LLAMA to a folder holding llama-server and tiny.gguf to run it.",
  );

// The same bodies sent to the real b9749 server (where LOOPWRIGHT_LIVE_LLAMA names it): the
// refusals are word for word the personality's, and a budget of 0 gives one token there too.
(liveServerPath ? describe : describe.skip)(
  "the token budget on the live llama-server",
  { timeout: 120_000 },
  () => {
    let live: LiveServer | undefined;
    afterAll(() => live?.stop(), 20_000);

    it("refuses and cuts as the llamacpp personality does", async () => {
      live = await startLive({ contextSize: 4096 });
      server = await startServer({ personality: "llamacpp", scriptedModel: { chunkDelayMs: 0 } });
      const post = async (baseUrl: string, extra: Record<string, unknown>) => {
        const res = await fetch(`${baseUrl}/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            model: "tiny",
            messages: [{ role: "user", content: "Say hello." }],
            ...extra,
          }),
        });
        const body = (await res.json()) as {
          error?: unknown;
          choices?: { finish_reason?: string }[];
          usage?: { completion_tokens?: number };
        };
        const tokens = body.usage?.completion_tokens;
        return { status: res.status, error: body.error, finish: body.choices?.[0]?.finish_reason, tokens };
      };
      for (const extra of [
        { max_completion_tokens: "3", max_tokens: 2 },
        { n_predict: "4" },
        { max_tokens: [1] },
        { max_tokens: -5 },
        { max_completion_tokens: -2, stream: true },
        { max_tokens: 3_000_000_000 },
        { max_tokens: 0 },
        { n_predict: 0 },
        { max_completion_tokens: 1, max_tokens: 40 },
      ]) {
        server.enqueue({ content: "hello there, world" });
        const [real, simulated] = [await post(live.baseUrl, extra), await post(server.baseUrl, extra)];
        expect({ extra, ...simulated }).toEqual({ extra, ...real });
      }
    });
  },
);
