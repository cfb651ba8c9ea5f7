import { fold, type RunEvent } from "@loopwright/events";
import { startServer } from "@loopwright/testkit";
import { describe, expect, it } from "vitest";
import { createRuntime } from "./index.js";

/**
 * A continuation whose server repeats the answer so far in small deltas (an echo, or a restart
 * streamed token by token) was read again whole at every delta: time quadratic in the answer so far.
 */
async function carriedOn(chars: number) {
  const soFar = "word ".repeat(chars / 5);
  const server = await startServer({
    replies: [
      { content: soFar, finishReason: "length", chunkChars: 4096 },
      { content: `${soFar}and the rest.`, chunkChars: 4 },
    ],
  });
  try {
    const events: RunEvent[] = [];
    const started = performance.now();
    const result = await createRuntime().runAgentLoop({
      config: { baseUrl: server.baseUrl, model: "llama", maxTokens: 8, maxContinuations: 1 },
      messages: [{ role: "user", content: "Say it." }],
      dispatch: () => "",
      onEvent: (e) => events.push(e),
    });
    const ms = performance.now() - started;
    expect(result.turn.content).toBe(`${soFar}and the rest.`);
    const shown = fold(events).flatMap((block) => (block.kind === "text" ? [block.text] : []));
    expect(shown.join("")).toBe(`${soFar}and the rest.`);
    return ms;
  } finally {
    await server.close();
  }
}

describe("r71: a continuation that repeats a long answer so far in small deltas", () => {
  it("is read in time linear in its length (four times the answer takes about four times as long, not sixteen)", async () => {
    await carriedOn(20_000); // warm up
    const small = await carriedOn(40_000);
    const large = await carriedOn(160_000);
    // Before: 40 000 characters took 0.9 s and 160 000 took 19 s (a ratio of 22).
    expect(large / small).toBeLessThan(8);
  }, 120_000);
});
