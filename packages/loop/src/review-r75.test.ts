import { getClient } from "@loopwright/client";
import { buildBody, createCapabilityStore } from "@loopwright/negotiate";
import { startServer, type TestServer } from "@loopwright/testkit";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "./config.js";
import { continueTurn } from "./continue-turn.js";
import { runTurn } from "./run-turn.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const question: ChatMessage[] = [{ role: "user", content: "Count on." }];

/** A first turn cut off at the ceiling, and continueTurn called on it with `maxContinuations`. */
async function carryOn(maxContinuations: unknown) {
  server = await startServer({
    replies: [
      { content: "alpha", finishReason: "length" },
      { content: " beta", finishReason: "length" },
      { content: " gamma", finishReason: "length" },
      { content: " delta" },
    ],
  });
  const supports = createCapabilityStore().capabilitiesFor(server.baseUrl);
  const client = getClient({ baseUrl: server.baseUrl });
  const build = () => buildBody({ model: "m", maxTokens: 5 }, supports, undefined, question);
  const first = await runTurn(client, supports, build, { model: "m" });
  const outcome = await continueTurn(client, supports, build, first, {
    model: "m",
    maxContinuations: maxContinuations as number,
  }).then(
    (turn) => turn,
    (error: unknown) => error,
  );
  return { outcome, sent: server.chatRequests.length };
}

describe("r75: continueTurn's maxContinuations", () => {
  it.each([
    [Number.NaN, "NaN"],
    [-1, "-1"],
    [1.5, "1.5"],
    ["2", '"2"'],
    [Number.POSITIVE_INFINITY, "Infinity"],
  ])(
    "refuses %s before a continuation is sent, naming it (as the loop's config does)",
    async (value, shown) => {
      const { outcome, sent } = await carryOn(value);
      expect(outcome).toBeInstanceOf(RangeError);
      expect((outcome as Error).message).toContain(
        `maxContinuations must be a whole number from 0, got ${shown}`,
      );
      expect(sent).toBe(1);
    },
  );

  it("spends exactly the number given, none for 0, one by default", async () => {
    for (const [value, content, sent] of [
      [0, "alpha", 1],
      [undefined, "alpha beta", 2],
      [2, "alpha beta gamma", 3],
    ] as const) {
      const run = await carryOn(value);
      expect(run.outcome).toMatchObject({ content, continuations: sent - 1 });
      expect(run.sent).toBe(sent);
      await server?.close();
      server = undefined;
    }
  });
});
